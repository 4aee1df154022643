// Ops that select, join or repeat elements: Concat, Gather, Slice, Pad, Split, Tile.
#include <algorithm>
#include <cstring>
#include <optional>

#include "backends/ref/op.h"
#include "backends/ref/ops/arity.h"
#include "backends/ref/tensor_math.h"

namespace voxrt {
namespace {

constexpr std::initializer_list<DType> kAllTypes = {
    DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8,  DType::i16,    DType::i32,
    DType::i64, DType::u8,  DType::u16,  DType::u32, DType::u64, DType::boolean};
constexpr std::initializer_list<DType> kIndexTypes = {DType::i32, DType::i64};

bool present(const std::vector<ValueMeta>& in, size_t i) {
  return i < in.size() && in[i].present;
}
const Tensor* input(const std::vector<const Tensor*>& in, size_t i) {
  return i < in.size() ? in[i] : nullptr;
}

void copy_elems(const Tensor& src, int64_t si, Tensor& dst, int64_t di, int64_t n = 1) {
  size_t es = dtype_size(src.dtype());
  if (n > 0)
    std::memcpy(static_cast<uint8_t*>(dst.raw()) + static_cast<size_t>(di) * es,
                static_cast<const uint8_t*>(src.raw()) + static_cast<size_t>(si) * es,
                static_cast<size_t>(n) * es);
}

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

int64_t product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// Fills dst from src where, along each axis d, output coordinate i reads source coordinate
// index[d][i]; -1 on any axis writes `fill` (one element of dst's dtype) instead.
void remap(const Tensor& src, Tensor& dst, const std::vector<std::vector<int64_t>>& index,
           const uint8_t* fill) {
  const Shape& out = dst.shape();
  size_t rank = out.size();
  int64_t n = dst.numel();
  if (n == 0) return;
  std::vector<int64_t> stride = ref::strides_of(src.shape());
  std::vector<int64_t> idx(rank, 0);
  size_t es = dtype_size(dst.dtype());
  auto* d = static_cast<uint8_t*>(dst.raw());
  const auto* s = static_cast<const uint8_t*>(src.raw());
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    bool outside = false;
    for (size_t a = 0; a < rank; ++a) {
      int64_t k = index[a][static_cast<size_t>(idx[a])];
      if (k < 0) outside = true;
      off += k * stride[a];
    }
    std::memcpy(d + static_cast<size_t>(i) * es, outside ? fill : s + static_cast<size_t>(off) * es,
                es);
    for (size_t a = rank; a-- > 0;) {
      if (++idx[a] < out[a]) break;
      idx[a] = 0;
    }
  }
}

class ConcatOp : public Op {
 public:
  explicit ConcatOp(int64_t axis) : axis_(axis) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 0");
    for (size_t i = 1; i < in.size(); ++i)
      if (!in[i].present || in[i].dtype != in[0].dtype)
        fail("input " + std::to_string(i) + " must be present with dtype " +
             std::string(dtype_name(in[0].dtype)) + " like input 0");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    Shape y = in[0].shape;
    int64_t axis = axis_;
    if (!ref::normalize_axis(axis, static_cast<int64_t>(y.size())))
      fail("axis " + std::to_string(axis_) + " is out of range for inputs of rank " +
           std::to_string(y.size()));
    size_t a = static_cast<size_t>(axis);
    y[a] = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const Shape& s = in[i].shape;
      bool ok = s.size() == y.size();
      for (size_t d = 0; ok && d < s.size(); ++d) ok = d == a || s[d] == y[d];
      if (!ok)
        fail("input " + std::to_string(i) + " has shape " + shape_str(s) + ", which does not " +
             "match input 0's " + shape_str(in[0].shape) + " outside axis " + std::to_string(axis));
      y[a] += s[a];
    }
    return {y};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    Tensor& y = out[0];
    int64_t axis = axis_;
    ref::normalize_axis(axis, y.rank());
    size_t a = static_cast<size_t>(axis);
    int64_t outer = product(y.shape(), 0, a);
    int64_t inner = product(y.shape(), a + 1, y.shape().size());
    int64_t row = y.dim(axis) * inner;
    int64_t at = 0;
    for (const Tensor* x : in) {
      int64_t chunk = x->dim(axis) * inner;
      for (int64_t o = 0; o < outer; ++o) copy_elems(*x, o * chunk, y, o * row + at, chunk);
      at += chunk;
    }
  }

 private:
  int64_t axis_;
};

