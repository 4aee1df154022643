// The passes that rewrite Resizes: fuse-resize-into-conv (a Resize by 2, or to the skip's size,
// read by the convolution after it) and resize-sizes-as-scales (sizes computed from shapes that
// are whole multiples of the input): each rewritten graph against the graph as it was, on small
// graphs and on the fixture UNet that upsamples by interpolation.
#include <gtest/gtest.h>

#include "backends/ref/ops/fused.h"
#include "backends/ref/tensor_math.h"
#include "core/half.h"
#include "model_builder.h"
#include "passes/passes.h"
#include "passes_test_util.h"

namespace voxrt::test {
namespace {

// How a Resize upsamples in resize_conv_graph.
struct ResizeSpec {
  std::string mode = "linear", coord = "half_pixel", nearest = "round_prefer_floor";
  float scale = 2;
  int opset = 17;       // 9: an Upsample node (asymmetric, nearest by floor)
  bool concat = true;   // Resize -> Concat(with a skip) -> Conv, else Resize -> Conv
  bool shared = false;  // the Resize's output also a graph output
  int rank = 4;         // 4 or 5
  std::string what() const {
    return mode + " " + coord + " " + nearest + " x" + std::to_string(scale) + " opset " +
           std::to_string(opset) + (concat ? " concat" : "") + (shared ? " shared" : "") +
           " rank " + std::to_string(rank);
  }
};

// x (N, 3, 5, 7[, 6]) -> Resize -> [Concat with skip (N, 2, ...)] -> Conv 3x3(x3), pads 1 -> Relu,
// after the passes before fuse-resize-into-conv.
ir::Graph resize_conv_graph(const ResizeSpec& r) {
  ModelBuilder b(r.opset);
  const int64_t s = static_cast<int64_t>(r.scale);
  std::vector<ModelBuilder::DimSpec> low = {std::string("N"), 3, 5, 7},
                                     skip = {std::string("N"), 2, 5 * s, 7 * s};
  if (r.rank == 5) {
    low.push_back(6);
    skip.push_back(6 * s);
  }
  b.input("x", onnx::TensorProto::FLOAT, low);
  std::vector<float> scales(static_cast<size_t>(r.rank), r.scale);
  scales[0] = scales[1] = 1;
  b.initializer("scales", {r.rank}, scales);
  if (r.opset < 11) {
    auto& u = b.node("Upsample", {"x", "scales"}, {"up"});
    ModelBuilder::attr_string(u, "mode", r.mode);
  } else {
    auto& u = b.node("Resize", {"x", "", "scales"}, {"up"});
    ModelBuilder::attr_string(u, "mode", r.mode);
    ModelBuilder::attr_string(u, "coordinate_transformation_mode", r.coord);
    ModelBuilder::attr_string(u, "nearest_mode", r.nearest);
  }
  std::string conv_in = "up";
  int64_t c = 3;
  if (r.concat) {
    b.input("skip", onnx::TensorProto::FLOAT, skip);
    auto& cat = b.node("Concat", {"skip", "up"}, {"cat"});
    ModelBuilder::attr_int(cat, "axis", 1);
    conv_in = "cat";
    c = 5;
  }
  std::vector<int64_t> wshape = {4, c, 3, 3};
  if (r.rank == 5) wshape.push_back(3);
  b.initializer("w", wshape, pattern(static_cast<size_t>(shape_numel(wshape)), 3));
  b.initializer("bias", {4}, {0.1f, -0.2f, 0.3f, 0.0f});
  auto& conv = b.node("Conv", {conv_in, "w", "bias"}, {"conv"});
  ModelBuilder::attr_ints(conv, "pads",
                          std::vector<int64_t>(2 * static_cast<size_t>(r.rank - 2), 1));
  b.node("Relu", {"conv"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  if (r.shared) b.output("up", onnx::TensorProto::FLOAT);
  ir::Graph g = import(b.bytes());
  run_passes(g, "fuse-sibling-convs");  // the passes before this one
  return g;
}

// Upsampling by 2 that the convolutions can make (nearest that reads i / 2, linear with
// half-pixel, corner-aligned or asymmetric coordinates, Upsample-9's nearest and linear) goes into
// the convolution, with or without a Concat between, in 2D and 3D; outputs equal the unfused
// graph's (whose Resize is the reference backend's own) at batch 2.
TEST(FuseResizeIntoConv, ConvReadsTheUpsampledPart) {
  std::vector<ResizeSpec> specs;
  for (int rank : {4, 5})
    for (bool concat : {true, false}) {
      ResizeSpec r;
      r.rank = rank;
      r.concat = concat;
      specs.push_back(r);  // linear, half_pixel
      r.coord = "pytorch_half_pixel";
      specs.push_back(r);
      r.coord = "align_corners";
      specs.push_back(r);
      r.coord = "asymmetric";
      specs.push_back(r);
      r.opset = 9;  // Upsample, linear: asymmetric
      specs.push_back(r);
      r.opset = 17;
      r.mode = "nearest";
      r.coord = "asymmetric";
      r.nearest = "floor";  // torch's nearest at opset 11 and later
      specs.push_back(r);
      r.coord = "half_pixel";
      r.nearest = "round_prefer_ceil";
      specs.push_back(r);
      r.opset = 9;  // Upsample, nearest
      specs.push_back(r);
    }
  for (const ResizeSpec& r : specs) {
    ir::Graph before = resize_conv_graph(r);
    ir::Graph after = before;
    fuse_resize_into_conv(after);
    const std::string what = r.what();
    EXPECT_EQ(count_ops(after, "Resize") + count_ops(after, "Upsample"), 0) << what;
    ASSERT_EQ(count_ops(after, "FusedConv"), 1) << what;
    for (const ir::Node& n : after.nodes)
      if (n.op_type == "FusedConv") {
        const Upsample u = r.mode == "nearest"          ? Upsample::nearest
                           : r.opset < 11               ? Upsample::linear_asymmetric
                           : r.coord == "align_corners" ? Upsample::linear_align_corners
                           : r.coord == "asymmetric"    ? Upsample::linear_asymmetric
                                                        : Upsample::linear;
        const std::vector<int64_t> want = r.concat
                                              ? std::vector<int64_t>{0, static_cast<int64_t>(u)}
                                              : std::vector<int64_t>{static_cast<int64_t>(u)};
        EXPECT_EQ(n.attrs.get_ints(kFusedXUpsample), want) << what;
      }
    std::vector<Tensor> in = {
        random_input(r.rank == 5 ? Shape{2, 3, 5, 7, 6} : Shape{2, 3, 5, 7}, 8)};
    if (r.concat)
      in.push_back(random_input(r.rank == 5 ? Shape{2, 2, 10, 14, 12} : Shape{2, 2, 10, 14}, 9));
    // Input order: the graph's inputs as declared (x, then skip).
    expect_same_outputs(before, after, in, 1e-6, what);
  }
}

// Resizes whose values the convolutions do not make stay: another scale, cubic, nearest that
// rounds asymmetric halves up, floors half-pixel coordinates or aligns corners, and a Resize whose
// output something else reads.
TEST(FuseResizeIntoConv, LeavesOtherResizesAlone) {
  std::vector<ResizeSpec> specs(7);
  specs[0].scale = 3;
  specs[1].mode = "cubic";
  specs[2].mode = "nearest";
  specs[2].coord = "align_corners";
  specs[3].shared = true;
  specs[4].mode = "nearest";
  specs[4].coord = "asymmetric";
  specs[4].nearest = "round_prefer_ceil";
  specs[5].mode = "nearest";
  specs[5].coord = "half_pixel";
  specs[5].nearest = "floor";
  specs[6].mode = "nearest";
  specs[6].coord = "asymmetric";
  specs[6].nearest = "ceil";
  for (const ResizeSpec& r : specs) {
    ir::Graph g = resize_conv_graph(r);
    fuse_resize_into_conv(g);
    EXPECT_EQ(count_ops(g, "Resize") + count_ops(g, "Upsample"), 1) << r.what();
    for (const ir::Node& n : g.nodes) EXPECT_FALSE(n.attrs.has(kFusedXUpsample)) << r.what();
  }
}

// The fixture UNet that upsamples by interpolation: both Resizes go into the convolutions after
// their Concats, at batch 2, in fp32 and in its fp16 model (whose Resizes were fp32 islands).
TEST(FuseResizeIntoConv, FixtureUnetResizesVanish) {
  for (const char* file : {"unet3d_resize_op17.onnx", "unet3d_resize_op17_fp16.onnx"}) {
    ir::Graph before = fixture_after(file, "fuse-sibling-convs");
    ir::Graph after = before;
    fuse_resize_into_conv(after);
    EXPECT_EQ(count_ops(before, "Resize"), 2) << file;
    EXPECT_EQ(count_ops(after, "Resize"), 0) << file;
    Tensor x = random_input({2, 1, 16, 16, 16}, 10);
    if (std::string(file).find("fp16") != std::string::npos) {
      Tensor h = Tensor::empty(DType::f16, x.shape());
      for (int64_t i = 0; i < x.numel(); ++i)
        h.data<uint16_t>()[i] = float_to_half(x.data<float>()[i]);
      x = std::move(h);
    }
    expect_same_outputs(before, after, {x},
                        std::string(file).find("fp16") != std::string::npos ? 1e-2 : 1e-6, file);
  }
}

// F.interpolate(d, size=a.shape[2:]) as torch.onnx.export writes it: x (N, 2, D, H, W) -> Conv ->
// "a" -> MaxPool 2 -> Conv -> "d" -> Resize(d, sizes = Concat(Shape(d)[0:2], Shape(a)[2:5])) ->
// Concat(a, up) -> Conv -> y; `dims` the input's spatial dims (known values, or symbols);
// `fixed` (when given) the sizes' spatial part as a constant instead of Shape(a)[2:5]; `coord`
// the coordinates (torch's by default: asymmetric for nearest, half-pixel for linear).
ir::Graph resize_sizes_graph(const std::vector<ModelBuilder::DimSpec>& dims,
                             const std::string& mode, int opset,
                             const std::vector<int64_t>& fixed = {},
                             const std::string& coord = "") {
  ModelBuilder b(opset);
  std::vector<ModelBuilder::DimSpec> in = {std::string("N"), int64_t{2}};
  in.insert(in.end(), dims.begin(), dims.end());
  b.input("x", onnx::TensorProto::FLOAT, in);
  b.initializer("w1", {3, 2, 3, 3, 3}, pattern(3 * 2 * 27, 1));
  auto& c1 = b.node("Conv", {"x", "w1"}, {"a"});
  ModelBuilder::attr_ints(c1, "pads", {1, 1, 1, 1, 1, 1});
  auto& pool = b.node("MaxPool", {"a"}, {"p"});
  ModelBuilder::attr_ints(pool, "kernel_shape", {2, 2, 2});
  ModelBuilder::attr_ints(pool, "strides", {2, 2, 2});
  b.initializer("w2", {4, 3, 3, 3, 3}, pattern(4 * 3 * 27, 2));
  auto& c2 = b.node("Conv", {"p", "w2"}, {"d"});
  ModelBuilder::attr_ints(c2, "pads", {1, 1, 1, 1, 1, 1});
  b.node("Shape", {"d"}, {"sd"});
  b.node("Shape", {"a"}, {"sa"});
  b.initializer_i64("i0", {1}, {0});
  b.initializer_i64("i2", {1}, {2});
  b.initializer_i64("i5", {1}, {5});
  b.node("Slice", {"sd", "i0", "i2"}, {"nc"});
  if (fixed.empty())
    b.node("Slice", {"sa", "i2", "i5"}, {"dhw"});
  else
    b.initializer_i64("dhw", {static_cast<int64_t>(fixed.size())}, fixed);
  auto& cat = b.node("Concat", {"nc", "dhw"}, {"sizes"});
  ModelBuilder::attr_int(cat, "axis", 0);
  std::vector<std::string> resize_in = {"d", "", "", "sizes"};
  if (opset < 13) {
    b.initializer("roi", {0}, {});
    b.initializer("no_scales", {0}, {});
    resize_in = {"d", "roi", "no_scales", "sizes"};
  }
  auto& up = b.node("Resize", resize_in, {"u"});
  ModelBuilder::attr_string(up, "mode", mode);
  ModelBuilder::attr_string(up, "coordinate_transformation_mode",
                            !coord.empty()      ? coord
                            : mode == "nearest" ? "asymmetric"
                                                : "half_pixel");
  ModelBuilder::attr_string(up, "nearest_mode", "floor");
  auto& join = b.node("Concat", {"a", "u"}, {"j"});
  ModelBuilder::attr_int(join, "axis", 1);
  b.initializer("w3", {2, 7, 3, 3, 3}, pattern(2 * 7 * 27, 3));
  auto& c3 = b.node("Conv", {"j", "w3"}, {"y"});
  ModelBuilder::attr_ints(c3, "pads", {1, 1, 1, 1, 1, 1});
  b.output("y", onnx::TensorProto::FLOAT);
  ir::Graph g = import(b.bytes());
  fold_constants(g);  // the pass before
  return g;
}

// With the spatial dims known and even, the sizes are twice the input's whatever the batch: the
// Resize takes scales (1, 1, 2, 2, 2), and after the passes the convolution reads it
// (fuse-resize-into-conv); the rewritten graph matches at batch 1 and 2.
TEST(ResizeSizesAsScales, WholeMultiplesBecomeScales) {
  for (const char* mode : {"nearest", "linear"})
    for (int opset : {11, 13, 17, 21}) {
      const std::string what = std::string(mode) + " opset " + std::to_string(opset);
      ir::Graph before = resize_sizes_graph({int64_t{4}, int64_t{6}, int64_t{8}}, mode, opset);
      ir::Graph after = before;
      resize_sizes_as_scales(after);
      int resizes = 0;
      for (const ir::Node& n : after.nodes) {
        if (n.op_type != "Resize") continue;
        ++resizes;
        EXPECT_EQ(n.num_inputs(), 3) << what;
        const Tensor* scales = n.has_input(2) ? after.constant(n.inputs[2]) : nullptr;
        ASSERT_NE(scales, nullptr) << what;
        EXPECT_EQ(ref::to_f64(*scales), (std::vector<double>{1, 1, 2, 2, 2})) << what;
      }
      EXPECT_EQ(resizes, 1) << what;
      EXPECT_EQ(count_ops(after, "Shape"), 0) << what << ": the sizes' chain is dead";
      for (int64_t batch : {1, 2})
        expect_same_outputs(before, after, {random_input({batch, 2, 4, 6, 8}, 20)}, 1e-6, what);
      ir::Graph all = before;
      run_passes(all, "");
      EXPECT_EQ(count_ops(all, "Resize"), 0) << what;
      expect_same_outputs(before, all, {random_input({2, 2, 4, 6, 8}, 21)}, 1e-5, what + " all");
    }
}

// Sizes that are no whole multiple (an odd skip: 5 -> 2 -> 5) or depend on a dim the model leaves
// unknown stay sizes, and the graph computes as before.
TEST(ResizeSizesAsScales, SizesThatDependOnTheInputStay) {
  struct Case {
    std::vector<ModelBuilder::DimSpec> dims;
    Shape input;
  };
  for (const Case& c :
       {Case{{int64_t{5}, int64_t{6}, int64_t{8}}, {1, 2, 5, 6, 8}},
        Case{{std::string("D"), std::string("H"), std::string("W")}, {2, 2, 4, 6, 8}},
        Case{{std::string("D"), int64_t{6}, int64_t{8}}, {1, 2, 7, 6, 8}}}) {
    ir::Graph before = resize_sizes_graph(c.dims, "nearest", 17);
    ir::Graph after = before;
    resize_sizes_as_scales(after);
    const std::string what = shape_str(c.input);
    for (const ir::Node& n : after.nodes) {
      if (n.op_type == "Resize") {
        EXPECT_EQ(n.num_inputs(), 4) << what << ": sizes kept";
      }
    }
    expect_same_outputs(before, after, {random_input(c.input, 22)}, 1e-6, what);
  }
  // Sizes (N, C, 1010, 6, 8) of an input whose depth is unknown: twice the Resize's input depth
  // in the first probe (N bound to 1009, D to 1011, pooled to 505), not in the second (N 1301, D
  // 1303), so no scale holds for every depth.
  ir::Graph g =
      resize_sizes_graph({std::string("D"), int64_t{6}, int64_t{8}}, "nearest", 17, {1010, 6, 8});
  resize_sizes_as_scales(g);
  for (const ir::Node& n : g.nodes) {
    if (n.op_type == "Resize") {
      EXPECT_EQ(n.num_inputs(), 4) << "sizes a multiple in one probe";
    }
  }
}

// With the spatial dims unknown, the sizes stay sizes (resize-sizes-as-scales), and the Resize,
// whose sizes the probes show to be the skip's, goes into the convolution as a part resized to
// the skip's size (`_sized`): twice its input at even sizes, other ratios at odd ones. Against the
// unfused graph on the reference Resize, every mode torch exports, at opsets 11 to 21, batch 1
// and 2, odd and even sizes (the lowered graph's direct path and its tables included).
TEST(FuseResizeIntoConv, SizedResizesFollowTheSkip) {
  struct Mode {
    const char* mode;
    const char* coord;
  };
  for (const Mode& m : {Mode{"nearest", "asymmetric"}, Mode{"linear", "half_pixel"},
                        Mode{"linear", "align_corners"}, Mode{"linear", "asymmetric"}})
    for (int opset : {11, 13, 17, 21}) {
      const std::string what =
          std::string(m.mode) + " " + m.coord + " opset " + std::to_string(opset);
      ir::Graph before = resize_sizes_graph({std::string("D"), std::string("H"), std::string("W")},
                                            m.mode, opset, {}, m.coord);
      ir::Graph after = before;
      run_passes(after, "");
      EXPECT_EQ(count_ops(after, "Resize"), 0) << what;
      std::vector<int64_t> modes;
      for (const ir::Node& n : after.nodes)
        if (n.attrs.has(kFusedXUpsample)) modes = n.attrs.get_ints(kFusedXUpsample);
      ASSERT_EQ(modes.size(), 2u) << what;
      EXPECT_EQ(modes[0], 0) << what;
      EXPECT_TRUE(sized(static_cast<Upsample>(modes[1]))) << what << ": " << modes[1];
      for (const Shape& x : {Shape{2, 2, 4, 6, 8}, Shape{1, 2, 5, 7, 9}, Shape{2, 2, 3, 2, 6}})
        expect_same_outputs(before, after, {random_input(x, 23)}, 1e-5,
                            what + " at " + shape_str(x));
    }
}

// Left as Resizes: nearest with half-pixel coordinates (which reads another input than
// floor(o L / S) at some ratios), and sizes that are not the skip's.
TEST(FuseResizeIntoConv, OtherSizedResizesStay) {
  ir::Graph half = resize_sizes_graph({std::string("D"), std::string("H"), std::string("W")},
                                      "nearest", 17, {}, "half_pixel");
  run_passes(half, "");
  EXPECT_EQ(count_ops(half, "Resize"), 1);
  ir::Graph fixed =
      resize_sizes_graph({std::string("D"), int64_t{6}, int64_t{8}}, "nearest", 17, {1010, 6, 8});
  run_passes(fixed, "");
  EXPECT_EQ(count_ops(fixed, "Resize"), 1);
}

}  // namespace
}  // namespace voxrt::test
