#include "volume/patches.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/kernels/eltwise/eltwise.h"
#include "core/half.h"

namespace voxrt::volume {

namespace {

// Source index along one axis for each position of the (possibly flipped) patch; -1 = pad value.
std::vector<int64_t> axis_map(const PatchPlan& p, size_t axis, int64_t start, bool flip) {
  const WindowGrid& g = p.grid;
  std::vector<int64_t> m(static_cast<size_t>(g.patch[axis]));
  for (int64_t i = 0; i < g.patch[axis]; ++i) {
    int64_t q = start + (flip ? g.patch[axis] - 1 - i : i);
    m[static_cast<size_t>(i)] = source_index(q, g.pad_before[axis], g.size[axis], p.pad_mode);
  }
  return m;
}

// Where network input `item` sits: its window's start, its flip mask (bit a = axis a), and
// along each axis the patch positions [lo, hi) that land inside the volume.
struct Placement {
  Index3 start, lo, hi;
  unsigned flip;
};
Placement place(const PatchPlan& p, int64_t item) {
  const WindowGrid& g = p.grid;
  const auto nv = static_cast<int64_t>(p.variants.size());
  Placement pl{g.start(item / nv), {}, {}, p.variants[static_cast<size_t>(item % nv)]};
  for (size_t a = 0; a < 3; ++a) {
    const int64_t first = pl.start[a] - g.pad_before[a];
    pl.lo[a] = std::max<int64_t>(0, -first);
    pl.hi[a] = std::min(g.patch[a], g.size[a] - first);
  }
  return pl;
}

// axis_map of each axis.
std::array<std::vector<int64_t>, 3> axis_maps(const PatchPlan& p, const Placement& pl) {
  std::array<std::vector<int64_t>, 3> map;
  for (size_t a = 0; a < 3; ++a) map[a] = axis_map(p, a, pl.start[a], (pl.flip >> a) & 1u);
  return map;
}

// The normalized value of one voxel, as both forms compute it.
inline float normalized(float v, const ChannelNorm& n) {
  return (std::min(std::max(v, n.low), n.high) - n.mean) / n.std;
}

// Whether `m` reads a contiguous run of the row in order: no padding, no flip.
bool contiguous(const std::vector<int64_t>& m) {
  for (size_t i = 0; i < m.size(); ++i)
    if (m[0] < 0 || m[i] != m[0] + static_cast<int64_t>(i)) return false;
  return true;
}

template <class Store>
void cut(const PatchPlan& p, const float* volume, int64_t item, Store store) {
  const WindowGrid& g = p.grid;
  const std::array<std::vector<int64_t>, 3> map = axis_maps(p, place(p, item));
  int64_t d1 = g.size[1], d2 = g.size[2];
  int64_t plane = g.size[0] * d1 * d2;
  int64_t k = 0;
  for (int64_t c = 0; c < p.channels; ++c) {
    const ChannelNorm n = p.norm[static_cast<size_t>(c)];
    const float* vol = volume + c * plane;
    for (int64_t m0 : map[0])
      for (int64_t m1 : map[1]) {
        if (m0 < 0 || m1 < 0) {
          for (int64_t i = 0; i < g.patch[2]; ++i) store(k++, p.pad_value);
          continue;
        }
        const float* row = vol + (m0 * d1 + m1) * d2;
        for (int64_t m2 : map[2]) {
          if (m2 < 0) {
            store(k++, p.pad_value);
            continue;
          }
          store(k++, normalized(row[m2], n));
        }
      }
  }
}

template <class Load>
void blend(const PatchPlan& p, int64_t item, Load load, float* sums, float* weight_sums) {
  const WindowGrid& g = p.grid;
  const Placement pl = place(p, item);
  const Index3 &s = pl.start, &lo = pl.lo, &hi = pl.hi;
  const unsigned flip = pl.flip;
  float share = 1.0f / static_cast<float>(p.variants.size());
  const int64_t p0 = g.patch[0], p1 = g.patch[1], p2 = g.patch[2];
  const int64_t d1 = g.size[1], d2 = g.size[2], plane = g.size[0] * d1 * d2;
  auto src = [&](size_t a, int64_t i) { return ((flip >> a) & 1u) ? g.patch[a] - 1 - i : i; };
  for (int64_t k = 0; k < p.classes; ++k) {
    float* acc = sums + k * plane;
    for (int64_t i0 = lo[0]; i0 < hi[0]; ++i0)
      for (int64_t i1 = lo[1]; i1 < hi[1]; ++i1) {
        const float* w = p.weights.data() + (i0 * p1 + i1) * p2;
        int64_t t = ((s[0] - g.pad_before[0] + i0) * d1 + s[1] - g.pad_before[1] + i1) * d2 + s[2] -
                    g.pad_before[2];
        int64_t o = ((k * p0 + src(0, i0)) * p1 + src(1, i1)) * p2;
        if ((flip >> 2) & 1u) {
          for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2)
            acc[t + i2] += w[i2] * share * load(o + p2 - 1 - i2);
        } else {
          for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2) acc[t + i2] += w[i2] * share * load(o + i2);
        }
        if (k == 0 && flip == 0)
          for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2) weight_sums[t + i2] += w[i2];
      }
  }
}

}  // namespace

