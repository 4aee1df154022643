// Pointwise activations and math (one output element per input element), PRelu, Clip, and
// Softmax / LogSoftmax.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/ref/op.h"
#include "backends/ref/tensor_math.h"

namespace voxrt {
namespace {

constexpr std::initializer_list<DType> kFloatTypes = {DType::f32, DType::f16, DType::bf16,
                                                      DType::f64};
constexpr std::initializer_list<DType> kSignedTypes = {
    DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8, DType::i16, DType::i32, DType::i64};
constexpr std::initializer_list<DType> kNumericTypes = {
    DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8,  DType::i16,
    DType::i32, DType::i64, DType::u8,   DType::u16, DType::u32, DType::u64};

enum class Types { floats, signed_numbers, numbers };

std::initializer_list<DType> allowed(Types t) {
  switch (t) {
    case Types::floats: return kFloatTypes;
    case Types::signed_numbers: return kSignedTypes;
    case Types::numbers: return kNumericTypes;
  }
  return kFloatTypes;
}

/// Calls f(T{}) with T the C++ type of the integer dtype t; does nothing for other dtypes.

// Integer arithmetic wraps like two's complement hardware (what ONNX runtimes do), computed in
// uint64 so that signed overflow is never undefined behaviour.
template <class T>
T wrap_neg(T x) {
  return static_cast<T>(uint64_t{0} - static_cast<uint64_t>(x));
}
template <class T>
T wrap_mul(T a, T b) {
  return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

bool has(const std::vector<ValueMeta>& in, size_t i) {
  return i < in.size() && in[i].present;
}
bool has(const std::vector<const Tensor*>& in, size_t i) {
  return i < in.size() && in[i];
}

void require_arity(const OpContext& c, int min_in, int max_in) {
  int n = c.node.num_inputs();
  if (n < min_in || n > max_in)
    c.fail("expects " + std::to_string(min_in) +
           (max_in == min_in ? "" : " to " + std::to_string(max_in)) + " inputs, got " +
           std::to_string(n));
  for (int i = 0; i < min_in; ++i)
    if (!c.node.has_input(i)) c.fail("input " + std::to_string(i) + " is required");
  if (c.node.outputs.size() != 1)
    c.fail("expects 1 output, got " + std::to_string(c.node.outputs.size()));
}

/// f is called with a double for float dtypes and with the element's own type for integers.
template <class F>
class UnaryOp : public Op {
 public:
  UnaryOp(F f, Types types) : f_(f), types_(types) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, allowed(types_), "input X");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    return {in[0].shape};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    if (is_float(x.dtype())) {
      for (int64_t i = 0; i < x.numel(); ++i) ref::store(y, i, f_(ref::load(x, i)));
      return;
    }
    ref::visit_int(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) py[i] = static_cast<T>(f_(px[i]));
    });
  }

 private:
  F f_;
  Types types_;
};

template <class F>
OpFactory unary(Types types, F f) {
  return [types, f](const OpContext& c) -> std::unique_ptr<Op> {
    require_arity(c, 1, 1);
    return std::make_unique<UnaryOp<F>>(f, types);
  };
}

/// A unary op whose function depends on attributes: make(ctx) returns the function.
template <class Make>
OpFactory unary_with(Types types, Make make) {
  return [types, make](const OpContext& c) -> std::unique_ptr<Op> {
    require_arity(c, 1, 1);
    auto f = make(c);
    return std::make_unique<UnaryOp<decltype(f)>>(f, types);
  };
}

/// PRelu: slope broadcasts to X (numpy, one way). Before opset 7 a 1-D slope of X's channel count
/// applies per channel (axis 1), as PyTorch exported it.
class PReluOp : public Op {
 public:
  explicit PReluOp(bool legacy) : legacy_(legacy) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kNumericTypes, "input X");
    if (in[1].dtype != in[0].dtype)
      fail("input slope has dtype " + std::string(dtype_name(in[1].dtype)) + ", expected " +
           std::string(dtype_name(in[0].dtype)) + " like X");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    slope_shape(in[0].shape, in[1].shape);
    return {in[0].shape};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    const Tensor& slope = *in[1];
    Tensor& y = out[0];
    std::vector<std::vector<int64_t>> st = {
        ref::broadcast_strides(slope_shape(x.shape(), slope.shape()), x.shape())};
    if (is_float(x.dtype())) {
      ref::for_each_index(x.shape(), st, [&](int64_t i, const std::vector<int64_t>& o) {
        double v = ref::load(x, i);
        ref::store(y, i, v < 0 ? v * ref::load(slope, o[0]) : v);
      });
      return;
    }
    ref::visit_int(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      const T* ps = slope.data<T>();
      T* py = y.data<T>();
      ref::for_each_index(x.shape(), st, [&](int64_t i, const std::vector<int64_t>& o) {
        T v = px[i];
        if constexpr (std::is_signed_v<T>) {
          if (v < 0) v = wrap_mul(v, ps[o[0]]);
        }
        py[i] = v;
      });
    });
  }

 private:
  // The slope's shape as numpy broadcasting should see it.
  Shape slope_shape(const Shape& x, const Shape& slope) const {
    Shape s = slope, b;
    if (legacy_ && slope.size() == 1 && x.size() >= 2 && slope[0] == x[1] && slope[0] != 1) {
      s.assign(x.size() - 1, 1);
      s[0] = slope[0];
    }
    if (!ref::broadcast_shape(x, s, b) || b != x)
      fail("slope of shape " + shape_str(slope) + " does not broadcast to X of shape " +
           shape_str(x));
    return s;
  }
  bool legacy_;
};

