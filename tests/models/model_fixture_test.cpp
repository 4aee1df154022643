// torch-exported UNets (tests/fixtures, made by tools/make_fixtures.py) against torch's float64
// outputs: fp32 within relative L2 1e-5; fp16 models (as they are, and widened to float32 by the
// fp32 option), fp32 models run with the fp16 option, and every model run with bf16 products
// (FpMath::bf16, where the CPU has AVX512-BF16) within 1e-2 with the argmax class agreeing on at
// least 99.9% of voxels.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/half.h"
#include "npy.h"
#include "support/emulated_isa.h"
#include "support/paths.h"
#include "voxrt/voxrt.h"

namespace voxrt {
namespace {

struct Case {
  std::string model;     // file under the fixture dir
  bool model_is_fp16;    // weights converted to fp16
  bool run_fp16_option;  // fp32 model run with Precision::fp16
  bool run_fp32_option;  // fp16 model run with Precision::fp32
  bool bf16_math;        // run with FpMath::bf16
  std::string input, expected;
  std::string label;
  double argmax_min_margin;  // voxels whose reference top-1 minus top-2 is below this are near-ties
  double min_agreement_all;  // over every voxel, near-ties included
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.label;
}

std::vector<Case> cases() {
  std::ifstream f(voxrt::test::fixture_dir() + "/manifest.json");
  std::vector<Case> out;
  if (!f) return out;
  nlohmann::json m = nlohmann::json::parse(f);
  for (const auto& model : m["models"]) {
    bool fp16 = model["precision"] != "fp32";
    for (const auto& c : model["cases"]) {
      std::string b = "b" + std::to_string(c["batch"].get<int>());
      std::string name = model["name"].get<std::string>();
      double margin = c["argmax_min_margin"];
      double all32 = m["tolerances"]["fp32"]["argmax_agreement_all"];
      double all16 = m["tolerances"]["fp16"]["argmax_agreement_all"];
      out.push_back({model["file"], fp16, false, false, false, c["input"], c["expected"],
                     name + "_" + b, margin, fp16 ? all16 : all32});
      if (!fp16)
        out.push_back({model["file"], false, true, false, false, c["input"], c["expected"],
                       name + "_as_fp16_" + b, margin, all16});
      else
        out.push_back({model["file"], true, false, true, false, c["input"], c["expected"],
                       name + "_as_fp32_" + b, margin, all16});
      out.push_back({model["file"], fp16, false, false, true, c["input"], c["expected"],
                     name + "_bf16math_" + b, margin, all16});
    }
  }
  return out;
}

class ModelFixture : public ::testing::TestWithParam<Case> {};

float element(const Tensor& t, int64_t i) {
  return t.dtype() == DType::f16 ? half_to_float(t.data<uint16_t>()[i]) : t.data<float>()[i];
}

TEST_P(ModelFixture, MatchesTorch) {
  VOXRT_SKIP_UNLESS_EMULATION_RUNS();
  const Case& c = GetParam();
  std::string dir = voxrt::test::fixture_dir();
  SessionOptions opt;
  if (c.run_fp16_option) opt.precision = Precision::fp16;
  if (c.run_fp32_option) opt.precision = Precision::fp32;
  if (c.bf16_math) opt.fpmath = FpMath::bf16;
  Session s(dir + "/" + c.model, opt);
  Tensor x = cli::read_npy(dir + "/" + c.input);
  if (s.inputs()[0].dtype == DType::f16) {
    Tensor h = Tensor::empty(DType::f16, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i)
      h.data<uint16_t>()[i] = float_to_half(x.data<float>()[i]);
    x = h;
  }
  Tensor want = cli::read_npy(dir + "/" + c.expected);
  Tensor got = s.run({{s.inputs()[0].name, x}})[0];
  ASSERT_EQ(got.shape(), want.shape());
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double d = static_cast<double>(element(got, i)) - want.data<float>()[i];
    num += d * d;
    den += static_cast<double>(want.data<float>()[i]) * want.data<float>()[i];
  }
  double rel_l2 = std::sqrt(num / den);
  bool half = c.model_is_fp16 || c.run_fp16_option || c.bf16_math;
  EXPECT_LT(rel_l2, half ? 1e-2 : 1e-5) << c.label;