class GatherOp : public Op {
 public:
  explicit GatherOp(int64_t axis) : axis_(axis) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'data'");
    require_dtype(in.at(1).dtype, kIndexTypes, "input 'indices'");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Shape& x = in[0].shape;
    size_t a = axis_of(static_cast<int64_t>(x.size()));
    Shape y(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(a));
    y.insert(y.end(), in[1].shape.begin(), in[1].shape.end());
    y.insert(y.end(), x.begin() + static_cast<std::ptrdiff_t>(a) + 1, x.end());
    return {y};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    size_t a = axis_of(x.rank());
    int64_t outer = product(x.shape(), 0, a);
    int64_t n = x.shape()[a];
    int64_t inner = product(x.shape(), a + 1, x.shape().size());
    std::vector<int64_t> idx = ref::to_i64(*in[1]);
    for (int64_t& k : idx) {
      if (k < -n || k >= n)
        fail("index " + std::to_string(k) + " is out of range for axis " + std::to_string(a) +
             " of size " + std::to_string(n));
      if (k < 0) k += n;
    }
    int64_t m = static_cast<int64_t>(idx.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < m; ++j)
        copy_elems(x, (o * n + idx[static_cast<size_t>(j)]) * inner, out[0], (o * m + j) * inner,
                   inner);
  }

 private:
  size_t axis_of(int64_t rank) const {
    int64_t axis = axis_;
    if (!ref::normalize_axis(axis, rank))
      fail("axis " + std::to_string(axis_) + " is out of range for data of rank " +
           std::to_string(rank));
    return static_cast<size_t>(axis);
  }
  int64_t axis_;
};

// Per-axis start, step and element count after numpy-style clamping.
struct SliceAxes {
  std::vector<int64_t> start, step, count;
};

