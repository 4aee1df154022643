#include "volume/sliding_window.h"

#include <algorithm>
#include <cmath>

namespace voxrt::volume {

int64_t scan_interval(int64_t padded_size, int64_t patch, double overlap) {
  if (patch == padded_size) return patch;
  auto interval = static_cast<int64_t>(static_cast<double>(patch) * (1.0 - overlap));
  return interval > 0 ? interval : 1;
}

std::vector<int64_t> scan_starts(int64_t padded_size, int64_t patch, int64_t interval) {
  int64_t windows = 1;
  while ((windows - 1) * interval + patch < padded_size) ++windows;
  std::vector<int64_t> starts;
  for (int64_t i = 0; i < windows; ++i) {
    int64_t s = i * interval;
    starts.push_back(s - std::max<int64_t>(s + patch - padded_size, 0));
  }
  return starts;
}

int64_t WindowGrid::count() const {
  return static_cast<int64_t>(starts[0].size() * starts[1].size() * starts[2].size());
}

Index3 WindowGrid::start(int64_t n) const {
  auto n2 = static_cast<int64_t>(starts[2].size()), n1 = static_cast<int64_t>(starts[1].size());
  return {starts[0][static_cast<size_t>(n / (n1 * n2))],
          starts[1][static_cast<size_t>(n / n2 % n1)], starts[2][static_cast<size_t>(n % n2)]};
}

WindowGrid plan_windows(const Index3& size, const Index3& patch,
                        const std::array<double, 3>& overlap) {
  WindowGrid g;
  g.size = size;
  g.patch = patch;
  for (size_t a = 0; a < 3; ++a) {
    g.padded[a] = std::max(size[a], patch[a]);
    g.pad_before[a] = (g.padded[a] - size[a]) / 2;
    g.interval[a] = scan_interval(g.padded[a], patch[a], overlap[a]);
    g.starts[a] = scan_starts(g.padded[a], patch[a], g.interval[a]);
  }
  return g;
}

std::vector<float> importance_map(const Index3& patch, Blend blend,
                                  const std::array<double, 3>& sigma_scale) {
  size_t n = static_cast<size_t>(patch[0] * patch[1] * patch[2]);
  if (blend == Blend::constant) return std::vector<float>(n, 1.0f);
  std::array<std::vector<float>, 3> g;
  for (size_t a = 0; a < 3; ++a) {
    double sigma = static_cast<double>(patch[a]) * sigma_scale[a];
    auto denom = static_cast<float>(-2.0 * sigma * sigma);
    float first = -static_cast<float>(patch[a] - 1) / 2.0f;
    for (int64_t i = 0; i < patch[a]; ++i) {
      float x = first + static_cast<float>(i);
      g[a].push_back(std::exp(x * x / denom));
    }
  }
  std::vector<float> w(n);
  size_t k = 0;
  for (float a : g[0])
    for (float b : g[1])
      for (float c : g[2]) w[k++] = a * b * c;
  float floor = std::max(*std::min_element(w.begin(), w.end()), 1e-3f);
  for (float& v : w) v = std::max(v, floor);
  return w;
}

int64_t source_index(int64_t q, int64_t pad_before, int64_t size, PadMode mode) {
  q -= pad_before;
  if (q >= 0 && q < size) return q;
  switch (mode) {
    case PadMode::constant: return -1;
    case PadMode::replicate: return std::clamp<int64_t>(q, 0, size - 1);
    case PadMode::circular: return ((q % size) + size) % size;
    case PadMode::reflect: {
      if (size == 1) return 0;
      int64_t period = 2 * (size - 1);
      int64_t m = ((q % period) + period) % period;
      return m < size ? m : period - m;
    }
  }
  return -1;
}

}  // namespace voxrt::volume
