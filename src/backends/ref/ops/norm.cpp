// Normalizations: BatchNormalization (inference), InstanceNormalization, GroupNormalization and
// LayerNormalization. Statistics are computed in double from the stored values, so fp16 inputs
// whose squares overflow fp16 still normalize correctly.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/ref/op.h"
#include "backends/ref/ops/arity.h"
#include "backends/ref/tensor_math.h"

namespace voxrt {
namespace {

constexpr std::initializer_list<DType> kFloatTypes = {DType::f32, DType::f16, DType::bf16,
                                                      DType::f64};

struct Stats {
  double mean;
  double inv_std;
};

// Mean and 1 / sqrt(population variance + epsilon) of x[base, base + count), count >= 1.
Stats stats(const std::vector<double>& x, int64_t base, int64_t count, double epsilon) {
  const double* p = x.data() + base;
  double sum = 0;
  for (int64_t i = 0; i < count; ++i) sum += p[i];
  double mean = sum / static_cast<double>(count);
  double sq = 0;
  for (int64_t i = 0; i < count; ++i) sq += (p[i] - mean) * (p[i] - mean);
  return {mean, 1.0 / std::sqrt(sq / static_cast<double>(count) + epsilon)};
}

double epsilon_attr(const OpContext& ctx) {
  double eps = ctx.node.attrs.get_float("epsilon", 1e-5f);
  if (!(eps >= 0) || !std::isfinite(eps))
    ctx.fail("attribute epsilon is " + std::to_string(eps) + ", expected a finite value >= 0");
  return eps;
}

void refuse_extra_outputs(const OpContext& ctx, const std::string& what) {
  for (size_t i = 1; i < ctx.node.outputs.size(); ++i)
    if (ctx.node.outputs[i] >= 0)
      ctx.fail("output " + std::to_string(i) + " (" + what +
               ") is requested; only inference (output Y) is supported");
}

void require_shape(const Op& op, const ValueMeta& m, const Shape& want, const std::string& role) {
  if (m.shape != want)
    throw Error(op.where + ": input " + role + " has shape " + shape_str(m.shape) + ", expected " +
                shape_str(want));
}

void require_channels(const Op& op, const Shape& x) {
  if (x.size() < 2)
    throw Error(op.where + ": input X has shape " + shape_str(x) +
                ", expected rank 2 or more (N, C, ...)");
}

int64_t spatial_size(const Shape& x) {
  int64_t s = 1;
  for (size_t d = 2; d < x.size(); ++d) s *= x[d];
  return s;
}

class BatchNormOp : public Op {
 public:
  explicit BatchNormOp(const OpContext& ctx) : epsilon_(epsilon_attr(ctx)) {
    ref::check_arity(ctx, 5, 5, ctx.opset < 14 ? 5 : 3);
    if (ctx.opset < 9) {
      int64_t spatial = ctx.node.attrs.get_int("spatial", 1);
      if (spatial != 0 && spatial != 1)
        ctx.fail("attribute spatial is " + std::to_string(spatial) + ", expected 0 or 1");
      per_activation_ = spatial == 0;
    }
    if (ctx.opset < 7 && ctx.node.attrs.get_int("is_test", 0) != 1)
      ctx.fail(
          "attribute is_test is not 1: opset 6 then normalizes with batch statistics "
          "(training); only inference (is_test = 1) is supported");
    int64_t training = ctx.node.attrs.get_int("training_mode", 0);
    if (training != 0)
      ctx.fail("attribute training_mode is " + std::to_string(training) +
               "; only inference (training_mode = 0) is supported");
    refuse_extra_outputs(ctx, "running or saved mean/variance, produced only in training");
  }

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    static const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (size_t i = 0; i < 5; ++i)
      require_dtype(in[i].dtype, kFloatTypes, std::string("input ") + names[i]);
    return {in[0].dtype};
  }

  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Shape& x = in[0].shape;
    require_channels(*this, x);
    Shape param = per_activation_ ? Shape(x.begin() + 1, x.end()) : Shape{x[1]};
    static const char* names[] = {"scale", "B", "input_mean", "input_var"};
    for (size_t i = 1; i < 5; ++i) require_shape(*this, in[i], param, names[i - 1]);
    return {x};
  }

  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    int64_t c_count = x.dim(1), s = spatial_size(x.shape());
    std::vector<double> scale = ref::to_f64(*in[1]), bias = ref::to_f64(*in[2]);
    std::vector<double> mean = ref::to_f64(*in[3]), var = ref::to_f64(*in[4]);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t c = (i / s) % c_count;
      size_t p = static_cast<size_t>(per_activation_ ? c * s + i % s : c);
      double y = (ref::load(x, i) - mean[p]) / std::sqrt(var[p] + epsilon_) * scale[p] + bias[p];
      ref::store(out[0], i, y);
    }
  }

 private:
  double epsilon_;
  bool per_activation_ = false;  // opset 7's spatial = 0: parameters shaped like X[1:]
};

