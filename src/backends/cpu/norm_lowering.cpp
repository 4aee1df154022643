// BatchNormalization (inference), InstanceNormalization and GroupNormalization on f32 and f16,
// and their voxrt.Fused*Norm forms with a residual added and Relu / LeakyRelu applied as the
// output is written. Statistics: one pass of fp32-lane sums about a sampled shift, carried into
// double; then one pass of y = act((x - mean) * scale / std + bias + residual).
#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_op.h"
#include "backends/cpu/driver_util.h"
#include "backends/cpu/kernels/eltwise/eltwise.h"
#include "backends/cpu/kernels/reduce/reduce.h"
#include "backends/ref/ops/fused.h"
#include "backends/ref/ops/fused_norm.h"
#include "backends/ref/tensor_math.h"

namespace voxrt::cpu {
namespace {

enum class NormKind { batch, instance, group };

constexpr int64_t kWaveBytes = int64_t{4} << 20;

struct NormConfig {
  NormKind kind;
  double epsilon = 1e-5;
  int64_t groups = 1;
  bool per_group_affine = false;  // GroupNormalization before opset 21
  bool residual = false;          // the last input, added before the activation
  bool residual_after_act = false;  // or after it (kResidualAfterActivation)
  // The first channel of input 0 that X takes, and of the last input that the residual takes,
  // or -1 where the input is whole (kFusedXFrom, kFusedResidualFrom: a Split read in place).
  int64_t x_from = -1, residual_from = -1;
  ActParams act;
};

// The mean of up to 64 evenly spaced samples: a shift close to the mean for the moments.
float sampled_mean(const char* x, DType t, int64_t n) {
  int64_t samples = n < 64 ? n : 64;
  double s = 0;
  for (int64_t i = 0; i < samples; ++i) {
    float v = load_float(x, t, i * n / samples);
    if (std::isfinite(v)) s += v;
  }
  return samples > 0 ? static_cast<float>(s / static_cast<double>(samples)) : 0.0f;
}

// y = act((x - mean) * a + bias) as the arguments of EltwiseKernels::affine. Where the mean is
// within `fold_limit` standard deviations of zero (rstd: 1 / std), the mean folds into the
// bias, (x * a + (bias - mean * a)), one operation less per vector: the fold adds about
// |mean| * rstd * 1.2e-7 of the output's scale (a and the folded bias each rounded to float), so
// the limit keeps that under 1e-6 for fp32 storage and near 1e-5 for fp16, whose own rounding is
// 2.4e-4. Otherwise the mean is subtracted first, as a float plus the part float lost of it
// moved into the bias, so |mean| >> std keeps its precision.
struct AffineArgs {
  float shift, scale, bias;
};
AffineArgs affine_args(double mean, double rstd, double a, double bias, DType t) {
  const double fold_limit = t == DType::f16 ? 64.0 : 8.0;
  if (std::abs(mean) * rstd <= fold_limit)
    return {0.0f, static_cast<float>(a), static_cast<float>(bias - mean * a)};
  const float mean_hi = static_cast<float>(mean);
  return {mean_hi, static_cast<float>(a),
          static_cast<float>(bias - (mean - static_cast<double>(mean_hi)) * a)};
}

class NormCpuOp : public CpuOp {
 public:
  NormCpuOp(std::unique_ptr<Op> ref, NormConfig c, const EltwiseKernels* e, const ReduceKernels* r)
      : CpuOp(std::move(ref)), c_(c), elt_(e), red_(r) {}

  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    if (y.numel() == 0) return;
    // Y's C channels; X's and the residual's rows may lie among more (x_from, residual_from).
    int64_t n = y.dim(0), c = y.dim(1), s = y.numel() / (n * c);
    std::vector<double> scale = ref::to_f64(*in[1]), bias = ref::to_f64(*in[2]);
    std::vector<float> shift(static_cast<size_t>(c)), mul(static_cast<size_t>(c)),
        add(static_cast<size_t>(c));
    size_t es = dtype_size(x.dtype());
    char* yp = static_cast<char*>(y.raw());
    // Row r (batch item r / c, channel r % c) of a tensor holding these channels from `from` on.
    auto rows_of = [&](const Tensor* t, int64_t from) {
      const char* p = t ? static_cast<const char*>(t->raw()) : nullptr;
      const int64_t total = t ? t->dim(1) : c, off = std::max<int64_t>(from, 0);
      return [p, total, off, c, s, es](int64_t r) {
        return p ? p + ((r / c) * total + off + r % c) * s * static_cast<int64_t>(es) : nullptr;
      };
    };
    const auto x_row = rows_of(&x, c_.x_from);
    const auto r_row = rows_of(c_.residual ? in.back() : nullptr, c_.residual_from);
    if (c_.kind == NormKind::batch) {
      std::vector<double> mean = ref::to_f64(*in[3]), var = ref::to_f64(*in[4]);
      for (size_t k = 0; k < static_cast<size_t>(c); ++k) {
        const double rstd = 1.0 / std::sqrt(var[k] + c_.epsilon);
        const AffineArgs f = affine_args(mean[k], rstd, scale[k] * rstd, bias[k], x.dtype());
        shift[k] = f.shift;
        mul[k] = f.scale;
        add[k] = f.bias;
      }
      parallel_rows(ctx, n * c, s, kChunkElems, [&](int64_t r, int64_t b, int64_t e) {
        size_t k = static_cast<size_t>(r % c);
        const int64_t at = b * static_cast<int64_t>(es);
        const char* res = r_row(r);
        elt_->affine(x_row(r) + at, res ? res + at : nullptr, yp + r * s * es + at, e - b, shift[k],
                     mul[k], add[k], c_.act, c_.residual_after_act);
      });
      return;
    }
    int64_t groups = c_.kind == NormKind::instance ? c : c_.groups;
    int64_t cg = c / groups, len = cg * s, blocks = n * groups;
    int64_t per_block = (len + kChunkElems - 1) / kChunkElems;
    // Block b's mean and 1 / std from its chunks' partial sums s1, s2 (per_block each), summed
    // in chunk order whoever computed them, so the result does not depend on the threads.
    auto finish_stats = [&](float shift, const double* p1, const double* p2, double& mean,
                            double& rstd) {
      double t1 = 0, t2 = 0;
      for (int64_t j = 0; j < per_block; ++j) {
        t1 += p1[j];
        t2 += p2[j];
      }
      const double m = t1 / static_cast<double>(len);
      const double var = std::max(0.0, t2 / static_cast<double>(len) - m * m);
      mean = shift + m;
      rstd = 1.0 / std::sqrt(var + c_.epsilon);
    };
    // Elements [i0, i1) of row rr of block b (row n * c + channel b * cg + rr, in the block's
    // batch item), normalized and activated.
    auto apply = [&](int64_t b, int64_t rr, int64_t i0, int64_t i1, double mean, double rstd) {
      const int64_t r = b * cg + rr, ch = r % c;
      const size_t p = static_cast<size_t>(c_.per_group_affine ? ch / cg : ch);
      const AffineArgs f = affine_args(mean, rstd, scale[p] * rstd, bias[p], x.dtype());
      const int64_t at = i0 * static_cast<int64_t>(es);
      const char* res = r_row(r);
      elt_->affine(x_row(r) + at, res ? res + at : nullptr,
                   yp + r * s * static_cast<int64_t>(es) + at, i1 - i0, f.shift, f.scale, f.bias,
                   c_.act, c_.residual_after_act);
    };
    // A block's cg channels follow each other in its batch item.
    auto block_at = [&](int64_t b) { return x_row(b * cg); };

