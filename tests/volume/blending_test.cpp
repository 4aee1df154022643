// segment_volume against the reference sliding window of tools/make_volume_fixtures.py (MONAI's
// algorithm and nnU-Net's mirroring in torch), and exact tilings against patches run alone.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "npy.h"
#include "volume/sliding_window.h"
#include "voxrt/volume.h"

namespace voxrt {
namespace {

const std::string kData = VOXRT_VOLUME_DATA;

nlohmann::json manifest() {
  std::ifstream f(kData + "/cases.json");
  return nlohmann::json::parse(f);
}

std::vector<double> doubles(const nlohmann::json& j) {
  return j.get<std::vector<double>>();
}

// Largest |got - want| / (1 + |want|).
double max_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape()) return INFINITY;
  double e = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double w = want.data<float>()[i];
    e = std::max(e, std::abs(got.data<float>()[i] - w) / (1.0 + std::abs(w)));
  }
  return e;
}

SegmentOptions options_of(const nlohmann::json& c) {
  SegmentOptions o;
  o.patch = c["patch"].get<std::vector<int64_t>>();
  o.overlap = doubles(c["overlap"]);
  o.sigma_scale = doubles(c["sigma"]);
  o.batch = c["batch"].get<int>();
  o.blend = c["blend"] == "constant" ? Blend::constant : Blend::gaussian;
  std::string pad = c["pad"];
  o.pad_mode = pad == "reflect"     ? PadMode::reflect
               : pad == "replicate" ? PadMode::replicate
                                    : PadMode::constant;
  o.pad_value = c["pad_value"].get<float>();
  o.mirror_axes = c["mirror"].get<std::vector<int>>();
  o.slice_axis = c["slice_axis"].get<int>();
  const auto& n = c["normalize"];
  if (n["mode"] == "zscore") o.intensity.mode = Normalization::zscore;
  if (n["mode"] == "ct") {
    o.intensity.mode = Normalization::ct;
    o.intensity.clip_low = n["clip"][0];
    o.intensity.clip_high = n["clip"][1];
    o.intensity.mean = n["mean"];
    o.intensity.std = n["std"];
  }
  o.probabilities = true;
  o.activation = Activation::none;
  return o;
}

TEST(Blending, ImportanceMapMatchesReference) {
  nlohmann::json all = manifest();
  for (const auto& m : all["importance"]) {
    auto p = m["patch"].get<std::vector<int64_t>>();
    auto s = doubles(m["sigma"]);
    std::vector<float> w =
        volume::importance_map({p[0], p[1], p[2]}, Blend::gaussian, {s[0], s[1], s[2]});
    Tensor want = cli::read_npy(kData + "/" + m["weights"].get<std::string>());
    ASSERT_EQ(static_cast<int64_t>(w.size()), want.numel());
    double worst = 0;
    for (size_t i = 0; i < w.size(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(w[i]) - want.data<float>()[i]) /
                                  want.data<float>()[i]);
    EXPECT_LT(worst, 1e-6) << m["weights"];
  }
}

TEST(Blending, WindowStartsMatchReference) {
  nlohmann::json all = manifest();
  for (const auto& m : all["starts"]) {
    auto size = m["size"].get<std::vector<int64_t>>();
    auto patch = m["patch"].get<std::vector<int64_t>>();
    auto ov = doubles(m["overlap"]);
    volume::WindowGrid g = volume::plan_windows(
        {size[0], size[1], size[2]}, {patch[0], patch[1], patch[2]}, {ov[0], ov[1], ov[2]});
    for (size_t a = 0; a < 3; ++a) {
      EXPECT_EQ(g.starts[a], m["starts"][a].get<std::vector<int64_t>>()) << m.dump();
      EXPECT_EQ(g.interval[a], m["interval"][a].get<int64_t>()) << m.dump();
      EXPECT_EQ(g.pad_before[a], m["pad_before"][a].get<int64_t>()) << m.dump();
    }
  }
}

