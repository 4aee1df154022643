// Ops that reinterpret, copy or convert data without arithmetic across elements: Reshape, Flatten,
// Transpose, Squeeze, Unsqueeze, Shape, Size, Identity, Dropout (inference), Cast, CastLike,
// Constant, ConstantOfShape, Range, Expand.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "backends/ref/op.h"
#include "backends/ref/ops/arity.h"
#include "backends/ref/tensor_math.h"
#include "core/half.h"

namespace voxrt {
namespace {

constexpr std::initializer_list<DType> kAllTypes = {
    DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8,  DType::i16,    DType::i32,
    DType::i64, DType::u8,  DType::u16,  DType::u32, DType::u64, DType::boolean};
constexpr std::initializer_list<DType> kFloatTypes = {DType::f32, DType::f16, DType::bf16,
                                                      DType::f64};

bool present(const std::vector<ValueMeta>& in, size_t i) {
  return i < in.size() && in[i].present;
}
const Tensor* input(const std::vector<const Tensor*>& in, size_t i) {
  return i < in.size() ? in[i] : nullptr;
}

void copy_all(const Tensor& src, Tensor& dst) {
  if (dst.raw() != src.raw() && src.nbytes() > 0) std::memcpy(dst.raw(), src.raw(), src.nbytes());
}

void copy_elem(const Tensor& src, int64_t si, Tensor& dst, int64_t di) {
  size_t es = dtype_size(src.dtype());
  std::memcpy(static_cast<uint8_t*>(dst.raw()) + static_cast<size_t>(di) * es,
              static_cast<const uint8_t*>(src.raw()) + static_cast<size_t>(si) * es, es);
}

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Axes normalized into [0, rank), checked for range and duplicates.
bool normalize_axes(std::vector<int64_t>& axes, int64_t rank) {
  for (int64_t& a : axes)
    if (!ref::normalize_axis(a, rank)) return false;
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
}

// Ops whose output has the input's bytes under a new shape.
class ReshapeLike : public Op {
 public:
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    copy_all(*in[0], out[0]);
  }
};

class ReshapeOp : public ReshapeLike {
 public:
  explicit ReshapeOp(bool allowzero) : allowzero_(allowzero) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'data'");
    require_dtype(in.at(1).dtype, {DType::i64}, "input 'shape'");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Tensor& st = need_value(in[1], "input 'shape'");
    if (st.rank() != 1) fail("input 'shape' must be 1-D, got shape " + shape_str(st.shape()));
    std::vector<int64_t> spec = ref::to_i64(st);
    const Shape& x = in[0].shape;
    Shape y(spec.size());
    int64_t infer_at = -1;
    int64_t known = 1;
    for (size_t i = 0; i < spec.size(); ++i) {
      int64_t v = spec[i];
      if (v == -1) {
        if (infer_at >= 0) fail("shape " + list_str(spec) + " has more than one -1");
        infer_at = static_cast<int64_t>(i);
        continue;
      }
      if (v == 0 && !allowzero_) {
        if (i >= x.size())
          fail("shape " + list_str(spec) + " copies dim " + std::to_string(i) +
               " (0) but the input " + shape_str(x) + " has rank " + std::to_string(x.size()));
        v = x[i];
      } else if (v < 0) {
        fail("shape " + list_str(spec) + " has a negative entry other than -1");
      }
      y[i] = v;
      if (__builtin_mul_overflow(known, v, &known)) fail("shape " + list_str(spec) + " overflows");
    }
    int64_t numel = shape_numel(x);
    if (infer_at >= 0) {
      if (known == 0 || numel % known != 0)
        fail("cannot infer the -1 of shape " + list_str(spec) + " for input " + shape_str(x));
      y[static_cast<size_t>(infer_at)] = numel / known;
    } else if (known != numel) {
      fail("cannot reshape " + shape_str(x) + " (" + std::to_string(numel) + " elements) to " +
           list_str(spec) + " (" + std::to_string(known) + " elements)");
    }
    return {y};
  }

 private:
  bool allowzero_;
};

