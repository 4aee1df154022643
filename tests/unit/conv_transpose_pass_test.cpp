// fuse-conv-transpose-into-conv: a ConvTranspose of kernel 2 and stride 2 read by the convolution
// after it (x_transposed), against the graph as it was, on small graphs and on the fixture UNets
// whose decoders up-convolve.
#include <gtest/gtest.h>

#include "backends/ref/ops/fused.h"
#include "core/half.h"
#include "model_builder.h"
#include "passes/passes.h"
#include "passes_test_util.h"

namespace voxrt::test {
namespace {

// How the up-convolution and its consumer are built in transposed_conv_graph.
struct UpSpec {
  int rank = 5;            // 4 or 5
  bool concat = true;      // ConvTranspose -> Concat(with a skip) -> Conv, else -> Conv
  bool skip_first = true;  // Concat(skip, up), else Concat(up, skip)
  bool bias = true;        // the ConvTranspose's bias
  bool shared = false;     // its output also a graph output
  int64_t kernel = 2, stride = 2, pad = 0, output_padding = 0;
  bool head = false;  // a 1x1 output layer after the convolution (fuse-conv-head)
  int opset = 17;
  std::string what() const {
    return "rank " + std::to_string(rank) +
           (concat ? skip_first ? " concat(skip, up)" : " concat(up, skip)" : "") +
           (bias ? "" : " no bias") + (shared ? " shared" : "") + " k" + std::to_string(kernel) +
           " s" + std::to_string(stride) + " p" + std::to_string(pad) + " op" +
           std::to_string(output_padding) + (head ? " head" : "") + " opset " +
           std::to_string(opset);
  }
};

// x (N, 4, 3, 5[, 4]) -> ConvTranspose to 3 channels -> [Concat with skip (N, 2, 6, 10[, 8])] ->
// Conv 3x3(x3) to 5, pads 1 -> Relu [-> 1x1 Conv to 2], after the passes before
// fuse-conv-transpose-into-conv.
ir::Graph transposed_conv_graph(const UpSpec& r) {
  ModelBuilder b(r.opset);
  std::vector<ModelBuilder::DimSpec> low = {std::string("N"), 4, 3, 5},
                                     skip = {std::string("N"), 2, 6, 10};
  if (r.rank == 5) {
    low.push_back(4);
    skip.push_back(8);
  }
  const size_t axes = static_cast<size_t>(r.rank - 2);
  b.input("x", onnx::TensorProto::FLOAT, low);
  std::vector<int64_t> wt = {4, 3, r.kernel, r.kernel};
  if (r.rank == 5) wt.push_back(r.kernel);
  b.initializer("wt", wt, pattern(static_cast<size_t>(shape_numel(wt)), 5));
  b.initializer("bt", {3}, {0.25f, -0.5f, 0.125f});
  auto& t = b.node(
      "ConvTranspose",
      r.bias ? std::vector<std::string>{"x", "wt", "bt"} : std::vector<std::string>{"x", "wt"},
      {"up"});
  ModelBuilder::attr_ints(t, "strides", std::vector<int64_t>(axes, r.stride));
  if (r.pad != 0) ModelBuilder::attr_ints(t, "pads", std::vector<int64_t>(2 * axes, r.pad));
  if (r.output_padding != 0)
    ModelBuilder::attr_ints(t, "output_padding", std::vector<int64_t>(axes, r.output_padding));
  std::string conv_in = "up";
  int64_t c = 3;
  if (r.concat) {
    b.input("skip", onnx::TensorProto::FLOAT, skip);
    auto& cat = b.node("Concat",
                       r.skip_first ? std::vector<std::string>{"skip", "up"}
                                    : std::vector<std::string>{"up", "skip"},
                       {"cat"});
    ModelBuilder::attr_int(cat, "axis", 1);
    conv_in = "cat";
    c = 5;
  }
  std::vector<int64_t> wshape = {5, c, 3, 3};
  if (r.rank == 5) wshape.push_back(3);
  b.initializer("w", wshape, pattern(static_cast<size_t>(shape_numel(wshape)), 3));
  b.initializer("bias", {5}, {0.1f, -0.2f, 0.3f, 0.0f, 0.05f});
  auto& conv = b.node("Conv", {conv_in, "w", "bias"}, {"conv"});
  ModelBuilder::attr_ints(conv, "pads", std::vector<int64_t>(2 * axes, 1));
  b.node("Relu", {"conv"}, {r.head ? "act" : "y"});
  if (r.head) {
    std::vector<int64_t> hshape = {2, 5, 1, 1};
    if (r.rank == 5) hshape.push_back(1);
    b.initializer("wh", hshape, pattern(10, 7));
    b.node("Conv", {"act", "wh"}, {"y"});
  }
  b.output("y", onnx::TensorProto::FLOAT);
  if (r.shared) b.output("up", onnx::TensorProto::FLOAT);
  ir::Graph g = import(b.bytes());
  run_passes(g, "fuse-resize-into-conv");  // the passes before this one
  return g;
}

std::vector<Tensor> inputs_of(const UpSpec& r, int64_t batch, unsigned seed) {
  std::vector<Tensor> in = {
      random_input(r.rank == 5 ? Shape{batch, 4, 3, 5, 4} : Shape{batch, 4, 3, 5}, seed)};
  if (r.concat)
    in.push_back(
        random_input(r.rank == 5 ? Shape{batch, 2, 6, 10, 8} : Shape{batch, 2, 6, 10}, seed + 1));
  return in;
}

// The part of X a 3D ConvTranspose of kernel 2 and stride 2 gives becomes the convolution's
// x_transposed part, its weights and bias the last inputs, with and without a Concat (the up part
// first or second), bias and head; outputs equal the unfused graph's on the reference ops and on
// the lowered ones at batch 1 and 2.
TEST(FuseConvTransposeIntoConv, ConvComputesTheUpPart) {
  std::vector<UpSpec> specs;
  for (bool concat : {true, false}) {
    UpSpec r;
    r.concat = concat;
    specs.push_back(r);
    r.bias = false;
    specs.push_back(r);
    r.bias = true;
    r.head = true;
    specs.push_back(r);
    r.head = false;
    r.opset = 11;
    specs.push_back(r);
    r.opset = 17;
    if (concat) {
      r.skip_first = false;
      specs.push_back(r);
    }
  }
  for (const UpSpec& r : specs) {
    ir::Graph before = transposed_conv_graph(r);
    ir::Graph after = before;
    fuse_conv_transpose_into_conv(after);
    const std::string what = r.what();
    EXPECT_EQ(count_ops(before, "ConvTranspose"), 1) << what;
    EXPECT_EQ(count_ops(after, "ConvTranspose"), 0) << what;
    ASSERT_EQ(count_ops(after, "FusedConv"), 1) << what;
    for (const ir::Node& n : after.nodes)
      if (n.op_type == "FusedConv") {
        EXPECT_EQ(n.attrs.get_int(kFusedXTransposed, -1), r.concat && r.skip_first ? 1 : 0) << what;
        const int wi = fused_transposed_input(n);
        ASSERT_EQ(n.num_inputs(), wi + 2) << what;
        EXPECT_NE(after.constant(n.inputs[static_cast<size_t>(wi)]), nullptr) << what;
        EXPECT_EQ(n.has_input(wi + 1), r.bias) << what;
      }
    for (int64_t batch : {1, 2})
      expect_same_outputs(before, after, inputs_of(r, batch, 30), 1e-6,
                          what + " batch " + std::to_string(batch));
  }
}

// ConvTransposes whose output the convolution does not make stay: another kernel or stride,
// padding, output padding, an output something else reads, and 2D ones.
TEST(FuseConvTransposeIntoConv, LeavesOtherConvTransposesAlone) {
  std::vector<UpSpec> specs(6);
  specs[0].kernel = 3;  // k3 s2 p1 op1: MONAI's up-convolution, the gather form's
  specs[0].pad = 1;
  specs[0].output_padding = 1;
  specs[1].stride = 1;  // k2 s1 over (3, 5, 4): (4, 6, 5), which no skip fits: below
  specs[2].shared = true;
  specs[3].kernel = 4;  // k4 s2 p1: the same output size
  specs[3].pad = 1;
  specs[4].output_padding = 1;  // k2 s2 op1: one more plane
  specs[4].concat = false;
  specs[5].rank = 4;
  for (const UpSpec& r : specs) {
    if (r.stride == 1) continue;  // its skip would not fit: built below
    ir::Graph g = transposed_conv_graph(r);
    fuse_conv_transpose_into_conv(g);
    EXPECT_EQ(count_ops(g, "ConvTranspose"), 1) << r.what();
    for (const ir::Node& n : g.nodes) EXPECT_FALSE(n.attrs.has(kFusedXTransposed)) << r.what();
  }
  UpSpec s1;
  s1.stride = 1;
  s1.concat = false;
  ir::Graph g = transposed_conv_graph(s1);
  fuse_conv_transpose_into_conv(g);
  EXPECT_EQ(count_ops(g, "ConvTranspose"), 1) << s1.what();
}

// The fixture 3D UNets whose decoders up-convolve (nnU-Net's, the BatchNorm UNet's): every
// ConvTranspose goes into the convolution after its Concat, at batch 2, in fp32 and in the fp16
// models, whole graphs against the passes stopped before this one.
TEST(FuseConvTransposeIntoConv, FixtureUnetsUpConvolutionsVanish) {
  for (const char* file : {"nnunet3d_op17.onnx", "nnunet3d_op17_fp16.onnx", "unet3d_bn_op11.onnx",
                           "unet3d_bn_op17_fp16io32.onnx"}) {
    ir::Graph before = fixture_after(file, "fuse-resize-into-conv");
    ir::Graph after = before;
    fuse_conv_transpose_into_conv(after);
    EXPECT_GE(count_ops(before, "ConvTranspose"), 1) << file;
    EXPECT_EQ(count_ops(after, "ConvTranspose"), 0) << file;
    const bool fp16_in = std::string(file).find("_fp16.") != std::string::npos;
    Tensor x = random_input({2, 1, 16, 16, 12}, 40);
    if (fp16_in) {
      Tensor h = Tensor::empty(DType::f16, x.shape());
      for (int64_t i = 0; i < x.numel(); ++i)
        h.data<uint16_t>()[i] = float_to_half(x.data<float>()[i]);
      x = std::move(h);
    }
    const bool fp16 = std::string(file).find("fp16") != std::string::npos;
    expect_same_outputs(before, after, {x}, fp16 ? 1e-2 : 1e-6, file);
  }
}

}  // namespace
}  // namespace voxrt::test
