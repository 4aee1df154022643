// Reference BatchNormalization, InstanceNormalization, GroupNormalization and LayerNormalization
// against formulas written out here.
#include <cmath>

#include "conv_test_util.h"

namespace voxrt::test {
namespace {

// Mean and 1/sqrt(var + eps) of v[begin, begin + count), two-pass in double.
std::pair<double, double> moments(const std::vector<double>& v, int64_t begin, int64_t count,
                                  double eps) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < count; ++i) mean += v[static_cast<size_t>(begin + i)];
  mean /= static_cast<double>(count);
  for (int64_t i = 0; i < count; ++i) var += std::pow(v[static_cast<size_t>(begin + i)] - mean, 2);
  var /= static_cast<double>(count);
  return {mean, 1 / std::sqrt(var + eps)};
}

TEST(RefNorm, BatchNormMixedParameterTypesEveryDtype) {
  std::mt19937 rng(21);
  for (DType t : kAllFloat) {
    Tensor x = random_tensor(t, {2, 3, 4, 5}, rng, -5, 5);
    Tensor scale = random_tensor(DType::f32, {3}, rng), b = random_tensor(DType::f32, {3}, rng);
    Tensor mean = random_tensor(DType::f64, {3}, rng),
           var = random_tensor(DType::f64, {3}, rng, 0.5, 2);
    NodeSpec spec{"BatchNormalization"};
    spec.opset = 15;
    spec.inputs = {&x, &scale, &b, &mean, &var};
    spec.f("epsilon", 1e-3f);
    std::vector<double> want, xv = ref::to_f64(x);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t c = i / 20 % 3;
      want.push_back((xv[static_cast<size_t>(i)] - ref::load(mean, c)) /
                         std::sqrt(ref::load(var, c) + double{1e-3f}) * ref::load(scale, c) +
                     ref::load(b, c));
    }
    expect_near_all(run_node(spec)[0], want, std::string(dtype_name(t)));
  }
}

TEST(RefNorm, BatchNormOpset7PerActivation) {
  std::mt19937 rng(22);
  Tensor x = random_tensor(DType::f32, {2, 3, 4}, rng);
  Tensor scale = random_tensor(DType::f32, {3, 4}, rng), b = random_tensor(DType::f32, {3, 4}, rng);
  Tensor mean = random_tensor(DType::f32, {3, 4}, rng);
  Tensor var = random_tensor(DType::f32, {3, 4}, rng, 0.5, 2);
  NodeSpec spec{"BatchNormalization"};
  spec.opset = 7;
  spec.inputs = {&x, &scale, &b, &mean, &var};
  spec.i("spatial", 0);
  std::vector<double> want;
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t p = i % 12;
    want.push_back((ref::load(x, i) - ref::load(mean, p)) /
                       std::sqrt(ref::load(var, p) + double{1e-5f}) * ref::load(scale, p) +
                   ref::load(b, p));
  }
  expect_near_all(run_node(spec)[0], want, "spatial=0");
  spec.i("spatial", 1);
  EXPECT_NE(error_of(spec).find("input scale has shape 3x4, expected 3"), std::string::npos)
      << error_of(spec);
}

TEST(RefNorm, BatchNormRefusesTraining) {
  Tensor x = Tensor::zeros(DType::f32, {1, 2, 2}), p = Tensor::zeros(DType::f32, {2});
  NodeSpec spec{"BatchNormalization"};
  spec.opset = 15;
  spec.inputs = {&x, &p, &p, &p, &p};
  spec.i("training_mode", 1);
  EXPECT_NE(error_of(spec).find("training_mode is 1"), std::string::npos);
  spec.i("training_mode", 0);
  spec.outputs = {true, true, true};
  EXPECT_NE(error_of(spec).find("output 1 (running"), std::string::npos) << error_of(spec);
  spec.outputs = {true, false, false};
  EXPECT_EQ(error_of(spec), "");
  NodeSpec old{"BatchNormalization"};
  old.opset = 6;
  old.inputs = spec.inputs;
  EXPECT_NE(error_of(old).find("is_test"), std::string::npos);
}

