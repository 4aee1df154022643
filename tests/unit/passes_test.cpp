// The passes that rewrite patterns (fuse-cast-islands, fold-softmax-transposes, fold-batchnorm
// into ConvTranspose, prelu-as-leaky-relu, fuse-conv-epilogue's residuals, fuse-group-norm,
// fuse-concat-into-conv, fuse-conv-head, remove-identity's Pad), and the load pipeline's release of
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
#include "runtime/compile.h"
#include "support/rel_l2.h"

namespace voxrt::test {
namespace {

// Runs every node in order (the reference ops, or the CPU lowerings at the machine's ISA).
std::vector<Tensor> run_graph(ir::Graph g, const std::vector<Tensor>& inputs, bool lower) {
  std::vector<std::unique_ptr<Op>> ops = build_ops(g);
  if (lower)
    for (size_t k = 0; k < ops.size(); ++k)
      ops[k] = cpu::CpuRegistry::instance().lower(g.nodes[k], g, std::move(ops[k]), cpu::max_isa());
  std::vector<Tensor> vals(g.values.size());
  for (const auto& [v, t] : g.constants) vals[static_cast<size_t>(v)] = t;
  for (size_t i = 0; i < inputs.size(); ++i) vals[static_cast<size_t>(g.inputs[i])] = inputs[i];
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    std::vector<ValueMeta> metas(n.inputs.size());
    std::vector<const Tensor*> ins(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] < 0) continue;
      const Tensor& t = vals[static_cast<size_t>(n.inputs[i])];
      metas[i] = ValueMeta{true, t.dtype(), t.shape(), &t};
      ins[i] = &t;
    }
    std::vector<DType> types = ops[k]->infer_types(metas);
    std::vector<Shape> shapes = ops[k]->infer_shapes(metas);
    std::vector<Tensor> outs;
    for (size_t o = 0; o < n.outputs.size(); ++o)
      outs.push_back(n.outputs[o] >= 0 ? Tensor::empty(types[o], shapes[o]) : Tensor());
    ops[k]->run(RunContext{}, ins, outs);
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) vals[static_cast<size_t>(n.outputs[o])] = outs[o];
  }
  std::vector<Tensor> out;
  for (int v : g.outputs) out.push_back(vals[static_cast<size_t>(v)]);
  return out;
}

int count_ops(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node& node : g.nodes) n += node.op_type == op;
  return n;
}

// The rewritten graph against the graph as it was: `before` on the reference ops, `after` on the
// reference ops and on the CPU lowerings, each within `tol` (relative L2).
void expect_same_outputs(const ir::Graph& before, const ir::Graph& after,
                         const std::vector<Tensor>& inputs, double tol, const std::string& what) {
  Tensor y0 = run_graph(before, inputs, false)[0];
  for (bool lower : {false, true})
    EXPECT_LT(rel_l2(run_graph(after, inputs, lower)[0], y0), tol)
        << what << (lower ? " lowered" : " reference");
}

Tensor random_input(const Shape& s, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  Tensor x = Tensor::empty(DType::f32, s);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  return x;
}