    const int64_t threads = ctx.pool ? ctx.pool->size() : 1;
    if (threads > 1 && blocks % threads == 0) {
      // Whole blocks to each thread, statistics then output: one parallel region instead of
      // two per wave, and each block's second read on the core that made the first. On two
      // threads (`voxrt profile`, bf16 products, four alternations) unet3d_gn's GroupNorms
      // went 3.97-4.23 -> 3.35-3.65 ms, nnunet3d's InstanceNorms 3.60-4.26 -> 3.10-3.32 ms.
      split_items(
          ctx.pool, blocks,
          [&](int64_t begin, int64_t end) {
            std::vector<double> p1(static_cast<size_t>(per_block)), p2(p1.size());
            for (int64_t b = begin; b < end; ++b) {
              const float shift = sampled_mean(block_at(b), x.dtype(), len);
              for (int64_t j = 0; j < per_block; ++j) {
                const int64_t i0 = j * kChunkElems, i1 = std::min(len, i0 + kChunkElems);
                red_->moments(block_at(b) + i0 * static_cast<int64_t>(es), i1 - i0, shift,
                              &p1[static_cast<size_t>(j)], &p2[static_cast<size_t>(j)]);
              }
              double mean = 0, rstd = 0;
              finish_stats(shift, p1.data(), p2.data(), mean, rstd);
              for (int64_t rr = 0; rr < cg; ++rr)
                for (int64_t i0 = 0; i0 < s; i0 += kChunkElems)
                  apply(b, rr, i0, std::min(s, i0 + kChunkElems), mean, rstd);
            }
          },
          blocks / threads);
      return;
    }
    // Blocks go in waves of a few MiB: statistics, then the normalized output, so the second
    // read of a wave comes from cache rather than memory. Each block's chunks spread over the
    // threads (fewer blocks than threads, or a count that does not divide among them).
    int64_t wave = std::max<int64_t>(1, kWaveBytes / (len * static_cast<int64_t>(es)));
    std::vector<double> s1(static_cast<size_t>(wave * per_block)), s2(s1.size());
    std::vector<float> shift_of(static_cast<size_t>(wave));
    std::vector<double> mean(static_cast<size_t>(wave)), rstd(mean.size());
    for (int64_t b0 = 0; b0 < blocks; b0 += wave) {
      int64_t nb = std::min(wave, blocks - b0);
      for (int64_t b = 0; b < nb; ++b)
        shift_of[static_cast<size_t>(b)] = sampled_mean(block_at(b0 + b), x.dtype(), len);
      parallel_rows(ctx, nb, len, kChunkElems, [&](int64_t b, int64_t i0, int64_t i1) {
        size_t slot = static_cast<size_t>(b * per_block + i0 / kChunkElems);
        red_->moments(block_at(b0 + b) + i0 * static_cast<int64_t>(es), i1 - i0,
                      shift_of[static_cast<size_t>(b)], &s1[slot], &s2[slot]);
      });
      for (size_t b = 0; b < static_cast<size_t>(nb); ++b)
        finish_stats(shift_of[b], &s1[b * static_cast<size_t>(per_block)],
                     &s2[b * static_cast<size_t>(per_block)], mean[b], rstd[b]);
      parallel_rows(ctx, nb * cg, s, kChunkElems, [&](int64_t rr, int64_t i0, int64_t i1) {
        const size_t b = static_cast<size_t>(rr / cg);
        apply(b0 + static_cast<int64_t>(b), rr % cg, i0, i1, mean[b], rstd[b]);
      });
    }
  }