TEST(RefNorm, InstanceNormOfLargeHalfValuesDoesNotOverflow) {
  std::mt19937 rng(23);
  // Variance of values spread over [30000, 60000] is about 7.5e7, far past fp16's 65504.
  Tensor x = random_tensor(DType::f16, {2, 3, 4, 4, 4}, rng, 30000, 60000);
  Tensor scale = random_tensor(DType::f16, {3}, rng), b = random_tensor(DType::f16, {3}, rng);
  NodeSpec spec{"InstanceNormalization"};
  spec.inputs = {&x, &scale, &b};
  std::vector<double> xv = ref::to_f64(x), want;
  for (int64_t nc = 0; nc < 6; ++nc) {
    auto [mean, inv] = moments(xv, nc * 64, 64, 1e-5f);
    for (int64_t i = 0; i < 64; ++i)
      want.push_back((xv[static_cast<size_t>(nc * 64 + i)] - mean) * inv *
                         ref::load(scale, nc % 3) +
                     ref::load(b, nc % 3));
  }
  std::vector<Tensor> y = run_node(spec);
  for (int64_t i = 0; i < y[0].numel(); ++i) ASSERT_TRUE(std::isfinite(ref::load(y[0], i)));
  expect_near_all(y[0], want, "f16");
}

// No channels, no groups to divide by (found by fuzz/: the channel count was the divisor).
TEST(RefNorm, InstanceNormOfNoChannels) {
  Tensor x = Tensor::zeros(DType::f32, {2, 0, 3}), none = Tensor::zeros(DType::f32, {0});
  NodeSpec spec{"InstanceNormalization"};
  spec.inputs = {&x, &none, &none};
  std::vector<Tensor> y = run_node(spec);
  EXPECT_EQ(y[0].shape(), (Shape{2, 0, 3}));
}

TEST(RefNorm, GroupNormScaleIsPerGroupInOpset18AndPerChannelIn21) {
  std::mt19937 rng(24);
  for (DType t : kAllFloat)
    for (int opset : {18, 21}) {
      Tensor x = random_tensor(t, {2, 6, 3, 4}, rng, -3, 3);
      int64_t params = opset == 18 ? 3 : 6;
      Tensor scale = random_tensor(t, {params}, rng), b = random_tensor(t, {params}, rng);
      NodeSpec spec{"GroupNormalization"};
      spec.opset = opset;
      spec.inputs = {&x, &scale, &b};
      spec.i("num_groups", 3).f("epsilon", 1e-2f);
      std::vector<double> xv = ref::to_f64(x), want;
      for (int64_t n = 0; n < 2; ++n)
        for (int64_t g = 0; g < 3; ++g) {
          auto [mean, inv] = moments(xv, (n * 6 + g * 2) * 12, 24, double{1e-2f});
          for (int64_t i = 0; i < 24; ++i) {
            int64_t c = g * 2 + i / 12, p = opset == 18 ? g : c;
            want.push_back((xv[static_cast<size_t>((n * 6 + g * 2) * 12 + i)] - mean) * inv *
                               ref::load(scale, p) +
                           ref::load(b, p));
          }
        }
      expect_near_all(run_node(spec)[0], want,
                      std::string(dtype_name(t)) + " opset " + std::to_string(opset));
    }
  Tensor x = Tensor::zeros(DType::f32, {1, 6, 2}), p = Tensor::zeros(DType::f32, {6});
  NodeSpec spec{"GroupNormalization"};
  spec.opset = 18;
  spec.inputs = {&x, &p, &p};
  spec.i("num_groups", 4);
  EXPECT_NE(error_of(spec).find("not divisible by num_groups 4"), std::string::npos);
  spec.i("num_groups", 3);
  EXPECT_NE(error_of(spec).find("input scale has shape 6, expected 3"), std::string::npos)
      << error_of(spec);
}