ir::Graph import(const std::string& bytes) {
  return import_checked(bytes.data(), bytes.size(), "test.onnx", "");
}

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

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A fixture model (tests/fixtures/<file>) as the passes up to `stop_after` leave it: the graph a
// pass after those sees. Throws if the file is missing.
ir::Graph fixture_after(const std::string& file, const char* stop_after) {
  std::string bytes = read(std::string(VOXRT_SOURCE_DIR) + "/tests/fixtures/" + file);
  if (bytes.empty()) throw Error("missing fixture " + file);
  ir::Graph g = import(bytes);
  run_passes(g, stop_after);
  return g;
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
    // The fused convolution skips the fp16 rounding the Cast widened: closer, not equal.
    expect_same_outputs(before, after, {random_input({1, 1, 16, 16, 16}, 3)}, 1e-3, file);
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
ir::Graph concat_conv_graph(int64_t axis, bool shared) {
  ModelBuilder b(17);
  b.input("a", onnx::TensorProto::FLOAT, {std::string("N"), 3, 6, 7});
  b.input("b", onnx::TensorProto::FLOAT, {std::string("N"), 2, 6, 7});
  b.node("Relu", {"a"}, {"ra"});
  auto& cat = b.node("Concat", {"ra", "b"}, {"cat"});
  ModelBuilder::attr_int(cat, "axis", axis);
  std::vector<float> w(4 * 5 * 3 * 3), bias = {0.1f, -0.2f, 0.3f, 0.0f};
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 37) % 11) / 11.0f - 0.5f;
  b.initializer("w", {4, 5, 3, 3}, w);
  b.initializer("bias", {4}, bias);
  auto& conv = b.node("Conv", {"cat", "w", "bias"}, {"c"});
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
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
  for (int64_t axis : {1, -3}) {
    ir::Graph before = concat_conv_graph(axis, false);
    ir::Graph after = before;
    fuse_concat_into_conv(after);
    EXPECT_EQ(count_ops(before, "Concat"), 1);
    EXPECT_EQ(count_ops(after, "Concat"), 0) << "axis " << axis;
    ASSERT_EQ(count_ops(after, "FusedConv"), 1);
    for (const ir::Node& n : after.nodes) {
      if (n.op_type == "FusedConv") {
        EXPECT_EQ(n.attrs.get_int("x_parts", 1), 2);
      }
    }
    // Batch 2: where the arena cannot make a Concat's inputs slices of it.
    expect_same_outputs(before, after,
                        {random_input({2, 3, 6, 7}, 4), random_input({2, 2, 6, 7}, 5)}, 1e-6,
                        "axis " + std::to_string(axis));
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

// Concat -> Conv(3x3, M) -> Relu -> Conv 1x1 (3 channels, of `head_kernel` and `head_stride`)
// [-> Softmax(softmax_axis)]; the Relu's output also a graph output when `shared`.
struct HeadGraph {
  int64_t m = 4, head_kernel = 1, head_stride = 1, softmax_axis = 0;  // 0: no Softmax
  bool shared = false, head_bias = true;
  bool second_head = false;  // another 1x1 Conv (3 -> 2) after the head (no Softmax then)
};
ir::Graph head_graph(const HeadGraph& h) {
  ModelBuilder b(17);
  b.input("a", onnx::TensorProto::FLOAT, {std::string("N"), 3, 6, 7});
  b.input("b", onnx::TensorProto::FLOAT, {std::string("N"), 2, 6, 7});
  auto& cat = b.node("Concat", {"a", "b"}, {"cat"});
  ModelBuilder::attr_int(cat, "axis", 1);
  std::vector<float> w(static_cast<size_t>(h.m) * 5 * 9), bias(static_cast<size_t>(h.m), 0.1f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 37) % 11) / 11.0f - 0.5f;
  b.initializer("w", {h.m, 5, 3, 3}, w);
  b.initializer("bias", {h.m}, bias);
  auto& conv = b.node("Conv", {"cat", "w", "bias"}, {"c"});
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"});
  const int64_t k = h.head_kernel;
  std::vector<float> hw(static_cast<size_t>(3 * h.m * k * k));
  for (size_t i = 0; i < hw.size(); ++i) hw[i] = static_cast<float>((i * 13) % 7) / 7.0f - 0.4f;
  b.initializer("hw", {3, h.m, k, k}, hw);
  b.initializer("hb", {3}, {0.2f, -0.1f, 0.05f});
  auto& head = b.node(
      "Conv",
      h.head_bias ? std::vector<std::string>{"r", "hw", "hb"} : std::vector<std::string>{"r", "hw"},
      {h.softmax_axis  ? "logits"
       : h.second_head ? "h1"
                       : "y"});
  ModelBuilder::attr_ints(head, "strides", {h.head_stride, h.head_stride});
  if (h.second_head) {
    b.initializer("hw2", {2, 3, 1, 1}, {0.5f, -0.25f, 0.75f, 0.1f, 0.3f, -0.6f});
    b.node("Conv", {"h1", "hw2"}, {"y"});
  }
  if (h.softmax_axis) {
    auto& sm = b.node("Softmax", {"logits"}, {"y"});
    ModelBuilder::attr_int(sm, "axis", h.softmax_axis);
  }
  b.output("y", onnx::TensorProto::FLOAT);
  if (h.shared) b.output("r", onnx::TensorProto::FLOAT);
  ir::Graph g = import(b.bytes());
  run_passes(g, "fuse-concat-into-conv");  // the passes before this one
  return g;
}

