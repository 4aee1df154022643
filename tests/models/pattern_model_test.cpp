// Small UNet pieces at opsets 7 to 21 (tools/make_pattern_models.py; CMake writes them into the
// build folder), each in float32, float16 and float16 with float32 inputs and outputs: what the
// graph passes rewrite (BatchNorm folding, conv epilogues, GroupNorm, Softmax between Transposes,
// Concat into Conv, fp32 islands between Casts, output Casts), run as a user runs them against
// the reference backend without passes, on random inputs of batch 2. The float32 model within
// relative L2 1e-5 of the reference on one and two threads; the float16 files, the float32 model
// run in fp16 and the float16 file widened to fp32 within 1e-2 of the float32 model's reference
// (the fixtures' bars). Runs with bf16 products within 2e-2: they round each operand to 8 bits
// (2^-9 relative) and these pieces' weights are random, not trained, so their sums cancel more
// than a trained model's (unet_bn at opset 9: 1.06e-2 over four convolutions, each adding about
// 2e-3); the trained fixtures hold bf16 products to 1e-2 (model_fixture_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>

#include "core/half.h"
#include "support/emulated_isa.h"
#include "support/paths.h"
#include "support/rel_l2.h"
#include "voxrt/voxrt.h"

namespace voxrt {
namespace {

namespace fs = std::filesystem;

// The patterns: file stems without the form suffix ("voxrt_unet_bn_op13").
std::vector<std::string> patterns() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(voxrt::test::pattern_dir(), ec)) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() == ".onnx" && name.find("_fp16") == std::string::npos)
      out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The generator writes eleven patterns at four to seven opsets each; a build that wrote none
// would otherwise pass by running no case.
TEST(PatternModels, AllWereWritten) {
  EXPECT_GE(patterns().size(), 35u) << "in " << voxrt::test::pattern_dir();
}

// Input 0 of `s` with batch 2: the first of `values`, in the input's own dtype.
Tensor input_for(const Session& s, const std::vector<float>& values) {
  const IoInfo& io = s.inputs().at(0);
  Shape shape = io.shape;
  for (int64_t& d : shape)
    if (d < 0) d = 2;
  Tensor t = Tensor::empty(io.dtype, shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const float v = values[static_cast<size_t>(i)];
    if (io.dtype == DType::f16)
      t.data<uint16_t>()[i] = float_to_half(v);
    else
      t.data<float>()[i] = v;
  }
  return t;
}

class PatternModel : public ::testing::TestWithParam<std::string> {};

TEST_P(PatternModel, MatchesReference) {
  VOXRT_SKIP_UNLESS_EMULATION_RUNS();
  const std::string base = voxrt::test::pattern_dir() + "/" + GetParam();
  SessionOptions ref_opt;
  ref_opt.backend = Backend::reference;
  ref_opt.optimize = false;
  Session ref(base + ".onnx", ref_opt);
  std::vector<float> values(4096);
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  for (float& v : values) v = normal(rng);
  const Tensor x = input_for(ref, values);
  ASSERT_LE(x.numel(), static_cast<int64_t>(values.size()));
  const std::vector<Tensor> want = ref.run({{ref.inputs()[0].name, x}});
  double scale = 0;
  for (int64_t i = 0; i < want[0].numel(); ++i)
    scale = std::max(scale, std::abs(ref::load(want[0], i)));
  ASSERT_GT(scale, 1e-3) << "the reference's output is all but zero: nothing to compare";

  struct Run {
    std::string suffix, label;
    Precision precision;
    FpMath fpmath;
    int threads;
    double tolerance;
  };
  const std::vector<Run> runs = {
      {"", "fp32, one thread", Precision::as_model, FpMath::strict, 1, 1e-5},
      {"", "fp32, two threads", Precision::as_model, FpMath::strict, 2, 1e-5},
      {"", "fp32 run in fp16", Precision::fp16, FpMath::strict, 2, 1e-2},
      {"", "fp32, bf16 products", Precision::as_model, FpMath::bf16, 1, 2e-2},
      {"_fp16", "fp16", Precision::as_model, FpMath::strict, 1, 1e-2},
      {"_fp16", "fp16, two threads, bf16 products", Precision::as_model, FpMath::bf16, 2, 2e-2},
      {"_fp16", "fp16 widened to fp32", Precision::fp32, FpMath::strict, 1, 1e-2},
      {"_fp16io32", "fp16 with fp32 io", Precision::as_model, FpMath::strict, 2, 1e-2},
  };
  for (const Run& r : runs) {
    SessionOptions opt;
    opt.precision = r.precision;
    opt.fpmath = r.fpmath;
    opt.threads = r.threads;
    Session s(base + r.suffix + ".onnx", opt);
    const std::vector<Tensor> got = s.run({{s.inputs()[0].name, input_for(s, values)}});
    ASSERT_EQ(got.size(), want.size()) << r.label;
    for (size_t o = 0; o < want.size(); ++o) {
      ASSERT_EQ(got[o].shape(), want[o].shape()) << r.label << ", output " << o;
      EXPECT_LT(rel_l2(got[o], want[o]), r.tolerance) << r.label << ", output " << o;
    }
  }
}

// The wide decoder's 3x3x3 convolutions run in Winograd's form, the first one making its
// ConvTranspose's output where it reads it (no ConvTranspose node left); with
// SessionOptions::winograd off, neither does, and the ConvTranspose goes into that convolution
// too.
TEST(PatternModels, WideDecoderTakesWinogradsForm) {
  const std::string file = voxrt::test::pattern_dir() + "/voxrt_wide_decoder_op17.onnx";
  for (bool winograd : {true, false}) {
    SessionOptions opt;
    opt.profiling = true;
    opt.winograd = winograd;
    Session s(file, opt);
    std::vector<float> values(4096, 0.5f);
    s.run({{s.inputs()[0].name, input_for(s, values)}});
    int wino = 0, transposes = 0;
    for (const NodeProfile& p : s.last_profile()) {
      if (p.first_item != 0) continue;  // the batch's later groups list the nodes again
      wino += p.kernel.find("_winograd") != std::string::npos;
      transposes += p.op_type == "ConvTranspose";
    }
    EXPECT_EQ(wino, winograd ? 2 : 0) << "winograd " << winograd;
    EXPECT_EQ(transposes, 0) << "winograd " << winograd;
  }
}

INSTANTIATE_TEST_SUITE_P(Opsets, PatternModel, ::testing::ValuesIn(patterns()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param.substr(std::string("voxrt_").size());
                         });

}  // namespace
}  // namespace voxrt
