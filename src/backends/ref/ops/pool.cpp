// MaxPool (with its optional Indices output), AveragePool, GlobalAveragePool and GlobalMaxPool.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backends/ref/op.h"
#include "backends/ref/ops/window.h"
#include "backends/ref/tensor_math.h"

namespace voxrt {
namespace {

using ref::Geometry;
using ref::Tap;
using ref::WindowAttrs;

constexpr std::initializer_list<DType> kFloatTypes = {DType::f32, DType::f16, DType::bf16,
                                                      DType::f64};
constexpr std::initializer_list<DType> kMaxPoolTypes = {DType::f32, DType::f16, DType::bf16,
                                                        DType::f64, DType::i8,  DType::u8};

enum class PoolKind { max, average };

int64_t flag_attr(const OpContext& ctx, const std::string& name) {
  int64_t v = ctx.node.attrs.get_int(name, 0);
  if (v != 0 && v != 1)
    ctx.fail("attribute " + name + " is " + std::to_string(v) + ", expected 0 or 1");
  return v;
}

// Offset of spatial index `idx` when the first spatial axis varies fastest (MaxPool's
// storage_order = 1).
int64_t column_major_offset(int64_t row_major, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = row_major % dims[d];
    row_major /= dims[d];
  }
  int64_t off = 0;
  for (size_t d = dims.size(); d-- > 0;) off = off * dims[d] + idx[d];
  return off;
}

class PoolOp : public Op {
 public:
  PoolOp(const OpContext& ctx, PoolKind kind) : kind_(kind), attrs_(ref::parse_window(ctx)) {
    if (attrs_.kernel.empty()) ctx.fail("attribute kernel_shape is required");
    int64_t taps = 1;
    for (int64_t k : attrs_.kernel) {
      taps *= k;  // each k < 2^31, so this cannot overflow before the check below trips
      if (taps >= ref::kMaxWindowAttr)
        ctx.fail("attribute kernel_shape covers 2^31 or more elements per window");
    }
    attrs_.ceil_mode = flag_attr(ctx, "ceil_mode") == 1;
    if (kind == PoolKind::max) {
      column_major_ = flag_attr(ctx, "storage_order") == 1;
      if (ctx.node.outputs.size() > 1 && ctx.opset < 8)
        ctx.fail("the Indices output exists from opset 8; the model imports opset " +
                 std::to_string(ctx.opset));
    } else {
      count_include_pad_ = flag_attr(ctx, "count_include_pad") == 1;
    }
    ref::check_arity(ctx, 1, 1, kind == PoolKind::max ? 2 : 1);
  }

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    if (kind_ == PoolKind::max) {
      require_dtype(in[0].dtype, kMaxPoolTypes, "input X");
      if (num_outputs > 1) return {in[0].dtype, DType::i64};
      return {in[0].dtype};
    }
    require_dtype(in[0].dtype, kFloatTypes, "input X");
    return {in[0].dtype};
  }

  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    Geometry g = geometry(in[0].shape);
    Shape y = {in[0].shape[0], in[0].shape[1]};
    y.insert(y.end(), g.out.begin(), g.out.end());
    return std::vector<Shape>(static_cast<size_t>(num_outputs), y);
  }

  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& xt = *in[0];
    Geometry g = geometry(xt.shape());
    std::vector<double> x = ref::to_f64(xt);
    int64_t planes = xt.dim(0) * xt.dim(1);
    int64_t s_in = g.in_size(), s_out = g.out_size();
    Tensor* indices = out.size() > 1 && out[1].defined() ? &out[1] : nullptr;
    std::vector<Tap> taps;
    for (int64_t p = 0; p < s_out; ++p) {
      int64_t in_padded = ref::window_taps(g, p, taps);
      for (int64_t plane = 0; plane < planes; ++plane) {
        const double* xp = x.data() + plane * s_in;
        int64_t y = plane * s_out + p;
        if (kind_ == PoolKind::average) {
          double sum = 0;
          for (const Tap& t : taps) sum += xp[t.x];
          int64_t count = count_include_pad_ ? in_padded : static_cast<int64_t>(taps.size());
          ref::store(out[0], y,
                     count > 0 ? sum / static_cast<double>(count)
                               : std::numeric_limits<double>::quiet_NaN());
          continue;
        }
        double best = -std::numeric_limits<double>::infinity();
        int64_t at = taps.empty() ? 0 : taps[0].x;
        for (const Tap& t : taps)
          if (xp[t.x] > best) {
            best = xp[t.x];
            at = t.x;
          }
        ref::store(out[0], y, best);
        if (indices) {
          int64_t local = column_major_ ? column_major_offset(at, g.in) : at;
          indices->data<int64_t>()[y] = plane * s_in + local;
        }
      }
    }
  }

 private:
  Geometry geometry(const Shape& x) const {
    if (x.size() != attrs_.kernel.size() + 2)
      fail("input X has shape " + shape_str(x) + ", expected rank " +
           std::to_string(attrs_.kernel.size() + 2) +
           " (N, C and one axis per kernel_shape entry)");
    return ref::resolve_window(where, attrs_, std::vector<int64_t>(x.begin() + 2, x.end()),
                               attrs_.kernel);
  }

  PoolKind kind_;
  WindowAttrs attrs_;
  bool column_major_ = false;
  bool count_include_pad_ = false;
};

class GlobalPoolOp : public Op {
 public:
  GlobalPoolOp(const OpContext& ctx, PoolKind kind) : kind_(kind) {
    ref::check_arity(ctx, 1, 1, 1);
  }

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kFloatTypes, "input X");
    return {in[0].dtype};
  }

  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Shape& x = in[0].shape;
    if (x.size() < 2)
      fail("input X has shape " + shape_str(x) + ", expected rank 2 or more (N, C, spatial...)");
    Shape y = x;
    for (size_t d = 2; d < y.size(); ++d) {
      if (x[d] < 1) fail("input X has shape " + shape_str(x) + ", an empty spatial axis");
      y[d] = 1;
    }
    return {y};
  }

  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    int64_t planes = x.dim(0) * x.dim(1);
    int64_t s = planes > 0 ? x.numel() / planes : 0;
    for (int64_t plane = 0; plane < planes; ++plane) {
      double acc = kind_ == PoolKind::max ? -std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t i = 0; i < s; ++i) {
        double v = ref::load(x, plane * s + i);
        if (kind_ == PoolKind::max)
          acc = std::isnan(v) || v > acc ? v : acc;
        else
          acc += v;
      }
      ref::store(out[0], plane, kind_ == PoolKind::max ? acc : acc / static_cast<double>(s));
    }
  }

 private:
  PoolKind kind_;
};

}  // namespace

void register_pool_ops(OpRegistry& r) {
  r.add("MaxPool", 1, 21,
        [](const OpContext& c) { return std::make_unique<PoolOp>(c, PoolKind::max); });
  r.add("AveragePool", 1, 21,
        [](const OpContext& c) { return std::make_unique<PoolOp>(c, PoolKind::average); });
  r.add("GlobalMaxPool", 1, 21,
        [](const OpContext& c) { return std::make_unique<GlobalPoolOp>(c, PoolKind::max); });
  r.add("GlobalAveragePool", 1, 21,
        [](const OpContext& c) { return std::make_unique<GlobalPoolOp>(c, PoolKind::average); });
}

}  // namespace voxrt