class FlattenOp : public ReshapeLike {
 public:
  explicit FlattenOp(int64_t axis) : axis_(axis) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'input'");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Shape& x = in[0].shape;
    int64_t r = static_cast<int64_t>(x.size());
    int64_t axis = axis_ < 0 ? axis_ + r : axis_;
    if (axis < 0 || axis > r)
      fail("axis " + std::to_string(axis_) + " is out of range for input of rank " +
           std::to_string(r));
    int64_t a = 1, b = 1;
    for (int64_t i = 0; i < r; ++i) (i < axis ? a : b) *= x[static_cast<size_t>(i)];
    return {{a, b}};
  }

 private:
  int64_t axis_;
};

class TransposeOp : public Op {
 public:
  explicit TransposeOp(std::vector<int64_t> perm) : perm_(std::move(perm)) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'data'");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Shape& x = in[0].shape;
    std::vector<int64_t> p = perm_of(x.size());
    Shape y(x.size());
    for (size_t d = 0; d < x.size(); ++d) y[d] = x[static_cast<size_t>(p[d])];
    return {y};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    std::vector<int64_t> p = perm_of(x.shape().size());
    std::vector<int64_t> st = ref::strides_of(x.shape());
    std::vector<int64_t> ps(p.size());
    for (size_t d = 0; d < p.size(); ++d) ps[d] = st[static_cast<size_t>(p[d])];
    Tensor& y = out[0];
    ref::for_each_index(y.shape(), {ps}, [&](int64_t i, const std::vector<int64_t>& off) {
      copy_elem(x, off[0], y, i);
    });
  }

 private:
  std::vector<int64_t> perm_of(size_t rank) const {
    std::vector<int64_t> p = perm_;
    if (p.empty()) {
      for (size_t d = rank; d-- > 0;) p.push_back(static_cast<int64_t>(d));
      return p;
    }
    std::vector<int64_t> check = p;
    if (p.size() != rank || !normalize_axes(check, static_cast<int64_t>(rank)) || check != p)
      fail("perm " + list_str(perm_) + " is not a permutation of the " + std::to_string(rank) +
           " axes of the input");
    return p;
  }
  std::vector<int64_t> perm_;
};

class SqueezeOp : public ReshapeLike {
 public:
  SqueezeOp(bool axes_input, std::optional<std::vector<int64_t>> attr_axes)
      : axes_input_(axes_input), attr_axes_(std::move(attr_axes)) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'data'");
    if (axes_input_ && present(in, 1)) require_dtype(in[1].dtype, {DType::i64}, "input 'axes'");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Shape& x = in[0].shape;
    std::optional<std::vector<int64_t>> axes = attr_axes_;
    if (axes_input_ && present(in, 1)) axes = ref::to_i64(need_value(in[1], "input 'axes'"));
    Shape y;
    if (!axes) {
      for (int64_t d : x)
        if (d != 1) y.push_back(d);
      return {y};
    }
    std::vector<int64_t> a = *axes;
    if (!normalize_axes(a, static_cast<int64_t>(x.size())))
      fail("axes " + list_str(*axes) + " are out of range or repeated for input " + shape_str(x));
    for (int64_t ax : a)
      if (x[static_cast<size_t>(ax)] != 1)
        fail("cannot squeeze axis " + std::to_string(ax) + " of input " + shape_str(x) +
             ": its size is not 1");
    for (size_t d = 0; d < x.size(); ++d)
      if (std::find(a.begin(), a.end(), static_cast<int64_t>(d)) == a.end()) y.push_back(x[d]);
    return {y};
  }

 private:
  bool axes_input_;
  std::optional<std::vector<int64_t>> attr_axes_;
};

class UnsqueezeOp : public ReshapeLike {
 public:
  UnsqueezeOp(bool axes_input, std::vector<int64_t> attr_axes)
      : axes_input_(axes_input), attr_axes_(std::move(attr_axes)) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'data'");
    if (axes_input_) {
      if (!present(in, 1)) fail("input 'axes' is required");
      require_dtype(in[1].dtype, {DType::i64}, "input 'axes'");
    }
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Shape& x = in[0].shape;
    std::vector<int64_t> axes =
        axes_input_ ? ref::to_i64(need_value(in[1], "input 'axes'")) : attr_axes_;
    int64_t rank = static_cast<int64_t>(x.size() + axes.size());
    std::vector<int64_t> a = axes;
    if (!normalize_axes(a, rank))
      fail("axes " + list_str(axes) + " are out of range or repeated for an output of rank " +
           std::to_string(rank));
    Shape y;
    size_t next = 0;
    for (int64_t d = 0; d < rank; ++d)
      y.push_back(std::find(a.begin(), a.end(), d) != a.end() ? 1 : x[next++]);
    return {y};
  }

 private:
  bool axes_input_;
  std::vector<int64_t> attr_axes_;
};

