// Reductions over axes (ReduceSum, ReduceMean, ReduceMax) and ArgMax. Floats accumulate in
// double, integers in 64-bit integers.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/ref/op.h"
#include "backends/ref/tensor_math.h"

namespace voxrt {
namespace {

constexpr std::initializer_list<DType> kNumericTypes = {
    DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8,  DType::i16,
    DType::i32, DType::i64, DType::u8,   DType::u16, DType::u32, DType::u64};
constexpr std::initializer_list<DType> kNumericOrBoolTypes = {
    DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8,  DType::i16,    DType::i32,
    DType::i64, DType::u8,  DType::u16,  DType::u32, DType::u64, DType::boolean};

/// Calls f(T{}) with T the C++ type of the integer dtype t; does nothing for other dtypes.

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

enum class Reduction { sum, mean, max };

/// Axes come from the `axes` attribute (ReduceSum before opset 13, the others before 18) or
/// from the optional second input after; no axes means all of them, or none with
/// noop_with_empty_axes.
class ReduceOp : public Op {
 public:
  ReduceOp(Reduction kind, std::vector<int64_t> axes, bool keepdims, bool noop_with_empty_axes)
      : kind_(kind), axes_(std::move(axes)), keepdims_(keepdims), noop_(noop_with_empty_axes) {}

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kind_ == Reduction::max ? kNumericOrBoolTypes : kNumericTypes,
                  "input data");
    if (has(in, 1)) require_dtype(in[1].dtype, {DType::i64}, "input axes");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Tensor* axes = has(in, 1) ? &need_value(in[1], "input axes") : nullptr;
    std::vector<bool> mask = reduced_mask(in[0].shape.size(), axes);
    Shape s;
    for (size_t d = 0; d < mask.size(); ++d)
      if (!mask[d])
        s.push_back(in[0].shape[d]);
      else if (keepdims_)
        s.push_back(1);
    return {s};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    std::vector<bool> mask = reduced_mask(x.shape().size(), has(in, 1) ? in[1] : nullptr);
    // Each input element's output offset: the output's strides with reduced axes left at 0.
    Shape kept = x.shape();
    int64_t count = 1;
    for (size_t d = 0; d < mask.size(); ++d)
      if (mask[d]) {
        count *= kept[d];
        kept[d] = 1;
      }
    std::vector<int64_t> st = ref::strides_of(kept);
    for (size_t d = 0; d < mask.size(); ++d)
      if (mask[d]) st[d] = 0;
    size_t n = static_cast<size_t>(y.numel());

    if (is_float(x.dtype()) || x.dtype() == DType::boolean) {
      double init = kind_ == Reduction::max && x.dtype() != DType::boolean
                        ? -std::numeric_limits<double>::infinity()
                        : 0.0;
      std::vector<double> acc(n, init);
      ref::for_each_index(x.shape(), {st}, [&](int64_t i, const std::vector<int64_t>& o) {
        double v = ref::load(x, i);
        double& a = acc[static_cast<size_t>(o[0])];
        if (kind_ != Reduction::max)
          a += v;
        else if (std::isnan(v) || v > a)
          a = v;
      });
      for (size_t i = 0; i < n; ++i)
        ref::store(y, static_cast<int64_t>(i),
                   kind_ == Reduction::mean ? acc[i] / static_cast<double>(count) : acc[i]);
      return;
    }
    ref::visit_int(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      T* py = y.data<T>();
      if (kind_ == Reduction::max) {
        std::vector<T> acc(n, std::numeric_limits<T>::lowest());
        ref::for_each_index(x.shape(), {st}, [&](int64_t i, const std::vector<int64_t>& o) {
          T& a = acc[static_cast<size_t>(o[0])];
          if (px[i] > a) a = px[i];
        });
        for (size_t i = 0; i < n; ++i) py[i] = acc[i];
        return;
      }
      // Sums wrap modulo 2^64; the mean truncates toward zero.
      std::vector<uint64_t> acc(n, 0);
      ref::for_each_index(x.shape(), {st}, [&](int64_t i, const std::vector<int64_t>& o) {
        acc[static_cast<size_t>(o[0])] += static_cast<uint64_t>(px[i]);
      });
      for (size_t i = 0; i < n; ++i) {
        if (kind_ == Reduction::sum || count == 0) {
          py[i] = kind_ == Reduction::sum ? static_cast<T>(acc[i]) : T{0};
        } else if constexpr (std::is_signed_v<T>) {
          py[i] = static_cast<T>(static_cast<int64_t>(acc[i]) / count);
        } else {
          py[i] = static_cast<T>(acc[i] / static_cast<uint64_t>(count));
        }
      }
    });
  }

 private:
  std::vector<bool> reduced_mask(size_t rank, const Tensor* axes_input) const {
    std::vector<int64_t> axes = axes_;
    if (axes_input) {
      if (axes_input->rank() > 1)
        fail("input axes must be 1-D, got shape " + shape_str(axes_input->shape()));
      axes = ref::to_i64(*axes_input);
    }
    std::vector<bool> mask(rank, false);
    if (axes.empty()) {
      if (!noop_) mask.assign(rank, true);
      return mask;
    }
    for (int64_t a : axes) {
      int64_t axis = a;
      if (!ref::normalize_axis(axis, static_cast<int64_t>(rank)))
        fail("axis " + std::to_string(a) + " is out of range for input of rank " +
             std::to_string(rank));
      if (mask[static_cast<size_t>(axis)])
        fail("axis " + std::to_string(a) + " is listed more than once in axes");
      mask[static_cast<size_t>(axis)] = true;
    }
    return mask;
  }

  Reduction kind_;
  std::vector<int64_t> axes_;
  bool keepdims_;
  bool noop_;
};

