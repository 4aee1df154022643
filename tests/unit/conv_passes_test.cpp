// The passes that give a convolution more to do (fuse-conv-epilogue's residuals and
// prelu-as-leaky-relu before it, fuse-conv-head, fuse-sibling-convs): each rewritten graph against
// the graph as it was, on small graphs and on the fixture UNets that carry the patterns. A pass is
// tested on the graph the passes before it leave (run_passes stopping at its predecessor).
#include <limits>

#include "backends/ref/ops/fused.h"
#include "model_builder.h"
#include "passes_test_util.h"

namespace voxrt::test {
namespace {

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
// stays alone. Then read-split-in-place removes the three Splits after them, each unit's second
// convolution reading its X and its residual from the joint output. fp32 and an fp16 model
// keeping fp32 at the edges, at batch 1 and (the Splits gone) 2.
TEST(FuseSiblingConvs, FixtureMonaiResidualUnits) {
  for (const char* file : {"unet3d_monai_op17.onnx", "unet3d_monai_op11_fp16io32.onnx"}) {
    const double tol = std::string(file).find("fp16") != std::string::npos ? 1e-2 : 1e-5;
    ir::Graph before = fixture_after(file, "fuse-conv-head");
    ir::Graph after = before;
    fuse_sibling_convs(after);
    EXPECT_EQ(count_ops(after, "Split"), 3) << file;
    EXPECT_EQ(count_ops(before, "Conv") + count_ops(before, "FusedConv") -
                  count_ops(after, "Conv") - count_ops(after, "FusedConv"),
              3)
        << file;
    expect_same_outputs(before, after, {random_input({1, 1, 16, 16, 8}, 41)}, tol, file);
    read_split_in_place(after);
    EXPECT_EQ(count_ops(after, "Split"), 0) << file;
    expect_same_outputs(before, after, {random_input({2, 1, 16, 16, 8}, 43)}, tol, file);
  }
}

// x -> Conv (4 -> 11, 3x3; `produced` channels) -> Split [6, 5] (`sizes`; the attribute before
// opset 13, the input after) -> a, b; y = LeakyRelu(Conv(a, 6 -> 5)) + b, which
// fuse-conv-epilogue makes one FusedConv reading a as X and b as its residual. With `also`, b is
// read by a Sigmoid as well, a second output.
ir::Graph split_graph(int opset, bool also, int64_t produced = 11,
                      const std::vector<int64_t>& sizes = {6, 5}) {
  ModelBuilder b(opset);
  b.input("x", onnx::TensorProto::FLOAT, {std::string("N"), 4, 7, 9});
  b.initializer("w0", {produced, 4, 3, 3}, pattern(static_cast<size_t>(produced) * 4 * 9, 7));
  b.initializer("b0", {produced}, pattern(static_cast<size_t>(produced), 8));
  b.initializer("w1", {5, 6, 3, 3}, pattern(5 * 6 * 9, 9));
  ModelBuilder::attr_ints(b.node("Conv", {"x", "w0", "b0"}, {"t"}), "pads", {1, 1, 1, 1});
  std::vector<std::string> split_in = {"t"};
  if (opset >= 13) {
    b.initializer_i64("sizes", {2}, sizes);
    split_in.push_back("sizes");
  }
  auto& sp = b.node("Split", split_in, {"a", "b"});
  ModelBuilder::attr_int(sp, "axis", 1);
  if (opset < 13) ModelBuilder::attr_ints(sp, "split", sizes);
  ModelBuilder::attr_ints(b.node("Conv", {"a", "w1"}, {"c"}), "pads", {1, 1, 1, 1});
  ModelBuilder::attr_float(b.node("LeakyRelu", {"c"}, {"l"}), "alpha", 0.2f);
  b.node("Add", {"l", "b"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  if (also) {
    b.node("Sigmoid", {"b"}, {"z"});
    b.output("z", onnx::TensorProto::FLOAT);
  }
  ir::Graph g = import(b.bytes());
  run_passes(g, "fuse-sibling-convs");  // the passes before this one
  return g;
}

// A channel Split whose outputs are read only as a convolution's X and its residual goes: the
// convolution reads both from the Split's input (x_from 0, residual_from 6), at batch 1 to 3.
TEST(ReadSplitInPlace, ConvReadsXAndResidualFromTheSplitsInput) {
  unsigned seed = 50;
  for (int opset : {11, 17}) {
    ir::Graph before = split_graph(opset, false);
    ir::Graph after = before;
    read_split_in_place(after);
    const std::string what = "opset " + std::to_string(opset);
    EXPECT_EQ(count_ops(before, "Split"), 1) << what;
    EXPECT_EQ(count_ops(after, "Split"), 0) << what;
    const ir::Node* reader = nullptr;
    for (const ir::Node& n : after.nodes)
      if (n.op_type == "FusedConv" && n.attrs.has(kFusedXFrom)) reader = &n;
    ASSERT_NE(reader, nullptr) << what;
    EXPECT_EQ(reader->attrs.get_int(kFusedXFrom, -1), 0) << what;
    EXPECT_EQ(reader->attrs.get_int(kFusedResidualFrom, -1), 6) << what;
    EXPECT_EQ(reader->inputs[0], reader->inputs[3]) << what;
    for (int64_t n : {1, 2, 3})
      expect_same_outputs(before, after, {random_input({n, 4, 7, 9}, seed++)}, 1e-5,
                          what + " batch " + std::to_string(n));
  }
}

// Left alone: a Split with an output read by another op, one whose sizes do not cover its
// input's channels (12, not 11: the model is refused when planned, as without the pass), one
// whose sizes would overflow int64 when summed (a fuzz finding: the sum was undefined behaviour,
// tests/fuzz_findings/split_in_place_sizes_overflow.onnx) and one with a negative size that
// sums to the channels.
TEST(ReadSplitInPlace, LeavesSplitsReadOtherwiseAlone) {
  const int64_t huge = std::numeric_limits<int64_t>::max();
  for (const ir::Graph& before :
       {split_graph(17, true), split_graph(17, false, 12), split_graph(17, false, 11, {4, huge}),
        split_graph(11, false, 11, {huge, huge}), split_graph(17, false, 11, {-1, 12})}) {
    ir::Graph g = before;
    const size_t nodes = g.nodes.size();
    read_split_in_place(g);
    EXPECT_EQ(count_ops(g, "Split"), 1);
    EXPECT_EQ(g.nodes.size(), nodes);
  }
}

}  // namespace
}  // namespace voxrt::test
