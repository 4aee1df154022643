// Normalization kernels (BatchNormalization, InstanceNormalization, GroupNormalization and their
// fused activation forms) against the reference ops, f32 and f16, on every ISA this CPU has;
// and the fuse-norm-activation pass against the unfused graph.
#include <cstring>

#include "../unit/model_builder.h"
#include "backends/ref/ops/fused.h"
#include "cpu_op_harness.h"
#include "passes/passes.h"

namespace voxrt::test {
namespace {

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {1, 3, 5, 7, 11},    // primes
      {2, 16, 8, 8, 8},    // tile multiples
      {1, 4, 3},           // rows shorter than a vector
      {1, 2, 41, 43, 47},  // rows longer than a thread chunk
      {2, 6, 17, 19},      // 2D
      {1, 3, 130, 70},     // 2D in units of several rows (58, 58, 14)
  };
  return s;
}

Tensor vec(DType t, int64_t n, std::mt19937& rng, double lo, double hi) {
  return random_tensor(t, {n}, rng, lo, hi);
}

// BatchNormalization's running mean and variance, c of each.
void batch_stats(OneNode& n, DType t, int64_t c, std::mt19937& rng) {
  n.constant("mean", vec(t, c, rng, -1, 1));
  n.constant("var", vec(t, c, rng, 0.2, 2));
}

class Norm : public testing::TestWithParam<Isa> {};

// Runs `op` (domain `domain`) on X of `shape` around `offset` with per-channel (or per-group)
// scale and bias, plus `extra` attributes and constants.
CpuRun run_norm(Isa isa, const std::string& op, const std::string& domain, int opset, DType t,
                const Shape& shape, double offset, int64_t params,
                const std::function<void(OneNode&)>& extra, std::mt19937& rng, int threads = 2) {
  OneNode n(op, opset, domain);
  n.input("x", random_tensor(t, shape, rng, offset - 2, offset + 2));
  n.constant("scale", vec(t, params, rng, 0.5, 1.5));
  n.constant("bias", vec(t, params, rng, -1, 1));
  if (extra) extra(n);
  n.output("y");
  return n.run(isa, threads);
}

TEST_P(Norm, BatchNormalization) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(1);
  for (const char* act : {"", "Relu", "LeakyRelu"})
    for (DType t : {DType::f32, DType::f16})
      for (const Shape& s : shapes()) {
        bool fused = *act != 0;
        CpuRun r = run_norm(
            GetParam(), fused ? "FusedBatchNorm" : "BatchNormalization", fused ? "voxrt" : "", 15,
            t, s, 1.0, s[1],
            [&](OneNode& n) {
              batch_stats(n, t, s[1], rng);
              n.attr_float("epsilon", 1e-3f);
              if (fused) n.attr_string("activation", act);
            },
            rng);
        EXPECT_NE(r.kernel, "ref");
        EXPECT_LT(r.error, tolerance(t)) << act << " " << dtype_name(t) << " " << shape_str(s)
                                         << " " << r.kernel;
      }
}

TEST_P(Norm, InstanceNormalization) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(2);
  for (const char* act : {"", "Relu", "LeakyRelu"})
    for (DType t : {DType::f32, DType::f16})
      for (double offset : {0.0, 3.0})
        for (const Shape& s : shapes()) {
          bool fused = *act != 0;
          CpuRun r = run_norm(GetParam(), fused ? "FusedInstanceNorm" : "InstanceNormalization",
                              fused ? "voxrt" : "", 17, t, s, offset, s[1],
                              [&](OneNode& n) {
                                if (fused) n.attr_string("activation", act);
                                if (fused) n.attr_float("alpha", 0.02f);
                              },
                              rng);
          EXPECT_NE(r.kernel, "ref");
          EXPECT_LT(r.error, tolerance(t)) << act << " " << dtype_name(t) << " offset " << offset
                                           << " " << shape_str(s) << " " << r.kernel;
        }
}

// Activations around 300: their squares overflow fp16, so statistics must not be kept in it.
// Around 3000 (2600 standard deviations), folding the mean into the bias would miss the fp32
// bound (1.4e-4); the mean is subtracted first there.
TEST_P(Norm, InstanceNormOfLargeActivations) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(3);
  for (DType t : {DType::f32, DType::f16})
    for (double offset : {300.0, -280.0, 3000.0}) {
      Shape s = {1, 4, 19, 23, 29};
      CpuRun r = run_norm(GetParam(), "InstanceNormalization", "", 17, t, s, offset, s[1], {}, rng);
      EXPECT_LT(r.error, tolerance(t)) << dtype_name(t) << " offset " << offset;
    }
}

