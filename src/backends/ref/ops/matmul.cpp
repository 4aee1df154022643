// MatMul (numpy matmul semantics) and Gemm, accumulating in double. Integer inputs go through
// double too, exact while every product and sum stays below 2^53.
#include <algorithm>
#include <cstdint>

#include "backends/ref/op.h"
#include "backends/ref/tensor_math.h"

namespace voxrt {
namespace {

constexpr std::initializer_list<DType> kTypes = {DType::f32, DType::f16, DType::bf16, DType::f64,
                                                 DType::i32, DType::i64, DType::u32,  DType::u64};

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

class MatMulOp : public Op {
 public:
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kTypes, "input A");
    require_dtype(in[1].dtype, {in[0].dtype}, "input B");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    return {dims(in[0].shape, in[1].shape).out};
  }
  int64_t macs(const std::vector<ValueMeta>& in, const std::vector<Shape>&) const override {
    Dims d = dims(in[0].shape, in[1].shape);
    return shape_numel(d.batch) * d.m * d.k * d.n;
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    Dims d = dims(in[0]->shape(), in[1]->shape());
    std::vector<double> a = ref::to_f64(*in[0]);
    std::vector<double> b = ref::to_f64(*in[1]);
    Tensor& y = out[0];
    std::vector<std::vector<int64_t>> st = {ref::broadcast_strides(d.a_batch, d.batch),
                                            ref::broadcast_strides(d.b_batch, d.batch)};
    std::vector<double> row(static_cast<size_t>(d.n));
    ref::for_each_index(d.batch, st, [&](int64_t bi, const std::vector<int64_t>& o) {
      const double* pa = a.data() + o[0] * d.m * d.k;
      const double* pb = b.data() + o[1] * d.k * d.n;
      for (int64_t m = 0; m < d.m; ++m) {
        std::fill(row.begin(), row.end(), 0.0);
        for (int64_t k = 0; k < d.k; ++k) {
          double av = pa[m * d.k + k];
          for (int64_t n = 0; n < d.n; ++n) row[static_cast<size_t>(n)] += av * pb[k * d.n + n];
        }
        for (int64_t n = 0; n < d.n; ++n)
          ref::store(y, (bi * d.m + m) * d.n + n, row[static_cast<size_t>(n)]);
      }
    });
  }

 private:
  struct Dims {
    Shape a_batch, b_batch, batch, out;
    int64_t m = 0, k = 0, n = 0;
  };
  // A 1-D A is a row [1, K] and a 1-D B a column [K, 1]; their unit dims are dropped from the
  // output. Leading (batch) dims broadcast.
  Dims dims(const Shape& a, const Shape& b) const {
    if (a.empty() || b.empty())
      fail("inputs must have rank 1 or more, got shapes " + shape_str(a) + " and " + shape_str(b));
    Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
    Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
    Dims d;
    d.m = a2[a2.size() - 2];
    d.k = a2[a2.size() - 1];
    d.n = b2[b2.size() - 1];
    if (b2[b2.size() - 2] != d.k)
      fail("A of shape " + shape_str(a) + " has " + std::to_string(d.k) +
           " columns but B of shape " + shape_str(b) + " has " + std::to_string(b2[b2.size() - 2]) +
           " rows");
    d.a_batch.assign(a2.begin(), a2.end() - 2);
    d.b_batch.assign(b2.begin(), b2.end() - 2);
    if (!ref::broadcast_shape(d.a_batch, d.b_batch, d.batch))
      fail("batch dimensions of A " + shape_str(a) + " and B " + shape_str(b) +
           " do not broadcast");
    d.out = d.batch;
    if (a.size() > 1) d.out.push_back(d.m);
    if (b.size() > 1) d.out.push_back(d.n);
    return d;
  }
};