class SliceOp : public Op {
 public:
  // Before opset 10 starts/ends/axes are attributes; from 10 they and steps are inputs 1..4.
  SliceOp(bool inputs, std::vector<int64_t> starts, std::vector<int64_t> ends,
          std::optional<std::vector<int64_t>> axes)
      : inputs_(inputs),
        starts_(std::move(starts)),
        ends_(std::move(ends)),
        axes_(std::move(axes)) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'data'");
    if (inputs_) {
      const char* names[] = {"", "input 'starts'", "input 'ends'", "input 'axes'", "input 'steps'"};
      for (size_t i = 1; i <= 4; ++i) {
        if (i <= 2 && !present(in, i)) fail(std::string(names[i]) + " is required");
        if (present(in, i)) require_dtype(in[i].dtype, kIndexTypes, names[i]);
      }
    }
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    std::vector<const Tensor*> v(5, nullptr);
    if (inputs_) {
      v[1] = &need_value(in[1], "input 'starts'");
      v[2] = &need_value(in[2], "input 'ends'");
      if (present(in, 3)) v[3] = &need_value(in[3], "input 'axes'");
      if (present(in, 4)) v[4] = &need_value(in[4], "input 'steps'");
    }
    return {plan(in[0].shape, v).count};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    if (out[0].numel() == 0) return;  // see TileOp
    std::vector<const Tensor*> v(5, nullptr);
    for (size_t i = 1; i < 5; ++i) v[i] = input(in, i);
    SliceAxes p = plan(in[0]->shape(), v);
    std::vector<std::vector<int64_t>> index(p.count.size());
    for (size_t d = 0; d < index.size(); ++d)
      for (int64_t i = 0; i < p.count[d]; ++i) index[d].push_back(p.start[d] + i * p.step[d]);
    remap(*in[0], out[0], index, nullptr);
  }

 private:
  SliceAxes plan(const Shape& x, const std::vector<const Tensor*>& v) const {
    std::vector<int64_t> starts = inputs_ ? ref::to_i64(*v[1]) : starts_;
    std::vector<int64_t> ends = inputs_ ? ref::to_i64(*v[2]) : ends_;
    std::vector<int64_t> axes;
    if (inputs_ ? v[3] != nullptr : axes_.has_value())
      axes = inputs_ ? ref::to_i64(*v[3]) : *axes_;
    else
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    std::vector<int64_t> steps =
        inputs_ && v[4] ? ref::to_i64(*v[4]) : std::vector<int64_t>(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size())
      fail("starts " + list_str(starts) + ", ends " + list_str(ends) + ", axes " + list_str(axes) +
           " and steps " + list_str(steps) + " must have equal lengths");
    int64_t rank = static_cast<int64_t>(x.size());
    SliceAxes p{std::vector<int64_t>(x.size(), 0), std::vector<int64_t>(x.size(), 1), x};
    std::vector<char> seen(x.size(), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i];
      if (!ref::normalize_axis(a, rank) || seen[static_cast<size_t>(a)]++)
        fail("axes " + list_str(axes) + " are out of range or repeated for data " + shape_str(x));
      int64_t dim = x[static_cast<size_t>(a)], s = steps[i];
      if (s == 0) fail("steps " + list_str(steps) + " contain 0");
      s = std::clamp<int64_t>(s, -dim - 1, dim + 1);  // any longer step takes one element
      int64_t b = starts[i] < 0 ? starts[i] + dim : starts[i];
      int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
      int64_t n = 0;
      if (dim == 0) {
        b = 0;
      } else if (s > 0) {
        b = std::clamp<int64_t>(b, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        n = e > b ? (e - b - 1) / s + 1 : 0;
      } else {
        b = std::clamp<int64_t>(b, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        n = b > e ? (b - e - 1) / -s + 1 : 0;
      }
      p.start[static_cast<size_t>(a)] = b;
      p.step[static_cast<size_t>(a)] = s;
      p.count[static_cast<size_t>(a)] = n;
    }
    return p;
  }
  bool inputs_;
  std::vector<int64_t> starts_, ends_;
  std::optional<std::vector<int64_t>> axes_;
};

enum class PadMode { constant, reflect, edge, wrap };