// The head, with its bias or without, and a Softmax over channels join the convolution (after
// it took the Concat and the Relu); the rewritten graph matches, at batch 2.
TEST(FuseConvHead, HeadAndSoftmaxJoinTheConv) {
  for (int64_t axis : {0, 1, -3})
    for (bool bias : {true, false}) {
      HeadGraph h;
      h.softmax_axis = axis;
      h.head_bias = bias;
      ir::Graph before = head_graph(h);
      ir::Graph after = before;
      fuse_conv_head(after);
      const std::string what =
          "softmax axis " + std::to_string(axis) + " bias " + std::to_string(bias);
      EXPECT_EQ(count_ops(before, "Conv"), 1) << what;
      EXPECT_EQ(count_ops(after, "Conv"), 0) << what;
      EXPECT_EQ(count_ops(after, "Softmax"), 0) << what;
      ASSERT_EQ(after.nodes.size(), 1u) << what;
      const ir::Node& n = after.nodes[0];
      EXPECT_EQ(n.op_type, "FusedConv") << what;
      EXPECT_EQ(n.attrs.get_int(kFusedHead, 0), 1) << what;
      EXPECT_EQ(n.attrs.get_int(kFusedHeadSoftmax, 0), axis != 0 ? 1 : 0) << what;
      EXPECT_EQ(n.inputs.size(), static_cast<size_t>(fused_head_input(n) + 2)) << what;
      EXPECT_EQ(n.has_input(fused_head_input(n) + 1), bias) << what;
      expect_same_outputs(before, after,
                          {random_input({2, 3, 6, 7}, 7), random_input({2, 2, 6, 7}, 8)}, 1e-5,
                          what);
    }
}

// Conv -> 1x1 -> 1x1: the first 1x1 becomes the convolution's head; the second, whose producer
// is now that fused node, stays a Conv (a head taken by a node the pass drops would leave its
// output without a producer).
TEST(FuseConvHead, ChainOfHeadsTakesOne) {
  HeadGraph h;
  h.second_head = true;
  ir::Graph before = head_graph(h);
  ir::Graph after = before;
  fuse_conv_head(after);
  EXPECT_EQ(count_ops(before, "Conv"), 2);
  EXPECT_EQ(count_ops(after, "Conv"), 1);
  expect_same_outputs(before, after,
                      {random_input({2, 3, 6, 7}, 10), random_input({2, 2, 6, 7}, 11)}, 1e-5,
                      "chain");
}

// Left alone: a convolution whose output another node reads, a head that is not 1x1 or has a
// stride, a convolution of more than 32 channels; a Softmax over another axis stays after the
// fused head.
TEST(FuseConvHead, LeavesOtherHeadsAlone) {
  auto fused_heads = [](ir::Graph g) {
    fuse_conv_head(g);
    int n = 0;
    for (const ir::Node& node : g.nodes) n += node.attrs.get_int(kFusedHead, 0) != 0;
    return n;
  };
  HeadGraph shared, wide, strided, many;
  shared.shared = true;
  wide.head_kernel = 3;
  strided.head_stride = 2;
  many.m = 33;
  EXPECT_EQ(fused_heads(head_graph(shared)), 0);
  EXPECT_EQ(fused_heads(head_graph(wide)), 0);
  EXPECT_EQ(fused_heads(head_graph(strided)), 0);
  EXPECT_EQ(fused_heads(head_graph(many)), 0);
  HeadGraph other_axis;
  other_axis.softmax_axis = -1;
  ir::Graph g = head_graph(other_axis);
  fuse_conv_head(g);
  EXPECT_EQ(count_ops(g, "Softmax"), 1);
  EXPECT_EQ(count_ops(g, "Conv"), 0);
}

