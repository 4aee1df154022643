// Ops that voxrt's passes create by fusing ONNX nodes (domain "voxrt"). Their reference
// implementation runs the original ops one after another, so fused graphs keep an oracle.
#include "backends/ref/ops/fused.h"

#include <algorithm>
#include <cmath>

#include "backends/ref/op.h"
#include "backends/ref/tensor_math.h"

namespace voxrt {

namespace {

class FusedConvOp : public Op {
 public:
  FusedConvOp(std::unique_ptr<Op> conv, FusedEpilogue epilogue, bool has_residual,
              bool residual_after, int64_t parts, bool f32_out, bool head, bool head_softmax,
              int64_t group, int64_t x_from, int64_t residual_from, std::vector<Upsample> upsample,
              int64_t transposed, std::unique_ptr<Op> up)
      : conv_(std::move(conv)),
        epilogue_(epilogue),
        has_residual_(has_residual),
        residual_after_(residual_after),
        parts_(parts),
        f32_out_(f32_out),
        head_(head),
        head_softmax_(head_softmax),
        group_(group),
        x_from_(x_from),
        residual_from_(residual_from),
        upsample_(std::move(upsample)),
        transposed_(transposed),
        up_(std::move(up)) {}

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    std::vector<DType> t = conv_->infer_types(conv_inputs(in, false));
    if (has_residual_ && in[3].dtype != t[0]) fail("residual input must have the output's dtype");
    if (head_)
      for (size_t i = head_input(); i < head_input() + 2 && i < in.size(); ++i)
        if (in[i].present && in[i].dtype != t[0])
          fail("the head's weights and bias must have X's dtype");
    if (transposed_ >= 0)
      for (size_t i = up_input(); i < up_input() + 2 && i < in.size(); ++i)
        if (in[i].present && in[i].dtype != in[part_input(transposed_)].dtype)
          fail("the transposed part's weights and bias must have its dtype");
    if (f32_out_) t[0] = DType::f32;
    return t;
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    std::vector<Shape> s = conv_->infer_shapes(conv_inputs(in, true));
    if (has_residual_ && residual_from_ < 0 && in[3].shape != s[0])
      fail("residual input of shape " + shape_str(in[3].shape) + " does not match the output " +
           shape_str(s[0]));
    if (has_residual_ && residual_from_ >= 0) {
      // The output's M channels from channel residual_from on; the other dims the output's.
      Shape want = s[0];
      const bool ok = in[3].shape.size() == want.size() && want.size() > 1 &&
                      residual_from_ + want[1] <= in[3].shape[1];
      if (ok) want[1] = in[3].shape[1];
      if (!ok || in[3].shape != want)
        fail("residual input of shape " + shape_str(in[3].shape) + " has no channels [" +
             std::to_string(residual_from_) + ", " +
             std::to_string(residual_from_ + (s[0].size() > 1 ? s[0][1] : 0)) + ") of the output " +
             shape_str(s[0]));
    }
    if (head_) {
      const ValueMeta& w = in[head_input()];
      const int64_t m = s[0].size() > 1 ? s[0][1] : 0;
      bool ok = w.shape.size() == s[0].size() && w.shape[1] == m;
      for (size_t d = 2; ok && d < w.shape.size(); ++d) ok = w.shape[d] == 1;
      if (!ok)
        fail("head weights of shape " + shape_str(w.shape) + " do not fit a 1x1 convolution of " +
             std::to_string(m) + " channels at rank " + std::to_string(s[0].size()));
      const ValueMeta& b = in[head_input() + 1];
      if (b.present && b.shape != Shape{w.shape[0]})
        fail("head bias of shape " + shape_str(b.shape) + ", expected " +
             std::to_string(w.shape[0]));
      s[0][1] = w.shape[0];
    }
    if (!epilogue_.slopes.empty() &&
        (s[0].size() < 2 || s[0][1] != static_cast<int64_t>(epilogue_.slopes.size())))
      fail(std::to_string(epilogue_.slopes.size()) + " slopes for an output of shape " +
           shape_str(s[0]) + ": one per output channel expected");
    return s;
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    std::vector<const Tensor*> cin(in.begin(), in.begin() + std::min<size_t>(3, in.size()));
    Tensor joined, x_window, residual_window;
    // Parts read upsampled (x_upsample): upsampled first, as the Resize before them had it.
    std::vector<const Tensor*> parts(in.begin(), in.end());
    std::vector<Tensor> upsampled(static_cast<size_t>(parts_));
    for (int64_t p = 0; p < parts_; ++p) {
      const Upsample u = upsample_[static_cast<size_t>(p)];
      if (u == Upsample::none) continue;
      const Tensor& part = *in[part_input(p)];
      upsampled[static_cast<size_t>(p)] =
          sized(u) ? resize_to(part, u, stored_spatial(in[part_input(stored_part())]->shape()))
                   : upsample2(part, u);
      parts[part_input(p)] = &upsampled[static_cast<size_t>(p)];
    }
    if (transposed_ >= 0) {  // the ConvTranspose before it, as the unfused graph has it
      const size_t at = part_input(transposed_);
      std::vector<const Tensor*> up_in = {
          in[at], in[up_input()], in.size() > up_input() + 1 ? in[up_input() + 1] : nullptr};
      std::vector<Tensor> up_out;
      up_out.push_back(Tensor::empty(in[at]->dtype(),
                                     transposed_shape(in[at]->shape(), in[up_input()]->shape())));
      up_->compute(up_in, up_out);
      upsampled[static_cast<size_t>(transposed_)] = std::move(up_out[0]);
      parts[at] = &upsampled[static_cast<size_t>(transposed_)];
    }
    cin[0] = parts[0];
    if (parts_ > 1) {
      joined = join_parts(parts);
      cin[0] = &joined;
    }
    if (x_from_ >= 0) {
      x_window = channel_window(*in[0], x_from_, in[1]->dim(1) * group_);
      cin[0] = &x_window;
    }
    // With a head, the convolution's M channels in X's dtype first, as the unfused graph has them.
    std::vector<Tensor> before;
    if (head_) {
      Shape s = out[0].shape();
      s[1] = in[1]->dim(0);
      before.push_back(Tensor::empty(in[0]->dtype(), s));
    }
    std::vector<Tensor>& conv_out = head_ ? before : out;
    conv_->compute(cin, conv_out);
    Tensor& y = conv_out[0];
    const Tensor* r = has_residual_ ? in[3] : nullptr;
    if (r && residual_from_ >= 0) {
      residual_window = channel_window(*r, residual_from_, y.dim(1));
      r = &residual_window;
    }
    const int64_t m = y.rank() > 1 ? y.dim(1) : 1,
                  plane = y.numel() == 0 ? 1 : y.numel() / (y.dim(0) * m);
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double res = r ? ref::load(*r, i) : 0.0;
      const int64_t c = i / plane % m;
      ref::store(y, i,
                 residual_after_ ? epilogue_.apply(ref::load(y, i), c) + res
                                 : epilogue_.apply(ref::load(y, i) + res, c));
    }
    if (head_) apply_head(y, *in[head_input()], in[head_input() + 1], out[0]);
  }
  int64_t macs(const std::vector<ValueMeta>& in, const std::vector<Shape>& out) const override {
    // A transposed part's own, before the convolution reads it.
    int64_t up = 0;
    if (transposed_ >= 0) {
      const ValueMeta& part = in[part_input(transposed_)];
      std::vector<ValueMeta> up_in = {
          part, in[up_input()], in.size() > up_input() + 1 ? in[up_input() + 1] : ValueMeta{}};
      up = up_->macs(up_in, {transposed_shape(part.shape, in[up_input()].shape)});
    }
    if (!head_) return up + conv_->macs(conv_inputs(in, true), out);
    // The convolution's, at its M output channels, and the head's Mh x M per position.
    std::vector<Shape> before = out;
    const int64_t m = in[head_input()].shape[1];
    before[0][1] = m;
    return up + conv_->macs(conv_inputs(in, true), before) + shape_numel(out[0]) * m;
  }