class PadOp : public Op {
 public:
  // Before opset 11 pads and value are attributes; from 11 pads, constant_value and (18) axes are
  // inputs 1..3.
  PadOp(PadMode mode, bool inputs, std::vector<int64_t> pads, double value)
      : mode_(mode), inputs_(inputs), pads_(std::move(pads)), value_(value) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'data'");
    if (inputs_) {
      if (!present(in, 1)) fail("input 'pads' is required");
      require_dtype(in[1].dtype, {DType::i64}, "input 'pads'");
      if (present(in, 2) && in[2].dtype != in[0].dtype)
        fail("input 'constant_value' has dtype " + std::string(dtype_name(in[2].dtype)) +
             ", expected " + std::string(dtype_name(in[0].dtype)) + " like 'data'");
      if (present(in, 3)) require_dtype(in[3].dtype, kIndexTypes, "input 'axes'");
    }
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Tensor* pads = inputs_ ? &need_value(in[1], "input 'pads'") : nullptr;
    const Tensor* axes = present(in, 3) ? &need_value(in[3], "input 'axes'") : nullptr;
    std::vector<int64_t> p = full_pads(in[0].shape, pads, axes);
    size_t r = in[0].shape.size();
    Shape y(r);
    for (size_t d = 0; d < r; ++d) {
      y[d] = in[0].shape[d] + p[d] + p[d + r];
      if (y[d] < 0)
        fail("pads " + list_str(p) + " remove more than the " + std::to_string(in[0].shape[d]) +
             " elements of axis " + std::to_string(d));
      int64_t kept = in[0].shape[d] - std::max<int64_t>(0, -p[d]) - std::max<int64_t>(0, -p[d + r]);
      if (mode_ != PadMode::constant && y[d] > 0 && kept <= 0)
        fail("axis " + std::to_string(d) + " has no elements left to pad from in this mode");
    }
    shape_numel(y);
    return {y};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    if (y.numel() == 0) return;  // see TileOp
    std::vector<int64_t> p = full_pads(x.shape(), input(in, 1), input(in, 3));
    size_t r = x.shape().size();
    std::vector<std::vector<int64_t>> index(r);
    for (size_t d = 0; d < r; ++d) {
      int64_t lo = std::max<int64_t>(0, -p[d]);
      int64_t n = x.shape()[d] - lo - std::max<int64_t>(0, -p[d + r]);
      for (int64_t i = 0; i < y.shape()[d]; ++i) index[d].push_back(source(i - p[d], lo, n));
    }
    Tensor fill = Tensor::zeros(x.dtype(), {1});
    const Tensor* cv = input(in, 2);
    if (inputs_ && cv && cv->numel() > 0)
      copy_elems(*cv, 0, fill, 0);
    else if (!inputs_)
      ref::store(fill, 0, value_);
    remap(x, y, index, static_cast<const uint8_t*>(fill.raw()));
  }

 private:
  // Source coordinate for padded coordinate j, where the kept input is [lo, lo + n); -1 to fill.
  int64_t source(int64_t j, int64_t lo, int64_t n) const {
    if (j >= lo && j < lo + n) return j;
    int64_t k = j - lo;
    switch (mode_) {
      case PadMode::constant: return -1;
      case PadMode::edge: return lo + std::clamp<int64_t>(k, 0, n - 1);
      case PadMode::wrap: return lo + ((k % n) + n) % n;
      case PadMode::reflect: {
        if (n == 1) return lo;
        int64_t period = 2 * (n - 1);
        int64_t m = ((k % period) + period) % period;
        return lo + (m < n ? m : period - m);
      }
    }
    return -1;
  }
  // Pads as [begin of every axis..., end of every axis...] over all axes of the data.
  std::vector<int64_t> full_pads(const Shape& x, const Tensor* pads, const Tensor* axes_t) const {
    std::vector<int64_t> given = inputs_ ? ref::to_i64(*pads) : pads_;
    int64_t rank = static_cast<int64_t>(x.size());
    std::vector<int64_t> axes;
    if (axes_t)
      axes = ref::to_i64(*axes_t);
    else
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
    if (given.size() != 2 * axes.size())
      fail("pads " + list_str(given) + " must have 2 entries for each of the " +
           std::to_string(axes.size()) + " padded axes");
    constexpr int64_t kMaxPad = int64_t{1} << 40;  // keeps the size arithmetic from overflowing
    for (int64_t v : given)
      if (v > kMaxPad || v < -kMaxPad) fail("pads " + list_str(given) + " are out of range");
    std::vector<int64_t> p(2 * x.size(), 0);
    std::vector<char> seen(x.size(), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i];
      if (!ref::normalize_axis(a, rank) || seen[static_cast<size_t>(a)]++)
        fail("axes " + list_str(axes) + " are out of range or repeated for data " + shape_str(x));
      p[static_cast<size_t>(a)] = given[i];
      p[static_cast<size_t>(a) + x.size()] = given[i + axes.size()];
    }
    return p;
  }
  PadMode mode_;
  bool inputs_;
  std::vector<int64_t> pads_;
  double value_;
};

std::unique_ptr<Op> make_pad(const OpContext& c) {
  ref::check_arity(c, c.opset < 11 ? 1 : 2, c.opset < 11 ? 1 : c.opset < 18 ? 3 : 4, 1);
  std::string m = c.node.attrs.get_string("mode", "constant");
  PadMode mode;
  if (m == "constant")
    mode = PadMode::constant;
  else if (m == "reflect")
    mode = PadMode::reflect;
  else if (m == "edge")
    mode = PadMode::edge;
  else if (m == "wrap" && c.opset >= 19)
    mode = PadMode::wrap;
  else
    c.fail("mode '" + m + "' is not supported at opset " + std::to_string(c.opset) +
           " (expected constant, reflect, edge" + (c.opset >= 19 ? ", wrap)" : ")"));
  if (c.opset >= 11) return std::make_unique<PadOp>(mode, true, std::vector<int64_t>{}, 0.0);
  if (!c.node.attrs.has("pads")) c.fail("attribute 'pads' is required");
  return std::make_unique<PadOp>(mode, false, c.node.attrs.get_ints("pads"),
                                 c.node.attrs.get_float("value", 0.0f));
}