// InstanceNormalization is GroupNormalization with one channel per group; `per_group_affine`
// selects opset 18's GroupNormalization, whose scale and bias hold one value per group.
class GroupNormOp : public Op {
 public:
  GroupNormOp(const OpContext& ctx, bool instance, bool per_group_affine)
      : epsilon_(epsilon_attr(ctx)), instance_(instance), per_group_affine_(per_group_affine) {
    ref::check_arity(ctx, 3, 3, 1);
    if (!instance) {
      if (!ctx.node.attrs.has("num_groups")) ctx.fail("attribute num_groups is required");
      groups_ = ctx.node.attrs.get_int("num_groups", 1);
      if (groups_ < 1)
        ctx.fail("attribute num_groups is " + std::to_string(groups_) + ", expected >= 1");
      int64_t stash = ctx.node.attrs.get_int("stash_type", 1);
      if (stash != 1 && stash != 10 && stash != 11 && stash != 16)
        ctx.fail("attribute stash_type is " + std::to_string(stash) +
                 ", expected a float type (1, 10, 11 or 16)");
    }
  }

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    static const char* names[] = {"X", "scale", "B"};
    for (size_t i = 0; i < 3; ++i)
      require_dtype(in[i].dtype, kFloatTypes, std::string("input ") + names[i]);
    return {in[0].dtype};
  }

  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Shape& x = in[0].shape;
    require_channels(*this, x);
    int64_t groups = group_count(x);
    if (x[1] % groups != 0)
      fail("input X has " + std::to_string(x[1]) + " channels, not divisible by num_groups " +
           std::to_string(groups));
    Shape param = {per_group_affine_ ? groups : x[1]};
    require_shape(*this, in[1], param, "scale");
    require_shape(*this, in[2], param, "B");
    return {x};
  }

  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& xt = *in[0];
    int64_t n_batch = xt.dim(0), c_count = xt.dim(1), s = spatial_size(xt.shape());
    int64_t groups = group_count(xt.shape()), cg = c_count / groups;
    if (cg * s == 0) return;
    std::vector<double> x = ref::to_f64(xt);
    std::vector<double> scale = ref::to_f64(*in[1]), bias = ref::to_f64(*in[2]);
    for (int64_t n = 0; n < n_batch; ++n)
      for (int64_t g = 0; g < groups; ++g) {
        int64_t base = (n * c_count + g * cg) * s;
        Stats st = stats(x, base, cg * s, epsilon_);
        for (int64_t c = g * cg; c < (g + 1) * cg; ++c) {
          size_t p = static_cast<size_t>(per_group_affine_ ? g : c);
          for (int64_t i = 0; i < s; ++i) {
            int64_t at = (n * c_count + c) * s + i;
            double y = (x[static_cast<size_t>(at)] - st.mean) * st.inv_std * scale[p] + bias[p];
            ref::store(out[0], at, y);
          }
        }
      }
  }

 private:
  // One group per channel for InstanceNormalization, and one for none (no division by zero).
  int64_t group_count(const Shape& x) const {
    return instance_ ? std::max<int64_t>(x[1], 1) : groups_;
  }

  double epsilon_;
  bool instance_;
  bool per_group_affine_;
  int64_t groups_ = 1;
};

DType stash_dtype(const OpContext& ctx) {
  int64_t t = ctx.node.attrs.get_int("stash_type", 1);
  switch (t) {
    case 1: return DType::f32;
    case 10: return DType::f16;
    case 11: return DType::f64;
    case 16: return DType::bf16;
    default:
      ctx.fail("attribute stash_type is " + std::to_string(t) +
               ", expected a float type (1, 10, 11 or 16)");
  }
}