void cut_patch(const PatchPlan& p, const float* volume, int64_t item, DType dst_type, void* dst) {
  const WindowGrid& g = p.grid;
  const std::array<std::vector<int64_t>, 3> map = axis_maps(p, place(p, item));
  const int64_t d1 = g.size[1], d2 = g.size[2], p2 = g.patch[2];
  const int64_t plane = g.size[0] * d1 * d2;
  const bool run = contiguous(map[2]);
  const bool f16 = dst_type == DType::f16;
  const cpu::CastKernels& cast = cpu::cast_kernels(p.isa);
  std::vector<float> staging(f16 ? static_cast<size_t>(p2) : 0);
  int64_t k = 0;
  for (int64_t c = 0; c < p.channels; ++c) {
    const ChannelNorm n = p.norm[static_cast<size_t>(c)];
    const float* vol = volume + c * plane;
    for (int64_t m0 : map[0])
      for (int64_t m1 : map[1]) {
        float* __restrict out = f16 ? staging.data() : static_cast<float*>(dst) + k;
        if (m0 < 0 || m1 < 0) {
          std::fill(out, out + p2, p.pad_value);
        } else if (run) {
          const float* __restrict row = vol + (m0 * d1 + m1) * d2 + map[2][0];
          for (int64_t i = 0; i < p2; ++i) out[i] = normalized(row[i], n);
        } else {
          const float* row = vol + (m0 * d1 + m1) * d2;
          for (int64_t i = 0; i < p2; ++i) {
            const int64_t m2 = map[2][static_cast<size_t>(i)];
            out[i] = m2 < 0 ? p.pad_value : normalized(row[m2], n);
          }
        }
        if (f16) cast.f32_to_f16(out, static_cast<uint16_t*>(dst) + k, p2);
        k += p2;
      }
  }
}

