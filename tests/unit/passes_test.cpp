// The passes that rewrite patterns (fuse-cast-islands, fold-softmax-transposes, fold-batchnorm
// into ConvTranspose, fuse-group-norm, fuse-concat-into-conv, remove-identity's Pad; those that
// give a convolution more to do are in conv_passes_test.cpp, those that rewrite Resizes in
// resize_passes_test.cpp), and the load pipeline's release of
// packed weights: each rewritten graph against the graph as it was, on small graphs and on the
// fixture UNets that carry the patterns. A pass is tested on the graph the passes before it leave
// (run_passes stopping at its predecessor).
#include "passes/passes.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "backends/cpu/cpu_op.h"
#include "backends/ref/ops/fused.h"
#include "backends/ref/tensor_math.h"
#include "core/half.h"
#include "model_builder.h"
#include "passes_test_util.h"
#include "runtime/compile.h"
#include "support/paths.h"
#include "support/rel_l2.h"

namespace voxrt::test {
namespace {

void cast(ModelBuilder& b, const std::string& in, const std::string& out, int to) {
  auto& n = b.node("Cast", {in}, {out});
  ModelBuilder::attr_int(n, "to", to);
}

// x -> f16 -> [f32 -> Op -> f16] -> Relu -> f32: the bracket is the island.
ir::Graph island_graph(const std::string& op, bool linear) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 3, 6, 7, 9});
  cast(b, "x", "h", onnx::TensorProto::FLOAT16);
  cast(b, "h", "f", onnx::TensorProto::FLOAT);
  if (op == "Resize") {
    b.initializer("scales", {5}, {1, 1, 2, 2, 2});
    auto& r = b.node("Resize", {"f", "", "scales"}, {"r"});
    auto* a = r.add_attribute();
    a->set_name("mode");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(linear ? "linear" : "nearest");
  } else {
    b.initializer("c", {1}, {0.3f});
    b.node(op, {"f", "c"}, {"r"});
  }
  cast(b, "r", "r16", onnx::TensorProto::FLOAT16);
  b.node("Relu", {"r16"}, {"a"});
  cast(b, "a", "y", onnx::TensorProto::FLOAT);
  b.output("y", onnx::TensorProto::FLOAT);
  return import(b.bytes());
}

TEST(FuseCastIslands, ResizeMinMaxRunInFp16) {
  for (auto [op, linear] :
       {std::pair{"Resize", true}, {"Resize", false}, {"Min", false}, {"Max", false}}) {
    ir::Graph before = island_graph(op, linear);
    ir::Graph after = before;
    fuse_cast_islands(after);
    EXPECT_EQ(count_ops(before, "Cast"), 4);
    EXPECT_EQ(count_ops(after, "Cast"), 2) << op;
    // Computing on the fp16 values in fp32 and rounding once is what the island does.
    expect_same_outputs(before, after, {random_input({1, 3, 6, 7, 9}, 1)}, 1e-3, op);
  }
}

TEST(FuseCastIslands, LeavesOtherIslandsAlone) {
  // A Resize whose output also feeds an fp32 consumer stays in fp32.
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT16, {1, 2, 4, 4});
  cast(b, "x", "f", onnx::TensorProto::FLOAT);
  b.initializer("scales", {4}, {1, 1, 2, 2});
  b.node("Resize", {"f", "", "scales"}, {"r"});
  cast(b, "r", "y", onnx::TensorProto::FLOAT16);
  b.node("Relu", {"r"}, {"z"});
  b.output("y", onnx::TensorProto::FLOAT16);
  b.output("z", onnx::TensorProto::FLOAT);
  ir::Graph g = import(b.bytes());
  fuse_cast_islands(g);
  EXPECT_EQ(count_ops(g, "Cast"), 2);
}