/// `input_opset`: the first opset where axes is an input rather than an attribute.
OpFactory reduce(Reduction kind, int input_opset) {
  return [kind, input_opset](const OpContext& c) -> std::unique_ptr<Op> {
    bool from_input = c.opset >= input_opset;
    const ir::Attributes& a = c.node.attrs;
    bool keepdims = a.get_int("keepdims", 1) != 0;
    if (!from_input) {
      require_arity(c, 1, 1);
      return std::make_unique<ReduceOp>(kind, a.get_ints("axes"), keepdims, false);
    }
    require_arity(c, 1, 2);
    if (a.has("axes"))
      c.fail("attribute 'axes' became an input in opset " + std::to_string(input_opset) +
             "; this model imports opset " + std::to_string(c.opset));
    bool noop = a.get_int("noop_with_empty_axes", 0) != 0;
    return std::make_unique<ReduceOp>(kind, std::vector<int64_t>{}, keepdims, noop);
  };
}

/// ArgMax: output int64; ties go to the first index, or the last with select_last_index; NaN is
/// larger than any number, as in numpy.
class ArgMaxOp : public Op {
 public:
  ArgMaxOp(int64_t axis, bool keepdims, bool last)
      : axis_(axis), keepdims_(keepdims), last_(last) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kNumericTypes, "input data");
    return {DType::i64};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Shape& s = in[0].shape;
    int64_t axis = resolve_axis(s);
    Shape o;
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis)
        o.push_back(s[d]);
      else if (keepdims_)
        o.push_back(1);
    if (s[static_cast<size_t>(axis)] == 0 && shape_numel(o) != 0)
      fail("cannot take the maximum over axis " + std::to_string(axis_) + " of length 0 (shape " +
           shape_str(s) + ")");
    return {o};
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    int64_t axis = resolve_axis(x.shape());
    int64_t outer = 1, n = x.dim(axis), inner = 1;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d < axis) outer *= x.dim(d);
      if (d > axis) inner *= x.dim(d);
    }
    if (n == 0) return;
    int64_t* py = out[0].data<int64_t>();
    auto run = [&](auto get) {
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          int64_t base = o * n * inner + j;
          auto best = get(base);
          int64_t bi = 0;
          for (int64_t k = 1; k < n; ++k) {
            auto v = get(base + k * inner);
            bool greater, equal;
            if constexpr (std::is_floating_point_v<decltype(v)>) {
              greater = (std::isnan(v) && !std::isnan(best)) || v > best;
              equal = v == best || (std::isnan(v) && std::isnan(best));
            } else {
              greater = v > best;
              equal = v == best;
            }
            if (greater || (last_ && equal)) {
              best = v;
              bi = k;
            }
          }
          py[o * inner + j] = bi;
        }
    };
    if (is_float(x.dtype())) {
      run([&](int64_t i) { return ref::load(x, i); });
      return;
    }
    ref::visit_int(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* px = x.data<T>();
      run([&](int64_t i) { return px[i]; });
    });
  }

 private:
  int64_t resolve_axis(const Shape& s) const {
    int64_t axis = axis_;
    if (!ref::normalize_axis(axis, static_cast<int64_t>(s.size())))
      fail("axis " + std::to_string(axis_) + " is out of range for input of rank " +
           std::to_string(s.size()));
    return axis;
  }
  int64_t axis_;
  bool keepdims_;
  bool last_;
};

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  r.add("ReduceSum", 1, 21, reduce(Reduction::sum, 13));
  r.add("ReduceMean", 1, 21, reduce(Reduction::mean, 18));
  r.add("ReduceMax", 1, 21, reduce(Reduction::max, 18));
  r.add("ArgMax", 1, 21, [](const OpContext& c) -> std::unique_ptr<Op> {
    require_arity(c, 1, 1);
    const ir::Attributes& a = c.node.attrs;
    return std::make_unique<ArgMaxOp>(a.get_int("axis", 0), a.get_int("keepdims", 1) != 0,
                                      a.get_int("select_last_index", 0) != 0);
  });
}

}  // namespace voxrt
