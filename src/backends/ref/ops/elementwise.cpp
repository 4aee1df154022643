// Broadcasting elementwise ops: Add, Sub, Mul, Div, Pow, Min, Max, Where, Equal.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <type_traits>

#include "backends/ref/op.h"
#include "backends/ref/tensor_math.h"

namespace voxrt {
namespace {

constexpr std::initializer_list<DType> kNumericTypes = {
    DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8,  DType::i16,
    DType::i32, DType::i64, DType::u8,   DType::u16, DType::u32, DType::u64};
constexpr std::initializer_list<DType> kComparableTypes = {
    DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8,  DType::i16,    DType::i32,
    DType::i64, DType::u8,  DType::u16,  DType::u32, DType::u64, DType::boolean};

/// Calls f(T{}) with T the C++ type of the integer dtype t; does nothing for other dtypes.

// Integer arithmetic wraps like two's complement hardware (what ONNX runtimes do), computed in
// uint64 so that signed overflow is never undefined behaviour.
template <class T>
uint64_t u64(T v) {
  return static_cast<uint64_t>(v);
}

struct AddFn {
  double operator()(double a, double b) const { return a + b; }
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(u64(a) + u64(b));
  }
};
struct SubFn {
  double operator()(double a, double b) const { return a - b; }
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(u64(a) - u64(b));
  }
};
struct MulFn {
  double operator()(double a, double b) const { return a * b; }
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(u64(a) * u64(b));
  }
};
struct DivFn {
  double operator()(double a, double b) const { return a / b; }
  // Truncates toward zero like C. Division by zero, undefined in C and ONNX, gives 0 instead of
  // a crash; MIN / -1 wraps to MIN.
  template <class T>
  T operator()(T a, T b) const {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>) {
      if (b == -1) return static_cast<T>(uint64_t{0} - u64(a));
    }
    return static_cast<T>(a / b);
  }
};

void require_arity(const OpContext& c, int min_in, int max_in) {
  int n = c.node.num_inputs();
  if (n < min_in || n > max_in)
    c.fail("expects " + std::to_string(min_in) +
           (max_in == min_in ? "" : " to " + std::to_string(max_in)) + " inputs, got " +
           std::to_string(n));
  for (int i = 0; i < n; ++i)
    if (!c.node.has_input(i)) c.fail("input " + std::to_string(i) + " is required");
  if (c.node.outputs.size() != 1)
    c.fail("expects 1 output, got " + std::to_string(c.node.outputs.size()));
}

/// The numpy broadcast of every input's shape.
Shape broadcast_all(const Op& op, const std::vector<ValueMeta>& in, size_t first = 0) {
  Shape s = in[first].shape;
  for (size_t i = first + 1; i < in.size(); ++i) {
    Shape next;
    if (!ref::broadcast_shape(s, in[i].shape, next))
      throw Error(op.where + ": input " + std::to_string(i) + " of shape " +
                  shape_str(in[i].shape) + " does not broadcast with shape " + shape_str(s));
    s = next;
  }
  return s;
}

std::vector<std::vector<int64_t>> strides_for(const std::vector<const Tensor*>& in,
                                              const Shape& out) {
  std::vector<std::vector<int64_t>> st;
  for (const Tensor* t : in) st.push_back(ref::broadcast_strides(t->shape(), out));
  return st;
}

/// Checks every input from `first` on has the dtype of input `first`.
void require_same_dtype(const Op& op, const std::vector<ValueMeta>& in, size_t first = 0) {
  for (size_t i = first + 1; i < in.size(); ++i)
    if (in[i].dtype != in[first].dtype)
      throw Error(op.where + ": input " + std::to_string(i) + " has dtype " +
                  std::string(dtype_name(in[i].dtype)) + ", expected " +
                  std::string(dtype_name(in[first].dtype)) + " like input " +
                  std::to_string(first));
}

/// Before opset 7, Add/Sub/Mul/Div/Pow broadcast only with broadcast=1, and then B's dims line up
/// with A's starting at `axis` (by default, A's trailing dims).
struct LegacyBroadcast {
  bool on = false;
  bool broadcast = false;
  std::optional<int64_t> axis;
};

LegacyBroadcast legacy_broadcast(const OpContext& c) {
  LegacyBroadcast l;
  l.on = c.opset < 7;
  if (!l.on) return l;
  l.broadcast = c.node.attrs.get_int("broadcast", 0) != 0;
  if (c.node.attrs.has("axis")) l.axis = c.node.attrs.get_int("axis", 0);
  return l;
}