// The fixture converted by onnxconverter_common with its default block list keeps both
// decoder Resizes in fp32 islands.
TEST(FuseCastIslands, FixtureUnetIslandsVanish) {
  ir::Graph before = fixture_after("unet3d_resize_op17_fp16io32.onnx", "cancel-cast-pairs");
  ir::Graph after = before;
  fuse_cast_islands(after);
  EXPECT_EQ(count_ops(before, "Cast") - count_ops(after, "Cast"), 4);
  Tensor x = random_input({1, 1, 8, 8, 8}, 2);
  Tensor y0 = run_graph(before, {x}, true)[0], y1 = run_graph(after, {x}, true)[0];
  EXPECT_LT(rel_l2(y1, y0), 1e-3);
}

// fp16 models that keep fp32 outputs end in Conv -> Cast(float32): the last convolution stores
// fp32 itself, a plain one (unet3d_bn's head) or one with MONAI's residual.
TEST(FuseOutputCast, FixtureLastConvsStoreFp32) {
  for (const char* file : {"unet3d_bn_op17_fp16io32.onnx", "unet3d_monai_op17_fp16io32.onnx"}) {
    ir::Graph before = fixture_after(file, "fuse-concat-into-conv");
    ir::Graph after = before;
    fuse_output_cast(after);
    EXPECT_EQ(count_ops(before, "Cast") - count_ops(after, "Cast"), 1) << file;
    const int producer = after.producers()[static_cast<size_t>(after.outputs[0])];
    ASSERT_GE(producer, 0) << file;
    const ir::Node& last = after.nodes[static_cast<size_t>(producer)];
    EXPECT_EQ(last.op_type, "FusedConv") << file;
    EXPECT_EQ(last.attrs.get_int(kFusedCastTo, 0), 1) << file;
    // The fused convolution skips the fp16 rounding the Cast widened: closer, not equal. Lowered
    // on AVX512-FP16 the convolutions sum in fp16 (1.4e-3 from the reference on an Intel Xeon).
    expect_same_outputs(before, after, {random_input({1, 1, 16, 16, 16}, 3)}, 3e-3, file);
  }
}

// A Cast after anything but a convolution (unet3d_resize ends in Softmax) stays.
TEST(FuseOutputCast, LeavesOtherCastsAlone) {
  ir::Graph g = fixture_after("unet3d_resize_op17_fp16io32.onnx", "fuse-concat-into-conv");
  const int casts = count_ops(g, "Cast");
  fuse_output_cast(g);
  EXPECT_EQ(count_ops(g, "Cast"), casts);
}

// torch's opset-11 export of softmax over channels: Transpose, Softmax(last axis), Transpose.
TEST(FoldSoftmaxTransposes, FixtureUnetOpset11) {
  ir::Graph before = fixture_after("unet3d_resize_op11.onnx", "fuse-cast-islands");
  ir::Graph after = before;
  fold_softmax_transposes(after);
  EXPECT_EQ(count_ops(before, "Transpose"), 2);
  EXPECT_EQ(count_ops(after, "Transpose"), 0);
  expect_same_outputs(before, after, {random_input({1, 1, 16, 16, 16}, 3)}, 1e-6, "");
}

TEST(FoldSoftmaxTransposes, KeepsNonInversePairs) {
  ModelBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {1, 3, 4, 5});
  auto& t1 = b.node("Transpose", {"x"}, {"t"});
  ModelBuilder::attr_ints(t1, "perm", {0, 3, 2, 1});
  auto& s = b.node("Softmax", {"t"}, {"s"});
  ModelBuilder::attr_int(s, "axis", -1);
  auto& t2 = b.node("Transpose", {"s"}, {"y"});
  ModelBuilder::attr_ints(t2, "perm", {0, 2, 3, 1});
  b.output("y", onnx::TensorProto::FLOAT);
  ir::Graph g = import(b.bytes());
  fold_softmax_transposes(g);
  EXPECT_EQ(count_ops(g, "Transpose"), 2);
}