class SplitOp : public Op {
 public:
  // split: the attribute before opset 13; from 13 it is input 1. Without it the outputs share
  // the axis equally (opset 18 allows a smaller last chunk).
  SplitOp(int opset, int64_t axis, std::optional<std::vector<int64_t>> split)
      : opset_(opset), axis_(axis), split_(std::move(split)) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'input'");
    if (opset_ >= 13 && present(in, 1)) require_dtype(in[1].dtype, {DType::i64}, "input 'split'");
    return std::vector<DType>(static_cast<size_t>(num_outputs), in[0].dtype);
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Tensor* split =
        present(in, 1) && opset_ >= 13 ? &need_value(in[1], "input 'split'") : nullptr;
    size_t a = axis_of(in[0].shape);
    std::vector<int64_t> sizes = sizes_of(in[0].shape, split);
    std::vector<Shape> y(sizes.size(), in[0].shape);
    for (size_t k = 0; k < sizes.size(); ++k) y[k][a] = sizes[k];
    return y;
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    size_t a = axis_of(x.shape());
    std::vector<int64_t> sizes = sizes_of(x.shape(), opset_ >= 13 ? input(in, 1) : nullptr);
    int64_t outer = product(x.shape(), 0, a);
    int64_t inner = product(x.shape(), a + 1, x.shape().size());
    int64_t row = x.shape()[a] * inner;
    int64_t at = 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
      int64_t chunk = sizes[k] * inner;
      if (k < out.size() && out[k].defined())
        for (int64_t o = 0; o < outer; ++o) copy_elems(x, o * row + at, out[k], o * chunk, chunk);
      at += chunk;
    }
  }

 private:
  size_t axis_of(const Shape& x) const {
    int64_t axis = axis_;
    if (!ref::normalize_axis(axis, static_cast<int64_t>(x.size())))
      fail("axis " + std::to_string(axis_) + " is out of range for input " + shape_str(x));
    return static_cast<size_t>(axis);
  }
  std::vector<int64_t> sizes_of(const Shape& x, const Tensor* split_input) const {
    int64_t dim = x[axis_of(x)];
    int64_t n = num_outputs;
    std::optional<std::vector<int64_t>> split = split_;
    if (split_input && split_input->numel() > 0) split = ref::to_i64(*split_input);
    if (split) {
      int64_t sum = 0;
      for (int64_t s : *split) {
        if (s < 0) fail("split " + list_str(*split) + " has a negative entry");
        if (__builtin_add_overflow(sum, s, &sum)) fail("split " + list_str(*split) + " overflows");
      }
      if (static_cast<int64_t>(split->size()) != n || sum != dim)
        fail("split " + list_str(*split) + " must have " + std::to_string(n) +
             " entries (one per output) summing to " + std::to_string(dim));
      return *split;
    }
    if (dim % n == 0) return std::vector<int64_t>(static_cast<size_t>(n), dim / n);
    if (opset_ < 18)
      fail("axis of size " + std::to_string(dim) + " does not split evenly into " +
           std::to_string(n) + " outputs");
    // Opset 18: chunks of ceil(dim / n), the last ones smaller.
    int64_t chunk = (dim + n - 1) / n, left = dim;
    std::vector<int64_t> sizes;
    for (int64_t k = 0; k < n; ++k) {
      sizes.push_back(std::min(chunk, left));
      left -= sizes.back();
    }
    return sizes;
  }
  int opset_;
  int64_t axis_;
  std::optional<std::vector<int64_t>> split_;
};