class ShapeOp : public Op {
 public:
  ShapeOp(int64_t start, std::optional<int64_t> end) : start_(start), end_(end) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'data'");
    return {DType::i64};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    auto [b, e] = range(static_cast<int64_t>(in[0].shape.size()));
    return {{e - b}};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    auto [b, e] = range(in[0]->rank());
    for (int64_t i = b; i < e; ++i) out[0].data<int64_t>()[i - b] = in[0]->dim(i);
  }

 private:
  std::pair<int64_t, int64_t> range(int64_t rank) const {
    auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
    int64_t b = clamp(start_);
    int64_t e = end_ ? clamp(*end_) : rank;
    return {b, std::max(b, e)};
  }
  int64_t start_;
  std::optional<int64_t> end_;
};

class SizeOp : public Op {
 public:
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'data'");
    return {DType::i64};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>&) const override { return {{}}; }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    out[0].data<int64_t>()[0] = in[0]->numel();
  }
};

class IdentityOp : public ReshapeLike {
 public:
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'input'");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    return {in[0].shape};
  }
};

// Training with ratio 0 drops nothing, so it is inference; any other training is refused.
const char* dropout_refusal(const Tensor* training_mode, const Tensor* ratio, bool has_ratio) {
  if (!training_mode || training_mode->numel() == 0 || ref::load(*training_mode, 0) == 0)
    return nullptr;
  if (has_ratio && ratio && ratio->numel() > 0 && ref::load(*ratio, 0) == 0) return nullptr;
  return "training_mode is true with a non-zero ratio; only inference is supported";
}

// Inference only: the output is the input and the optional mask is all ones.
class DropoutOp : public Op {
 public:
  explicit DropoutOp(int opset) : opset_(opset) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kFloatTypes, "input 'data'");
    if (present(in, 1)) require_dtype(in[1].dtype, kFloatTypes, "input 'ratio'");
    if (present(in, 2)) require_dtype(in[2].dtype, {DType::boolean}, "input 'training_mode'");
    std::vector<DType> t{in[0].dtype};
    if (num_outputs > 1) t.push_back(opset_ < 10 ? in[0].dtype : DType::boolean);
    return t;
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    if (present(in, 2) && in[2].value)
      check_inference(in[2].value, present(in, 1) ? in[1].value : nullptr, present(in, 1));
    return std::vector<Shape>(static_cast<size_t>(num_outputs), in[0].shape);
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    if (const Tensor* t = input(in, 2)) check_inference(t, input(in, 1), input(in, 1) != nullptr);
    copy_all(*in[0], out[0]);
    if (out.size() > 1 && out[1].defined())
      for (int64_t i = 0; i < out[1].numel(); ++i) ref::store(out[1], i, 1.0);
  }

 private:
  void check_inference(const Tensor* training_mode, const Tensor* ratio, bool has_ratio) const {
    if (const char* why = dropout_refusal(training_mode, ratio, has_ratio)) fail(why);
  }
  int opset_;
};

std::optional<DType> dtype_from_onnx(int64_t code) {
  switch (code) {
    case 1: return DType::f32;
    case 2: return DType::u8;
    case 3: return DType::i8;
    case 4: return DType::u16;
    case 5: return DType::i16;
    case 6: return DType::i32;
    case 7: return DType::i64;
    case 9: return DType::boolean;
    case 10: return DType::f16;
    case 11: return DType::f64;
    case 12: return DType::u32;
    case 13: return DType::u64;
    case 16: return DType::bf16;
    default: return std::nullopt;
  }
}