 private:
  // X's parts: input 0, then inputs 4, 5, ... (after W, B and the residual).
  size_t part_input(int64_t p) const { return p == 0 ? 0 : static_cast<size_t>(3 + p); }

  // The Conv's inputs: X (its parts' channels concatenated, or its window of input 0's, where
  // `shapes` are known), W, B.
  std::vector<ValueMeta> conv_inputs(const std::vector<ValueMeta>& in, bool shapes) const {
    std::vector<ValueMeta> c(in.begin(), in.begin() + std::min<size_t>(3, in.size()));
    if (shapes && !c.empty()) c[0] = read_as(in, 0);
    if (x_from_ >= 0 && shapes) {
      // W's C / group channels a group, from channel x_from of input 0.
      const int64_t channels = c.size() > 1 && c[1].shape.size() > 1 ? c[1].shape[1] * group_ : -1;
      if (c[0].shape.size() < 2 || channels < 1 || x_from_ + channels > c[0].shape[1])
        fail("X of shape " + shape_str(c[0].shape) + " has no channels [" +
             std::to_string(x_from_) + ", " + std::to_string(x_from_ + channels) +
             ") for weights of shape " + shape_str(c.size() > 1 ? c[1].shape : Shape{}));
      c[0].value = nullptr;
      c[0].shape[1] = channels;
    }
    if (parts_ == 1) return c;
    const size_t expected =
        static_cast<size_t>(3 + parts_ + (head_ ? 2 : 0) + (transposed_ >= 0 ? 2 : 0));
    if (in.size() != expected)
      fail("expected " + std::to_string(expected) + " inputs for " + std::to_string(parts_) +
           " parts of X" + (head_ ? " and a head" : "") +
           (transposed_ >= 0 ? " and a transposed part's weights and bias" : "") + ", got " +
           std::to_string(in.size()));
    c[0].value = nullptr;
    for (int64_t p = 1; p < parts_; ++p) {
      const ValueMeta m = shapes ? read_as(in, p) : in[part_input(p)];
      if (!m.present || m.dtype != c[0].dtype)
        fail("part " + std::to_string(p) + " of X must have X's dtype");
      if (!shapes) continue;
      if (m.shape.size() != c[0].shape.size() || m.shape.size() < 2)
        fail("part " + std::to_string(p) + " of X has shape " + shape_str(m.shape) +
             ", not of the rank of " + shape_str(in[0].shape));
      for (size_t d = 0; d < m.shape.size(); ++d)
        if (d != 1 && m.shape[d] != c[0].shape[d])
          fail("part " + std::to_string(p) + " of X has shape " + shape_str(m.shape) +
               (upsample_[static_cast<size_t>(p)] != Upsample::none ? " (upsampled)" : "") +
               ", which differs from " + shape_str(c[0].shape) + " outside the channel axis");
      c[0].shape[1] += m.shape[1];
    }
    return c;
  }

