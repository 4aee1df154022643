// Runs one reference op without a Session (builds a one-node ir::Graph, creates the op through the
// registry, infers dtypes and shapes, allocates and computes), plus tensor helpers for the conv,
// pool and norm tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/ref/op.h"
#include "backends/ref/tensor_math.h"
#include "support/attr_setters.h"

namespace voxrt::test {

struct NodeSpec : AttrSetters<NodeSpec> {
  explicit NodeSpec(std::string op_type) : op(std::move(op_type)) {}
  std::string op;
  int opset = 21;
  std::vector<const Tensor*> inputs;   // nullptr: omitted optional input
  std::vector<bool> outputs = {true};  // false: omitted optional output
};

struct Built {
  std::unique_ptr<Op> op;
  std::vector<ValueMeta> meta;
  std::vector<DType> types;
  std::vector<Shape> shapes;
};

/// Creates the op (throws voxrt::Error as loading would) and infers its outputs.
inline Built build_node(const NodeSpec& spec) {
  ir::Graph g;
  g.model_name = "test.onnx";
  g.opset = spec.opset;
  ir::Node n;
  n.name = "n0";
  n.op_type = spec.op;
  n.opset = spec.opset;
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    n.inputs.push_back(spec.inputs[i] ? g.add_value("in" + std::to_string(i)) : -1);
  for (size_t i = 0; i < spec.outputs.size(); ++i)
    n.outputs.push_back(spec.outputs[i] ? g.add_value("out" + std::to_string(i)) : -1);
  n.attrs.items = spec.attrs;
  n.attrs.where = g.where(n);
  Built b;
  b.op = OpRegistry::instance().create(n, g);
  for (const Tensor* t : spec.inputs)
    b.meta.push_back(t ? ValueMeta{true, t->dtype(), t->shape(), nullptr} : ValueMeta{});
  b.types = b.op->infer_types(b.meta);
  b.shapes = b.op->infer_shapes(b.meta);
  return b;
}

/// Builds and runs the node; omitted outputs come back as default (undefined) tensors.
inline std::vector<Tensor> run_node(const NodeSpec& spec) {
  Built b = build_node(spec);
  std::vector<Tensor> out;
  for (size_t i = 0; i < spec.outputs.size(); ++i)
    out.push_back(spec.outputs[i] ? Tensor::zeros(b.types[i], b.shapes[i]) : Tensor());
  b.op->compute(spec.inputs, out);
  return out;
}

/// The message of the voxrt::Error that building or running `spec` throws ("" if none).
inline std::string error_of(const NodeSpec& spec) {
  try {
    run_node(spec);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline Tensor random_tensor(DType t, Shape shape, std::mt19937& rng, double lo = -1,
                            double hi = 1) {
  Tensor x = Tensor::empty(t, std::move(shape));
  std::uniform_real_distribution<double> d(lo, hi);
  for (int64_t i = 0; i < x.numel(); ++i) ref::store(x, i, d(rng));
  return x;
}

/// Tolerance for comparing an output of dtype `t` against a double-precision expectation.
inline double tolerance(DType t, double want) {
  double rel = t == DType::f16 ? 1e-3 : t == DType::bf16 ? 8e-3 : t == DType::f32 ? 1e-6 : 1e-12;
  return rel * (1 + std::fabs(want));
}

inline void expect_near_all(const Tensor& got, const std::vector<double>& want,
                            const std::string& what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double w = want[static_cast<size_t>(i)];
    ASSERT_NEAR(ref::load(got, i), w, tolerance(got.dtype(), w)) << what << ", element " << i;
  }
}

constexpr DType kAllFloat[] = {DType::f32, DType::f16, DType::bf16, DType::f64};

}  // namespace voxrt::test