std::string onnx_type_name(int64_t code) {
  switch (code) {
    case 8: return "string";
    case 14: return "complex64";
    case 15: return "complex128";
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    default: return "type code " + std::to_string(code);
  }
}

bool is_signed_int(DType t) {
  return t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64;
}
bool is_unsigned_int(DType t) {
  return t == DType::u8 || t == DType::u16 || t == DType::u32 || t == DType::u64 ||
         t == DType::boolean;
}

int64_t load_signed(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::i8: return t.data<int8_t>()[i];
    case DType::i16: return t.data<int16_t>()[i];
    case DType::i32: return t.data<int32_t>()[i];
    default: return t.data<int64_t>()[i];
  }
}

uint64_t load_unsigned(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::u8: return t.data<uint8_t>()[i];
    case DType::u16: return t.data<uint16_t>()[i];
    case DType::u32: return t.data<uint32_t>()[i];
    case DType::boolean: return t.data<uint8_t>()[i] != 0;
    default: return t.data<uint64_t>()[i];
  }
}

// Integer to integer wraps modulo 2^bits, as numpy's astype does.
void store_bits(Tensor& t, int64_t i, uint64_t v) {
  switch (t.dtype()) {
    case DType::i8: t.data<int8_t>()[i] = static_cast<int8_t>(v); return;
    case DType::i16: t.data<int16_t>()[i] = static_cast<int16_t>(v); return;
    case DType::i32: t.data<int32_t>()[i] = static_cast<int32_t>(v); return;
    case DType::i64: t.data<int64_t>()[i] = static_cast<int64_t>(v); return;
    case DType::u8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); return;
    case DType::u16: t.data<uint16_t>()[i] = static_cast<uint16_t>(v); return;
    case DType::u32: t.data<uint32_t>()[i] = static_cast<uint32_t>(v); return;
    case DType::u64: t.data<uint64_t>()[i] = v; return;
    case DType::boolean: t.data<uint8_t>()[i] = v != 0; return;
    default: return;
  }
}

template <class I>
I saturate(long double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (v <= static_cast<long double>(std::numeric_limits<I>::min()))
    return std::numeric_limits<I>::min();
  if (v >= static_cast<long double>(std::numeric_limits<I>::max()))
    return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

// Rounds to float keeping a sticky low bit (round to odd), so that a second rounding to fp16 or
// bf16 gives the correctly rounded result of the wide value.
float to_float_odd(long double v) {
  float f = static_cast<float>(v);
  if (std::isfinite(f) && static_cast<long double>(f) != v && (f32_bits(f) & 1) == 0)
    f = std::nextafter(f, v > f ? std::numeric_limits<float>::infinity()
                                : -std::numeric_limits<float>::infinity());
  return f;
}

// Every value of every supported dtype is exact in a long double (64-bit mantissa on x86).
void store_wide(Tensor& t, int64_t i, long double v) {
  switch (t.dtype()) {
    case DType::f32: t.data<float>()[i] = static_cast<float>(v); return;
    case DType::f64: t.data<double>()[i] = static_cast<double>(v); return;
    case DType::f16: t.data<uint16_t>()[i] = float_to_half(to_float_odd(v)); return;
    case DType::bf16: t.data<uint16_t>()[i] = float_to_bf16(to_float_odd(v)); return;
    case DType::i8: t.data<int8_t>()[i] = saturate<int8_t>(v); return;
    case DType::i16: t.data<int16_t>()[i] = saturate<int16_t>(v); return;
    case DType::i32: t.data<int32_t>()[i] = saturate<int32_t>(v); return;
    case DType::i64: t.data<int64_t>()[i] = saturate<int64_t>(v); return;
    case DType::u8: t.data<uint8_t>()[i] = saturate<uint8_t>(v); return;
    case DType::u16: t.data<uint16_t>()[i] = saturate<uint16_t>(v); return;
    case DType::u32: t.data<uint32_t>()[i] = saturate<uint32_t>(v); return;
    case DType::u64: t.data<uint64_t>()[i] = saturate<uint64_t>(v); return;
    case DType::boolean: t.data<uint8_t>()[i] = v != 0; return;
  }
}

long double load_wide(const Tensor& t, int64_t i) {
  if (is_signed_int(t.dtype())) return static_cast<long double>(load_signed(t, i));
  if (is_unsigned_int(t.dtype())) return static_cast<long double>(load_unsigned(t, i));
  return ref::load(t, i);
}

// Float to integer truncates toward zero (saturating out of range, NaN to 0); integer to integer
// wraps; anything to bool is "not zero".
void cast_tensor(const Tensor& x, Tensor& y) {
  if (x.dtype() == y.dtype()) return copy_all(x, y);
  int64_t n = x.numel();
  bool int_src = is_signed_int(x.dtype()) || is_unsigned_int(x.dtype());
  bool int_dst = is_signed_int(y.dtype()) || is_unsigned_int(y.dtype());
  if (int_src && int_dst) {
    for (int64_t i = 0; i < n; ++i)
      store_bits(y, i,
                 is_signed_int(x.dtype()) ? static_cast<uint64_t>(load_signed(x, i))
                                          : load_unsigned(x, i));
    return;
  }
  for (int64_t i = 0; i < n; ++i) store_wide(y, i, load_wide(x, i));
}

class CastOp : public Op {
 public:
  explicit CastOp(std::optional<DType> to) : to_(to) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'input'");
    if (!to_) require_dtype(in.at(1).dtype, kAllTypes, "input 'target_type'");
    return {to_ ? *to_ : in[1].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    return {in[0].shape};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    cast_tensor(*in[0], out[0]);
  }

 private:
  std::optional<DType> to_;  // nullopt: CastLike, the dtype of input 1
};

class ConstantOp : public Op {
 public:
  explicit ConstantOp(Tensor value) : value_(std::move(value)) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>&) const override {
    return {value_.dtype()};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>&) const override {
    return {value_.shape()};
  }
  void compute(const std::vector<const Tensor*>&, std::vector<Tensor>& out) const override {
    copy_all(value_, out[0]);
  }

 private:
  Tensor value_;
};