  size_t head_input() const { return static_cast<size_t>(3 + parts_); }
  size_t up_input() const { return head_input() + (head_ ? 2 : 0); }

  // The transposed part's output: N, the weights' Mt (dim 1) channels, each spatial axis doubled.
  static Shape transposed_shape(const Shape& part, const Shape& w) {
    Shape s = part;
    if (s.size() > 1 && w.size() > 1) s[1] = w[1];
    for (size_t d = 2; d < s.size(); ++d) s[d] *= 2;
    return s;
  }

  // Part p of X as the convolution reads it: its spatial axes doubled where it is upsampled, or
  // those of the parts read as stored where it is resized to them.
  ValueMeta read_as(const std::vector<ValueMeta>& in, int64_t p) const {
    ValueMeta m = in[part_input(p)];
    if (p == transposed_) {
      const ValueMeta& w = in[up_input()];
      if (m.shape.size() < 3 || m.shape.size() > 5 || w.shape.size() != m.shape.size() ||
          w.shape[0] != m.shape[1])
        fail("part " + std::to_string(p) + " of X, of shape " + shape_str(m.shape) +
             ", does not fit the transposed convolution's weights of shape " + shape_str(w.shape) +
             " (rank 3 to 5, its channels the weights' first dim)");
      for (size_t d = 2; d < w.shape.size(); ++d)
        if (w.shape[d] != 2)
          fail("transposed part's weights of shape " + shape_str(w.shape) +
               ": kernel 2 along every spatial axis expected");
      m.value = nullptr;
      m.shape = transposed_shape(m.shape, w.shape);
      return m;
    }
    const Upsample u = upsample_[static_cast<size_t>(p)];
    if (u == Upsample::none) return m;
    if (m.shape.size() < 3 || m.shape.size() > 5)
      fail("part " + std::to_string(p) + " of X, upsampled, has shape " + shape_str(m.shape) +
           ": rank 3 to 5 expected");
    m.value = nullptr;
    if (sized(u)) {
      const Shape& to = in[part_input(stored_part())].shape;
      if (to.size() != m.shape.size())
        fail("part " + std::to_string(p) + " of X has shape " + shape_str(m.shape) +
             ", not of the rank of " + shape_str(to));
      for (size_t d = 2; d < to.size(); ++d)
        if (m.shape[d] == 0 && to[d] > 0)
          fail("part " + std::to_string(p) + " of X, of shape " + shape_str(m.shape) +
               ", has no values to resize to " + shape_str(to));
      std::copy(to.begin() + 2, to.end(), m.shape.begin() + 2);
      return m;
    }
    for (size_t d = 2; d < m.shape.size(); ++d) m.shape[d] *= 2;
    return m;
  }