  // Batch norm maps each element to its output; instance and group norm finish a block's
  // statistics before they write any of its outputs, and read nothing of another block then.
  bool may_overwrite_input() const override { return true; }

  std::string kernel_name() const override {
    const char* norm = c_.kind == NormKind::batch      ? "batchnorm"
                       : c_.kind == NormKind::instance ? "instnorm"
                                                       : "groupnorm";
    std::string op = norm;
    if (c_.residual && !c_.residual_after_act) op += "_add";
    if (c_.act.act != Act::none) op += std::string("_") + act_name(c_.act.act);
    if (c_.residual && c_.residual_after_act) op += "_add";
    return kernel_label(elt_->name, op);
  }

 private:
  NormConfig c_;
  const EltwiseKernels* elt_;
  const ReduceKernels* red_;
};

Lowering norm(NormKind kind, bool fused) {
  return [kind, fused](const LowerContext& ctx, std::unique_ptr<Op>& ref) -> std::unique_ptr<Op> {
    const ir::Node& n = ctx.node;
    if (!n.has_input(0) || !is_f32_or_f16(ctx.input_dtype(0))) return nullptr;
    for (size_t o = 1; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) return nullptr;
    NormConfig c;
    c.kind = kind;
    c.epsilon = n.attrs.get_float("epsilon", 1e-5f);
    if (kind == NormKind::batch && n.opset < 9 && n.attrs.get_int("spatial", 1) == 0)
      return nullptr;
    if (kind == NormKind::group) {
      c.groups = n.attrs.get_int("num_groups", 1);
      c.per_group_affine = n.opset < 21;
    }
    if (fused) {
      c.act = fused_activation(n.attrs);
      c.residual = n.attrs.get_int(kNormResidual, 0) != 0;
      c.residual_after_act = n.attrs.get_int(kResidualAfterActivation, 0) != 0;
      if (c.residual &&
          ctx.input_dtype(static_cast<int>(n.inputs.size()) - 1) != ctx.input_dtype(0))
        return nullptr;
      c.x_from = window_from(n.attrs, kFusedXFrom);
      c.residual_from = window_from(n.attrs, kFusedResidualFrom);
    }
    DType t = ctx.input_dtype(0);
    return std::make_unique<NormCpuOp>(std::move(ref), c, eltwise_kernels(t, ctx.isa),
                                       reduce_kernels(t, ctx.isa));
  };
}

}  // namespace

void register_norm_lowerings(CpuRegistry& r) {
  r.add("BatchNormalization", norm(NormKind::batch, false));
  r.add("InstanceNormalization", norm(NormKind::instance, false));
  r.add("GroupNormalization", norm(NormKind::group, false));
  std::string v = std::string(kInternalDomain) + ".";
  r.add(v + "FusedBatchNorm", norm(NormKind::batch, true));
  r.add(v + "FusedInstanceNorm", norm(NormKind::instance, true));
  r.add(v + "FusedGroupNorm", norm(NormKind::group, true));
}

}  // namespace voxrt::cpu