std::unique_ptr<Op> make_constant(const OpContext& c) {
  ref::check_arity(c, 0, 0, 1);
  const ir::Attributes& a = c.node.attrs;
  for (const char* refused : {"sparse_value", "value_string", "value_strings"})
    if (a.has(refused)) c.fail(std::string("attribute '") + refused + "' is not supported");
  std::vector<const char*> given;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints"})
    if (a.has(name)) given.push_back(name);
  if (given.size() != 1)
    c.fail(
        "exactly one of value, value_float, value_floats, value_int, value_ints must be set, "
        "got " +
        std::to_string(given.size()));
  std::string name = given[0];
  if (name == "value") return std::make_unique<ConstantOp>(a.get_tensor("value")->clone());
  if (name == "value_float" || name == "value_int") {
    Tensor t = Tensor::empty(name == "value_float" ? DType::f32 : DType::i64, {});
    if (name == "value_float")
      t.data<float>()[0] = a.get_float(name, 0);
    else
      t.data<int64_t>()[0] = a.get_int(name, 0);
    return std::make_unique<ConstantOp>(t);
  }
  if (name == "value_floats") {
    std::vector<float> v = a.get_floats(name);
    Tensor t = Tensor::empty(DType::f32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<float>());
    return std::make_unique<ConstantOp>(t);
  }
  std::vector<int64_t> v = a.get_ints(name);
  Tensor t = Tensor::empty(DType::i64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data<int64_t>());
  return std::make_unique<ConstantOp>(t);
}

class ConstantOfShapeOp : public Op {
 public:
  explicit ConstantOfShapeOp(Tensor value) : value_(std::move(value)) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, {DType::i64}, "input 'input'");
    return {value_.dtype()};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Tensor& st = need_value(in[0], "input 'input'");
    if (st.rank() != 1) fail("input 'input' must be 1-D, got shape " + shape_str(st.shape()));
    Shape y = ref::to_i64(st);
    for (int64_t d : y)
      if (d < 0) fail("shape " + list_str(y) + " has a negative dimension");
    shape_numel(y);
    return {y};
  }
  void compute(const std::vector<const Tensor*>&, std::vector<Tensor>& out) const override {
    for (int64_t i = 0; i < out[0].numel(); ++i) copy_elem(value_, 0, out[0], i);
  }

 private:
  Tensor value_;
};

