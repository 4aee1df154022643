// BatchNormalization (inference), InstanceNormalization and GroupNormalization on f32 and f16,
// and their voxrt.Fused*Norm forms with a residual added and Relu / LeakyRelu applied as the
// output is written. Statistics: one pass of fp32-lane sums, each unit of rows (a depth plane,
// a few 2D rows) about a shift from its own first values, carried into double; then one pass
// of y = act((x - mean) * scale / std + bias + residual). On threads, each takes the t-th range
// of every channel's units, the depths (rows) the convolutions around it write and read on
// its core; small activations go whole blocks a thread.
#include <algorithm>
#include <cmath>
#include <functional>

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
// Instance and group norms of activations up to this size give whole blocks to each thread in
// one job; larger ones each thread a range of every channel's units, statistics and output in
// a job each (NormCpuOp::run). Zen 5, two threads, `voxrt profile`, alternated with a switch:
// MONAI's UNet with InstanceNorm (bench/export_monai_instancenorm.py) norms of 12^3 and 24^3
// (0.4-0.9 MB) 0.023-0.045 ms whole against 0.040-0.079 ranged, its 3-channel 96^3 one 0.62 ->
// 0.27-0.34 ms and its four 8-channel 48^3 ones 0.72-0.77 -> 0.60-0.63 ranged; nnU-Net's four
// 16-channel 48^3 ones the other way, 1.05-1.17 whole against 1.24-1.60 ranged (a thread's share
// of the 4 MiB wave outgrows L2, so the output pass reads from L3), its norms in all within the
// host's noise either way, as unet3d_gn's.
constexpr int64_t kWholeBlocksBytes = int64_t{1} << 20;

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