/// Shape handling shared by the two-input arithmetic ops, legacy broadcasting included.
class TwoInputOp : public Op {
 public:
  explicit TwoInputOp(LegacyBroadcast legacy) : legacy_(legacy) {}

 protected:
  Shape out_shape(const std::vector<ValueMeta>& in) const {
    if (!legacy_.on) return broadcast_all(*this, in);
    b_as_numpy(in[0].shape, in[1].shape);
    return in[0].shape;
  }
  std::vector<std::vector<int64_t>> strides(const std::vector<const Tensor*>& in,
                                            const Shape& out) const {
    Shape b = b_as_numpy(in[0]->shape(), in[1]->shape());
    return {ref::broadcast_strides(in[0]->shape(), out), ref::broadcast_strides(b, out)};
  }

 private:
  // B's shape with unit dims added so that numpy broadcasting gives the legacy result.
  Shape b_as_numpy(const Shape& a, const Shape& b) const {
    if (!legacy_.on) return b;
    if (!legacy_.broadcast) {
      if (a != b)
        fail("before opset 7 A and B must have the same shape unless broadcast=1, got " +
             shape_str(a) + " and " + shape_str(b));
      return b;
    }
    int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
    int64_t axis = legacy_.axis ? *legacy_.axis : ra - rb;
    if (axis < 0) axis += ra;
    Shape s(a.size(), 1), o;
    bool ok = axis >= 0 && axis <= ra - rb;  // not axis + rb: a fuzzed axis overflowed it
    for (int64_t i = 0; ok && i < rb; ++i)
      s[static_cast<size_t>(axis + i)] = b[static_cast<size_t>(i)];
    if (!ok || !ref::broadcast_shape(a, s, o) || o != a)
      fail("B of shape " + shape_str(b) + " does not broadcast to A of shape " + shape_str(a) +
           (legacy_.axis ? " at axis " + std::to_string(*legacy_.axis) : ""));
    return s;
  }
  LegacyBroadcast legacy_;
};

/// Add, Sub, Mul, Div: f is called with doubles for float dtypes, with the element type for
/// integers.
template <class F>
class BinaryOp : public TwoInputOp {
 public:
  using TwoInputOp::TwoInputOp;
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kNumericTypes, "input A");
    require_same_dtype(*this, in);
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    return {out_shape(in)};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    Tensor& y = out[0];
    auto st = strides(in, y.shape());
    F f;
    if (is_float(a.dtype())) {
      ref::for_each_index(y.shape(), st, [&](int64_t i, const std::vector<int64_t>& o) {
        ref::store(y, i, f(ref::load(a, o[0]), ref::load(b, o[1])));
      });
      return;
    }
    ref::visit_int(a.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* py = y.data<T>();
      ref::for_each_index(y.shape(), st, [&](int64_t i, const std::vector<int64_t>& o) {
        py[i] = f(pa[o[0]], pb[o[1]]);
      });
    });
  }
};

template <class F>
OpFactory binary() {
  return [](const OpContext& c) -> std::unique_ptr<Op> {
    require_arity(c, 2, 2);
    return std::make_unique<BinaryOp<F>>(legacy_broadcast(c));
  };
}

/// Integer power by squaring, wrapping on overflow. Negative exponents give the truncated
/// reciprocal (0 unless |base| is 1; 0 for base 0, where C++ and numpy have no answer).
template <class T>
T int_pow(T base, int64_t e) {
  if (e < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>) {
      if (base == -1) return (e % 2 == 0) ? 1 : -1;
    }
    return 0;
  }
  uint64_t result = 1, b = u64(base);
  for (uint64_t n = static_cast<uint64_t>(e); n; n >>= 1) {
    if (n & 1) result *= b;
    b *= b;
  }
  return static_cast<T>(result);
}

/// Pow: from opset 12 base and exponent may have different dtypes; the output has the base's.
class PowOp : public TwoInputOp {
 public:
  using TwoInputOp::TwoInputOp;
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kNumericTypes, "input X");
    require_dtype(in[1].dtype, kNumericTypes, "input Y");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    return {out_shape(in)};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    Tensor& y = out[0];
    auto st = strides(in, y.shape());
    if (is_float(a.dtype())) {
      ref::for_each_index(y.shape(), st, [&](int64_t i, const std::vector<int64_t>& o) {
        ref::store(y, i, std::pow(ref::load(a, o[0]), ref::load(b, o[1])));
      });
      return;
    }
    bool int_exponent = !is_float(b.dtype());
    ref::visit_int(a.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* pa = a.data<T>();
      T* py = y.data<T>();
      ref::for_each_index(y.shape(), st, [&](int64_t i, const std::vector<int64_t>& o) {
        double e = ref::load(b, o[1]);
        if (int_exponent) {
          py[i] = int_pow(pa[o[0]], static_cast<int64_t>(std::clamp(e, -1e18, 1e18)));
        } else {
          // Computed in double and converted (truncating, saturating), as numpy's int ** float.
          ref::store(y, i, std::pow(static_cast<double>(pa[o[0]]), e));
        }
      });
    });
  }
};