std::unique_ptr<Op> make_constant_of_shape(const OpContext& c) {
  ref::check_arity(c, 1, 1, 1);
  const Tensor* v = c.node.attrs.get_tensor("value");
  if (!v) return std::make_unique<ConstantOfShapeOp>(Tensor::zeros(DType::f32, {1}));
  if (v->numel() != 1)
    c.fail("attribute 'value' must hold one element, got shape " + shape_str(v->shape()));
  return std::make_unique<ConstantOfShapeOp>(v->clone());
}

class RangeOp : public Op {
 public:
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, {DType::f32, DType::f64, DType::i16, DType::i32, DType::i64},
                  "input 'start'");
    for (size_t i : {1, 2})
      if (in.at(i).dtype != in[0].dtype)
        fail(std::string(i == 1 ? "input 'limit'" : "input 'delta'") + " has dtype " +
             std::string(dtype_name(in[i].dtype)) + ", expected " +
             std::string(dtype_name(in[0].dtype)) + " like 'start'");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    return {{count(need_value(in[0], "input 'start'"), need_value(in[1], "input 'limit'"),
                   need_value(in[2], "input 'delta'"))}};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    Tensor& y = out[0];
    if (is_float(y.dtype())) {
      double start = ref::load(*in[0], 0), delta = ref::load(*in[2], 0);
      for (int64_t i = 0; i < y.numel(); ++i)
        ref::store(y, i, start + static_cast<double>(i) * delta);
      return;
    }
    int64_t start = load_signed(*in[0], 0), delta = load_signed(*in[2], 0);
    for (int64_t i = 0; i < y.numel(); ++i)
      store_bits(y, i, static_cast<uint64_t>(start + i * delta));
  }

 private:
  int64_t count(const Tensor& start, const Tensor& limit, const Tensor& delta) const {
    for (const Tensor* t : {&start, &limit, &delta})
      if (t->numel() != 1)
        fail("start, limit and delta must be scalars, got shape " + shape_str(t->shape()));
    if (is_float(start.dtype())) {
      double s = ref::load(start, 0), l = ref::load(limit, 0), d = ref::load(delta, 0);
      if (d == 0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
        fail("start, limit and delta must be finite and delta non-zero");
      double n = start.dtype() == DType::f32
                     ? std::ceil(static_cast<double>(
                           (static_cast<float>(l) - static_cast<float>(s)) / static_cast<float>(d)))
                     : std::ceil((l - s) / d);
      if (n > static_cast<double>(std::numeric_limits<int32_t>::max()))
        fail("the range has " + std::to_string(n) + " elements, more than supported");
      return std::max<int64_t>(static_cast<int64_t>(n), 0);
    }
    int64_t s = load_signed(start, 0), l = load_signed(limit, 0), d = load_signed(delta, 0);
    if (d == 0) fail("delta must be non-zero");
    long double n = std::ceil((static_cast<long double>(l) - s) / d);
    if (n > std::numeric_limits<int32_t>::max())
      fail("the range has " + std::to_string(static_cast<double>(n)) +
           " elements, more than supported");
    return std::max<int64_t>(static_cast<int64_t>(n), 0);
  }
};

class ExpandOp : public Op {
 public:
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'input'");
    require_dtype(in.at(1).dtype, {DType::i64}, "input 'shape'");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Tensor& st = need_value(in[1], "input 'shape'");
    if (st.rank() != 1) fail("input 'shape' must be 1-D, got shape " + shape_str(st.shape()));
    Shape want = ref::to_i64(st);
    for (int64_t d : want)
      if (d < 0) fail("shape " + list_str(want) + " has a negative dimension");
    Shape y;
    if (!ref::broadcast_shape(in[0].shape, want, y))
      fail("input " + shape_str(in[0].shape) + " does not broadcast to shape " + list_str(want));
    shape_numel(y);
    return {y};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    ref::for_each_index(
        y.shape(), {ref::broadcast_strides(x.shape(), y.shape())},
        [&](int64_t i, const std::vector<int64_t>& off) { copy_elem(x, off[0], y, i); });
  }
};