TEST_P(Norm, GroupNormalization) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(4);
  for (int opset : {18, 21})
    for (const char* act : {"", "LeakyRelu"})
      for (DType t : {DType::f32, DType::f16})
        for (const Shape& s : {Shape{1, 6, 5, 7, 11}, Shape{2, 16, 8, 8, 8}, Shape{1, 4, 41, 43, 13}}) {
          int64_t groups = s[1] / 2;
          bool fused = *act != 0;
          CpuRun r = run_norm(GetParam(), fused ? "FusedGroupNorm" : "GroupNormalization",
                              fused ? "voxrt" : "", opset, t, s, 2.0, opset < 21 ? groups : s[1],
                              [&](OneNode& n) {
                                n.attr_int("num_groups", groups);
                                if (fused) n.attr_string("activation", act);
                              },
                              rng);
          EXPECT_NE(r.kernel, "ref");
          EXPECT_LT(r.error, tolerance(t)) << "opset " << opset << " " << act << " "
                                           << dtype_name(t) << " " << shape_str(s) << " "
                                           << r.kernel;
        }
}

// Every fused norm with a residual (the residual its last input), with each activation and
// none: added before the activation (norm -> Add [-> activation]) or after it (norm ->
// activation -> Add, residual_after_activation).
TEST_P(Norm, FusedResidual) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(5);
  for (const char* op : {"FusedBatchNorm", "FusedInstanceNorm", "FusedGroupNorm"})
    for (const char* act : {"", "Relu", "LeakyRelu"})
      for (bool after : {false, true})
        for (DType t : {DType::f32, DType::f16})
          for (const Shape& s : shapes()) {
            if (after && *act == 0) continue;  // the same sum either way
            const std::string kind = op;
            const int64_t groups = s[1] % 2 == 0 ? s[1] / 2 : 1;
            CpuRun r = run_norm(
                GetParam(), op, "voxrt", kind == "FusedBatchNorm" ? 15 : 21, t, s, 1.0, s[1],
                [&](OneNode& n) {
                  if (kind == "FusedBatchNorm") batch_stats(n, t, s[1], rng);
                  if (kind == "FusedGroupNorm") n.attr_int("num_groups", groups);
                  n.input("r", random_tensor(t, s, rng, -1.5, 1.5));
                  n.attr_int("residual", 1);
                  n.attr_string("activation", act);
                  n.attr_float("alpha", 0.05f);
                  if (after) n.attr_int("residual_after_activation", 1);
                },
                rng);
            EXPECT_NE(r.kernel.find("_add"), std::string::npos) << r.kernel;
            EXPECT_LT(r.error, tolerance(t))
                << op << " " << act << (after ? " after" : "") << " " << dtype_name(t) << " "
                << shape_str(s) << " " << r.kernel;
          }
}

// Fused batch and instance norms reading X and the residual from tensors of more channels (a
// Split's outputs read in place: x_from, residual_from), from channels 0, 1 and 3 on, with the
// residual before and after the activation.
TEST_P(Norm, FusedWindows) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(6);
  int k = 0;
  for (const char* op : {"FusedBatchNorm", "FusedInstanceNorm"})
    for (DType t : {DType::f32, DType::f16})
      for (const Shape& s : shapes()) {
        const std::string kind = op;
        const int64_t x_from = k % 3 == 2 ? 3 : k % 3, r_from = (k + 1) % 3;
        const bool residual = k % 4 != 0, after = k % 2 == 0;
        ++k;
        Shape wide = s;
        wide[1] += x_from + 2;
        Shape wide_r = s;
        wide_r[1] += r_from + 1;
        CpuRun r = run_norm(
            GetParam(), op, "voxrt", kind == "FusedBatchNorm" ? 15 : 17, t, wide, 1.0, s[1],
            [&](OneNode& n) {
              if (kind == "FusedBatchNorm") batch_stats(n, t, s[1], rng);
              n.attr_string("activation", "LeakyRelu");
              n.attr_float("alpha", 0.05f);
              n.attr_int(kFusedXFrom, x_from);
              if (residual) {
                n.input("r", random_tensor(t, wide_r, rng, -1.5, 1.5));
                n.attr_int("residual", 1);
                n.attr_int(kFusedResidualFrom, r_from);
                if (after) n.attr_int("residual_after_activation", 1);
              }
            },
            rng);
        const std::string what = kind + " " + std::string(dtype_name(t)) + " " + shape_str(s) +
                                 " x_from " + std::to_string(x_from) +
                                 (residual ? " residual_from " + std::to_string(r_from) : "");
        EXPECT_NE(r.kernel, "ref") << what;
        EXPECT_LT(r.error, tolerance(t)) << what << " " << r.kernel;
      }
}