/// Min and Max over any number of broadcast inputs; NaN wins, as in numpy.
class MinMaxOp : public Op {
 public:
  explicit MinMaxOp(bool is_max) : is_max_(is_max) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kNumericTypes, "input 0");
    require_same_dtype(*this, in);
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    return {broadcast_all(*this, in)};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    Tensor& y = out[0];
    auto st = strides_for(in, y.shape());
    if (is_float(y.dtype())) {
      ref::for_each_index(y.shape(), st, [&](int64_t i, const std::vector<int64_t>& o) {
        double v = ref::load(*in[0], o[0]);
        for (size_t k = 1; k < in.size(); ++k) {
          double w = ref::load(*in[k], o[k]);
          if (std::isnan(w) || (is_max_ ? w > v : w < v)) v = w;
        }
        ref::store(y, i, v);
      });
      return;
    }
    ref::visit_int(y.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* py = y.data<T>();
      ref::for_each_index(y.shape(), st, [&](int64_t i, const std::vector<int64_t>& o) {
        T v = in[0]->data<T>()[o[0]];
        for (size_t k = 1; k < in.size(); ++k) {
          T w = in[k]->data<T>()[o[k]];
          if (is_max_ ? w > v : w < v) v = w;
        }
        py[i] = v;
      });
    });
  }

 private:
  bool is_max_;
};

class WhereOp : public Op {
 public:
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, {DType::boolean}, "input condition");
    require_same_dtype(*this, in, 1);
    return {in[1].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    return {broadcast_all(*this, in)};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    Tensor& y = out[0];
    auto st = strides_for(in, y.shape());
    size_t es = dtype_size(y.dtype());
    const uint8_t* cond = in[0]->data<uint8_t>();
    const uint8_t* px = in[1]->data<uint8_t>();
    const uint8_t* pz = in[2]->data<uint8_t>();
    uint8_t* py = y.data<uint8_t>();
    ref::for_each_index(y.shape(), st, [&](int64_t i, const std::vector<int64_t>& o) {
      const uint8_t* src = cond[o[0]] ? px + o[1] * es : pz + o[2] * es;
      std::memcpy(py + i * es, src, es);
    });
  }
};

class EqualOp : public Op {
 public:
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kComparableTypes, "input A");
    require_same_dtype(*this, in);
    return {DType::boolean};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    return {broadcast_all(*this, in)};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    Tensor& y = out[0];
    uint8_t* py = y.data<uint8_t>();
    auto st = strides_for(in, y.shape());
    if (is_float(a.dtype()) || a.dtype() == DType::boolean) {
      ref::for_each_index(y.shape(), st, [&](int64_t i, const std::vector<int64_t>& o) {
        py[i] = ref::load(a, o[0]) == ref::load(b, o[1]);
      });
      return;
    }
    ref::visit_int(a.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      ref::for_each_index(y.shape(), st, [&](int64_t i, const std::vector<int64_t>& o) {
        py[i] = pa[o[0]] == pb[o[1]];
      });
    });
  }
};

template <class O, class... Args>
OpFactory make_op(int min_in, int max_in, Args... args) {
  return [=](const OpContext& c) -> std::unique_ptr<Op> {
    require_arity(c, min_in, max_in);
    return std::make_unique<O>(args...);
  };
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  r.add("Add", 6, 21, binary<AddFn>());
  r.add("Sub", 6, 21, binary<SubFn>());
  r.add("Mul", 6, 21, binary<MulFn>());
  r.add("Div", 6, 21, binary<DivFn>());
  r.add("Pow", 1, 21, [](const OpContext& c) -> std::unique_ptr<Op> {
    require_arity(c, 2, 2);
    return std::make_unique<PowOp>(legacy_broadcast(c));
  });
  r.add("Min", 6, 21, make_op<MinMaxOp>(1, 1 << 20, false));
  r.add("Max", 6, 21, make_op<MinMaxOp>(1, 1 << 20, true));
  r.add("Where", 9, 21, make_op<WhereOp>(3, 3));
  r.add("Equal", 7, 21, make_op<EqualOp>(2, 2));
}

}  // namespace voxrt