class ReferenceCase : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceCase, MatchesReferenceSlidingWindow) {
  nlohmann::json c;
  nlohmann::json all = manifest();
  for (const auto& x : all["cases"])
    if (x["name"] == GetParam()) c = x;
  ASSERT_FALSE(c.is_null());
  Session s(kData + "/" + c["model"].get<std::string>());
  Tensor volume = cli::read_npy(kData + "/" + c["volume"].get<std::string>());
  Tensor want = cli::read_npy(kData + "/" + c["expected"].get<std::string>());
  SegmentResult r = segment_volume(s, volume, options_of(c));
  EXPECT_LT(max_error(r.probabilities, want), 2e-5);
  int64_t voxels = r.labels.numel(), classes = want.dim(0), agree = 0;
  for (int64_t v = 0; v < voxels; ++v) {
    int64_t best = 0;
    for (int64_t k = 1; k < classes; ++k)
      if (want.data<float>()[k * voxels + v] > want.data<float>()[best * voxels + v]) best = k;
    agree += r.labels.data<uint8_t>()[v] == best;
  }
  EXPECT_GE(agree, voxels - 2) << "argmax labels";
}

INSTANTIATE_TEST_SUITE_P(Cases, ReferenceCase,
                         ::testing::Values("gaussian_odd", "per_axis_even", "constant_blend",
                                           "pad_constant", "pad_reflect", "pad_replicate",
                                           "mirror_0_2", "zscore", "ct", "slices_2d"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// Overlap 0 and a volume a multiple of the patch: every voxel comes from exactly one patch.
TEST(Blending, ExactTilingEqualsPatchesAlone) {
  Session s(kData + "/tiny3d.onnx");
  const int64_t p0 = 7, p1 = 5, p2 = 9, n0 = 2, n1 = 3, n2 = 2;
  Tensor volume = Tensor::empty(DType::f32, {2, p0 * n0, p1 * n1, p2 * n2});
  for (int64_t i = 0; i < volume.numel(); ++i)
    volume.data<float>()[i] = std::sin(0.37f * static_cast<float>(i));
  const int64_t d1 = p1 * n1, d2 = p2 * n2, plane = p0 * n0 * d1 * d2;
  for (Blend blend : {Blend::constant, Blend::gaussian}) {
    SegmentOptions o;
    o.patch = {p0, p1, p2};
    o.overlap = {0.0};
    o.blend = blend;
    o.batch = 4;
    o.probabilities = true;
    o.activation = Activation::none;
    SegmentResult r = segment_volume(s, volume, o);
    EXPECT_EQ(r.stats.patches, n0 * n1 * n2);
    double worst = 0;
    for (int64_t a = 0; a < n0; ++a)
      for (int64_t b = 0; b < n1; ++b)
        for (int64_t c = 0; c < n2; ++c) {
          Tensor patch = Tensor::empty(DType::f32, {1, 2, p0, p1, p2});
          for (int64_t ch = 0; ch < 2; ++ch)
            for (int64_t i = 0; i < p0; ++i)
              for (int64_t j = 0; j < p1; ++j)
                for (int64_t k = 0; k < p2; ++k)
                  patch.data<float>()[(((ch * p0 + i) * p1) + j) * p2 + k] =
                      volume.data<float>()[ch * plane + ((a * p0 + i) * d1 + b * p1 + j) * d2 +
                                           c * p2 + k];
          Tensor y = s.run({{"input", patch}})[0];
          for (int64_t cls = 0; cls < 3; ++cls)
            for (int64_t i = 0; i < p0; ++i)
              for (int64_t j = 0; j < p1; ++j)
                for (int64_t k = 0; k < p2; ++k) {
                  float alone = y.data<float>()[(((cls * p0 + i) * p1) + j) * p2 + k];
                  float got = r.probabilities.data<
                      float>()[cls * plane + ((a * p0 + i) * d1 + b * p1 + j) * d2 + c * p2 + k];
                  worst = std::max(
                      worst, static_cast<double>(std::abs(got - alone)) / (1.0 + std::abs(alone)));
                }
        }
    if (blend == Blend::constant)
      EXPECT_EQ(worst, 0.0);
    else
      EXPECT_LT(worst, 1e-6);
  }
}

TEST(Blending, AutomaticActivationMakesProbabilities) {
  Session s(kData + "/tiny3d.onnx");
  Tensor volume = cli::read_npy(kData + "/volume3d.npy");
  SegmentOptions o;
  o.patch = {7, 5, 9};
  o.probabilities = true;
  SegmentResult r = segment_volume(s, volume, o);
  EXPECT_EQ(r.stats.activation, Activation::softmax);
  int64_t voxels = r.labels.numel();
  for (int64_t v = 0; v < voxels; v += 7) {
    float sum = 0;
    for (int64_t k = 0; k < 3; ++k) sum += r.probabilities.data<float>()[k * voxels + v];
    EXPECT_NEAR(sum, 1.0f, 1e-5);
  }
}

TEST(Blending, Fp16SessionStaysClose) {
  SessionOptions so;
  so.precision = Precision::fp16;
  Session s16(kData + "/tiny3d.onnx", so);
  Tensor volume = cli::read_npy(kData + "/volume3d.npy");
  nlohmann::json c;
  nlohmann::json all = manifest();
  for (const auto& x : all["cases"])
    if (x["name"] == "mirror_0_2") c = x;
  SegmentResult r = segment_volume(s16, volume, options_of(c));
  EXPECT_LT(max_error(r.probabilities, cli::read_npy(kData + "/mirror_0_2.npy")), 1e-2);
}

std::string segment_error(const std::string& model, const Tensor& volume, SegmentOptions o) {
  try {
    Session s(kData + "/" + model);
    segment_volume(s, volume, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(Blending, RefusesWhatCannotWork) {
  Tensor v2 = Tensor::zeros(DType::f32, {2, 6, 6, 6});
  Tensor v1 = Tensor::zeros(DType::f32, {1, 6, 6, 6});
  SegmentOptions o;
  EXPECT_CONTAINS(segment_error("tiny3d.onnx", v2, o), "give a patch size");
  o.patch = {600, 600, 600};
  EXPECT_CONTAINS(segment_error("tiny3d.onnx", v2, o), "is larger than");
  o.patch = {4, 4, 4};
  EXPECT_CONTAINS(segment_error("tiny3d.onnx", v1, o), "takes 2 channels, the volume has 1");
  EXPECT_CONTAINS(segment_error("tiny3d.onnx", Tensor::zeros(DType::f32, {2, 0, 6, 6}), o),
                  "is empty");
  o.patch = {4, 4};
  EXPECT_CONTAINS(segment_error("tiny3d.onnx", v2, o), "the patch has 2 dims, the network 3");
  o.patch = {4, 4, 4};
  o.overlap = {1.0};
  EXPECT_CONTAINS(segment_error("tiny3d.onnx", v2, o), "overlap must lie in [0, 1)");
  o.overlap = {0.5, 0.5};
  EXPECT_CONTAINS(segment_error("tiny3d.onnx", v2, o), "overlap needs one value or 3");
  o.overlap = {0.5};
  o.mirror_axes = {3};
  EXPECT_CONTAINS(segment_error("tiny3d.onnx", v2, o), "mirror axes are volume axes");
  o.mirror_axes = {0};
  o.patch = {4, 4};
  EXPECT_CONTAINS(segment_error("tiny2d.onnx", v1, o), "cannot mirror along its slice axis 0");
  EXPECT_CONTAINS(segment_error("tiny2d.onnx", Tensor::zeros(DType::f32, {6, 6, 6}), o),
                  "float32 {channels");
}

}  // namespace
}  // namespace voxrt