std::unique_ptr<Op> make_split(const OpContext& c) {
  ref::check_arity(c, 1, c.opset < 13 ? 1 : 2, static_cast<int>(c.node.outputs.size()));
  std::optional<std::vector<int64_t>> split;
  if (c.opset < 13 && c.node.attrs.has("split")) split = c.node.attrs.get_ints("split");
  std::optional<int64_t> num;
  int outputs = static_cast<int>(c.node.outputs.size());
  if (c.opset >= 18 && c.node.attrs.has("num_outputs")) {
    num = c.node.attrs.get_int("num_outputs", 0);
    if (*num != outputs)
      c.fail("attribute num_outputs is " + std::to_string(*num) + " but the node has " +
             std::to_string(outputs) + " outputs");
    if (c.node.has_input(1)) c.fail("input 'split' and attribute 'num_outputs' are both set");
  }
  if (outputs < 1) c.fail("the node has no outputs");
  return std::make_unique<SplitOp>(c.opset, c.node.attrs.get_int("axis", 0), split);
}

class TileOp : public Op {
 public:
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'input'");
    require_dtype(in.at(1).dtype, {DType::i64}, "input 'repeats'");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Shape& x = in[0].shape;
    std::vector<int64_t> rep = ref::to_i64(need_value(in[1], "input 'repeats'"));
    if (rep.size() != x.size())
      fail("repeats " + list_str(rep) + " must have one entry per axis of input " + shape_str(x));
    Shape y(x.size());
    for (size_t d = 0; d < x.size(); ++d) {
      if (rep[d] < 0) fail("repeats " + list_str(rep) + " has a negative entry");
      if (__builtin_mul_overflow(x[d], rep[d], &y[d])) fail("the output size overflows");
    }
    shape_numel(y);
    return {y};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    // Nothing to write; and the index lists below are as long as each output dim, which may be
    // huge beside a zero one (a fuzzed model: [2^29, 0] would have taken 4 GiB).
    if (out[0].numel() == 0) return;
    const Shape& x = in[0]->shape();
    std::vector<std::vector<int64_t>> index(x.size());
    for (size_t d = 0; d < x.size(); ++d)
      for (int64_t i = 0; i < out[0].shape()[d]; ++i) index[d].push_back(i % x[d]);
    remap(*in[0], out[0], index, nullptr);
  }
};

}  // namespace

void register_tensor_ops(OpRegistry& r) {
  r.add("Concat", 7, 21, [](const OpContext& c) {
    ref::check_arity(c, std::max(1, c.node.num_inputs()), c.node.num_inputs(), 1);
    if (!c.node.attrs.has("axis")) c.fail("attribute 'axis' is required");
    return std::make_unique<ConcatOp>(c.node.attrs.get_int("axis", 0));
  });
  r.add("Gather", 7, 21, [](const OpContext& c) {
    ref::check_arity(c, 2, 2, 1);
    return std::make_unique<GatherOp>(c.node.attrs.get_int("axis", 0));
  });
  r.add("Slice", 7, 21, [](const OpContext& c) -> std::unique_ptr<Op> {
    ref::check_arity(c, c.opset < 10 ? 1 : 3, c.opset < 10 ? 1 : 5, 1);
    if (c.opset >= 10)
      return std::make_unique<SliceOp>(true, std::vector<int64_t>{}, std::vector<int64_t>{},
                                       std::nullopt);
    const ir::Attributes& a = c.node.attrs;
    if (!a.has("starts") || !a.has("ends")) c.fail("attributes 'starts' and 'ends' are required");
    std::optional<std::vector<int64_t>> axes;
    if (a.has("axes")) axes = a.get_ints("axes");
    return std::make_unique<SliceOp>(false, a.get_ints("starts"), a.get_ints("ends"), axes);
  });
  r.add("Pad", 7, 21, make_pad);
  r.add("Split", 7, 21, make_split);
  r.add("Tile", 7, 21, [](const OpContext& c) {
    ref::check_arity(c, 2, 2, 1);
    return std::make_unique<TileOp>();
  });
}

}  // namespace voxrt