  // The first part of X read as stored (the op's factory checks there is one where a part is
  // resized to it), and a shape's spatial axes.
  int64_t stored_part() const {
    int64_t p = 0;
    while (p + 1 < parts_ && upsample_[static_cast<size_t>(p)] != Upsample::none) ++p;
    return p;
  }
  static Shape stored_spatial(const Shape& s) { return Shape(s.begin() + 2, s.end()); }

  // y = head(x): Mh x M weights and bias at each position, then softmax over Y's channels.
  void apply_head(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) const {
    const int64_t n = x.dim(0), m = x.dim(1), mh = y.dim(1), s = x.numel() / (n * m);
    std::vector<double> v(static_cast<size_t>(mh));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < s; ++p) {
        for (int64_t h = 0; h < mh; ++h) {
          double a = b ? ref::load(*b, h) : 0.0;
          for (int64_t c = 0; c < m; ++c)
            a += ref::load(w, h * m + c) * ref::load(x, (i * m + c) * s + p);
          v[static_cast<size_t>(h)] = a;
        }
        if (head_softmax_) {
          const double top = *std::max_element(v.begin(), v.end());
          double sum = 0;
          for (double& e : v) sum += (e = std::exp(e - top));
          for (double& e : v) e /= sum;
        }
        for (int64_t h = 0; h < mh; ++h)
          ref::store(y, (i * mh + h) * s + p, v[static_cast<size_t>(h)]);
      }
  }

  Tensor join_parts(const std::vector<const Tensor*>& in) const {
    Shape shape = in[0]->shape();
    shape[1] = 0;
    for (int64_t p = 0; p < parts_; ++p) shape[1] += in[part_input(p)]->dim(1);
    Tensor x = Tensor::empty(in[0]->dtype(), shape);
    const int64_t plane = in[0]->numel() / (in[0]->dim(0) * in[0]->dim(1));
    int64_t at = 0;
    for (int64_t n = 0; n < shape[0]; ++n)
      for (int64_t p = 0; p < parts_; ++p) {
        const Tensor& t = *in[part_input(p)];
        for (int64_t i = 0; i < t.dim(1) * plane; ++i)
          ref::store(x, at++, ref::load(t, n * t.dim(1) * plane + i));
      }
    return x;
  }

  std::unique_ptr<Op> conv_;
  FusedEpilogue epilogue_;
  bool has_residual_;
  bool residual_after_;
  int64_t parts_;
  bool f32_out_;  // Y is float32 (kFusedCastTo); the conv stores its sums into it unrounded
  bool head_;     // a 1x1 convolution after the epilogue (kFusedHead)
  bool head_softmax_;  // and softmax over channels after it
  int64_t group_;
  int64_t x_from_;         // X's first channel in input 0 (kFusedXFrom), or -1: X whole
  int64_t residual_from_;  // the residual's in input 3 (kFusedResidualFrom), or -1: whole
  std::vector<Upsample> upsample_;  // per part of X (kFusedXUpsample)
  int64_t transposed_;              // the part that is a ConvTranspose's input, or -1
  std::unique_ptr<Op> up_;          // that ConvTranspose (kFusedXTransposed)
};

}  // namespace

int64_t window_from(const ir::Attributes& a, const char* name) {
  if (!a.has(name)) return -1;
  const int64_t from = a.get_int(name, 0);
  if (from < 0)
    throw Error(a.where + ": " + name + " " + std::to_string(from) +
                ": a first channel of 0 or more expected");
  return from;
}

