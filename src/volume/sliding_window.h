// Where the patches go and how much each voxel of a patch counts: MONAI's sliding_window_inference
// geometry (scan intervals, padding, window starts) and importance map, in three spatial axes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "voxrt/volume.h"

namespace voxrt::volume {

using Index3 = std::array<int64_t, 3>;

/// int(patch * (1 - overlap)), at least 1; the patch itself when it spans the (padded) volume.
int64_t scan_interval(int64_t padded_size, int64_t patch, double overlap);

/// Window starts along one axis: 0, interval, 2 interval, ... up to the first window that reaches
/// the end, which is moved back to end flush with it.
std::vector<int64_t> scan_starts(int64_t padded_size, int64_t patch, int64_t interval);

struct WindowGrid {
  Index3 size{};  ///< the volume
  Index3 patch{};
  Index3 pad_before{};  ///< (patch - size) / 2 where the volume is smaller, else 0
  Index3 padded{};      ///< max(size, patch)
  Index3 interval{};
  std::array<std::vector<int64_t>, 3> starts;  ///< per axis, in padded coordinates
  int64_t count() const;
  /// Window n in row-major order over the per-axis starts (axis 0 slowest), as MONAI orders them.
  Index3 start(int64_t n) const;
};

WindowGrid plan_windows(const Index3& size, const Index3& patch,
                        const std::array<double, 3>& overlap);

/// The patch's weights, row-major over patch: all ones (constant) or the product of per-axis
/// Gaussians exp(-x^2 / (2 sigma^2)), x = i - (p - 1) / 2, sigma = sigma_scale * p, computed in
/// float32 as MONAI does, then clamped below at max(min, 1e-3).
std::vector<float> importance_map(const Index3& patch, Blend blend,
                                  const std::array<double, 3>& sigma_scale);

/// Source index along one axis for padded coordinate `padded_index`, or -1 for a constant pad.
int64_t source_index(int64_t padded_index, int64_t pad_before, int64_t size, PadMode mode);

}  // namespace voxrt::volume
