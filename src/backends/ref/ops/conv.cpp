// Conv and ConvTranspose over any number of spatial axes, with groups, accumulating in double.
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

std::vector<int64_t> spatial(const Shape& s) {
  return std::vector<int64_t>(s.begin() + 2, s.end());
}

int64_t parse_group(const OpContext& ctx) {
  int64_t group = ctx.node.attrs.get_int("group", 1);
  if (group < 1 || group >= ref::kMaxWindowAttr)
    ctx.fail("attribute group is " + std::to_string(group) + ", expected a positive count");
  return group;
}

// Checks what Conv and ConvTranspose share: X is (N, C, spatial...), W has the same rank, and
// kernel_shape (when given) matches W's spatial dims.
void check_x_w(const Op& op, const WindowAttrs& a, const Shape& x, const Shape& w) {
  auto fail = [&](const std::string& what) { throw Error(op.where + ": " + what); };
  if (x.size() < 3)
    fail("input X has shape " + shape_str(x) + ", expected rank 3 or more (N, C, spatial...)");
  if (w.size() != x.size())
    fail("input W has shape " + shape_str(w) + ", expected the rank of X (" + shape_str(x) + ")");
  for (size_t d = 2; d < w.size(); ++d)
    if (w[d] < 1) fail("input W has shape " + shape_str(w) + ", expected kernel dims of 1 or more");
  if (!a.kernel.empty() && a.kernel != spatial(w))
    fail("attribute kernel_shape does not match the spatial dims of W " + shape_str(w));
}

// W and B of X's type, as ONNX's Conv and ConvTranspose define them (T for all three): a W of
// another float type left the value types ambiguous, and the reference and the optimized session
// rounded differently (a fuzz finding: bfloat16 X, float16 W, run widened to float32).
void check_same_type(const Op& op, const std::vector<ValueMeta>& in) {
  for (size_t i = 1; i < in.size() && i < 3; ++i)
    if (in[i].present && in[i].dtype != in[0].dtype)
      throw Error(op.where + ": input " + (i == 1 ? "W" : "B") + " has dtype " +
                  std::string(dtype_name(in[i].dtype)) + ", expected X's dtype, " +
                  std::string(dtype_name(in[0].dtype)));
}

void check_bias(const Op& op, const ValueMeta& b, int64_t m) {
  if (b.present && b.shape != Shape{m})
    throw Error(op.where + ": input B has shape " + shape_str(b.shape) + ", expected {" +
                std::to_string(m) + "} (one per output channel)");
}

class ConvOp : public Op {
 public:
  explicit ConvOp(const OpContext& ctx) : attrs_(ref::parse_window(ctx)), group_(parse_group(ctx)) {
    ref::check_arity(ctx, 2, 3, 1);
  }

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kFloatTypes, "input X");
    check_same_type(*this, in);
    return {in[0].dtype};
  }

  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    Geometry g = geometry(in[0].shape, in[1].shape);
    if (in.size() > 2) check_bias(*this, in[2], in[1].shape[0]);
    Shape y = {in[0].shape[0], in[1].shape[0]};
    y.insert(y.end(), g.out.begin(), g.out.end());
    return {y};
  }

  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& xt = *in[0];
    const Tensor& wt = *in[1];
    const Tensor* bt = in.size() > 2 ? in[2] : nullptr;
    Geometry g = geometry(xt.shape(), wt.shape());
    std::vector<double> x = ref::to_f64(xt);
    std::vector<double> w = ref::to_f64(wt);
    int64_t n_batch = xt.dim(0), c_in = xt.dim(1), m_out = wt.dim(0);
    int64_t cg = c_in / group_, mg = m_out / group_;
    int64_t s_in = g.in_size(), s_out = g.out_size(), k_size = g.kernel_size();
    std::vector<double> bias(static_cast<size_t>(m_out), 0.0);
    if (bt)
      for (int64_t m = 0; m < m_out; ++m) bias[static_cast<size_t>(m)] = ref::load(*bt, m);
    std::vector<Tap> taps;
    for (int64_t p = 0; p < s_out; ++p) {
      ref::window_taps(g, p, taps);
      for (int64_t n = 0; n < n_batch; ++n)
        for (int64_t m = 0; m < m_out; ++m) {
          int64_t grp = m / mg;
          double acc = bias[static_cast<size_t>(m)];
          for (int64_t c = 0; c < cg; ++c) {
            const double* xp = x.data() + (n * c_in + grp * cg + c) * s_in;
            const double* wp = w.data() + (m * cg + c) * k_size;
            for (const Tap& t : taps) acc += xp[t.x] * wp[t.k];
          }
          ref::store(out[0], (n * m_out + m) * s_out + p, acc);
        }
    }
  }

  int64_t macs(const std::vector<ValueMeta>& in, const std::vector<Shape>& out) const override {
    const Shape& w = in[1].shape;
    int64_t per_output = 1;
    for (size_t d = 1; d < w.size(); ++d) per_output *= w[d];
    return shape_numel(out[0]) * per_output;
  }

 private:
  Geometry geometry(const Shape& x, const Shape& w) const {
    check_x_w(*this, attrs_, x, w);
    if (x[1] != w[1] * group_)
      fail("input X has " + std::to_string(x[1]) + " channels, expected W.shape[1] * group = " +
           std::to_string(w[1]) + " * " + std::to_string(group_));
    if (w[0] % group_ != 0)
      fail("W has " + std::to_string(w[0]) + " output channels, not divisible by group " +
           std::to_string(group_));
    return ref::resolve_window(where, attrs_, spatial(x), spatial(w));
  }

  WindowAttrs attrs_;
  int64_t group_;
};