Tensor channel_window(const Tensor& t, int64_t from, int64_t count) {
  Shape shape = t.shape();
  shape[1] = count;
  Tensor w = Tensor::empty(t.dtype(), shape);
  const int64_t plane = t.dim(0) * t.dim(1) == 0 ? 0 : t.numel() / (t.dim(0) * t.dim(1));
  int64_t at = 0;
  for (int64_t n = 0; n < t.dim(0); ++n)
    for (int64_t i = 0; i < count * plane; ++i)
      ref::store(w, at++, ref::load(t, (n * t.dim(1) + from) * plane + i));
  return w;
}

std::vector<Upsample> upsample_modes(const ir::Attributes& a, int64_t parts) {
  std::vector<Upsample> modes(static_cast<size_t>(std::max<int64_t>(parts, 0)), Upsample::none);
  if (!a.has(kFusedXUpsample)) return modes;
  const std::vector<int64_t> v = a.get_ints(kFusedXUpsample);
  if (static_cast<int64_t>(v.size()) != parts)
    throw Error(a.where + ": x_upsample has " + std::to_string(v.size()) + " values for " +
                std::to_string(parts) + " parts of X");
  for (size_t p = 0; p < v.size(); ++p) {
    if (v[p] < 0 || v[p] > static_cast<int64_t>(Upsample::linear_asymmetric_sized))
      throw Error(a.where + ": x_upsample value " + std::to_string(v[p]) +
                  " is not 0 (none), 1 (nearest), 2 (linear), 3 (linear, corners aligned), 4 "
                  "(linear, asymmetric) or 5-8 (the same to the stored parts' size)");
    modes[p] = static_cast<Upsample>(v[p]);
  }
  return modes;
}

UpsampleTaps resize_taps(Upsample mode, int64_t o, int64_t len, int64_t out_len) {
  const double l = static_cast<double>(len), s = static_cast<double>(out_len);
  double x = 0;  // the input coordinate of output o
  switch (interpolation(mode)) {
    case Upsample::linear: x = (static_cast<double>(o) + 0.5) * l / s - 0.5; break;
    case Upsample::linear_align_corners:
      x = out_len > 1 ? static_cast<double>(o) * (l - 1) / (s - 1) : 0.0;
      break;
    case Upsample::linear_asymmetric: x = static_cast<double>(o) * l / s; break;
    default: {  // nearest: floor(o L / S), in integers
      const int64_t i = std::min(o * len / std::max<int64_t>(out_len, 1), len - 1);
      return {i, i, 1.0, 0.0};
    }
  }
  const double f = std::floor(x), frac = x - f;
  const int64_t i = static_cast<int64_t>(f);
  return {std::clamp<int64_t>(i, 0, len - 1), std::clamp<int64_t>(i + 1, 0, len - 1), 1.0 - frac,
          frac};
}

Tensor upsample2(const Tensor& t, Upsample mode) {
  Shape spatial(t.shape().begin() + std::min<int64_t>(2, t.rank()), t.shape().end());
  for (int64_t& d : spatial) d *= 2;
  return resize_to(t, mode, spatial);
}

Tensor resize_to(const Tensor& t, Upsample mode, const Shape& spatial) {
  const int64_t rank = t.rank();
  if (rank < 3 || rank > 5 || static_cast<int64_t>(spatial.size()) != rank - 2)
    throw Error("resize_to: shape " + shape_str(t.shape()) + " to " + shape_str(spatial));
  // Per spatial axis, each output index's two taps (index, weight).
  using Tap = UpsampleTaps;
  std::vector<std::vector<Tap>> taps;
  Shape out = t.shape();
  for (int64_t d = 2; d < rank; ++d) {
    const int64_t len = t.dim(d), out_len = spatial[static_cast<size_t>(d - 2)];
    out[static_cast<size_t>(d)] = out_len;
    std::vector<Tap> axis;
    for (int64_t o = 0; o < out_len; ++o) axis.push_back(resize_taps(mode, o, len, out_len));
    taps.push_back(std::move(axis));
  }
  Tensor y = Tensor::empty(t.dtype(), out);
  // Spatial axes padded in front to three.
  int64_t in3[3] = {1, 1, 1}, out3[3] = {1, 1, 1};
  const std::vector<Tap> unit = {{0, 0, 1.0, 0.0}};
  const std::vector<Tap>* ax[3] = {&unit, &unit, &unit};
  for (int64_t d = 2; d < rank; ++d) {
    const size_t a = static_cast<size_t>(d + 3 - rank);
    in3[a] = t.dim(d);
    out3[a] = out[static_cast<size_t>(d)];
    ax[a] = &taps[static_cast<size_t>(d - 2)];
  }
  const int64_t planes = t.dim(0) * t.dim(1), in_vol = in3[0] * in3[1] * in3[2];
  int64_t at = 0;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t z = 0; z < out3[0]; ++z)
      for (int64_t yy = 0; yy < out3[1]; ++yy)
        for (int64_t x = 0; x < out3[2]; ++x) {
          const Tap &tz = (*ax[0])[static_cast<size_t>(z)], &ty = (*ax[1])[static_cast<size_t>(yy)],
                    &tx = (*ax[2])[static_cast<size_t>(x)];
          double v = 0;
          for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b)
              for (int c = 0; c < 2; ++c) {
                const double w = (a ? tz.w1 : tz.w0) * (b ? ty.w1 : ty.w0) * (c ? tx.w1 : tx.w0);
                if (w == 0) continue;
                const int64_t i = ((a ? tz.i1 : tz.i0) * in3[1] + (b ? ty.i1 : ty.i0)) * in3[2] +
                                  (c ? tx.i1 : tx.i0);
                v += w * ref::load(t, p * in_vol + i);
              }
          ref::store(y, at++, v);
        }
  return y;
}