void blend_patch(const PatchPlan& p, int64_t item, DType out_type, const void* out, float* sums,
                 float* weight_sums) {
  const WindowGrid& g = p.grid;
  const Placement pl = place(p, item);
  const Index3 &s = pl.start, &lo = pl.lo, &hi = pl.hi;
  const unsigned flip = pl.flip;
  const float share = 1.0f / static_cast<float>(p.variants.size());
  const int64_t p0 = g.patch[0], p1 = g.patch[1], p2 = g.patch[2];
  const int64_t d1 = g.size[1], d2 = g.size[2], plane = g.size[0] * d1 * d2;
  auto src = [&](size_t a, int64_t i) { return ((flip >> a) & 1u) ? g.patch[a] - 1 - i : i; };
  const bool f16 = out_type == DType::f16, flip2 = (flip >> 2) & 1u;
  const cpu::CastKernels& cast = cpu::cast_kernels(p.isa);
  // A row of the output in float32, reversed where the last axis is flipped.
  std::vector<float> staging(static_cast<size_t>(p2));
  // Row by row, every class of a row before the next, so the row's weights are read once.
  for (int64_t i0 = lo[0]; i0 < hi[0]; ++i0)
    for (int64_t i1 = lo[1]; i1 < hi[1]; ++i1) {
      const float* __restrict w = p.weights.data() + (i0 * p1 + i1) * p2;
      const int64_t t = ((s[0] - g.pad_before[0] + i0) * d1 + s[1] - g.pad_before[1] + i1) * d2 +
                        s[2] - g.pad_before[2];
      for (int64_t k = 0; k < p.classes; ++k) {
        const int64_t o = ((k * p0 + src(0, i0)) * p1 + src(1, i1)) * p2;
        const float* v = f16 ? staging.data() : static_cast<const float*>(out) + o;
        if (f16) cast.f16_to_f32(static_cast<const uint16_t*>(out) + o, staging.data(), p2);
        if (flip2) {
          if (!f16) std::copy(v, v + p2, staging.begin());
          std::reverse(staging.begin(), staging.end());
          v = staging.data();
        }
        float* __restrict a = sums + k * plane + t;
        const float* __restrict x = v;
        for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2) a[i2] += w[i2] * share * x[i2];
      }
      if (flip == 0) {
        float* __restrict ws = weight_sums + t;
        for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2) ws[i2] += w[i2];
      }
    }
}

void cut_patch_reference(const PatchPlan& p, const float* volume, int64_t item, DType dst_type,
                         void* dst) {
  if (dst_type == DType::f16) {
    auto* d = static_cast<uint16_t*>(dst);
    cut(p, volume, item, [d](int64_t k, float v) { d[k] = float_to_half(v); });
  } else {
    auto* d = static_cast<float*>(dst);
    cut(p, volume, item, [d](int64_t k, float v) { d[k] = v; });
  }
}

void blend_patch_reference(const PatchPlan& p, int64_t item, DType out_type, const void* out,
                           float* sums, float* weight_sums) {
  if (out_type == DType::f16) {
    const auto* o = static_cast<const uint16_t*>(out);
    blend(
        p, item, [o](int64_t k) { return half_to_float(o[k]); }, sums, weight_sums);
  } else {
    const auto* o = static_cast<const float*>(out);
    blend(
        p, item, [o](int64_t k) { return o[k]; }, sums, weight_sums);
  }
}

namespace {

// The sum of f(v[i]) in double, in four running sums: one chain of dependent adds took 0.1 s
// per pass over a 512x512x300 volume.
template <class F>
double sum_of(const float* v, int64_t n, F f) {
  double s[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < 4; ++j) s[j] += f(v[i + j]);
  for (; i < n; ++i) s[0] += f(v[i]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

}  // namespace

std::vector<ChannelNorm> channel_norms(const Tensor& volume, const IntensityOptions& o) {
  std::vector<ChannelNorm> out;
  int64_t n = volume.numel() / volume.dim(0);
  for (int64_t c = 0; c < volume.dim(0); ++c) {
    ChannelNorm cn{-INFINITY, INFINITY, 0.0f, 1.0f};
    if (o.mode == Normalization::ct) {
      cn = {static_cast<float>(o.clip_low), static_cast<float>(o.clip_high),
            static_cast<float>(o.mean), static_cast<float>(std::max(o.std, 1e-8))};
    } else if (o.mode == Normalization::zscore) {
      const float* v = volume.data<float>() + c * n;
      double mean = sum_of(v, n, [](double x) { return x; }) / static_cast<double>(n);
      double sd = std::sqrt(sum_of(v, n, [mean](double x) { return (x - mean) * (x - mean); }) /
                            static_cast<double>(n));
      cn.mean = static_cast<float>(mean);
      cn.std = static_cast<float>(std::max(sd, 1e-8));
    }
    out.push_back(cn);
  }
  return out;
}

}  // namespace voxrt::volume
