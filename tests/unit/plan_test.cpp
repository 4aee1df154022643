// The planner's arena: ops that may overwrite their input (normalizations, activations) write
// their output over it where nothing reads that input afterwards, and the results stay those of
// the reference backend; Concat and Split outputs as slices; with threads, a region per channel
// size.
#include "runtime/plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/ref/tensor_math.h"
#include "model_builder.h"
#include "passes_test_util.h"
#include "support/paths.h"
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
void expect_reference_results(const std::string& bytes, const Shape& shape = {1, 4, 8, 8, 8}) {
  Tensor x = Tensor::empty(DType::f32, shape);
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
  EXPECT_LT(std::sqrt(num / den), 1e-5) << shape_str(shape);
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

// x -> Conv a (4 -> 6, stride 2) -> LeakyRelu -> InstanceNormalization, and x -> Conv b (4 -> 5,
// the same window) -> Conv e (5 -> 6); y = a * e. The two convolutions join (fuse-sibling-convs)
// into one and a Split, whose outputs at batch 1 are slices of the joint output: the Split is
// skipped and the normalization writes over its slice; at batch 2 the Split copies.
TEST(PlanArena, SplitOutputsAreSlicesAtBatchOne) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {std::string("N"), 4, 8, 8, 8});
  b.initializer("wa", {6, 4, 3, 3, 3}, random_values(648, 8));
  b.initializer("wb", {5, 4, 3, 3, 3}, random_values(540, 9));
  b.initializer("we", {6, 5, 3, 3, 3}, random_values(810, 10));
  b.initializer("scale", {6}, random_values(6, 11));
  b.initializer("bias", {6}, random_values(6, 12));
  for (const char* w : {"wa", "wb"}) {
    auto& conv = b.node("Conv", {"x", w}, {w == std::string("wa") ? "ca" : "cb"});
    ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1, 1, 1});
    ModelBuilder::attr_ints(conv, "strides", {2, 2, 2});
  }
  ModelBuilder::attr_float(b.node("LeakyRelu", {"ca"}, {"la"}), "alpha", 0.1f);
  b.node("InstanceNormalization", {"la", "scale", "bias"}, {"n"});
  ModelBuilder::attr_ints(b.node("Conv", {"cb", "we"}, {"ce"}), "pads", {1, 1, 1, 1, 1, 1});
  b.node("Mul", {"n", "ce"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  const std::string bytes = b.bytes();

  CompiledModel m = compile_model(bytes.data(), bytes.size(), "plan", "", CompileOptions{});
  size_t split = 0, norm = 0, joint = 0;
  for (size_t k = 0; k < m.graph.nodes.size(); ++k) {
    const std::string& op = m.graph.nodes[k].op_type;
    if (op == "Split") split = k;
    if (op == "InstanceNormalization") norm = k;
    if (op == "FusedConv" && m.graph.nodes[k].outputs.size() == 1 &&
        m.graph.nodes[k].name.find("/siblings") != std::string::npos)
      joint = k;
  }
  ASSERT_EQ(m.graph.nodes[split].op_type, "Split");
  ASSERT_EQ(m.graph.nodes[norm].op_type, "InstanceNormalization");
  ASSERT_EQ(m.graph.nodes[joint].op_type, "FusedConv");
  const ir::Node& sp = m.graph.nodes[split];
  auto step_of = [](const Plan& p, size_t node) {
    return static_cast<size_t>(std::find(p.steps.begin(), p.steps.end(), static_cast<int>(node)) -
                               p.steps.begin());
  };
  auto offset = [](const Plan& p, int v) { return p.arena_offset[static_cast<size_t>(v)]; };

  Plan one = make_plan(m, {{1, 4, 8, 8, 8}});
  EXPECT_EQ(one.skip_step[step_of(one, split)], 1);
  const int64_t base = offset(one, m.graph.nodes[joint].outputs[0]);
  ASSERT_GE(base, 0);
  EXPECT_EQ(offset(one, sp.outputs[0]), base);
  EXPECT_EQ(offset(one, sp.outputs[1]), base + 6 * 4 * 4 * 4 * 4);  // after a's 6 channels
  EXPECT_EQ(offset(one, m.graph.nodes[norm].outputs[0]), base) << "the norm writes over its slice";

  Plan two = make_plan(m, {{2, 4, 8, 8, 8}});
  EXPECT_EQ(two.skip_step[step_of(two, split)], 0);
  EXPECT_NE(offset(two, sp.outputs[0]), offset(two, m.graph.nodes[joint].outputs[0]));

  expect_reference_results(bytes, {1, 4, 8, 8, 8});
  expect_reference_results(bytes, {2, 4, 8, 8, 8});
}

// A model's own Split at batch 1: x -> Conv -> T, Split(T) -> a, b, n = InstanceNorm(a); y = n * b
// + ReduceMean over channels of T * mean(n). The outputs are slices of T, but T is read again
// after the normalization, which therefore may not write over its slice.
TEST(PlanArena, SplitSliceKeptWhileItsInputIsRead) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 4, 8, 8, 8});
  b.initializer("w", {6, 4, 3, 3, 3}, random_values(648, 13));
  b.initializer("scale", {3}, random_values(3, 14));
  b.initializer("bias", {3}, random_values(3, 15));
  b.initializer_i64("sizes", {2}, {3, 3});
  ModelBuilder::attr_ints(b.node("Conv", {"x", "w"}, {"t"}), "pads", {1, 1, 1, 1, 1, 1});
  ModelBuilder::attr_int(b.node("Split", {"t", "sizes"}, {"a", "b"}), "axis", 1);
  b.node("InstanceNormalization", {"a", "scale", "bias"}, {"n"});
  b.node("Mul", {"n", "b"}, {"m"});
  b.node("ReduceMean", {"n"}, {"g"});
  b.node("Mul", {"t", "g"}, {"q"});
  ModelBuilder::attr_ints(b.node("ReduceMean", {"q"}, {"r"}), "axes", {1});
  b.node("Add", {"m", "r"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  const std::string bytes = b.bytes();
  auto norms = io_offsets(bytes, "InstanceNormalization");
  ASSERT_EQ(norms.size(), 1u);
  EXPECT_NE(norms[0].first, norms[0].second) << "T is read after the normalization";
  auto splits = io_offsets(bytes, "Split");
  ASSERT_EQ(splits.size(), 1u);
  EXPECT_EQ(splits[0].first, splits[0].second) << "the Split's outputs are slices of T";
  expect_reference_results(bytes);
}

// With threads, a value shares arena bytes only with values of its class (the bytes of one
// channel), so that each core writes over lines it wrote itself the run before; one thread, a
// batch of as many items as threads, or an arena past kThreadClassesMaxBytes keeps one region
// for all. unet2d mixes three channel sizes (64^2, 32^2 and 16^2 at a 64x64 input).
TEST(PlanArena, ThreadsGiveEachChannelSizeItsOwnRegion) {
  const std::string bytes = read(voxrt::test::source_dir() + "/tests/fixtures/unet2d_op17.onnx");
  CompiledModel m = compile_model(bytes.data(), bytes.size(), "unet2d", "", CompileOptions{});
  struct Range {
    int64_t cls, begin, end;
    int first, last;  // steps
  };
  auto ranges = [&](const Plan& p) {
    std::vector<int> def(m.graph.values.size(), -1);
    for (size_t s = 0; s < p.steps.size(); ++s)
      for (int o : m.graph.nodes[static_cast<size_t>(p.steps[s])].outputs)
        if (o >= 0) def[static_cast<size_t>(o)] = static_cast<int>(s);
    std::vector<Range> r;
    for (size_t v = 0; v < m.graph.values.size(); ++v) {
      if (p.arena_offset[v] < 0) continue;
      const Shape& sh = p.shapes[v];
      EXPECT_EQ(sh.size(), 4u) << m.graph.where_value(static_cast<int>(v));
      const int64_t bytes_v = shape_numel(sh) * 4;
      EXPECT_LE(p.arena_offset[v] + bytes_v, p.arena_bytes);
      r.push_back({sh[2] * sh[3], p.arena_offset[v], p.arena_offset[v] + bytes_v, def[v],
                   std::max(def[v], p.last_use[v])});
    }
    return r;
  };
  // Pairs of values whose bytes meet: of different classes; of overlapping lifetimes.
  auto meets = [](const std::vector<Range>& r) {
    std::pair<int, int> n{0, 0};
    for (size_t i = 0; i < r.size(); ++i)
      for (size_t j = i + 1; j < r.size(); ++j) {
        if (r[i].begin >= r[j].end || r[j].begin >= r[i].end) continue;
        n.first += r[i].cls != r[j].cls;
        n.second += r[i].first <= r[j].last && r[j].first <= r[i].last;
      }
    return n;
  };
  const Plan one = make_plan(m, {{1, 1, 64, 64}});
  const Plan two = make_plan(m, {{1, 1, 64, 64}}, {}, 2);
  const auto one_meets = meets(ranges(one)), two_meets = meets(ranges(two));
  EXPECT_GT(one_meets.first, 0) << "one region: values of different channel sizes share bytes";
  EXPECT_EQ(two_meets.first, 0) << "a region per channel size";
  EXPECT_EQ(one_meets.second, 0);
  EXPECT_EQ(two_meets.second, 0);
  EXPECT_GT(two.arena_bytes, one.arena_bytes);
  EXPECT_EQ(make_plan(m, {{1, 1, 64, 64}}, {}, 1).arena_offset, one.arena_offset);

  // As many batch items as threads: each thread owns whole items, one region for all.
  const Plan batch_one = make_plan(m, {{2, 1, 64, 64}});
  const Plan batch_two = make_plan(m, {{2, 1, 64, 64}}, {}, 2);
  EXPECT_EQ(batch_two.arena_offset, batch_one.arena_offset);
  EXPECT_EQ(batch_two.arena_bytes, batch_one.arena_bytes);
  EXPECT_GT(make_plan(m, {{2, 1, 64, 64}}, {}, 3).arena_bytes, batch_one.arena_bytes)
      << "fewer items than threads: a region per channel size";

  // 2048^2: about 0.3 GB in one region, past kThreadClassesMaxBytes; two threads keep it.
  const Plan big_one = make_plan(m, {{1, 1, 2048, 2048}});
  const Plan big_two = make_plan(m, {{1, 1, 2048, 2048}}, {}, 2);
  ASSERT_GT(big_one.arena_bytes, kThreadClassesMaxBytes);
  EXPECT_EQ(big_two.arena_offset, big_one.arena_offset);
  EXPECT_EQ(big_two.arena_bytes, big_one.arena_bytes);
}

}  // namespace
}  // namespace voxrt::test