// The output layers of the fixture UNets: unet3d_bn's and unet2d's 1x1 heads, unet3d_resize's
// head and Softmax (opset 11's, its Transposes folded, and opset 17's), in fp32 and in fp16
// models keeping fp32 at the edges.
TEST(FuseConvHead, FixtureHeadsJoinTheLastConv) {
  for (const char* file : {"unet3d_bn_op17.onnx", "unet2d_op17.onnx", "unet3d_resize_op11.onnx",
                           "unet3d_resize_op17_fp16io32.onnx"}) {
    ir::Graph before = fixture_after(file, "fuse-concat-into-conv");
    ir::Graph after = before;
    fuse_conv_head(after);
    const std::string name = file;
    EXPECT_EQ(count_ops(before, "Conv") - count_ops(after, "Conv"), 1) << file;
    EXPECT_EQ(count_ops(after, "Softmax"), 0) << file;
    const bool two_d = name.find("unet2d") != std::string::npos;
    const Shape shape = two_d ? Shape{1, 1, 32, 32} : Shape{1, 1, 16, 16, 16};
    expect_same_outputs(before, after, {random_input(shape, 9)},
                        name.find("fp16") != std::string::npos ? 1e-2 : 1e-5, file);
  }
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

std::vector<float> pattern(size_t n, unsigned salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 37 + salt) % 11) / 11.0f - 0.45f;
  return v;
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

