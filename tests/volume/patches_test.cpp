// cut_patch and blend_patch (row by row, vectorized, fp16 through the CPU conversion kernels)
// against their plain voxel-by-voxel forms, bit for bit: random volumes and windows that pad and
// clip, every flip, every pad mode, fp32 and fp16, on each ISA this CPU has.
#include "volume/patches.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/half.h"

namespace voxrt {
namespace {

struct Case {
  volume::Index3 size, patch;
  double overlap;
  int64_t channels, classes;
  PadMode pad;
};

std::vector<cpu::Isa> isas() {
  std::vector<cpu::Isa> out;
  for (cpu::Isa i : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512})
    if (i <= cpu::max_isa()) out.push_back(i);
  return out;
}

volume::PatchPlan plan_of(const Case& c, std::mt19937& rng) {
  volume::PatchPlan p;
  p.grid = volume::plan_windows(c.size, c.patch, {c.overlap, c.overlap, c.overlap});
  p.weights = volume::importance_map(c.patch, Blend::gaussian, {0.125, 0.125, 0.125});
  p.channels = c.channels;
  p.classes = c.classes;
  p.pad_mode = c.pad;
  p.pad_value = -0.75f;
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t ch = 0; ch < c.channels; ++ch)
    p.norm.push_back({-0.6f + 0.1f * u(rng), 0.7f + 0.1f * u(rng), 0.2f * u(rng), 1.3f});
  p.variants = {0u, 1u, 2u, 4u, 5u, 7u};
  return p;
}

std::vector<float> random_floats(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng);
  return v;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {{20, 23, 41}, {8, 9, 16}, 0.5, 1, 2, PadMode::constant},   // rows of 16: whole vectors
      {{11, 13, 29}, {6, 7, 37}, 0.25, 2, 3, PadMode::reflect},   // patch wider than the volume
      {{9, 10, 33}, {12, 5, 17}, 0.4, 1, 2, PadMode::replicate},  // deeper than the volume
      {{7, 8, 19}, {7, 8, 19}, 0.0, 2, 3, PadMode::constant},     // one window, no padding
  };
  return c;
}

TEST(Patches, CutMatchesPlainForm) {
  std::mt19937 rng(21);
  for (cpu::Isa isa : isas())
    for (const Case& c : cases())
      for (DType t : {DType::f32, DType::f16}) {
        volume::PatchPlan p = plan_of(c, rng);
        p.isa = isa;
        const std::vector<float> vol =
            random_floats(c.channels * c.size[0] * c.size[1] * c.size[2], rng);
        const size_t bytes = static_cast<size_t>(c.channels * p.patch_voxels()) * dtype_size(t);
        int mismatched_items = 0;
        for (int64_t item = 0; item < p.items(); ++item) {
          std::vector<uint8_t> got(bytes, 0xab), want(bytes, 0xcd);
          volume::cut_patch(p, vol.data(), item, t, got.data());
          volume::cut_patch_reference(p, vol.data(), item, t, want.data());
          mismatched_items += got != want;
        }
        EXPECT_EQ(mismatched_items, 0) << cpu::isa_name(isa) << " " << dtype_name(t) << " size "
                                       << c.size[0] << "x" << c.size[1] << "x" << c.size[2];
      }
}

TEST(Patches, BlendMatchesPlainForm) {
  std::mt19937 rng(22);
  for (cpu::Isa isa : isas())
    for (const Case& c : cases())
      for (DType t : {DType::f32, DType::f16}) {
        volume::PatchPlan p = plan_of(c, rng);
        p.isa = isa;
        const int64_t voxels = c.size[0] * c.size[1] * c.size[2];
        std::vector<float> sums = random_floats(c.classes * voxels, rng),
                           weights = random_floats(voxels, rng);
        std::vector<float> want_sums = sums, want_weights = weights;
        const std::vector<float> out32 = random_floats(c.classes * p.patch_voxels(), rng);
        std::vector<uint8_t> out(out32.size() * dtype_size(t));
        if (t == DType::f32)
          std::memcpy(out.data(), out32.data(), out.size());
        else
          for (size_t i = 0; i < out32.size(); ++i) {
            const uint16_t h = float_to_half(out32[i]);
            std::memcpy(out.data() + 2 * i, &h, 2);
          }
        for (int64_t item = 0; item < p.items(); ++item) {
          volume::blend_patch(p, item, t, out.data(), sums.data(), weights.data());
          volume::blend_patch_reference(p, item, t, out.data(), want_sums.data(),
                                        want_weights.data());
        }
        EXPECT_EQ(std::memcmp(sums.data(), want_sums.data(), sums.size() * 4), 0)
            << cpu::isa_name(isa) << " " << dtype_name(t);
        EXPECT_EQ(std::memcmp(weights.data(), want_weights.data(), weights.size() * 4), 0)
            << cpu::isa_name(isa) << " " << dtype_name(t);
      }
}

}  // namespace
}  // namespace voxrt