// a -> Relu, b -> Concat(axis) -> Conv -> Relu; a second consumer of the Concat when `shared`.
// With `transpose`, the Conv is MONAI's up-convolution (ConvTranspose 3x3, stride 2, padding 1,
// output_padding 1).
ir::Graph concat_conv_graph(int64_t axis, bool shared, bool transpose = false) {
  ModelBuilder b(17);
  b.input("a", onnx::TensorProto::FLOAT, {std::string("N"), 3, 6, 7});
  b.input("b", onnx::TensorProto::FLOAT, {std::string("N"), 2, 6, 7});
  b.node("Relu", {"a"}, {"ra"});
  auto& cat = b.node("Concat", {"ra", "b"}, {"cat"});
  ModelBuilder::attr_int(cat, "axis", axis);
  std::vector<float> w(4 * 5 * 3 * 3), bias = {0.1f, -0.2f, 0.3f, 0.0f};
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 37) % 11) / 11.0f - 0.5f;
  b.initializer("w",
                transpose ? std::vector<int64_t>{5, 4, 3, 3} : std::vector<int64_t>{4, 5, 3, 3}, w);
  b.initializer("bias", {4}, bias);
  auto& conv = b.node(transpose ? "ConvTranspose" : "Conv", {"cat", "w", "bias"}, {"c"});
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  if (transpose) {
    ModelBuilder::attr_ints(conv, "strides", {2, 2});
    ModelBuilder::attr_ints(conv, "output_padding", {1, 1});
  }
  b.node("Relu", {"c"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  if (shared) {
    b.node("Sigmoid", {"cat"}, {"z"});
    b.output("z", onnx::TensorProto::FLOAT);
  }
  ir::Graph g = import(b.bytes());
  run_passes(g, "fuse-norm-activation");  // the passes before this one
  return g;
}

TEST(FuseConcatIntoConv, ConvReadsTheParts) {
  for (bool transpose : {false, true})
    for (int64_t axis : {1, -3}) {
      const std::string what =
          std::string(transpose ? "ConvTranspose" : "Conv") + " axis " + std::to_string(axis);
      ir::Graph before = concat_conv_graph(axis, false, transpose);
      ir::Graph after = before;
      fuse_concat_into_conv(after);
      EXPECT_EQ(count_ops(before, "Concat"), 1) << what;
      EXPECT_EQ(count_ops(after, "Concat"), 0) << what;
      const char* fused = transpose ? "FusedConvTranspose" : "FusedConv";
      ASSERT_EQ(count_ops(after, fused), 1) << what;
      for (const ir::Node& n : after.nodes) {
        if (n.op_type == fused) {
          EXPECT_EQ(n.attrs.get_int("x_parts", 1), 2) << what;
        }
      }
      // Batch 2: where the arena cannot make a Concat's inputs slices of it.
      expect_same_outputs(before, after,
                          {random_input({2, 3, 6, 7}, 4), random_input({2, 2, 6, 7}, 5)}, 1e-6,
                          what);
    }
}

TEST(FuseConcatIntoConv, LeavesOtherConcatsAlone) {
  ir::Graph other_axis = concat_conv_graph(2, false);
  fuse_concat_into_conv(other_axis);
  EXPECT_EQ(count_ops(other_axis, "Concat"), 1);
  ir::Graph shared = concat_conv_graph(1, true);
  fuse_concat_into_conv(shared);
  EXPECT_EQ(count_ops(shared, "Concat"), 1);
}

// Both decoder Concats of a fixture UNet go, at batch 3.
TEST(FuseConcatIntoConv, FixtureUnetConcatsVanish) {
  ir::Graph before = fixture_after("unet3d_bn_op17.onnx", "fuse-norm-activation");
  ir::Graph after = before;
  fuse_concat_into_conv(after);
  EXPECT_EQ(count_ops(before, "Concat"), 2);
  EXPECT_EQ(count_ops(after, "Concat"), 0);
  expect_same_outputs(before, after, {random_input({3, 1, 16, 16, 16}, 6)}, 1e-6, "");
}

// MONAI's UNet: its three Concats feed up-convolutions, which read their parts, at batch 2.
TEST(FuseConcatIntoConv, FixtureMonaiUpConvsReadTheirParts) {
  ir::Graph before = fixture_after("unet3d_monai_op17.onnx", "fuse-norm-activation");
  ir::Graph after = before;
  fuse_concat_into_conv(after);
  EXPECT_EQ(count_ops(before, "Concat"), 3);
  EXPECT_EQ(count_ops(after, "Concat"), 0);
  int with_parts = 0;
  for (const ir::Node& n : after.nodes)
    with_parts += n.op_type == "FusedConvTranspose" && n.attrs.get_int("x_parts", 1) == 2;
  EXPECT_EQ(with_parts, 3);
  expect_same_outputs(before, after, {random_input({2, 1, 16, 16, 16}, 7)}, 1e-6, "");
}

// torch's GroupNorm export (Reshape, InstanceNormalization, Reshape, Mul, Add) in the
// SegResNet-like fixture becomes GroupNormalization nodes; plain InstanceNorms stay.
TEST(FuseGroupNorm, FixtureGroupNormsBecomeOneNode) {
  for (const char* file :
       {"unet3d_gn_op11.onnx", "unet3d_gn_op17.onnx", "unet3d_gn_op17_fp16.onnx"}) {
    ir::Graph before = fixture_after(file, "fuse-conv-epilogue");
    ir::Graph after = before;
    fuse_group_norm(after);
    EXPECT_EQ(count_ops(before, "InstanceNormalization"), 10) << file;
    EXPECT_EQ(count_ops(after, "InstanceNormalization"), 0) << file;
    EXPECT_EQ(count_ops(after, "GroupNormalization"), 10) << file;
    EXPECT_EQ(count_ops(after, "Reshape"), 0) << file;
    EXPECT_EQ(count_ops(before, "Mul") - count_ops(after, "Mul"), 10) << file;
    Tensor x = random_input({2, 1, 8, 8, 16}, 7);
    // In fp16 the unfused graph rounds after the normalization, the Mul and the Add, the fused
    // one once.
    const bool fp16 = std::string(file).find("fp16") != std::string::npos;
    if (fp16) {
      Tensor h = Tensor::empty(DType::f16, x.shape());
      for (int64_t i = 0; i < x.numel(); ++i) ref::store(h, i, ref::load(x, i));
      x = h;
    }
    expect_same_outputs(before, after, {x}, fp16 ? 2e-3 : 1e-5, file);
  }
  ir::Graph g = fixture_after("nnunet3d_op17.onnx", "fuse-conv-epilogue");
  const int instance_norms = count_ops(g, "InstanceNormalization");
  fuse_group_norm(g);
  EXPECT_EQ(count_ops(g, "InstanceNormalization"), instance_norms);
  EXPECT_EQ(count_ops(g, "GroupNormalization"), 0);
}

// x -> ConvTranspose (3x3, stride 2, MONAI's padding 1 and output_padding 1, `group`) ->
// BatchNormalization -> y.
ir::Graph convtranspose_bn_graph(int64_t group) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {std::string("N"), 4, 5, 6});
  b.initializer("w", {4, 3, 3, 3}, pattern(4 * 3 * 9, 1));  // [C, M / group, k, k]
  const int64_t m = 3 * group;
  b.initializer("bias", {m}, pattern(static_cast<size_t>(m), 2));
  auto& ct = b.node("ConvTranspose", {"x", "w", "bias"}, {"c"});
  ModelBuilder::attr_ints(ct, "strides", {2, 2});
  ModelBuilder::attr_ints(ct, "pads", {1, 1, 1, 1});
  ModelBuilder::attr_ints(ct, "output_padding", {1, 1});
  ModelBuilder::attr_int(ct, "group", group);
  std::vector<float> gamma = pattern(static_cast<size_t>(m), 3),
                     var = pattern(static_cast<size_t>(m), 4);
  for (float& v : var) v = v * v + 0.1f;
  b.initializer("gamma", {m}, gamma);
  b.initializer("beta", {m}, pattern(static_cast<size_t>(m), 5));
  b.initializer("mean", {m}, pattern(static_cast<size_t>(m), 6));
  b.initializer("var", {m}, var);
  b.node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  return import(b.bytes());
}