/// Clip: bounds are attributes before opset 11, optional scalar inputs from 11 (integers from 12).
class ClipOp : public Op {
 public:
  ClipOp(int opset, double lo, double hi) : opset_(opset), lo_(lo), hi_(hi) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, opset_ >= 12 ? kNumericTypes : kFloatTypes, "input X");
    for (size_t i = 1; i < 3; ++i)
      if (has(in, i) && in[i].dtype != in[0].dtype)
        fail(std::string(i == 1 ? "input min" : "input max") + " has dtype " +
             std::string(dtype_name(in[i].dtype)) + ", expected " +
             std::string(dtype_name(in[0].dtype)) + " like X");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    for (size_t i = 1; i < 3; ++i)
      if (has(in, i) && shape_numel(in[i].shape) != 1)
        fail(std::string(i == 1 ? "input min" : "input max") + " must be a scalar, got shape " +
             shape_str(in[i].shape));
    return {in[0].shape};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    if (is_float(x.dtype())) {
      double lo = has(in, 1) ? ref::load(*in[1], 0) : lo_;
      double hi = has(in, 2) ? ref::load(*in[2], 0) : hi_;
      for (int64_t i = 0; i < x.numel(); ++i) ref::store(y, i, clip(ref::load(x, i), lo, hi));
      return;
    }
    ref::visit_int(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T lo = has(in, 1) ? in[1]->data<T>()[0] : std::numeric_limits<T>::lowest();
      T hi = has(in, 2) ? in[2]->data<T>()[0] : std::numeric_limits<T>::max();
      const T* px = x.data<T>();
      T* py = y.data<T>();
      for (int64_t i = 0; i < x.numel(); ++i) py[i] = clip(px[i], lo, hi);
    });
  }

 private:
  // With lo > hi every value becomes hi, as ONNX specifies; NaN stays NaN.
  template <class T>
  static T clip(T v, T lo, T hi) {
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return v;
  }
  int opset_;
  double lo_, hi_;
};

/// Softmax and LogSoftmax. Before opset 13 the input is coerced to 2D at `axis` and normalized
/// over the whole trailing block; from 13 over the single axis.
class SoftmaxOp : public Op {
 public:
  SoftmaxOp(int64_t axis, bool coerce_2d, bool log)
      : axis_(axis), coerce_2d_(coerce_2d), log_(log) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kFloatTypes, "input X");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    resolve_axis(in[0].shape);
    return {in[0].shape};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    int64_t axis = resolve_axis(x.shape());
    auto [outer, n, inner] = ref::softmax_extents(x.shape(), axis, coerce_2d_);
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < inner; ++j) {
        int64_t base = o * n * inner + j;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t k = 0; k < n; ++k) {
          v[static_cast<size_t>(k)] = ref::load(x, base + k * inner);
          mx = std::max(mx, v[static_cast<size_t>(k)]);
        }
        double sum = 0;
        for (double e : v) sum += std::exp(e - mx);
        double log_sum = std::log(sum);
        for (int64_t k = 0; k < n; ++k) {
          double e = v[static_cast<size_t>(k)] - mx;
          ref::store(y, base + k * inner, log_ ? e - log_sum : std::exp(e) / sum);
        }
      }
    }
  }

 private:
  int64_t resolve_axis(const Shape& s) const {
    int64_t rank = static_cast<int64_t>(s.size());
    int64_t axis = axis_;
    // The 2D coercion accepts axis == rank (an empty trailing block of size 1).
    bool ok = coerce_2d_ && axis == rank ? true : ref::normalize_axis(axis, rank);
    if (!ok)
      fail("axis " + std::to_string(axis_) + " is out of range for input of rank " +
           std::to_string(rank));
    return axis;
  }
  int64_t axis_;
  bool coerce_2d_;
  bool log_;
};

