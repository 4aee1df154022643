// Reference Conv and ConvTranspose against direct 3D loops written out here.
#include <array>

#include "conv_test_util.h"

namespace voxrt::test {
namespace {

struct Conv3dCase {
  int64_t group;
  std::array<int64_t, 3> stride, dilation, pad_begin, pad_end;
};

// y[n, m, o] = b[m] + sum over c in m's group and k of x[n, c, o * s - pb + k * d] * w[m, c, k].
std::vector<double> conv3d_expected(const Tensor& xt, const Tensor& wt, const Tensor* bt,
                                    const Conv3dCase& p, const Shape& y) {
  std::vector<double> x = ref::to_f64(xt), w = ref::to_f64(wt), out;
  const Shape& xs = xt.shape();
  const Shape& ws = wt.shape();
  int64_t cg = ws[1], mg = ws[0] / p.group;
  for (int64_t n = 0; n < y[0]; ++n)
    for (int64_t m = 0; m < y[1]; ++m)
      for (int64_t od = 0; od < y[2]; ++od)
        for (int64_t oh = 0; oh < y[3]; ++oh)
          for (int64_t ow = 0; ow < y[4]; ++ow) {
            double acc = bt ? ref::load(*bt, m) : 0.0;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t kd = 0; kd < ws[2]; ++kd)
                for (int64_t kh = 0; kh < ws[3]; ++kh)
                  for (int64_t kw = 0; kw < ws[4]; ++kw) {
                    int64_t id = od * p.stride[0] - p.pad_begin[0] + kd * p.dilation[0];
                    int64_t ih = oh * p.stride[1] - p.pad_begin[1] + kh * p.dilation[1];
                    int64_t iw = ow * p.stride[2] - p.pad_begin[2] + kw * p.dilation[2];
                    if (id < 0 || ih < 0 || iw < 0 || id >= xs[2] || ih >= xs[3] || iw >= xs[4])
                      continue;
                    int64_t ci = (m / mg) * cg + c;
                    acc += x[static_cast<size_t>(
                               (((n * xs[1] + ci) * xs[2] + id) * xs[3] + ih) * xs[4] + iw)] *
                           w[static_cast<size_t>(
                               (((m * cg + c) * ws[2] + kd) * ws[3] + kh) * ws[4] + kw)];
                  }
            out.push_back(acc);
          }
  return out;
}

TEST(RefConv, Conv3dGroupsStridesDilationsAsymmetricPadsEveryDtype) {
  std::mt19937 rng(1);
  Conv3dCase p{2, {2, 1, 2}, {1, 2, 1}, {1, 0, 2}, {0, 1, 1}};
  for (DType t : kAllFloat) {
    Tensor x = random_tensor(t, {2, 4, 7, 6, 5}, rng);
    Tensor w = random_tensor(t, {6, 2, 3, 2, 3}, rng);
    Tensor b = random_tensor(t, {6}, rng);
    NodeSpec spec{"Conv"};
    spec.inputs = {&x, &w, &b};
    spec.i("group", 2).ints("strides", {2, 1, 2}).ints("dilations", {1, 2, 1});
    spec.ints("pads", {1, 0, 2, 0, 1, 1}).ints("kernel_shape", {3, 2, 3});
    std::vector<Tensor> y = run_node(spec);
    // D: (7+1+0-3)/2+1 = 3, H: (6+0+1-3)/1+1 = 5, W: (5+2+1-3)/2+1 = 3.
    ASSERT_EQ(y[0].shape(), (Shape{2, 6, 3, 5, 3}));
    EXPECT_EQ(y[0].dtype(), t);
    expect_near_all(y[0], conv3d_expected(x, w, &b, p, y[0].shape()), std::string(dtype_name(t)));
  }
}

TEST(RefConv, AutoPadSplitsOddPaddingPerOnnx) {
  std::mt19937 rng(2);
  Tensor x = random_tensor(DType::f32, {1, 2, 5, 1, 1}, rng);
  Tensor w = random_tensor(DType::f32, {3, 2, 4, 1, 1}, rng);
  // out = ceil(5 / 2) = 3; total padding (3-1)*2 + 4 - 5 = 3: SAME_UPPER puts 2 at the end.
  struct Row {
    const char* mode;
    int64_t out, begin, end;
  };
  for (Row r : {Row{"SAME_UPPER", 3, 1, 2}, Row{"SAME_LOWER", 3, 2, 1}, Row{"VALID", 1, 0, 0}}) {
    NodeSpec spec{"Conv"};
    spec.inputs = {&x, &w, nullptr};
    spec.s("auto_pad", r.mode).ints("strides", {2, 1, 1});
    std::vector<Tensor> y = run_node(spec);
    ASSERT_EQ(y[0].shape(), (Shape{1, 3, r.out, 1, 1})) << r.mode;
    Conv3dCase p{1, {2, 1, 1}, {1, 1, 1}, {r.begin, 0, 0}, {r.end, 0, 0}};
    expect_near_all(y[0], conv3d_expected(x, w, nullptr, p, y[0].shape()), r.mode);
  }
}

TEST(RefConv, Conv1dAndMacs) {
  std::mt19937 rng(3);
  Tensor x = random_tensor(DType::f32, {1, 3, 9}, rng);
  Tensor w = random_tensor(DType::f32, {4, 3, 3}, rng);
  NodeSpec spec{"Conv"};
  spec.inputs = {&x, &w};
  spec.ints("pads", {1, 1});
  Built b = build_node(spec);
  ASSERT_EQ(b.shapes[0], (Shape{1, 4, 9}));
  EXPECT_EQ(b.op->macs(b.meta, b.shapes), 4 * 9 * 3 * 3);
  Tensor x3 = x.reshaped({1, 3, 9, 1, 1}), w3 = w.reshaped({4, 3, 3, 1, 1});
  Conv3dCase p{1, {1, 1, 1}, {1, 1, 1}, {1, 0, 0}, {1, 0, 0}};
  expect_near_all(run_node(spec)[0], conv3d_expected(x3, w3, nullptr, p, {1, 4, 9, 1, 1}), "1d");
}

TEST(RefConv, RefusesBadInputsNamingTheNode) {
  std::mt19937 rng(4);
  Tensor x = random_tensor(DType::f32, {1, 4, 5, 5}, rng);
  Tensor w = random_tensor(DType::f32, {2, 3, 3, 3}, rng);
  Tensor b = random_tensor(DType::f32, {3}, rng);
  Tensor xi = Tensor::zeros(DType::i32, {1, 4, 5, 5});
  NodeSpec spec{"Conv"};
  spec.inputs = {&x, &w};
  EXPECT_NE(error_of(spec).find("node 'n0' (Conv): input X has 4 channels"), std::string::npos)
      << error_of(spec);
  NodeSpec alone = spec;
  alone.inputs = {&x};
  EXPECT_NE(error_of(alone).find("input 1 is missing"), std::string::npos) << error_of(alone);
  NodeSpec bad_pad = spec;
  bad_pad.s("auto_pad", "SAME");
  EXPECT_NE(error_of(bad_pad).find("auto_pad is 'SAME'"), std::string::npos);
  Tensor w4 = random_tensor(DType::f32, {2, 4, 3, 3}, rng);
  NodeSpec bias = spec;
  bias.inputs = {&x, &w4, &b};
  EXPECT_NE(error_of(bias).find("input B has shape 3"), std::string::npos) << error_of(bias);
  NodeSpec kernel = spec;
  kernel.inputs = {&x, &w4};
  kernel.ints("kernel_shape", {2, 2});
  EXPECT_NE(error_of(kernel).find("kernel_shape"), std::string::npos);
  NodeSpec ints = spec;
  ints.inputs = {&xi, &w4};
  EXPECT_NE(error_of(ints).find("input X has dtype int32"), std::string::npos);
  // W and B of X's type (ONNX's T): a float16 W under a float X is refused, naming both.
  Tensor w16 = random_tensor(DType::f16, {2, 4, 3, 3}, rng);
  NodeSpec mixed = spec;
  mixed.inputs = {&x, &w16};
  EXPECT_NE(error_of(mixed).find("input W has dtype float16, expected X's dtype, float"),
            std::string::npos)
      << error_of(mixed);
  Tensor b16 = random_tensor(DType::f16, {2}, rng);
  NodeSpec mixed_b = spec;
  mixed_b.inputs = {&x, &w4, &b16};
  EXPECT_NE(error_of(mixed_b).find("input B has dtype float16"), std::string::npos)
      << error_of(mixed_b);
  NodeSpec transposed = mixed;
  transposed.op = "ConvTranspose";
  transposed.inputs = {&x, &w16};
  EXPECT_NE(error_of(transposed).find("(ConvTranspose): input W has dtype float16"),
            std::string::npos)
      << error_of(transposed);
  NodeSpec big = spec;
  big.inputs = {&x, &w4};
  big.ints("pads", {0, 0, 0, 0}).ints("dilations", {3, 1});
  EXPECT_NE(error_of(big).find("smaller than the dilated kernel size 7"), std::string::npos)
      << error_of(big);
}

// y[n, m, o] = b[m] + sum over c in m's group, k, and i with i * s + k * d - pb = o.
std::vector<double> conv_transpose3d_expected(const Tensor& xt, const Tensor& wt, const Tensor* bt,
                                              const Conv3dCase& p, const Shape& y) {
  std::vector<double> x = ref::to_f64(xt), w = ref::to_f64(wt), out;
  const Shape& xs = xt.shape();
  const Shape& ws = wt.shape();
  int64_t mg = ws[1], cg = xs[1] / p.group;
  auto source = [&](int64_t o, int64_t k, int a, int64_t& i) {
    int64_t num = o + p.pad_begin[static_cast<size_t>(a)] - k * p.dilation[static_cast<size_t>(a)];
    if (num < 0 || num % p.stride[static_cast<size_t>(a)] != 0) return false;
    i = num / p.stride[static_cast<size_t>(a)];
    return i < xs[static_cast<size_t>(a) + 2];
  };
  for (int64_t n = 0; n < y[0]; ++n)
    for (int64_t m = 0; m < y[1]; ++m)
      for (int64_t od = 0; od < y[2]; ++od)
        for (int64_t oh = 0; oh < y[3]; ++oh)
          for (int64_t ow = 0; ow < y[4]; ++ow) {
            double acc = bt ? ref::load(*bt, m) : 0.0;
            int64_t g = m / mg;
            for (int64_t c = g * cg; c < (g + 1) * cg; ++c)
              for (int64_t kd = 0; kd < ws[2]; ++kd)
                for (int64_t kh = 0; kh < ws[3]; ++kh)
                  for (int64_t kw = 0; kw < ws[4]; ++kw) {
                    int64_t id, ih, iw;
                    if (!source(od, kd, 0, id) || !source(oh, kh, 1, ih) || !source(ow, kw, 2, iw))
                      continue;
                    acc += x[static_cast<size_t>(
                               (((n * xs[1] + c) * xs[2] + id) * xs[3] + ih) * xs[4] + iw)] *
                           w[static_cast<size_t>(
                               (((c * mg + m % mg) * ws[2] + kd) * ws[3] + kh) * ws[4] + kw)];
                  }
            out.push_back(acc);
          }
  return out;
}

TEST(RefConvTranspose, GroupsStridesDilationsPadsOutputPaddingEveryDtype) {
  std::mt19937 rng(6);
  Conv3dCase p{2, {2, 1, 3}, {1, 2, 1}, {1, 0, 0}, {0, 1, 2}};
  for (DType t : kAllFloat) {
    Tensor x = random_tensor(t, {2, 4, 3, 4, 2}, rng);
    Tensor w = random_tensor(t, {4, 3, 3, 2, 2}, rng);
    Tensor b = random_tensor(t, {6}, rng);
    NodeSpec spec{"ConvTranspose"};
    spec.inputs = {&x, &w, &b};
    spec.i("group", 2).ints("strides", {2, 1, 3}).ints("dilations", {1, 2, 1});
    spec.ints("pads", {1, 0, 0, 0, 1, 2}).ints("output_padding", {1, 0, 2});
    Built built = build_node(spec);
    // D: 2*2+1+3-1-0 = 7, H: 1*3+0+3-0-1 = 5, W: 3*1+2+2-0-2 = 5.
    ASSERT_EQ(built.shapes[0], (Shape{2, 6, 7, 5, 5}));
    EXPECT_EQ(built.op->macs(built.meta, built.shapes), 2 * 4 * 3 * 4 * 2 * (3 * 3 * 2 * 2));
    std::vector<Tensor> y = run_node(spec);
    expect_near_all(y[0], conv_transpose3d_expected(x, w, &b, p, y[0].shape()),
                    std::string(dtype_name(t)));
  }
}

TEST(RefConvTranspose, OutputShapeAndAutoPadChoosePads) {
  std::mt19937 rng(7);
  Tensor x = random_tensor(DType::f32, {1, 2, 3, 1, 1}, rng);
  Tensor w = random_tensor(DType::f32, {2, 2, 3, 1, 1}, rng);
  // Full extent 2*(3-1)+3 = 7. SAME_*: out 3*2 = 6, total padding 1, odd one at the end for
  // SAME_UPPER and at the start otherwise. output_shape 9: total -2, one zero row on each side.
  struct Row {
    const char* mode;
    std::vector<int64_t> output_shape;
    int64_t out, begin, end;
  };
  for (const Row& r : {Row{"SAME_UPPER", {}, 6, 0, 1}, Row{"SAME_LOWER", {}, 6, 1, 0},
                       Row{"NOTSET", {5, 1, 1}, 5, 1, 1}, Row{"NOTSET", {9, 1, 1}, 9, -1, -1},
                       Row{"VALID", {}, 7, 0, 0}}) {
    NodeSpec spec{"ConvTranspose"};
    spec.inputs = {&x, &w};
    spec.s("auto_pad", r.mode).ints("strides", {2, 1, 1});
    if (!r.output_shape.empty()) spec.ints("output_shape", r.output_shape);
    std::vector<Tensor> y = run_node(spec);
    ASSERT_EQ(y[0].shape(), (Shape{1, 2, r.out, 1, 1})) << r.mode;
    Conv3dCase p{1, {2, 1, 1}, {1, 1, 1}, {r.begin, 0, 0}, {r.end, 0, 0}};
    expect_near_all(y[0], conv_transpose3d_expected(x, w, nullptr, p, y[0].shape()), r.mode);
  }
}

TEST(RefConvTranspose, RefusesPadsLargerThanTheExtent) {
  std::mt19937 rng(8);
  Tensor x = random_tensor(DType::f32, {1, 1, 2}, rng);
  Tensor w = random_tensor(DType::f32, {1, 1, 2}, rng);
  NodeSpec spec{"ConvTranspose"};
  spec.inputs = {&x, &w};
  spec.ints("pads", {2, 1});
  EXPECT_NE(error_of(spec).find("output size 0"), std::string::npos) << error_of(spec);
}

}  // namespace
}  // namespace voxrt::test