// torch folds BatchNorm into a Conv but leaves it after a ConvTranspose (MONAI's up path).
TEST(FoldBatchnorm, IntoConvTranspose) {
  for (int64_t group : {1, 2}) {
    ir::Graph before = convtranspose_bn_graph(group);
    ir::Graph after = before;
    fold_batchnorm_into_conv(after);
    EXPECT_EQ(count_ops(before, "BatchNormalization"), 1);
    EXPECT_EQ(count_ops(after, "BatchNormalization"), 0) << "group " << group;
    expect_same_outputs(before, after, {random_input({2, 4, 5, 6}, 9)}, 1e-6,
                        "group " + std::to_string(group));
  }
}

// After lowering, the weights and biases the conv ops packed keep their shapes but no bytes;
// without the CPU kernels nothing is released. (The model tests run the released graphs.)
TEST(CompileModel, PackedWeightsKeepShapesOnly) {
  const std::string bytes =
      read(voxrt::test::source_dir() + "/tests/fixtures/unet3d_monai_op17.onnx");
  for (bool cpu : {true, false}) {
    CompileOptions o;
    o.cpu_kernels = cpu;
    CompiledModel m = compile_model(bytes.data(), bytes.size(), "unet3d_monai_op17.onnx", "", o);
    int convs = 0, released = 0;
    for (const ir::Node& n : m.graph.nodes)
      if (n.op_type.rfind("FusedConv", 0) == 0 || n.op_type.rfind("Conv", 0) == 0)
        convs += n.has_input(2) ? 2 : 1;  // W, B
    for (const auto& [v, t] : m.graph.constants) {
      if (t.raw()) continue;
      ++released;
      EXPECT_GE(t.rank(), 1) << m.graph.values[static_cast<size_t>(v)].name << " lost its shape";
    }
    EXPECT_GT(convs, 20);
    EXPECT_EQ(released, cpu ? convs : 0) << (cpu ? "CPU kernels" : "reference");
  }
}