// Normalizes over the axes from `axis` to the last; Scale and B broadcast against X.
class LayerNormOp : public Op {
 public:
  explicit LayerNormOp(const OpContext& ctx)
      : axis_(ctx.node.attrs.get_int("axis", -1)),
        epsilon_(epsilon_attr(ctx)),
        stash_(stash_dtype(ctx)) {
    ref::check_arity(ctx, 2, 3, 3);
  }

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kFloatTypes, "input X");
    require_dtype(in[1].dtype, kFloatTypes, "input Scale");
    if (in.size() > 2 && in[2].present) require_dtype(in[2].dtype, kFloatTypes, "input B");
    std::vector<DType> t = {in[0].dtype, stash_, stash_};
    t.resize(static_cast<size_t>(num_outputs));
    return t;
  }

  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Shape& x = in[0].shape;
    int64_t axis = normalized_axis(x);
    Shape joined;
    if (!ref::broadcast_shape(in[1].shape, x, joined) || joined != x)
      fail("input Scale has shape " + shape_str(in[1].shape) + ", which does not broadcast to X " +
           shape_str(x));
    if (in.size() > 2 && in[2].present &&
        (!ref::broadcast_shape(in[2].shape, x, joined) || joined != x))
      fail("input B has shape " + shape_str(in[2].shape) + ", which does not broadcast to X " +
           shape_str(x));
    Shape stat = x;
    for (size_t d = static_cast<size_t>(axis); d < stat.size(); ++d) stat[d] = 1;
    std::vector<Shape> s = {x, stat, stat};
    s.resize(static_cast<size_t>(num_outputs));
    return s;
  }

  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& xt = *in[0];
    const Tensor* bt = in.size() > 2 ? in[2] : nullptr;
    const Shape& shape = xt.shape();
    int64_t axis = normalized_axis(shape);
    int64_t len = 1;
    for (size_t d = static_cast<size_t>(axis); d < shape.size(); ++d) len *= shape[d];
    if (len == 0) {
      // Rows of no elements: Y is empty, each row's Mean and InvStdDev those of nothing (0 / 0),
      // NaN, rather than whatever the output's memory held.
      int64_t rows = 1;
      for (size_t d = 0; d < static_cast<size_t>(axis); ++d) rows *= shape[d];
      for (size_t o = 1; o < out.size() && o < 3; ++o)
        if (out[o].defined())
          for (int64_t r = 0; r < rows; ++r)
            ref::store(out[o], r, std::numeric_limits<double>::quiet_NaN());
      return;
    }
    int64_t rows = xt.numel() / len;
    std::vector<double> x = ref::to_f64(xt);
    std::vector<Stats> st(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      st[static_cast<size_t>(r)] = stats(x, r * len, len, epsilon_);
      if (out.size() > 1 && out[1].defined())
        ref::store(out[1], r, st[static_cast<size_t>(r)].mean);
      if (out.size() > 2 && out[2].defined())
        ref::store(out[2], r, st[static_cast<size_t>(r)].inv_std);
    }
    std::vector<std::vector<int64_t>> strides = {ref::broadcast_strides(in[1]->shape(), shape)};
    if (bt) strides.push_back(ref::broadcast_strides(bt->shape(), shape));
    const Tensor& scale = *in[1];
    ref::for_each_index(shape, strides, [&](int64_t i, const std::vector<int64_t>& off) {
      const Stats& s = st[static_cast<size_t>(i / len)];
      double y = (x[static_cast<size_t>(i)] - s.mean) * s.inv_std * ref::load(scale, off[0]);
      if (bt) y += ref::load(*bt, off[1]);
      ref::store(out[0], i, y);
    });
  }

 private:
  int64_t normalized_axis(const Shape& x) const {
    int64_t axis = axis_;
    if (!ref::normalize_axis(axis, static_cast<int64_t>(x.size())))
      fail("attribute axis is " + std::to_string(axis_) + ", out of range for X of shape " +
           shape_str(x));
    return axis;
  }

  int64_t axis_;
  double epsilon_;
  DType stash_;
};

}  // namespace

void register_norm_ops(OpRegistry& r) {
  r.add("BatchNormalization", 6, 21,
        [](const OpContext& c) { return std::make_unique<BatchNormOp>(c); });
  r.add("InstanceNormalization", 6, 21,
        [](const OpContext& c) { return std::make_unique<GroupNormOp>(c, true, false); });
  r.add("GroupNormalization", 18, 20,
        [](const OpContext& c) { return std::make_unique<GroupNormOp>(c, false, true); });
  r.add("GroupNormalization", 21, 21,
        [](const OpContext& c) { return std::make_unique<GroupNormOp>(c, false, false); });
  r.add("LayerNormalization", 17, 21,
        [](const OpContext& c) { return std::make_unique<LayerNormOp>(c); });
}

}  // namespace voxrt