/// Y = alpha * A' B' + beta * C, with A' and B' optionally transposed and C broadcast to
/// [M, N] (always allowed: opset 6's broadcast attribute only permitted it). C is required
/// before opset 11.
class GemmOp : public Op {
 public:
  GemmOp(double alpha, double beta, bool trans_a, bool trans_b)
      : alpha_(alpha), beta_(beta), trans_a_(trans_a), trans_b_(trans_b) {}
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kTypes, "input A");
    require_dtype(in[1].dtype, {in[0].dtype}, "input B");
    if (in.size() > 2 && in[2].present) require_dtype(in[2].dtype, {in[0].dtype}, "input C");
    return {in[0].dtype};
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    const Shape* c = in.size() > 2 && in[2].present ? &in[2].shape : nullptr;
    Dims d = dims(in[0].shape, in[1].shape, c);
    return {{d.m, d.n}};
  }
  int64_t macs(const std::vector<ValueMeta>& in, const std::vector<Shape>&) const override {
    Dims d = dims(in[0].shape, in[1].shape, nullptr);
    return d.m * d.k * d.n;
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    const Tensor* c = in.size() > 2 ? in[2] : nullptr;
    Dims d = dims(in[0]->shape(), in[1]->shape(), c ? &c->shape() : nullptr);
    std::vector<double> a = ref::to_f64(*in[0]);
    std::vector<double> b = ref::to_f64(*in[1]);
    std::vector<int64_t> cs =
        c ? ref::broadcast_strides(c->shape(), {d.m, d.n}) : std::vector<int64_t>{0, 0};
    Tensor& y = out[0];
    for (int64_t m = 0; m < d.m; ++m)
      for (int64_t n = 0; n < d.n; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < d.k; ++k) {
          double av =
              trans_a_ ? a[static_cast<size_t>(k * d.m + m)] : a[static_cast<size_t>(m * d.k + k)];
          double bv =
              trans_b_ ? b[static_cast<size_t>(n * d.k + k)] : b[static_cast<size_t>(k * d.n + n)];
          acc += av * bv;
        }
        double v = alpha_ * acc;
        if (c) v += beta_ * ref::load(*c, m * cs[0] + n * cs[1]);
        ref::store(y, m * d.n + n, v);
      }
  }

 private:
  struct Dims {
    int64_t m = 0, k = 0, n = 0;
  };
  Dims dims(const Shape& a, const Shape& b, const Shape* c) const {
    if (a.size() != 2 || b.size() != 2)
      fail("A and B must be 2-D, got shapes " + shape_str(a) + " and " + shape_str(b));
    Dims d;
    d.m = trans_a_ ? a[1] : a[0];
    d.k = trans_a_ ? a[0] : a[1];
    int64_t kb = trans_b_ ? b[1] : b[0];
    d.n = trans_b_ ? b[0] : b[1];
    if (kb != d.k)
      fail("A of shape " + shape_str(a) + (trans_a_ ? " (transposed)" : "") +
           " gives K=" + std::to_string(d.k) + " but B of shape " + shape_str(b) +
           (trans_b_ ? " (transposed)" : "") + " gives K=" + std::to_string(kb));
    Shape mn = {d.m, d.n}, s;
    if (c && (!ref::broadcast_shape(mn, *c, s) || s != mn))
      fail("C of shape " + shape_str(*c) + " does not broadcast to the output shape " +
           shape_str(mn));
    return d;
  }
  double alpha_, beta_;
  bool trans_a_, trans_b_;
};

}  // namespace

void register_matmul_ops(OpRegistry& r) {
  r.add("MatMul", 1, 21, [](const OpContext& c) -> std::unique_ptr<Op> {
    require_arity(c, 2, 2);
    return std::make_unique<MatMulOp>();
  });
  r.add("Gemm", 6, 21, [](const OpContext& c) -> std::unique_ptr<Op> {
    require_arity(c, c.opset < 11 ? 3 : 2, 3);
    const ir::Attributes& a = c.node.attrs;
    return std::make_unique<GemmOp>(a.get_float("alpha", 1.0f), a.get_float("beta", 1.0f),
                                    a.get_int("transA", 0) != 0, a.get_int("transB", 0) != 0);
  });
}

}  // namespace voxrt