// The mean of the first (up to) 16 values, a line of fp32, which the moments read next: a shift
// close to the values for their sums, so that fp32 lanes keep their precision where the mean is
// far from zero against the spread. Samples spread over the unit had missed the cache one line
// each (`norm_bench`, 8 channels at 96^3, one thread: 2.5 -> 4.7 ms).
float leading_mean(const char* x, DType t, int64_t n) {
  const int64_t samples = std::min<int64_t>(n, 16);
  double s = 0;
  for (int64_t i = 0; i < samples; ++i) {
    const float v = load_float(x, t, i);
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

// A channel's s elements as `count` units of whole rows (of the last dim): a depth plane each in
// 3D, a few rows (about kUnitElems elements) in 2D, one unit where there are no rows. The
// units are the statistics' partial sums and the threads' split, and depend on the shape alone.
constexpr int64_t kUnitElems = 4096;
struct Units {
  int64_t count, rows_per, width, rows;  // rows: the channel's rows of `width`
  int64_t begin(int64_t k) const { return std::min(rows, k * rows_per) * width; }
};
Units units_of(const Tensor& y) {
  const int64_t rank = y.rank();
  if (rank < 4) {
    const int64_t s = rank > 2 ? y.dim(2) : 1;
    return {1, 1, s, 1};
  }
  const int64_t w = y.dim(rank - 1), h = y.dim(rank - 2);
  int64_t d = 1;
  for (int64_t k = 2; k < rank - 2; ++k) d *= y.dim(k);
  const int64_t per = d > 1 ? h : std::clamp<int64_t>(kUnitElems / std::max<int64_t>(w, 1), 1, h);
  const int64_t rows = d * h;
  return {std::max<int64_t>(1, (rows + per - 1) / per), std::max<int64_t>(per, 1), w, rows};
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
    const Units u = units_of(y);
    const int64_t threads = ctx.pool ? ctx.pool->size() : 1;
    const int64_t ranges = std::min(threads, u.count);
    // Elements [units r0, r1) of row r (batch item r / c, channel r % c), normalized and
    // activated through the per-channel affine (shift, scale, bias).
    auto apply = [&](int64_t r, int64_t u0, int64_t u1, const AffineArgs& f) {
      const int64_t i0 = u.begin(u0), i1 = u.begin(u1), at = i0 * static_cast<int64_t>(es);
      const char* res = r_row(r);
      elt_->affine(x_row(r) + at, res ? res + at : nullptr,
                   yp + r * s * static_cast<int64_t>(es) + at, i1 - i0, f.shift, f.scale, f.bias,
                   c_.act, c_.residual_after_act);
    };
    // fn(q, first unit, end unit) for rows q < `rows` (rows first + q of the tensor): thread t
    // takes the t-th range of units of every row (split_ranges), the depths (or rows) the
    // convolutions before and after it write and read on that core, which a split by channels
    // would read from the other core's cache. Items go batch item by batch item, as the
    // convolutions order theirs: with several items, each core takes whole items first.
    auto for_ranges = [&](int64_t first, int64_t rows,
                          const std::function<void(int64_t, int64_t, int64_t)>& fn) {
      split_ranges(ctx.pool, ranges * rows, [&](RangeCursor& items) {
        for (int64_t item; (item = items.next()) >= 0;) {
          // The rows [q0, q0 + len) of one batch item hold items ranges * q0 on, range-major.
          const int64_t n_item = (first + item / ranges) / c;
          const int64_t q0 = std::max(first, n_item * c) - first,
                        len = std::min(first + rows, (n_item + 1) * c) - first - q0;
          const int64_t v = item - ranges * q0, r = v / len;
          fn(q0 + v % len, u.count * r / ranges, u.count * (r + 1) / ranges);
        }
      });
    };
    if (c_.kind == NormKind::batch) {
      std::vector<double> mean = ref::to_f64(*in[3]), var = ref::to_f64(*in[4]);
      std::vector<AffineArgs> f(static_cast<size_t>(c));
      for (size_t k = 0; k < static_cast<size_t>(c); ++k) {
        const double rstd = 1.0 / std::sqrt(var[k] + c_.epsilon);
        f[k] = affine_args(mean[k], rstd, scale[k] * rstd, bias[k], x.dtype());
      }
      for_ranges(0, n * c, [&](int64_t r, int64_t u0, int64_t u1) {
        apply(r, u0, u1, f[static_cast<size_t>(r % c)]);
      });
      return;
    }
    const int64_t groups = c_.kind == NormKind::instance ? c : c_.groups;
    const int64_t cg = c / groups, len = cg * s, blocks = n * groups;
    // Each unit's moments about a shift sampled from the unit itself (so no pass reads a block
    // before its statistics), kept apart and combined in row and unit order whoever computed
    // them, so the result does not depend on the threads.
    struct Moments {
      double shift, s1, s2;  // sums of (x - shift) and its square
      int64_t count;
    };
    auto moments = [&](int64_t r, int64_t u0, int64_t u1, Moments* m) {
      for (int64_t k = u0; k < u1; ++k) {
        const char* at = x_row(r) + u.begin(k) * static_cast<int64_t>(es);
        const int64_t count = u.begin(k + 1) - u.begin(k);
        const float shift = leading_mean(at, x.dtype(), count);
        m[k].shift = shift;
        m[k].count = count;
        red_->moments(at, count, shift, &m[k].s1, &m[k].s2);
      }
    };
    // Block b's statistics from its rows' units' moments (cg * u.count of them), as the affine
    // of each of its rows into f: the mean from the units' sums, then the sum of squares about
    // it, sum (x - m)^2 = s2 + 2 (shift - m) s1 + count (shift - m)^2 for each unit.
    const size_t per_block = static_cast<size_t>(cg * u.count);
    auto finish = [&](int64_t b, const Moments* m, AffineArgs* f) {
      double sum = 0;
      for (size_t j = 0; j < per_block; ++j)
        sum += m[j].s1 + m[j].shift * static_cast<double>(m[j].count);
      const double mean = sum / static_cast<double>(len);
      double sq = 0;
      for (size_t j = 0; j < per_block; ++j) {
        const double d = m[j].shift - mean;
        sq += m[j].s2 + 2 * d * m[j].s1 + static_cast<double>(m[j].count) * d * d;
      }
      const double rstd =
          1.0 / std::sqrt(std::max(0.0, sq / static_cast<double>(len)) + c_.epsilon);
      for (int64_t rr = 0; rr < cg; ++rr) {
        const int64_t ch = (b * cg + rr) % c;
        const size_t p = static_cast<size_t>(c_.per_group_affine ? ch / cg : ch);
        f[rr] = affine_args(mean, rstd, scale[p] * rstd, bias[p], x.dtype());
      }
    };

    if (threads > 1 && n * c * s * static_cast<int64_t>(es) <= kWholeBlocksBytes) {
      // Small activations: whole blocks to each thread, statistics then output in one job.
      split_items(
          ctx.pool, blocks,
          [&](int64_t begin, int64_t end) {
            std::vector<Moments> m(per_block);
            std::vector<AffineArgs> f(static_cast<size_t>(cg));
            for (int64_t b = begin; b < end; ++b) {
              // A block's cg channels follow each other in its batch item.
              for (int64_t rr = 0; rr < cg; ++rr)
                moments(b * cg + rr, 0, u.count, &m[static_cast<size_t>(rr * u.count)]);
              finish(b, m.data(), f.data());
              for (int64_t rr = 0; rr < cg; ++rr)
                apply(b * cg + rr, 0, u.count, f[static_cast<size_t>(rr)]);
            }
          },
          (blocks + threads - 1) / threads);
      return;
    }
    // Blocks go in waves of a few MiB: statistics, then the normalized output, so the second
    // read of a wave comes from cache rather than memory; within a wave each thread its range
    // of every row's units (for_ranges).
    const int64_t wave =
        std::clamp<int64_t>(kWaveBytes / (len * static_cast<int64_t>(es)), 1, blocks);
    std::vector<Moments> m(static_cast<size_t>(wave) * per_block);
    std::vector<AffineArgs> f(static_cast<size_t>(wave * cg));
    for (int64_t b0 = 0; b0 < blocks; b0 += wave) {
      const int64_t nb = std::min(wave, blocks - b0), first = b0 * cg;
      for_ranges(first, nb * cg, [&](int64_t q, int64_t u0, int64_t u1) {
        moments(first + q, u0, u1, &m[static_cast<size_t>(q * u.count)]);
      });
      for (int64_t b = 0; b < nb; ++b)
        finish(b0 + b, &m[static_cast<size_t>(b) * per_block], &f[static_cast<size_t>(b * cg)]);
      for_ranges(first, nb * cg, [&](int64_t q, int64_t u0, int64_t u1) {
        apply(first + q, u0, u1, f[static_cast<size_t>(q)]);
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