// A Conv whose X is a constant too is folded by the plan when the passes are off (the reference
// computes it, reading W): its weights stay.
TEST(CompileModel, ConvOfConstantsKeepsItsWeights) {
  ModelBuilder b(17);
  b.input("z", onnx::TensorProto::FLOAT, {1, 2, 4, 4});
  b.initializer("x", {1, 3, 4, 4}, pattern(48, 1));
  b.initializer("w", {2, 3, 3, 3}, pattern(54, 2));
  auto& conv = b.node("Conv", {"x", "w"}, {"c"});
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Add", {"c", "z"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  const std::string bytes = b.bytes();
  SessionOptions o;
  o.optimize = false;
  Session session(bytes.data(), bytes.size(), o);
  Tensor z = random_input({1, 2, 4, 4}, 14);
  Tensor got = session.run({{"z", z}})[0];
  ir::Graph g = import(bytes);
  Tensor want = run_graph(g, {z}, false)[0];
  EXPECT_LT(rel_l2(got, want), 1e-6);
}

// A small integer input decides shapes, so the plan computes from its values what it can; a Conv
// it reaches through a Cast has every input's value then, but its weights were packed and
// released: the plan leaves it to its kernel (the reference read W's missing bytes: a crash).
TEST(CompileModel, ConvOfAFoldedInputRunsItsKernel) {
  ModelBuilder b(17);
  b.input("i", onnx::TensorProto::INT64, {1, 3, 4, 4});
  b.initializer("w", {2, 3, 3, 3}, pattern(54, 2));
  auto& cast = b.node("Cast", {"i"}, {"x"});
  ModelBuilder::attr_int(cast, "to", onnx::TensorProto::FLOAT);
  auto& conv = b.node("Conv", {"x", "w"}, {"c"});
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"});  // graph outputs are never folded
  b.output("y", onnx::TensorProto::FLOAT);
  const std::string bytes = b.bytes();
  Tensor i = Tensor::zeros(DType::i64, {1, 3, 4, 4});
  for (int64_t k = 0; k < i.numel(); ++k) i.data<int64_t>()[k] = k % 7 - 3;
  ir::Graph g = import(bytes);
  Tensor want = run_graph(g, {i}, false)[0];
  for (bool optimize : {true, false}) {
    SessionOptions o;
    o.optimize = optimize;
    Session session(bytes.data(), bytes.size(), o);
    EXPECT_LT(rel_l2(session.run({{"i", i}})[0], want), 1e-6) << "optimize " << optimize;
  }
}