FusedEpilogue FusedEpilogue::from_attrs(const ir::Attributes& a) {
  FusedEpilogue e;
  std::string act = a.get_string("activation", "");
  if (act == "Relu")
    e.kind = Kind::relu;
  else if (act == "LeakyRelu")
    e.kind = Kind::leaky_relu;
  else if (!act.empty())
    throw Error(a.where + ": unknown fused activation '" + act + "'");
  e.alpha = a.get_float("alpha", 0.01f);
  if (a.has(kFusedSlopes)) {
    if (e.kind != Kind::none)
      throw Error(a.where + ": per-channel slopes and the activation '" + act + "' both set");
    e.kind = Kind::leaky_relu;
    e.slopes = a.get_floats(kFusedSlopes);
    if (e.slopes.empty()) throw Error(a.where + ": attribute slopes is empty");
  }
  return e;
}

ir::Node fused_conv_inner_node(const ir::Node& fused) {
  ir::Node conv = fused;
  conv.op_type = fused.op_type == "FusedConvTranspose" ? "ConvTranspose" : "Conv";
  conv.domain.clear();
  if (conv.inputs.size() > 3) conv.inputs.resize(3);
  conv.attrs.items.erase("activation");
  conv.attrs.items.erase("alpha");
  conv.attrs.items.erase("x_parts");
  conv.attrs.items.erase(kResidualAfterActivation);
  conv.attrs.items.erase(kFusedCastTo);
  conv.attrs.items.erase(kFusedHead);
  conv.attrs.items.erase(kFusedHeadSoftmax);
  conv.attrs.items.erase(kFusedSlopes);
  conv.attrs.items.erase(kFusedXFrom);
  conv.attrs.items.erase(kFusedResidualFrom);
  conv.attrs.items.erase(kFusedXUpsample);
  conv.attrs.items.erase(kFusedXTransposed);
  return conv;
}