TEST(RefNorm, LayerNormBroadcastScaleAndStatisticsOutputs) {
  std::mt19937 rng(25);
  for (DType t : kAllFloat) {
    Tensor x = random_tensor(t, {2, 3, 4, 5}, rng, -4, 4);
    Tensor scale = random_tensor(t, {4, 1}, rng), b = random_tensor(t, {5}, rng);
    NodeSpec spec{"LayerNormalization"};
    spec.opset = 17;
    spec.inputs = {&x, &scale, &b};
    spec.outputs = {true, true, true};
    spec.i("axis", -2).f("epsilon", 1e-3f);
    std::vector<double> xv = ref::to_f64(x), want, means, invs;
    for (int64_t r = 0; r < 6; ++r) {
      auto [mean, inv] = moments(xv, r * 20, 20, double{1e-3f});
      means.push_back(mean);
      invs.push_back(inv);
      for (int64_t i = 0; i < 20; ++i)
        want.push_back((xv[static_cast<size_t>(r * 20 + i)] - mean) * inv *
                           ref::load(scale, i / 5) +
                       ref::load(b, i % 5));
    }
    std::vector<Tensor> y = run_node(spec);
    ASSERT_EQ(y[1].shape(), (Shape{2, 3, 1, 1}));
    ASSERT_EQ(y[1].dtype(), DType::f32);
    ASSERT_EQ(y[2].dtype(), DType::f32);
    expect_near_all(y[0], want, std::string(dtype_name(t)));
    expect_near_all(y[1], means, "Mean");
    expect_near_all(y[2], invs, "InvStdDev");
  }
}

// Rows of nothing to normalize (found by the differential fuzzer: Mean and InvStdDev were left
// as the output's memory held them): Y is empty, each row's statistics NaN, 0 / 0.
TEST(RefNorm, LayerNormOfEmptyRows) {
  Tensor x = Tensor::zeros(DType::f32, {2, 3, 0}), scale = Tensor::zeros(DType::f32, {0});
  NodeSpec spec{"LayerNormalization"};
  spec.opset = 17;
  spec.inputs = {&x, &scale, nullptr};
  spec.outputs = {true, true, true};
  spec.i("axis", -1);
  std::vector<Tensor> y = run_node(spec);
  EXPECT_EQ(y[0].numel(), 0);
  for (int k : {1, 2}) {
    ASSERT_EQ(y[k].shape(), (Shape{2, 3, 1}));
    for (int64_t i = 0; i < 6; ++i) EXPECT_TRUE(std::isnan(ref::load(y[k], i))) << k << " " << i;
  }
}

TEST(RefNorm, LayerNormWithoutBiasOrMean) {
  std::mt19937 rng(26);
  Tensor x = random_tensor(DType::f32, {3, 7}, rng);
  Tensor scale = random_tensor(DType::f32, {7}, rng);
  NodeSpec spec{"LayerNormalization"};
  spec.opset = 17;
  spec.inputs = {&x, &scale, nullptr};
  spec.outputs = {true, false, true};
  spec.i("stash_type", 11);
  std::vector<double> xv = ref::to_f64(x), want;
  for (int64_t r = 0; r < 3; ++r) {
    auto [mean, inv] = moments(xv, r * 7, 7, double{1e-5f});
    for (int64_t i = 0; i < 7; ++i)
      want.push_back((xv[static_cast<size_t>(r * 7 + i)] - mean) * inv * ref::load(scale, i));
  }
  std::vector<Tensor> y = run_node(spec);
  expect_near_all(y[0], want, "Y");
  EXPECT_FALSE(y[1].defined());
  EXPECT_EQ(y[2].dtype(), DType::f64);
  spec.i("axis", 2);
  EXPECT_NE(error_of(spec).find("attribute axis is 2, out of range"), std::string::npos);
}

}  // namespace
}  // namespace voxrt::test