// torch's AvgPool export pads by zero first; such a Pad is a copy and goes, others stay.
TEST(RemoveIdentity, PadByZeroGoes) {
  for (int opset : {7, 17})
    for (bool zero : {true, false}) {
      ModelBuilder b(opset);
      b.input("x", onnx::TensorProto::FLOAT, {1, 2, 4, 4});
      std::vector<int64_t> pads = {0, 0, 0, 0, 0, 0, zero ? 0 : 1, 0};
      if (opset >= 11) {
        b.initializer_i64("pads", {8}, pads);
        b.node("Pad", {"x", "pads"}, {"p"});
      } else {
        ModelBuilder::attr_ints(b.node("Pad", {"x"}, {"p"}), "pads", pads);
      }
      auto& pool = b.node("AveragePool", {"p"}, {"y"});
      ModelBuilder::attr_ints(pool, "kernel_shape", {2, 2});
      b.output("y", onnx::TensorProto::FLOAT);
      ir::Graph g = import(b.bytes());
      run_passes(g, "remove-identity");
      EXPECT_EQ(count_ops(g, "Pad"), zero ? 0 : 1) << "opset " << opset;
      Tensor x = random_input({1, 2, 4, 4}, 8);
      EXPECT_EQ(run_graph(g, {x}, true)[0].shape(), (Shape{1, 2, zero ? 3 : 4, 3}));  // stride 1
    }
}

// A Cast to the type its input already has is a copy and goes; a Cast that converts stays.
TEST(RemoveIdentity, CastToItsOwnTypeGoes) {
  for (bool same : {true, false}) {
    ModelBuilder b(17);
    b.input("x", onnx::TensorProto::FLOAT, {1, 2, 4, 4});
    auto& cast = b.node("Cast", {"x"}, {"c"});
    ModelBuilder::attr_int(cast, "to",
                           same ? onnx::TensorProto::FLOAT : onnx::TensorProto::FLOAT16);
    b.node("Relu", {"c"}, {"y"});
    b.output("y", same ? onnx::TensorProto::FLOAT : onnx::TensorProto::FLOAT16);
    ir::Graph g = import(b.bytes());
    run_passes(g, "remove-identity");
    EXPECT_EQ(count_ops(g, "Cast"), same ? 0 : 1) << (same ? "float -> float" : "float -> float16");
    Tensor x = random_input({1, 2, 4, 4}, 9);
    Tensor y = run_graph(g, {x}, true)[0];
    EXPECT_EQ(y.dtype(), same ? DType::f32 : DType::f16);
  }
}