void register_fused_ops(OpRegistry& r) {
  auto factory = [](const OpContext& c) -> std::unique_ptr<Op> {
    ir::Node inner = fused_conv_inner_node(c.node);
    std::unique_ptr<Op> conv = OpRegistry::instance().create(inner, c.graph);
    bool residual = c.node.has_input(3);
    int64_t parts = c.node.attrs.get_int("x_parts", 1);
    const bool head = c.node.attrs.get_int(kFusedHead, 0) != 0;
    const bool head_softmax = c.node.attrs.get_int(kFusedHeadSoftmax, 0) != 0;
    const int64_t transposed =
        c.node.attrs.has(kFusedXTransposed) ? c.node.attrs.get_int(kFusedXTransposed, 0) : -1;
    // Inputs: X, W, B, the residual slot, X's other parts, the head's weights and bias, then the
    // transposed part's.
    const int64_t expected = parts > 1 || head || transposed >= 0
                                 ? 3 + parts + (head ? 2 : 0) + (transposed >= 0 ? 2 : 0)
                                 : c.node.num_inputs();
    if (parts < 1 || c.node.num_inputs() != expected)
      c.fail("x_parts " + std::to_string(parts) + (head ? " and a head" : "") +
             (transposed >= 0 ? " and a transposed part" : "") + " do not fit its " +
             std::to_string(c.node.num_inputs()) + " inputs");
    if (head && !c.node.has_input(fused_head_input(c.node)))
      c.fail("a head needs its weights, input " + std::to_string(fused_head_input(c.node)));
    if (head_softmax && !head) c.fail("head_softmax without a head");
    if (c.node.op_type == "FusedConvTranspose" && (residual || head))
      c.fail("a fused ConvTranspose takes no residual and no head");
    if (c.node.attrs.has(kFusedSlopes) && (head || c.node.op_type != "FusedConv"))
      c.fail("per-channel slopes need a FusedConv without a head");
    const bool after = c.node.attrs.get_int(kResidualAfterActivation, 0) != 0;
    const bool f32_out = c.node.attrs.has(kFusedCastTo);
    if (f32_out && (c.node.attrs.get_int(kFusedCastTo, 0) != 1 || c.node.op_type != "FusedConv"))
      c.fail("a fused Cast ('to' = " + std::to_string(c.node.attrs.get_int(kFusedCastTo, 0)) +
             ") must be to float32 (1), after a FusedConv");
    const int64_t x_from = window_from(c.node.attrs, kFusedXFrom),
                  residual_from = window_from(c.node.attrs, kFusedResidualFrom);
    if ((x_from >= 0 || residual_from >= 0) && c.node.op_type != "FusedConv")
      c.fail("x_from and residual_from need a FusedConv");
    if (x_from >= 0 && parts != 1)
      c.fail("x_from " + std::to_string(x_from) + " with x_parts " + std::to_string(parts) +
             ": a window of X needs X in one part");
    if (residual_from >= 0 && !residual) c.fail("residual_from without a residual");
    std::vector<Upsample> upsample = upsample_modes(c.node.attrs, parts);
    const bool upsampled = std::any_of(upsample.begin(), upsample.end(),
                                       [](Upsample u) { return u != Upsample::none; });
    if (upsampled && (c.node.op_type != "FusedConv" || x_from >= 0))
      c.fail("x_upsample needs a FusedConv whose X is not a window (x_from)");
    if (std::any_of(upsample.begin(), upsample.end(), [](Upsample u) { return sized(u); }) &&
        std::none_of(upsample.begin(), upsample.end(),
                     [](Upsample u) { return u == Upsample::none; }))
      c.fail("x_upsample resizes a part to the size of X's parts read as stored, and none is");
    std::unique_ptr<Op> up;
    if (c.node.attrs.has(kFusedXTransposed)) {
      if (transposed < 0 || transposed >= parts || c.node.op_type != "FusedConv" || x_from >= 0 ||
          upsample[static_cast<size_t>(transposed)] != Upsample::none)
        c.fail("x_transposed " + std::to_string(transposed) +
               " needs a FusedConv with that part (" + std::to_string(parts) +
               " parts), not a window (x_from) and not upsampled");
      // A ConvTranspose of kernel 2 and stride 2 along the weights' spatial axes.
      const int wi = fused_transposed_input(c.node);
      const Tensor* w = c.constant_input(wi);
      if (!w || w->rank() < 3 || w->rank() > 5)
        c.fail("x_transposed needs constant weights of rank 3 to 5, input " + std::to_string(wi));
      ir::Node inner = c.node;
      inner.op_type = "ConvTranspose";
      inner.domain.clear();
      inner.inputs = {c.node.inputs[static_cast<size_t>(transposed == 0 ? 0 : 3 + transposed)],
                      c.node.inputs[static_cast<size_t>(wi)],
                      c.node.inputs[static_cast<size_t>(wi + 1)]};
      inner.attrs.items.clear();
      inner.attrs.set_ints("strides", std::vector<int64_t>(static_cast<size_t>(w->rank() - 2), 2));
      up = OpRegistry::instance().create(inner, c.graph);
    }
    return std::make_unique<FusedConvOp>(std::move(conv), FusedEpilogue::from_attrs(c.node.attrs),
                                         residual, after, parts, f32_out, head, head_softmax,
                                         c.node.attrs.get_int("group", 1), x_from, residual_from,
                                         std::move(upsample), transposed, std::move(up));
  };
  r.add(std::string(kInternalDomain) + ".FusedConv", 1, 21, factory);
  r.add(std::string(kInternalDomain) + ".FusedConvTranspose", 1, 21, factory);
}

}  // namespace voxrt