// x -> Conv "a" [-> act] -> Add(...) -> [Relu] -> y, the Add's other operand a second Conv "b" of
// x (`second_conv`) or x itself; `act_after_add` puts a Relu after the Add.
ir::Graph residual_graph(bool act_before_add, bool second_conv, bool act_after_add) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {std::string("N"), 4, 6, 7});
  b.initializer("wa", {4, 4, 3, 3}, pattern(4 * 4 * 9, 8));
  b.initializer("ba", {4}, pattern(4, 9));
  auto& a = b.node("Conv", {"x", "wa", "ba"}, {"ca"});
  ModelBuilder::attr_ints(a, "pads", {1, 1, 1, 1});
  std::string left = "ca";
  if (act_before_add) {
    auto& act = b.node("LeakyRelu", {"ca"}, {"la"});
    auto* alpha = act.add_attribute();
    alpha->set_name("alpha");
    alpha->set_type(onnx::AttributeProto::FLOAT);
    alpha->set_f(0.2f);
    left = "la";
  }
  std::string right = "x";
  if (second_conv) {
    b.initializer("wb", {4, 4, 1, 1}, pattern(4 * 4, 10));
    b.node("Conv", {"x", "wb"}, {"cb"});
    right = "cb";
  }
  b.node("Add", {left, right}, {act_after_add ? "s" : "y"});
  if (act_after_add) b.node("Relu", {"s"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  ir::Graph g = import(b.bytes());
  run_passes(g, "prelu-as-leaky-relu");  // the passes before this one
  return g;
}

// The FusedConv nodes of g that add a residual after their activation.
int residual_after_count(const ir::Graph& g) {
  int n = 0;
  for (const ir::Node& node : g.nodes)
    n += node.op_type == "FusedConv" && node.attrs.get_int(kResidualAfterActivation, 0) == 1;
  return n;
}

// Each Add joins one conv, and every activation its conv: MONAI's residual unit act(conv(x)) + x
// adds after the activation; where a second plain Conv feeds the Add and a Relu follows it, that
// conv takes the Add before the Relu (which then joins too), also when it comes after the first
// in the graph (a ResNet block's two branches, taken once). Without an activation after the Add
// the first conv takes it after its activation and the second stays plain (MONAI's strided
// residual unit: its residual conv may then join the unit's first conv, fuse-sibling-convs).
TEST(FuseConvEpilogue, ResidualAddsJoinOneConv) {
  struct Case {
    bool act_before_add, second_conv, act_after_add;
    int fused, plain, residual_after;
    const char* what;
  };
  const Case cases[] = {
      {true, false, false, 1, 0, 1, "act(conv(x)) + x"},
      {true, true, false, 1, 1, 1, "act(conv_a(x)) + conv_b(x)"},
      {true, true, true, 2, 0, 0, "relu(act(conv_a(x)) + conv_b(x))"},
      {false, true, true, 1, 1, 0, "relu(conv_a(x) + conv_b(x))"},
  };
  unsigned seed = 14;
  for (const Case& c : cases) {
    ir::Graph before = residual_graph(c.act_before_add, c.second_conv, c.act_after_add);
    ir::Graph after = before;
    fuse_conv_epilogue(after);
    for (const char* op : {"Add", "Relu", "LeakyRelu"})
      EXPECT_EQ(count_ops(after, op), 0) << c.what;
    EXPECT_EQ(count_ops(after, "FusedConv"), c.fused) << c.what;
    EXPECT_EQ(count_ops(after, "Conv"), c.plain) << c.what;
    EXPECT_EQ(residual_after_count(after), c.residual_after) << c.what;
    expect_same_outputs(before, after, {random_input({2, 4, 6, 7}, seed++)}, 1e-6, c.what);
  }
}

// x -> Conv -> PRelu(slope) -> y, the slope of shape `slope_dims`.
ir::Graph conv_prelu_graph(const std::vector<int64_t>& slope_dims,
                           const std::vector<float>& slope) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {std::string("N"), 3, 6, 7});
  b.initializer("w", {4, 3, 3, 3}, pattern(4 * 3 * 9, 7));
  auto& conv = b.node("Conv", {"x", "w"}, {"c"});
  ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1});
  b.initializer("slope", slope_dims, slope);
  b.node("PRelu", {"c", "slope"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  ir::Graph g = import(b.bytes());
  run_passes(g, "fold-batchnorm");  // the passes before this one
  return g;
}

// One slope (any value, above 1 or negative too) is LeakyRelu and fuses into the conv; a slope
// per channel stays PRelu and runs on the CPU lowering.
TEST(PreluAsLeakyRelu, OneSlopeBecomesLeakyRelu) {
  for (float slope : {0.25f, -0.5f, 1.75f}) {
    ir::Graph before = conv_prelu_graph({1, 1, 1}, {slope});
    ir::Graph after = before;
    prelu_as_leaky_relu(after);
    EXPECT_EQ(count_ops(after, "PRelu"), 0);
    ASSERT_EQ(count_ops(after, "LeakyRelu"), 1);
    expect_same_outputs(before, after, {random_input({2, 3, 6, 7}, 10)}, 1e-6,
                        "slope " + std::to_string(slope));
    fuse_conv_epilogue(after);
    EXPECT_EQ(count_ops(after, "FusedConv"), 1);
    expect_same_outputs(before, after, {random_input({2, 3, 6, 7}, 11)}, 1e-6,
                        "fused, slope " + std::to_string(slope));
  }
  ir::Graph per_channel = conv_prelu_graph({4, 1, 1}, {0.25f, -0.5f, 1.75f, 0.0f});
  ir::Graph kept = per_channel;
  run_passes(kept, "");
  EXPECT_EQ(count_ops(kept, "PRelu"), 1);
  expect_same_outputs(per_channel, kept, {random_input({2, 3, 6, 7}, 12)}, 1e-6, "per channel");
}

// MONAI's UNet: every PRelu (one slope each) fuses into the Conv or ConvTranspose before it,
// and the BatchNorms after the ConvTransposes fold.
TEST(PreluAsLeakyRelu, FixtureMonaiUnet) {
  ir::Graph before = fixture_after("unet3d_monai_op17.onnx", "fold-constants");
  ir::Graph after = before;
  run_passes(after, "");
  EXPECT_EQ(count_ops(before, "PRelu"), 13);
  EXPECT_EQ(count_ops(before, "BatchNormalization"), 3);
  EXPECT_EQ(count_ops(after, "PRelu"), 0);
  EXPECT_EQ(count_ops(after, "BatchNormalization"), 0);
  EXPECT_EQ(count_ops(after, "LeakyRelu"), 0);
  EXPECT_EQ(count_ops(after, "FusedConvTranspose"), 3);
  // Every residual unit's Add joins the conv before it after its activation: the down path's
  // (whose residual convs stay plain or join their units' first convs) and the up path's.
  EXPECT_EQ(count_ops(after, "Add"), 0);
  EXPECT_EQ(residual_after_count(after), 6);
  expect_same_outputs(before, after, {random_input({2, 1, 16, 16, 8}, 13)}, 1e-5, "");
}

// x -> Conv a (4 -> 6, 3x3, stride 2, bias) [-> act_a] and x -> Conv b (4 -> 5, no bias, stride
// b_stride, reading `b_input`) [-> act_b] -> Conv e (3x3, 5 -> 6; not 1x1, which would become
// b's head); y = a * e.
struct SiblingGraph {
  int opset = 17;
  std::string act_a = "LeakyRelu", act_b;
  int64_t b_stride = 2;
  std::string b_input = "x";
};

ir::Graph sibling_graph(const SiblingGraph& s) {
  ModelBuilder b(s.opset);
  b.input("x", onnx::TensorProto::FLOAT, {std::string("N"), 4, 9, 10});
  b.input("x2", onnx::TensorProto::FLOAT, {std::string("N"), 4, 9, 10});
  b.initializer("wa", {6, 4, 3, 3}, pattern(6 * 4 * 9, 3));
  b.initializer("ba", {6}, pattern(6, 4));
  b.initializer("wb", {5, 4, 3, 3}, pattern(5 * 4 * 9, 5));
  b.initializer("we", {6, 5, 3, 3}, pattern(6 * 5 * 9, 6));
  auto act = [&](const std::string& op, const std::string& in, const std::string& out) {
    auto& n = b.node(op, {in}, {out});
    if (op == "LeakyRelu") ModelBuilder::attr_float(n, "alpha", 0.2f);
  };
  auto& a = b.node("Conv", {"x", "wa", "ba"}, {s.act_a.empty() ? "ya" : "ca"});
  ModelBuilder::attr_ints(a, "pads", {1, 1, 1, 1});
  ModelBuilder::attr_ints(a, "strides", {2, 2});
  if (!s.act_a.empty()) act(s.act_a, "ca", "ya");
  auto& c = b.node("Conv", {s.b_input, "wb"}, {s.act_b.empty() ? "yb" : "cb"});
  ModelBuilder::attr_ints(c, "pads", {1, 1, 1, 1});
  ModelBuilder::attr_ints(c, "strides", {s.b_stride, s.b_stride});
  if (!s.act_b.empty()) act(s.act_b, "cb", "yb");
  ModelBuilder::attr_ints(b.node("Conv", {"yb", "we"}, {"ce"}), "pads", {1, 1, 1, 1});
  b.node("Mul", {"ya", "ce"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  ir::Graph g = import(b.bytes());
  run_passes(g, "fuse-conv-head");  // the passes before this one
  return g;
}

// Convolutions of one input over the same windows become one FusedConv and a Split along
// channels (Split's attribute before opset 13, its input after), each keeping its activation:
// per-channel slopes where they differ, the shared activation where they do not.
TEST(FuseSiblingConvs, ConvsOfOneInputJoin) {
  struct Case {
    int opset;
    const char* act_a;
    const char* act_b;
    bool slopes;
  };
  const Case cases[] = {{17, "LeakyRelu", "", true},
                        {11, "LeakyRelu", "Relu", true},
                        {17, "Relu", "Relu", false},
                        {13, "", "", false}};
  unsigned seed = 30;
  for (const Case& c : cases) {
    SiblingGraph sg;
    sg.opset = c.opset;
    sg.act_a = c.act_a;
    sg.act_b = c.act_b;
    ir::Graph before = sibling_graph(sg);
    ir::Graph after = before;
    fuse_sibling_convs(after);
    const std::string what = "opset " + std::to_string(c.opset) + " " + c.act_a + "/" + c.act_b;
    ASSERT_EQ(count_ops(after, "Split"), 1) << what;
    const ir::Node* joint = nullptr;
    for (const ir::Node& n : after.nodes)
      if (n.op_type == "FusedConv" && n.name.find("/siblings") != std::string::npos) joint = &n;
    ASSERT_NE(joint, nullptr) << what;
    EXPECT_EQ(after.constant(joint->inputs[1])->dim(0), 11) << what;
    EXPECT_EQ(joint->attrs.has(kFusedSlopes), c.slopes) << what;
    if (c.slopes) {
      const std::vector<float> sl = joint->attrs.get_floats(kFusedSlopes);
      ASSERT_EQ(sl.size(), 11u) << what;
      EXPECT_EQ(sl[0], c.act_a == std::string("LeakyRelu") ? 0.2f : 1.0f) << what;
      EXPECT_EQ(sl[6], c.act_b == std::string("Relu") ? 0.0f : 1.0f) << what;
    } else {
      EXPECT_EQ(joint->attrs.get_string("activation", ""), c.act_a) << what;
    }
    EXPECT_EQ(count_ops(after, "Conv") + count_ops(after, "FusedConv"), 2) << what;
    for (int64_t n : {1, 2})
      expect_same_outputs(
          before, after, {random_input({n, 4, 9, 10}, seed++), random_input({n, 4, 9, 10}, seed++)},
          1e-5, what + " batch " + std::to_string(n));
  }
}

// Left alone: convolutions of one input with other strides, and of two inputs.
TEST(FuseSiblingConvs, LeavesOtherWindowsAndInputsAlone) {
  SiblingGraph strided, other_input;
  strided.b_stride = 1;
  other_input.b_input = "x2";
  for (const SiblingGraph& sg : {strided, other_input}) {
    ir::Graph g = sibling_graph(sg);
    const size_t nodes = g.nodes.size();
    fuse_sibling_convs(g);
    EXPECT_EQ(count_ops(g, "Split"), 0);
    EXPECT_EQ(g.nodes.size(), nodes);
  }
}

// MONAI's UNet: each strided residual unit's first convolution and its residual convolution
// (3x3x3 at stride 2 from the unit's input) join, three of them; the bottom unit's 1x1 residual
// stays alone. fp32 and an fp16 model keeping fp32 at the edges.
TEST(FuseSiblingConvs, FixtureMonaiResidualUnits) {
  for (const char* file : {"unet3d_monai_op17.onnx", "unet3d_monai_op11_fp16io32.onnx"}) {
    ir::Graph before = fixture_after(file, "fuse-conv-head");
    ir::Graph after = before;
    fuse_sibling_convs(after);
    EXPECT_EQ(count_ops(after, "Split"), 3) << file;
    EXPECT_EQ(count_ops(before, "Conv") + count_ops(before, "FusedConv") -
                  count_ops(after, "Conv") - count_ops(after, "FusedConv"),
              3)
        << file;
    expect_same_outputs(before, after, {random_input({1, 1, 16, 16, 8}, 41)},
                        std::string(file).find("fp16") != std::string::npos ? 1e-2 : 1e-5, file);
  }
}

// After lowering, the weights and biases the conv ops packed keep their shapes but no bytes;
// without the CPU kernels nothing is released. (The model tests run the released graphs.)
TEST(CompileModel, PackedWeightsKeepShapesOnly) {
  const std::string bytes =
      read(std::string(VOXRT_SOURCE_DIR) + "/tests/fixtures/unet3d_monai_op17.onnx");
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
      read(std::string(VOXRT_SOURCE_DIR) + "/tests/fixtures/unet3d_resize_op17_fp16.onnx");
  ASSERT_GT(count_ops(import(bytes), "Cast"), 0) << "the fixture should have its Cast islands";
  CompileOptions o;
  o.fp16 = true;
  CompiledModel m =
      compile_model(bytes.data(), bytes.size(), "unet3d_resize_op17_fp16.onnx", "", o);
  EXPECT_EQ(count_ops(m.graph, "Cast"), 0);
  EXPECT_EQ(count_ops(m.graph, "Resize"), 2);
}

// Precision::fp32 on an fp16 model: every value between the edges is float32 (the model's Resize
// islands' Casts gone with the rest), the graph's float16 input and output keep their type, and
// the optimized kernels agree with the reference backend within the fp32 bar.
TEST(ConvertFp32, WidensAnFp16ModelBetweenItsEdges) {
  const std::string bytes =
      read(std::string(VOXRT_SOURCE_DIR) + "/tests/fixtures/unet3d_resize_op17_fp16.onnx");
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
      read(std::string(VOXRT_SOURCE_DIR) + "/tests/fixtures/unet3d_monai_op17.onnx");
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