// Converting an fp16 model whose Resizes keep float32 between Casts (onnxconverter_common's
// default) leaves no Cast: the islands' Casts become float16 -> float16 and go.
TEST(CompileModel, Fp16ConversionOfAnFp16ModelKeepsNoCasts) {
  const std::string bytes =
      read(voxrt::test::source_dir() + "/tests/fixtures/unet3d_resize_op17_fp16.onnx");
  ASSERT_GT(count_ops(import(bytes), "Cast"), 0) << "the fixture should have its Cast islands";
  CompileOptions o;
  o.fp16 = true;
  CompiledModel m =
      compile_model(bytes.data(), bytes.size(), "unet3d_resize_op17_fp16.onnx", "", o);
  EXPECT_EQ(count_ops(m.graph, "Cast"), 0);
  // Its two Resizes, in fp16, are read upsampled by the convolutions after them.
  EXPECT_EQ(count_ops(m.graph, "Resize"), 0);
  int upsampling = 0;
  for (const ir::Node& n : m.graph.nodes) upsampling += n.attrs.has(kFusedXUpsample);
  EXPECT_EQ(upsampling, 2);
}

// Precision::fp32 on an fp16 model: every value between the edges is float32 (the model's Resize
// islands' Casts gone with the rest), the graph's float16 input and output keep their type, and
// the optimized kernels agree with the reference backend within the fp32 bar.
TEST(ConvertFp32, WidensAnFp16ModelBetweenItsEdges) {
  const std::string bytes =
      read(voxrt::test::source_dir() + "/tests/fixtures/unet3d_resize_op17_fp16.onnx");
  CompileOptions o;
  o.fp32 = true;
  CompiledModel m =
      compile_model(bytes.data(), bytes.size(), "unet3d_resize_op17_fp16.onnx", "", o);
  const ir::Graph& g = m.graph;
  ASSERT_EQ(g.inputs.size(), 1u);
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.values[static_cast<size_t>(g.inputs[0])].dtype, DType::f16);
  EXPECT_EQ(g.values[static_cast<size_t>(g.outputs[0])].dtype, DType::f16);
  EXPECT_EQ(count_ops(g, "Cast"), 2);  // the input's and the output's
  for (const ir::Node& n : g.nodes) {
    if (n.op_type == "Cast") continue;
    for (int v : n.inputs) {
      if (v < 0) continue;
      EXPECT_NE(g.values[static_cast<size_t>(v)].dtype, DType::f16) << n.name << " reads float16";
    }
    for (int v : n.outputs) {
      if (v < 0) continue;
      EXPECT_NE(g.values[static_cast<size_t>(v)].dtype, DType::f16) << n.name << " writes float16";
    }
  }

  Tensor x32 = random_input({1, 1, 16, 16, 16}, 21);
  Tensor x = Tensor::empty(DType::f16, x32.shape());
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<uint16_t>()[i] = float_to_half(x32.data<float>()[i]);
  SessionOptions so;
  so.precision = Precision::fp32;
  Session fast(bytes.data(), bytes.size(), so);
  so.backend = Backend::reference;
  Session slow(bytes.data(), bytes.size(), so);
  Tensor got = fast.run({{"input", x}})[0], want = slow.run({{"input", x}})[0];
  EXPECT_EQ(got.dtype(), DType::f16);
  EXPECT_LT(rel_l2(got, want), 1e-5);
}

// Precision::fp32 leaves a float32 model as it is (MONAI's has PRelu slopes and Constants whose
// types only inference gives).
TEST(ConvertFp32, LeavesAFloat32ModelAlone) {
  const std::string bytes =
      read(voxrt::test::source_dir() + "/tests/fixtures/unet3d_monai_op17.onnx");
  CompileOptions as_model, fp32;
  fp32.fp32 = true;
  CompiledModel a = compile_model(bytes.data(), bytes.size(), "m", "", as_model);
  CompiledModel b = compile_model(bytes.data(), bytes.size(), "m", "", fp32);
  EXPECT_EQ(graph_to_text(b.graph), graph_to_text(a.graph));
  ir::Graph g = import(bytes);
  EXPECT_FALSE(convert_fp32(g));
}

}  // namespace
}  // namespace voxrt::test