// ConvTranspose scatters each input element through the kernel: input position i and kernel
// position k reach output position i * stride + k * dilation - pad_begin.
class ConvTransposeOp : public Op {
 public:
  explicit ConvTransposeOp(const OpContext& ctx)
      : attrs_(ref::parse_window(ctx)),
        group_(parse_group(ctx)),
        output_padding_(ref::window_ints(ctx, "output_padding", 0)),
        output_shape_(ref::window_ints(ctx, "output_shape", 1)) {
    ref::check_arity(ctx, 2, 3, 1);
  }

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kFloatTypes, "input X");
    check_same_type(*this, in);
    return {in[0].dtype};
  }

  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    Geometry g = geometry(in[0].shape, in[1].shape);
    int64_t m_out = in[1].shape[1] * group_;
    if (in.size() > 2) check_bias(*this, in[2], m_out);
    Shape y = {in[0].shape[0], m_out};
    y.insert(y.end(), g.out.begin(), g.out.end());
    return {y};
  }

  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& xt = *in[0];
    const Tensor& wt = *in[1];
    const Tensor* bt = in.size() > 2 ? in[2] : nullptr;
    Geometry g = geometry(xt.shape(), wt.shape());
    std::vector<double> x = ref::to_f64(xt);
    std::vector<double> w = ref::to_f64(wt);
    int64_t n_batch = xt.dim(0), c_in = xt.dim(1), mg = wt.dim(1);
    int64_t cg = c_in / group_, m_out = mg * group_;
    int64_t s_in = g.in_size(), s_out = g.out_size(), k_size = g.kernel_size();
    std::vector<double> y(static_cast<size_t>(out[0].numel()), 0.0);
    if (bt)
      for (int64_t i = 0; i < out[0].numel(); ++i)
        y[static_cast<size_t>(i)] = ref::load(*bt, (i / s_out) % m_out);
    std::vector<Tap> taps;  // here Tap::x is the output offset
    for (int64_t p = 0; p < s_in; ++p) {
      scatter_taps(g, p, taps);
      for (int64_t n = 0; n < n_batch; ++n)
        for (int64_t c = 0; c < c_in; ++c) {
          double xv = x[static_cast<size_t>((n * c_in + c) * s_in + p)];
          int64_t grp = c / cg;
          for (int64_t m = 0; m < mg; ++m) {
            const double* wp = w.data() + (c * mg + m) * k_size;
            double* yp = y.data() + (n * m_out + grp * mg + m) * s_out;
            for (const Tap& t : taps) yp[t.x] += xv * wp[t.k];
          }
        }
    }
    ref::from_f64(y, out[0]);
  }

  int64_t macs(const std::vector<ValueMeta>& in, const std::vector<Shape>& /*out*/) const override {
    const Shape& w = in[1].shape;
    int64_t per_input = 1;
    for (size_t d = 1; d < w.size(); ++d) per_input *= w[d];
    return shape_numel(in[0].shape) * per_input;
  }

 private:
  // Output size and padding per ONNX: from output_shape when given (padding split so that
  // SAME_UPPER puts the odd element at the end, anything else at the start), from
  // input * stride for SAME_*, else from pads.
  Geometry geometry(const Shape& x, const Shape& w) const {
    check_x_w(*this, attrs_, x, w);
    if (x[1] != w[0])
      fail("input X has " + std::to_string(x[1]) +
           " channels, expected W.shape[0] = " + std::to_string(w[0]));
    if (x[1] % group_ != 0)
      fail("input X has " + std::to_string(x[1]) + " channels, not divisible by group " +
           std::to_string(group_));
    size_t rank = x.size() - 2;
    Geometry g;
    g.in = spatial(x);
    g.kernel = spatial(w);
    g.stride = ref::per_axis(where, attrs_.strides, rank, 1, "strides");
    g.dilation = ref::per_axis(where, attrs_.dilations, rank, 1, "dilations");
    std::vector<int64_t> extra = ref::per_axis(where, output_padding_, rank, 0, "output_padding");
    std::vector<int64_t> target = output_shape_;
    if (target.size() == rank + 2) target.erase(target.begin(), target.begin() + 2);
    if (!target.empty()) target = ref::per_axis(where, target, rank, 0, "output_shape");
    if (!attrs_.pads.empty() && attrs_.pads.size() != 2 * rank)
      fail("attribute pads has " + std::to_string(attrs_.pads.size()) + " values, expected " +
           std::to_string(2 * rank) + " (begin and end per axis)");
    bool same =
        attrs_.auto_pad == ref::AutoPad::same_upper || attrs_.auto_pad == ref::AutoPad::same_lower;
    g.out.resize(rank);
    g.pad_begin.assign(rank, 0);
    g.pad_end.assign(rank, 0);
    for (size_t d = 0; d < rank; ++d) {
      int64_t full = g.stride[d] * (g.in[d] - 1) + extra[d] + (g.kernel[d] - 1) * g.dilation[d] + 1;
      if (!target.empty() || same) {
        g.out[d] = !target.empty() ? target[d] : g.in[d] * g.stride[d];
        int64_t total = full - g.out[d];
        int64_t half = ref::floor_div(total, 2);
        g.pad_begin[d] = attrs_.auto_pad == ref::AutoPad::same_upper ? half : total - half;
        g.pad_end[d] = total - g.pad_begin[d];
        continue;
      }
      if (attrs_.auto_pad == ref::AutoPad::not_set && !attrs_.pads.empty()) {
        g.pad_begin[d] = attrs_.pads[d];
        g.pad_end[d] = attrs_.pads[d + rank];
      }
      g.out[d] = full - g.pad_begin[d] - g.pad_end[d];
      if (g.out[d] < 1)
        fail("spatial axis " + std::to_string(d) + " gives output size " +
             std::to_string(g.out[d]) + " (pads exceed the transposed extent " +
             std::to_string(full) + ")");
    }
    return g;
  }

  static void scatter_taps(const Geometry& g, int64_t p, std::vector<Tap>& taps) {
    size_t rank = g.in.size();
    std::vector<int64_t> i_idx = ref::unflatten(p, g.in);
    std::vector<int64_t> k(rank, 0);
    taps.clear();
    int64_t kn = g.kernel_size();
    for (int64_t kf = 0; kf < kn; ++kf) {
      int64_t y = 0;
      bool inside = true;
      for (size_t d = 0; d < rank && inside; ++d) {
        int64_t o = i_idx[d] * g.stride[d] + k[d] * g.dilation[d] - g.pad_begin[d];
        inside = o >= 0 && o < g.out[d];
        y = y * g.out[d] + o;
      }
      if (inside) taps.push_back(Tap{kf, y});
      for (size_t d = rank; d-- > 0;) {
        if (++k[d] < g.kernel[d]) break;
        k[d] = 0;
      }
    }
  }

  WindowAttrs attrs_;
  int64_t group_;
  std::vector<int64_t> output_padding_;
  std::vector<int64_t> output_shape_;
};

}  // namespace

void register_conv_ops(OpRegistry& r) {
  r.add("Conv", 1, 21, [](const OpContext& c) { return std::make_unique<ConvOp>(c); });
  r.add("ConvTranspose", 1, 21,
        [](const OpContext& c) { return std::make_unique<ConvTransposeOp>(c); });
}

}  // namespace voxrt