OpFactory softmax(bool log) {
  return [log](const OpContext& c) -> std::unique_ptr<Op> {
    require_arity(c, 1, 1);
    bool legacy = c.opset < 13;
    int64_t axis = c.node.attrs.get_int("axis", legacy ? 1 : -1);
    return std::make_unique<SoftmaxOp>(axis, legacy, log);
  };
}

}  // namespace

void register_activation_ops(OpRegistry& r) {
  r.add("Relu", 6, 21,
        unary(Types::signed_numbers, [](auto x) { return x < 0 ? decltype(x){0} : x; }));
  r.add("LeakyRelu", 6, 21, unary_with(Types::floats, [](const OpContext& c) {
          double alpha = c.node.attrs.get_float("alpha", 0.01f);
          return [alpha](double x) { return x >= 0 ? x : alpha * x; };
        }));
  r.add("Elu", 6, 21, unary_with(Types::floats, [](const OpContext& c) {
          double alpha = c.node.attrs.get_float("alpha", 1.0f);
          return [alpha](double x) { return x >= 0 ? x : alpha * std::expm1(x); };
        }));
  r.add("Selu", 6, 21, unary_with(Types::floats, [](const OpContext& c) {
          double alpha = c.node.attrs.get_float("alpha", 1.67326319217681884765625f);
          double gamma = c.node.attrs.get_float("gamma", 1.05070102214813232421875f);
          return [alpha, gamma](double x) {
            return x > 0 ? gamma * x : gamma * alpha * std::expm1(x);
          };
        }));
  r.add("HardSigmoid", 6, 21, unary_with(Types::floats, [](const OpContext& c) {
          double alpha = c.node.attrs.get_float("alpha", 0.2f);
          double beta = c.node.attrs.get_float("beta", 0.5f);
          return [alpha, beta](double x) {
            double v = alpha * x + beta;
            return v < 0 ? 0 : v > 1 ? 1 : v;
          };
        }));
  r.add("Sigmoid", 6, 21, unary(Types::floats, [](double x) {
          return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
        }));
  r.add("Tanh", 6, 21, unary(Types::floats, [](double x) { return std::tanh(x); }));
  r.add("Sqrt", 6, 21, unary(Types::floats, [](double x) { return std::sqrt(x); }));
  r.add("Exp", 6, 21, unary(Types::floats, [](double x) { return std::exp(x); }));
  r.add("Log", 6, 21, unary(Types::floats, [](double x) { return std::log(x); }));
  r.add("Erf", 9, 21, unary(Types::floats, [](double x) { return std::erf(x); }));
  r.add("Neg", 6, 21, unary(Types::signed_numbers, [](auto x) {
          if constexpr (std::is_integral_v<decltype(x)>)
            return wrap_neg(x);
          else
            return -x;
        }));
  r.add("Abs", 6, 21, unary(Types::numbers, [](auto x) {
          using T = decltype(x);
          if constexpr (!std::is_integral_v<T>)
            return std::fabs(x);
          else if constexpr (std::is_signed_v<T>)
            return x < 0 ? wrap_neg(x) : x;
          else
            return x;
        }));
  r.add("PRelu", 6, 21, [](const OpContext& c) -> std::unique_ptr<Op> {
    require_arity(c, 2, 2);
    return std::make_unique<PReluOp>(c.opset < 7);
  });
  r.add("Clip", 6, 21, [](const OpContext& c) -> std::unique_ptr<Op> {
    double lo = -std::numeric_limits<double>::infinity();
    double hi = std::numeric_limits<double>::infinity();
    if (c.opset < 11) {
      require_arity(c, 1, 1);
      lo = c.node.attrs.get_float("min", std::numeric_limits<float>::lowest());
      hi = c.node.attrs.get_float("max", std::numeric_limits<float>::max());
    } else {
      require_arity(c, 1, 3);
      if (c.node.attrs.has("min") || c.node.attrs.has("max"))
        c.fail("attributes 'min' and 'max' became inputs in opset 11; this model imports opset " +
               std::to_string(c.opset));
    }
    return std::make_unique<ClipOp>(c.opset, lo, hi);
  });
  r.add("Softmax", 1, 21, softmax(false));
  r.add("LogSoftmax", 1, 21, softmax(true));
}

}  // namespace voxrt