  // Argmax over the class axis (1) of an N x C x spatial output.
  int64_t n = want.dim(0), classes = want.dim(1), spatial = want.numel() / (n * classes);
  int64_t agree = 0, decisive = 0, decisive_agree = 0;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t v = 0; v < spatial; ++v) {
      int64_t ag = 0, aw = 0;
      auto ref = [&](int64_t k) { return want.data<float>()[(b * classes + k) * spatial + v]; };
      for (int64_t k = 1; k < classes; ++k) {
        if (element(got, (b * classes + k) * spatial + v) >
            element(got, (b * classes + ag) * spatial + v))
          ag = k;
        if (ref(k) > ref(aw)) aw = k;
      }
      double second = -1e300;
      for (int64_t k = 0; k < classes; ++k)
        if (k != aw) second = std::max(second, static_cast<double>(ref(k)));
      bool is_decisive = ref(aw) - second >= c.argmax_min_margin;
      agree += ag == aw;
      decisive += is_decisive;
      decisive_agree += is_decisive && ag == aw;
    }
  double agreement = static_cast<double>(agree) / static_cast<double>(n * spatial);
  double decisive_agreement =
      static_cast<double>(decisive_agree) / static_cast<double>(std::max<int64_t>(decisive, 1));
  EXPECT_GE(decisive_agreement, 0.999) << c.label;
  EXPECT_GE(agreement, c.min_agreement_all) << c.label;
  std::printf(
      "%-32s rel_l2 %.3g  argmax agreement %.5f (all voxels)  %.5f (%.1f%% decisive voxels)\n",
      c.label.c_str(), rel_l2, agreement, decisive_agreement,
      100.0 * static_cast<double>(decisive) / static_cast<double>(n * spatial));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelFixture, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.label; });

TEST(ModelFixtureManifest, IsPresent) {
  EXPECT_FALSE(cases().empty());
}

// A Session lowers its nodes (packing their weights) on its threads: with three threads each
// fixture family's fp32 model, and its fp16 model with bf16 products, picks the same kernel for
// every node as with one, and computes the same outputs.
TEST(ModelFixtureThreads, LoweredOnThreadsAsOnOne) {
  VOXRT_SKIP_UNLESS_EMULATION_RUNS();
  const std::string dir = voxrt::test::fixture_dir();
  for (const char* family :
       {"unet3d_bn", "nnunet3d", "unet3d_resize", "unet2d", "unet3d_gn", "unet3d_monai"})
    for (bool fp16 : {false, true}) {
      const std::string file = std::string(family) + (fp16 ? "_op17_fp16.onnx" : "_op17.onnx");
      SCOPED_TRACE(file);
      std::vector<Tensor> out[2];
      std::vector<NodeProfile> profile[2];
      for (int t : {0, 1}) {
        SessionOptions opt;
        opt.threads = t == 0 ? 1 : 3;
        opt.profiling = true;
        if (fp16) opt.fpmath = FpMath::bf16;
        Session s(dir + "/" + file, opt);
        const IoInfo& in = s.inputs()[0];
        Shape shape = in.shape;
        shape[0] = 1;
        for (size_t d = 2; d < shape.size(); ++d) shape[d] = shape.size() == 4 ? 64 : 32;
        Tensor x = Tensor::empty(in.dtype, shape);
        for (int64_t i = 0; i < x.numel(); ++i) {
          const float v = static_cast<float>((i * 7919) % 257) / 128.0f - 1.0f;
          if (in.dtype == DType::f16)
            x.data<uint16_t>()[i] = float_to_half(v);
          else
            x.data<float>()[i] = v;
        }
        out[t] = s.run({{in.name, x}});
        profile[t] = s.last_profile();
      }
      ASSERT_EQ(profile[0].size(), profile[1].size());
      for (size_t k = 0; k < profile[0].size(); ++k) {
        EXPECT_EQ(profile[0][k].node, profile[1][k].node);
        EXPECT_EQ(profile[0][k].kernel, profile[1][k].kernel) << profile[0][k].node;
      }
      ASSERT_EQ(out[0].size(), out[1].size());
      for (size_t o = 0; o < out[0].size(); ++o) {
        ASSERT_EQ(out[0][o].shape(), out[1][o].shape());
        ASSERT_EQ(out[0][o].dtype(), out[1][o].dtype());
        EXPECT_EQ(std::memcmp(out[0][o].raw(), out[1][o].raw(), out[0][o].nbytes()), 0)
            << "output " << o;
      }
    }
}

}  // namespace
}  // namespace voxrt