// Instance and group norms give each thread a range of every channel's depths (rows in 2D) and
// keep each unit's partial sums apart: the same output bits on one, two and three threads,
// also where the channels go in two waves (three fp32 channels of 1.5 MiB), and where a wave
// holds the end of one batch item and the start of the next (three items of three 768 KiB
// channels: five channels a 4 MiB wave).
TEST_P(Norm, SameOutputOnAnyThreadCount) {
  VOXRT_REQUIRE_ISA(GetParam());
  for (const char* op : {"InstanceNormalization", "GroupNormalization"})
    for (DType t : {DType::f32, DType::f16})
      for (const Shape& s :
           {Shape{1, 3, 64, 64, 96}, Shape{2, 6, 17, 19}, Shape{1, 3, 130, 70}, Shape{1, 4, 3},
            Shape{1, 2, 41, 43, 47}, Shape{1, 2, 3, 5, 7}, Shape{3, 3, 32, 64, 96}}) {
        const std::string kind = op;
        const int64_t groups = s[1] % 2 == 0 ? s[1] / 2 : 1;
        std::vector<Tensor> outs;
        for (int threads : {1, 2, 3}) {
          std::mt19937 rng(7);  // the same inputs each time
          CpuRun r = run_norm(
              GetParam(), op, "", 21, t, s, 1.0, s[1],
              [&](OneNode& n) {
                if (kind == "GroupNormalization") n.attr_int("num_groups", groups);
              },
              rng, threads);
          EXPECT_LT(r.error, tolerance(t)) << op << " " << shape_str(s) << " " << threads;
          outs.push_back(r.cpu_out[0]);
        }
        for (size_t k = 1; k < outs.size(); ++k)
          EXPECT_EQ(std::memcmp(outs[0].raw(), outs[k].raw(), outs[0].nbytes()), 0)
              << op << " " << dtype_name(t) << " " << shape_str(s) << ": " << k + 1
              << " threads against one";
      }
}

INSTANTIATE_TEST_SUITE_P(Isa, Norm, testing::ValuesIn(all_isas()), isa_param_name);

// The optimized CPU session of `b` against its unoptimized reference session on a random X of
// `shape`; returns the optimized graph's text.
std::string expect_fused_matches_unfused(ModelBuilder& b, const Shape& shape, uint32_t seed) {
  Session fused = b.session();
  SessionOptions plain;
  plain.optimize = false;
  plain.backend = Backend::reference;
  Session unfused = b.session(plain);
  std::mt19937 rng(seed);
  Tensor x = random_tensor(DType::f32, shape, rng);
  EXPECT_LT(rel_l2(fused.run({{"x", x}})[0], unfused.run({{"x", x}})[0]), 1e-5);
  return fused.graph_text();
}

