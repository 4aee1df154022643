// Cutting network inputs out of a volume and blending network outputs back into float32 sums.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "volume/sliding_window.h"
#include "voxrt/tensor.h"

namespace voxrt::volume {

/// Per-channel intensity mapping: clamp to [low, high], then (v - mean) / std.
struct ChannelNorm {
  float low, high, mean, std;
};

/// Everything fixed for one segment_volume call.
struct PatchPlan {
  WindowGrid grid;
  int64_t channels = 0;
  int64_t classes = 0;
  PadMode pad_mode = PadMode::constant;
  float pad_value = 0;
  std::vector<ChannelNorm> norm;
  std::vector<float> weights;      ///< importance map, row-major over grid.patch
  std::vector<unsigned> variants;  ///< flip masks (bit a = axis a), the unflipped one first
  cpu::Isa isa = cpu::max_isa();   ///< for the fp16 conversions of cut_patch and blend_patch
  int64_t patch_voxels() const { return grid.patch[0] * grid.patch[1] * grid.patch[2]; }
  int64_t items() const { return grid.count() * static_cast<int64_t>(variants.size()); }
};

/// Writes network input `item` (window item / variants, flip item % variants) into `dst`, which
/// holds channels * patch_voxels elements of float32 or float16. Row by row: rows inside the
/// volume and unflipped along the last axis in one loop the compiler vectorizes, fp16 through
/// the CPU backend's conversion kernels.
void cut_patch(const PatchPlan& p, const float* volume, int64_t item, DType dst_type, void* dst);

/// Adds weights * output / variants of network input `item` into `sums` ({classes, size}) and, for
/// the unflipped variant, the weights into `weight_sums` ({size}). `out` holds classes *
/// patch_voxels elements of float32 or float16. Row by row, like cut_patch.
void blend_patch(const PatchPlan& p, int64_t item, DType out_type, const void* out, float* sums,
                 float* weight_sums);

/// The plain forms of the two, voxel by voxel: the reference the row forms are tested against
/// (bit for bit).
void cut_patch_reference(const PatchPlan& p, const float* volume, int64_t item, DType dst_type,
                         void* dst);
void blend_patch_reference(const PatchPlan& p, int64_t item, DType out_type, const void* out,
                           float* sums, float* weight_sums);

/// Per-channel normalization for `volume` ({channels, voxels...}).
std::vector<ChannelNorm> channel_norms(const Tensor& volume, const IntensityOptions& o);

}  // namespace voxrt::volume
