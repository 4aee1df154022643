// Reference MaxPool, AveragePool and the global pools against direct loops written out here.
#include <array>
#include <limits>

#include "conv_test_util.h"

namespace voxrt::test {
namespace {

struct Pool3d {
  std::array<int64_t, 3> kernel, stride, dilation, pad_begin, pad_end;
};

// Max (value, flat index) or average over the window taps inside the input; `in_padded` counts
// the taps inside the padded extent.
struct Expected {
  std::vector<double> max, avg_exclude, avg_include;
  std::vector<int64_t> row_major, col_major;
};

Expected pool3d_expected(const Tensor& xt, const Pool3d& p, const Shape& y) {
  std::vector<double> x = ref::to_f64(xt);
  const Shape& s = xt.shape();
  Expected e;
  for (int64_t nc = 0; nc < y[0] * y[1]; ++nc)
    for (int64_t od = 0; od < y[2]; ++od)
      for (int64_t oh = 0; oh < y[3]; ++oh)
        for (int64_t ow = 0; ow < y[4]; ++ow) {
          double best = -std::numeric_limits<double>::infinity(), sum = 0;
          int64_t at_d = 0, at_h = 0, at_w = 0, inside = 0, padded = 0;
          for (int64_t kd = 0; kd < p.kernel[0]; ++kd)
            for (int64_t kh = 0; kh < p.kernel[1]; ++kh)
              for (int64_t kw = 0; kw < p.kernel[2]; ++kw) {
                std::array<int64_t, 3> o = {od, oh, ow}, k = {kd, kh, kw}, i;
                bool in = true, in_pad = true;
                for (size_t a = 0; a < 3; ++a) {
                  i[a] = o[a] * p.stride[a] - p.pad_begin[a] + k[a] * p.dilation[a];
                  in = in && i[a] >= 0 && i[a] < s[a + 2];
                  in_pad = in_pad && i[a] >= -p.pad_begin[a] && i[a] < s[a + 2] + p.pad_end[a];
                }
                padded += in_pad;
                if (!in) continue;
                ++inside;
                double v = x[static_cast<size_t>(((nc * s[2] + i[0]) * s[3] + i[1]) * s[4] + i[2])];
                sum += v;
                if (v > best) {
                  best = v;
                  at_d = i[0], at_h = i[1], at_w = i[2];
                }
              }
          int64_t plane = nc * s[2] * s[3] * s[4];
          e.max.push_back(best);
          e.row_major.push_back(plane + (at_d * s[3] + at_h) * s[4] + at_w);
          e.col_major.push_back(plane + at_d + s[2] * (at_h + s[3] * at_w));
          e.avg_exclude.push_back(sum / static_cast<double>(inside));
          e.avg_include.push_back(sum / static_cast<double>(padded));
        }
  return e;
}

TEST(RefPool, MaxPool3dCeilDilationsPadsIndicesBothStorageOrders) {
  std::mt19937 rng(11);
  Pool3d p{{2, 3, 2}, {2, 2, 3}, {1, 2, 2}, {1, 0, 1}, {1, 2, 0}};
  for (DType t : kAllFloat)
    for (int64_t order : {0, 1}) {
      Tensor x = random_tensor(t, {2, 3, 5, 6, 7}, rng);
      NodeSpec spec{"MaxPool"};
      spec.inputs = {&x};
      spec.outputs = {true, true};
      spec.ints("kernel_shape", {2, 3, 2}).ints("strides", {2, 2, 3}).ints("dilations", {1, 2, 2});
      spec.ints("pads", {1, 0, 1, 1, 2, 0}).i("ceil_mode", 1).i("storage_order", order);
      std::vector<Tensor> y = run_node(spec);
      // D: ceil((5+2-2)/2)+1 = 4, but the 4th window would start in the end padding: 3.
      // H: ceil((6+2-5)/2)+1 = 3. W: ceil((7+1-3)/3)+1 = 3.
      ASSERT_EQ(y[0].shape(), (Shape{2, 3, 3, 3, 3}));
      ASSERT_EQ(y[1].dtype(), DType::i64);
      Expected e = pool3d_expected(x, p, y[0].shape());
      expect_near_all(y[0], e.max, std::string(dtype_name(t)));
      if (t == DType::bf16 || t == DType::f16) continue;  // ties make the argmax ambiguous
      const std::vector<int64_t>& want = order ? e.col_major : e.row_major;
      for (int64_t i = 0; i < y[1].numel(); ++i)
        ASSERT_EQ(y[1].data<int64_t>()[i], want[static_cast<size_t>(i)]) << "order " << order;
    }
}

TEST(RefPool, MaxPoolIntegerTypesAndOmittedIndices) {
  for (DType t : {DType::u8, DType::i8}) {
    Tensor x = Tensor::empty(t, {1, 1, 4, 4});
    for (int64_t i = 0; i < 16; ++i) ref::store(x, i, t == DType::u8 ? 200 + 3 * i % 7 : i - 9);
    NodeSpec spec{"MaxPool"};
    spec.inputs = {&x};
    spec.outputs = {true, false};
    spec.ints("kernel_shape", {2, 2}).ints("strides", {2, 2});
    std::vector<Tensor> y = run_node(spec);
    ASSERT_EQ(y[0].dtype(), t);
    Tensor x3 = x.reshaped({1, 1, 4, 4, 1});
    Expected e =
        pool3d_expected(x3, Pool3d{{2, 2, 1}, {2, 2, 1}, {1, 1, 1}, {}, {}}, {1, 1, 2, 2, 1});
    expect_near_all(y[0], e.max, std::string(dtype_name(t)));
    EXPECT_FALSE(y[1].defined());
  }
}

TEST(RefPool, AveragePoolCountIncludePadCeilDilationsEveryDtype) {
  std::mt19937 rng(12);
  Pool3d p{{3, 2, 1}, {2, 2, 1}, {2, 1, 1}, {1, 1, 0}, {2, 0, 0}};
  for (DType t : kAllFloat)
    for (int64_t include : {0, 1}) {
      Tensor x = random_tensor(t, {2, 2, 6, 6}, rng);
      NodeSpec spec{"AveragePool"};
      spec.opset = 19;
      spec.inputs = {&x};
      spec.ints("kernel_shape", {3, 2}).ints("strides", {2, 2}).ints("dilations", {2, 1});
      spec.ints("pads", {1, 1, 2, 0}).i("ceil_mode", 1).i("count_include_pad", include);
      std::vector<Tensor> y = run_node(spec);
      // H: (6+3-5)/2+1 = 3 exactly. W: ceil((6+1-2)/2)+1 = 4; its last window covers 5 and 6.
      ASSERT_EQ(y[0].shape(), (Shape{2, 2, 3, 4}));
      Expected e = pool3d_expected(x.reshaped({2, 2, 6, 6, 1}), p, {2, 2, 3, 4, 1});
      expect_near_all(y[0], include ? e.avg_include : e.avg_exclude, std::string(dtype_name(t)));
    }
}

TEST(RefPool, AveragePoolSameLowerPutsOddPaddingFirst) {
  std::mt19937 rng(13);
  Tensor x = random_tensor(DType::f32, {1, 1, 5}, rng);
  NodeSpec spec{"AveragePool"};
  spec.inputs = {&x};
  spec.ints("kernel_shape", {4}).ints("strides", {2}).s("auto_pad", "SAME_LOWER");
  std::vector<Tensor> y = run_node(spec);
  ASSERT_EQ(y[0].shape(), (Shape{1, 1, 3}));
  // Total padding (3-1)*2+4-5 = 3: 2 before, 1 after.
  Expected e = pool3d_expected(x.reshaped({1, 1, 5, 1, 1}),
                               Pool3d{{4, 1, 1}, {2, 1, 1}, {1, 1, 1}, {2, 0, 0}, {1, 0, 0}},
                               {1, 1, 3, 1, 1});
  expect_near_all(y[0], e.avg_exclude, "SAME_LOWER");
}

TEST(RefPool, GlobalPoolsDoNotOverflowHalf) {
  std::mt19937 rng(14);
  Tensor x = random_tensor(DType::f16, {2, 3, 4, 5, 6}, rng, 30000, 60000);
  std::vector<double> xv = ref::to_f64(x), avg, mx;
  for (int64_t plane = 0; plane < 6; ++plane) {
    double sum = 0, best = -1e300;
    for (int64_t i = 0; i < 120; ++i) {
      sum += xv[static_cast<size_t>(plane * 120 + i)];
      best = std::max(best, xv[static_cast<size_t>(plane * 120 + i)]);
    }
    avg.push_back(sum / 120);
    mx.push_back(best);
  }
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    NodeSpec spec{op};
    spec.inputs = {&x};
    std::vector<Tensor> y = run_node(spec);
    ASSERT_EQ(y[0].shape(), (Shape{2, 3, 1, 1, 1}));
    expect_near_all(y[0], std::string(op) == "GlobalMaxPool" ? mx : avg, op);
  }
}

TEST(RefPool, RefusesBadAttributes) {
  Tensor x = Tensor::zeros(DType::f32, {1, 1, 4, 4});
  NodeSpec spec{"MaxPool"};
  spec.inputs = {&x};
  EXPECT_NE(error_of(spec).find("kernel_shape is required"), std::string::npos);
  spec.ints("kernel_shape", {2, 2, 2});
  EXPECT_NE(error_of(spec).find("expected rank 5"), std::string::npos) << error_of(spec);
  spec.ints("kernel_shape", {2, 2}).ints("strides", {0, 1});
  EXPECT_NE(error_of(spec).find("attribute strides holds 0"), std::string::npos);
  spec.ints("strides", {1, 1}).ints("kernel_shape", {1 << 30, 1 << 30});
  EXPECT_NE(error_of(spec).find("2^31 or more elements"), std::string::npos) << error_of(spec);
  NodeSpec avg{"AveragePool"};
  avg.inputs = {&x};
  avg.ints("kernel_shape", {2, 2}).s("auto_pad", "SAME_UPPER").ints("pads", {1, 1, 1, 1});
  EXPECT_NE(error_of(avg).find("pads is given with auto_pad"), std::string::npos);
}

}  // namespace
}  // namespace voxrt::test