std::unique_ptr<Op> make_cast(const OpContext& c) {
  ref::check_arity(c, 1, 1, 1);
  if (!c.node.attrs.has("to")) c.fail("attribute 'to' is required");
  int64_t code = c.node.attrs.get_int("to", 0);
  std::optional<DType> to = dtype_from_onnx(code);
  if (!to) c.fail("casting to " + onnx_type_name(code) + " is not supported");
  return std::make_unique<CastOp>(to);
}

}  // namespace

void register_shape_ops(OpRegistry& r) {
  r.add("Reshape", 7, 21, [](const OpContext& c) {
    ref::check_arity(c, 2, 2, 1);
    return std::make_unique<ReshapeOp>(c.opset >= 14 && c.node.attrs.get_int("allowzero", 0) != 0);
  });
  r.add("Flatten", 7, 21, [](const OpContext& c) {
    ref::check_arity(c, 1, 1, 1);
    return std::make_unique<FlattenOp>(c.node.attrs.get_int("axis", 1));
  });
  r.add("Transpose", 7, 21, [](const OpContext& c) {
    ref::check_arity(c, 1, 1, 1);
    return std::make_unique<TransposeOp>(c.node.attrs.get_ints("perm"));
  });
  r.add("Squeeze", 7, 21, [](const OpContext& c) {
    ref::check_arity(c, 1, c.opset < 13 ? 1 : 2, 1);
    std::optional<std::vector<int64_t>> axes;
    if (c.opset < 13 && c.node.attrs.has("axes")) axes = c.node.attrs.get_ints("axes");
    return std::make_unique<SqueezeOp>(c.opset >= 13, axes);
  });
  r.add("Unsqueeze", 7, 21, [](const OpContext& c) {
    ref::check_arity(c, c.opset < 13 ? 1 : 2, c.opset < 13 ? 1 : 2, 1);
    if (c.opset < 13 && !c.node.attrs.has("axes")) c.fail("attribute 'axes' is required");
    return std::make_unique<UnsqueezeOp>(
        c.opset >= 13, c.opset < 13 ? c.node.attrs.get_ints("axes") : std::vector<int64_t>{});
  });
  r.add("Shape", 7, 21, [](const OpContext& c) {
    ref::check_arity(c, 1, 1, 1);
    int64_t start = c.opset >= 15 ? c.node.attrs.get_int("start", 0) : 0;
    std::optional<int64_t> end;
    if (c.opset >= 15 && c.node.attrs.has("end")) end = c.node.attrs.get_int("end", 0);
    return std::make_unique<ShapeOp>(start, end);
  });
  r.add("Size", 7, 21, [](const OpContext& c) {
    ref::check_arity(c, 1, 1, 1);
    return std::make_unique<SizeOp>();
  });
  r.add("Identity", 7, 21, [](const OpContext& c) {
    ref::check_arity(c, 1, 1, 1);
    return std::make_unique<IdentityOp>();
  });
  r.add("Dropout", 7, 21, [](const OpContext& c) {
    ref::check_arity(c, 1, c.opset < 12 ? 1 : 3, 2);
    if (c.opset >= 12 && c.constant_input(2) && (!c.node.has_input(1) || c.constant_input(1)))
      if (const char* why =
              dropout_refusal(c.constant_input(2), c.constant_input(1), c.node.has_input(1)))
        c.fail(why);
    return std::make_unique<DropoutOp>(c.opset);
  });
  r.add("Cast", 7, 21, make_cast);
  r.add("CastLike", 15, 21, [](const OpContext& c) {
    ref::check_arity(c, 2, 2, 1);
    return std::make_unique<CastOp>(std::nullopt);
  });
  r.add("Constant", 7, 21, make_constant);
  r.add("ConstantOfShape", 9, 21, make_constant_of_shape);
  r.add("Range", 11, 21, [](const OpContext& c) {
    ref::check_arity(c, 3, 3, 1);
    return std::make_unique<RangeOp>();
  });
  r.add("Expand", 8, 21, [](const OpContext& c) {
    ref::check_arity(c, 2, 2, 1);
    return std::make_unique<ExpandOp>();
  });
}

}  // namespace voxrt
