// The planner's arena: ops that may overwrite their input (normalizations, activations) write
// their output over it where nothing reads that input afterwards, and the results stay those of
// the reference backend.
#include "runtime/plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/ref/tensor_math.h"
#include "model_builder.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// The optimized Session (whose plan lets ops overwrite their inputs) against the reference
// backend (whose plan does not), within the fp32 bar.
void expect_reference_results(const std::string& bytes) {
  Tensor x = Tensor::empty(DType::f32, {1, 4, 8, 8, 8});
  std::vector<float> xv = random_values(static_cast<size_t>(x.numel()), 5);
  std::copy(xv.begin(), xv.end(), x.data<float>());
  SessionOptions o;
  Session fast(bytes.data(), bytes.size(), o);
  o.backend = Backend::reference;
  Session slow(bytes.data(), bytes.size(), o);
  Tensor got = fast.run({{"x", x}})[0], want = slow.run({{"x", x}})[0];
  std::vector<double> g = ref::to_f64(got), w = ref::to_f64(want);
  double num = 0, den = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    num += (g[i] - w[i]) * (g[i] - w[i]);
    den += w[i] * w[i];
  }
  EXPECT_LT(std::sqrt(num / den), 1e-5);
}

// Arena offsets of input 0 and output 0 of every node of `op_type` after compiling and planning
// the model at its one input's shape 1x4x8x8x8.
std::vector<std::pair<int64_t, int64_t>> io_offsets(const std::string& bytes,
                                                    const std::string& op_type) {
  CompiledModel m = compile_model(bytes.data(), bytes.size(), "plan", "", CompileOptions{});
  Plan p = make_plan(m, {{1, 4, 8, 8, 8}});
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const ir::Node& n : m.graph.nodes)
    if (n.op_type == op_type)
      out.emplace_back(p.arena_offset[static_cast<size_t>(n.inputs[0])],
                       p.arena_offset[static_cast<size_t>(n.outputs[0])]);
  return out;
}

// x -> Conv -> InstanceNormalization -> Relu -> Conv -> y. With `reuse`, the first conv's output
// is added to the last one's as well, so it is still read after the normalization.
std::string norm_model(bool reuse) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 4, 8, 8, 8});
  b.initializer("w1", {4, 4, 3, 3, 3}, random_values(432, 1));
  b.initializer("w2", {4, 4, 3, 3, 3}, random_values(432, 2));
  b.initializer("scale", {4}, random_values(4, 3));
  b.initializer("bias", {4}, random_values(4, 4));
  ModelBuilder::attr_ints(b.node("Conv", {"x", "w1"}, {"c1"}), "pads", {1, 1, 1, 1, 1, 1});
  b.node("InstanceNormalization", {"c1", "scale", "bias"}, {"n"});
  b.node("Relu", {"n"}, {"r"});
  ModelBuilder::attr_ints(b.node("Conv", {"r", "w2"}, {reuse ? "c2" : "y"}), "pads",
                          {1, 1, 1, 1, 1, 1});
  if (reuse) b.node("Add", {"c2", "c1"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  return b.bytes();
}

TEST(PlanArena, NormalizationOverwritesItsDyingInput) {
  for (bool reuse : {false, true}) {
    const std::string bytes = norm_model(reuse);
    auto norms = io_offsets(bytes, "FusedInstanceNorm");
    ASSERT_EQ(norms.size(), 1u) << "the Relu should have joined the normalization";
    const auto [in, out] = norms[0];
    ASSERT_GE(in, 0);
    ASSERT_GE(out, 0);
    EXPECT_EQ(in == out, !reuse) << (reuse ? "its input is read later" : "its input dies here");
    expect_reference_results(bytes);
  }
}

// An activation no conv takes into its epilogue (Sigmoid) stays a node of its own and writes over
// the conv output it reads.
TEST(PlanArena, StandaloneActivationOverwritesItsInput) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 4, 8, 8, 8});
  b.initializer("w1", {4, 4, 3, 3, 3}, random_values(432, 6));
  b.initializer("w2", {4, 4, 3, 3, 3}, random_values(432, 7));
  ModelBuilder::attr_ints(b.node("Conv", {"x", "w1"}, {"c1"}), "pads", {1, 1, 1, 1, 1, 1});
  b.node("Sigmoid", {"c1"}, {"s"});
  ModelBuilder::attr_ints(b.node("Conv", {"s", "w2"}, {"y"}), "pads", {1, 1, 1, 1, 1, 1});
  b.output("y", onnx::TensorProto::FLOAT);
  const std::string bytes = b.bytes();
  auto sigmoids = io_offsets(bytes, "Sigmoid");
  ASSERT_EQ(sigmoids.size(), 1u);
  EXPECT_GE(sigmoids[0].first, 0);
  EXPECT_EQ(sigmoids[0].second, sigmoids[0].first);
  expect_reference_results(bytes);
}

}  // namespace
}  // namespace voxrt::test