namespace voxrt {
namespace {

struct ConvertCase {
  std::string model, input, expected;
  bool keep_io;
  std::string block;
};

std::vector<ConvertCase> convert_cases() {
  std::ifstream f(voxrt::test::fixture_dir() + "/manifest.json");
  std::vector<ConvertCase> out;
  if (!f) return out;
  nlohmann::json m = nlohmann::json::parse(f);
  for (const auto& model : m["models"]) {
    if (model["precision"] != "fp32") continue;
    const auto& c = model["cases"][0];
    for (bool keep_io : {false, true})
      for (std::string block : {"", "Resize"})
        out.push_back({model["file"], c["input"], c["expected"], keep_io, block});
  }
  return out;
}

void PrintTo(const ConvertCase& c, std::ostream* os) {
  *os << c.model;
}

class ConvertFixture : public ::testing::TestWithParam<ConvertCase> {};

// `voxrt convert --fp16` output loads back and computes the fp32 model's function within the
// fp16 bar (the same files load in onnxruntime: bench/check_convert_onnxruntime.sh).
TEST_P(ConvertFixture, Fp16OutputMatchesTorch) {
  VOXRT_SKIP_UNLESS_EMULATION_RUNS();
  const ConvertCase& c = GetParam();
  std::string dir = voxrt::test::fixture_dir();
  std::string out =
      ::testing::TempDir() + "/converted_" + (c.keep_io ? "keepio_" : "") + c.block + "_" + c.model;
  Fp16ConvertOptions opt;
  opt.keep_io_types = c.keep_io;
  if (!c.block.empty()) opt.block_ops.insert(c.block);
  Fp16ConvertReport r = convert_to_fp16(dir + "/" + c.model, out, opt);
  EXPECT_GT(r.converted, 0);
  Session s(out);
  EXPECT_EQ(s.inputs()[0].dtype, c.keep_io ? DType::f32 : DType::f16);
  Tensor x = cli::read_npy(dir + "/" + c.input);
  if (!c.keep_io) {
    Tensor h = Tensor::empty(DType::f16, x.shape());
    for (int64_t i = 0; i < x.numel(); ++i)
      h.data<uint16_t>()[i] = float_to_half(x.data<float>()[i]);
    x = h;
  }
  Tensor got = s.run({{s.inputs()[0].name, x}})[0];
  Tensor want = cli::read_npy(dir + "/" + c.expected);
  ASSERT_EQ(got.shape(), want.shape());
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double d = static_cast<double>(element(got, i)) - want.data<float>()[i];
    num += d * d;
    den += static_cast<double>(want.data<float>()[i]) * want.data<float>()[i];
  }
  EXPECT_LT(std::sqrt(num / den), 1e-2);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ConvertFixture, ::testing::ValuesIn(convert_cases()),
                         [](const auto& info) {
                           std::string n = info.param.model.substr(0, info.param.model.size() - 5);
                           return n + (info.param.keep_io ? "_keepio" : "") +
                                  (info.param.block.empty() ? "" : "_block" + info.param.block);
                         });

}  // namespace
}  // namespace voxrt