// InstanceNormalization -> LeakyRelu and BatchNormalization -> Relu (not after a Conv, so left
// unfolded) each become one fused node, and the optimized CPU session matches the reference.
TEST(FuseNormActivation, MatchesUnfusedGraph) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 3, 9, 10, 11});
  std::vector<float> ones(3, 1.1f), zeros(3, 0.2f), var(3, 0.7f), mean(3, -0.1f);
  b.initializer("s", {3}, ones);
  b.initializer("b", {3}, zeros);
  b.initializer("m", {3}, mean);
  b.initializer("v", {3}, var);
  b.node("InstanceNormalization", {"x", "s", "b"}, {"n1"});
  auto& lr = b.node("LeakyRelu", {"n1"}, {"a1"});
  ModelBuilder::attr_float(lr, "alpha", 0.05f);
  b.node("BatchNormalization", {"a1", "s", "b", "m", "v"}, {"n2"});
  b.node("Relu", {"n2"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  std::string text = expect_fused_matches_unfused(b, {1, 3, 9, 10, 11}, 9);
  EXPECT_NE(text.find("FusedInstanceNorm"), std::string::npos) << text;
  EXPECT_NE(text.find("FusedBatchNorm"), std::string::npos) << text;
  EXPECT_EQ(text.find("LeakyRelu"), std::string::npos) << text;
}

// ResEnc's block end, InstanceNorm -> Add(skip) -> LeakyRelu, and a BatchNorm -> Add without an
// activation: each becomes one fused node with the skip as its residual (the skip produced after
// the norm in node order, so the pass must reorder), and the optimized session matches the
// reference. An Add of a broadcast constant is not a residual and stays.
TEST(FuseNormActivation, ResidualAddsJoinTheNorm) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 3, 9, 10, 11});
  std::vector<float> ones(3, 1.1f), zeros(3, 0.2f), var(3, 0.7f), mean(3, -0.1f), k(3, 0.3f);
  b.initializer("s", {3}, ones);
  b.initializer("b", {3}, zeros);
  b.initializer("m", {3}, mean);
  b.initializer("v", {3}, var);
  b.initializer("k", {3, 1, 1, 1}, k);
  b.node("InstanceNormalization", {"x", "s", "b"}, {"n1"});
  b.node("Relu", {"x"}, {"skip"});
  b.node("Add", {"n1", "skip"}, {"a1"});
  auto& lr = b.node("LeakyRelu", {"a1"}, {"r1"});
  ModelBuilder::attr_float(lr, "alpha", 0.05f);
  b.node("BatchNormalization", {"r1", "s", "b", "m", "v"}, {"n2"});
  b.node("Add", {"x", "n2"}, {"a2"});
  b.node("InstanceNormalization", {"a2", "s", "b"}, {"n3"});
  b.node("Add", {"n3", "k"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  std::string text = expect_fused_matches_unfused(b, {1, 3, 9, 10, 11}, 10);
  EXPECT_NE(text.find("FusedInstanceNorm"), std::string::npos) << text;
  EXPECT_NE(text.find("FusedBatchNorm"), std::string::npos) << text;
  EXPECT_EQ(text.find("LeakyRelu"), std::string::npos) << text;
  size_t adds = 0;
  for (size_t at = text.find(": Add("); at != std::string::npos; at = text.find(": Add(", at + 1))
    ++adds;
  EXPECT_EQ(adds, 1u) << "only the constant's Add stays\n" << text;
}

// MONAI's residual unit with its default InstanceNorm: x -> Conv a (stride 2) -> IN -> LeakyRelu
// -> Conv c -> IN -> LeakyRelu -> Add(Conv b(x), b over a's window). The second norm takes the
// Add after its activation, so b stays plain and joins a (fuse-sibling-convs); the Split after
// the joint convolution goes too (read-split-in-place: the first norm reads a's channels of the
// joint output, the second norm b's as its residual); the optimized session matches the
// reference at batch 1 and 2.
TEST(FuseNormActivation, ResidualAfterTheActivationJoinsTheNorm) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {std::string("N"), 2, 8, 9, 10});
  std::vector<float> wa(4 * 2 * 27), wc(4 * 4 * 27), s(4, 1.1f), z(4, 0.2f);
  for (size_t i = 0; i < wa.size(); ++i) wa[i] = static_cast<float>((i * 37) % 11) / 11.0f - 0.45f;
  for (size_t i = 0; i < wc.size(); ++i) wc[i] = static_cast<float>((i * 13) % 7) / 7.0f - 0.4f;
  b.initializer("wa", {4, 2, 3, 3, 3}, wa);
  b.initializer("wb", {4, 2, 3, 3, 3}, std::vector<float>(wa.rbegin(), wa.rend()));
  b.initializer("wc", {4, 4, 3, 3, 3}, wc);
  b.initializer("s", {4}, s);
  b.initializer("z", {4}, z);
  auto conv = [&](const char* x, const char* w, const char* y, int64_t stride) {
    auto& n = b.node("Conv", {x, w}, {y});
    ModelBuilder::attr_ints(n, "pads", {1, 1, 1, 1, 1, 1});
    ModelBuilder::attr_ints(n, "strides", {stride, stride, stride});
  };
  conv("x", "wa", "ca", 2);
  b.node("InstanceNormalization", {"ca", "s", "z"}, {"na"});
  ModelBuilder::attr_float(b.node("LeakyRelu", {"na"}, {"la"}), "alpha", 0.1f);
  conv("x", "wb", "cb", 2);
  conv("la", "wc", "cc", 1);
  b.node("InstanceNormalization", {"cc", "s", "z"}, {"nc"});
  ModelBuilder::attr_float(b.node("LeakyRelu", {"nc"}, {"lc"}), "alpha", 0.1f);
  b.node("Add", {"lc", "cb"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  for (int64_t n : {1, 2}) {
    std::string text = expect_fused_matches_unfused(b, {n, 2, 8, 9, 10}, 11);
    // No Add left and b joined a, so the norm took the Add.
    EXPECT_EQ(text.find(": Add("), std::string::npos) << text;
    EXPECT_NE(text.find("/siblings: FusedConv("), std::string::npos)
        << "the two stride-2 convs join\n"
        << text;
    EXPECT_EQ(text.find(": Split("), std::string::npos) << "the norms read the Split's input\n"
                                                        << text;
  }
}

}  // namespace
}  // namespace voxrt::test
