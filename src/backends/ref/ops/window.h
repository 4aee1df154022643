// Sliding-window geometry shared by the reference Conv, ConvTranspose and pooling ops: parsing of
// kernel_shape / strides / dilations / pads / auto_pad, the output size they give, and the taps of
// one window that land inside the input.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/ref/op.h"
#include "backends/ref/ops/arity.h"

namespace voxrt::ref {

enum class AutoPad { not_set, same_upper, same_lower, valid };

// Larger window attributes are refused: they can only be model errors, and would overflow
// int64 shape arithmetic.
constexpr int64_t kMaxWindowAttr = int64_t{1} << 31;

/// Window attributes as written in the node; empty vectors mean "absent" (defaults apply once the
/// spatial rank is known).
struct WindowAttrs {
  AutoPad auto_pad = AutoPad::not_set;
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  // begin for every axis, then end for every axis
  bool ceil_mode = false;     // pooling only
};

/// The window resolved for one input's spatial shape; every vector has one entry per spatial axis.
struct Geometry {
  std::vector<int64_t> in, out, kernel, stride, dilation, pad_begin, pad_end;
  int64_t in_size() const { return product(in); }
  int64_t out_size() const { return product(out); }
  int64_t kernel_size() const { return product(kernel); }
  static int64_t product(const std::vector<int64_t>& v) {
    int64_t p = 1;
    for (int64_t x : v) p *= x;
    return p;
  }
};

inline AutoPad parse_auto_pad(const OpContext& ctx) {
  std::string s = ctx.node.attrs.get_string("auto_pad", "NOTSET");
  if (s == "NOTSET") return AutoPad::not_set;
  if (s == "SAME_UPPER") return AutoPad::same_upper;
  if (s == "SAME_LOWER") return AutoPad::same_lower;
  if (s == "VALID") return AutoPad::valid;
  ctx.fail("attribute auto_pad is '" + s + "', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
}

/// The ints attribute `name`, each checked to lie in [lo, kMaxWindowAttr).
inline std::vector<int64_t> window_ints(const OpContext& ctx, const std::string& name, int64_t lo) {
  std::vector<int64_t> v = ctx.node.attrs.get_ints(name);
  for (int64_t x : v)
    if (x < lo || x >= kMaxWindowAttr)
      ctx.fail("attribute " + name + " holds " + std::to_string(x) + ", expected values in [" +
               std::to_string(lo) + ", 2^31)");
  return v;
}

inline WindowAttrs parse_window(const OpContext& ctx) {
  WindowAttrs w;
  w.auto_pad = parse_auto_pad(ctx);
  w.kernel = window_ints(ctx, "kernel_shape", 1);
  w.strides = window_ints(ctx, "strides", 1);
  w.dilations = window_ints(ctx, "dilations", 1);
  w.pads = window_ints(ctx, "pads", 0);
  if (w.pads.size() % 2 != 0)
    ctx.fail("attribute pads has " + std::to_string(w.pads.size()) +
             " values, expected two per spatial axis");
  if (w.auto_pad != AutoPad::not_set)
    for (int64_t p : w.pads)
      if (p != 0) ctx.fail("attribute pads is given with auto_pad other than NOTSET; use one");
  return w;
}

/// Checks that `v` (an attribute) has `rank` entries or is absent, and fills absent with `fill`.
inline std::vector<int64_t> per_axis(const std::string& where, const std::vector<int64_t>& v,
                                     size_t rank, int64_t fill, const std::string& name) {
  if (v.empty()) return std::vector<int64_t>(rank, fill);
  if (v.size() != rank)
    throw Error(where + ": attribute " + name + " has " + std::to_string(v.size()) +
                " values, expected " + std::to_string(rank) + " (one per spatial axis)");
  return v;
}

inline int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/// Resolves the window of a Conv or pooling op over input spatial dims `in` with kernel `kernel`.
/// Output sizes follow ONNX: floor (or ceil, where a window may not start in the end padding) of
/// the padded span over the stride, ceil(in / stride) for SAME_*, and no padding for VALID.
inline Geometry resolve_window(const std::string& where, const WindowAttrs& a,
                               const std::vector<int64_t>& in, const std::vector<int64_t>& kernel) {
  size_t rank = in.size();
  Geometry g;
  g.in = in;
  g.kernel = kernel;
  g.stride = per_axis(where, a.strides, rank, 1, "strides");
  g.dilation = per_axis(where, a.dilations, rank, 1, "dilations");
  if (!a.pads.empty() && a.pads.size() != 2 * rank)
    throw Error(where + ": attribute pads has " + std::to_string(a.pads.size()) +
                " values, expected " + std::to_string(2 * rank) + " (begin and end per axis)");
  g.out.resize(rank);
  g.pad_begin.assign(rank, 0);
  g.pad_end.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    int64_t s = g.stride[d];
    // Sizes from inferred shapes (or a kernel taken from W's) may be anything an int64 holds;
    // below these bounds, with attributes under kMaxWindowAttr, nothing here overflows.
    if (in[d] >= (int64_t{1} << 62) || kernel[d] >= kMaxWindowAttr)
      throw Error(where + ": spatial axis " + std::to_string(d) + " has size " +
                  std::to_string(in[d]) + " and kernel " + std::to_string(kernel[d]) +
                  ", expected under 2^62 and 2^31");
    int64_t ek = (kernel[d] - 1) * g.dilation[d] + 1;
    if (a.auto_pad == AutoPad::same_upper || a.auto_pad == AutoPad::same_lower) {
      g.out[d] = (in[d] + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (g.out[d] - 1) * s + ek - in[d]);
      g.pad_begin[d] = a.auto_pad == AutoPad::same_upper ? total / 2 : total - total / 2;
      g.pad_end[d] = total - g.pad_begin[d];
      continue;
    }
    if (a.auto_pad == AutoPad::not_set && !a.pads.empty()) {
      g.pad_begin[d] = a.pads[d];
      g.pad_end[d] = a.pads[d + rank];
    }
    int64_t span = in[d] + g.pad_begin[d] + g.pad_end[d] - ek;
    if (span < 0)
      throw Error(where + ": spatial axis " + std::to_string(d) + " has size " +
                  std::to_string(in[d]) + " (padded " +
                  std::to_string(in[d] + g.pad_begin[d] + g.pad_end[d]) +
                  "), smaller than the dilated kernel size " + std::to_string(ek));
    g.out[d] = span / s + 1;
    if (a.ceil_mode && a.auto_pad == AutoPad::not_set && span % s != 0) {
      ++g.out[d];
      if ((g.out[d] - 1) * s >= in[d] + g.pad_begin[d]) --g.out[d];
    }
  }
  return g;
}

/// One window position's taps that land inside the input: kernel offset and input offset, both
/// row-major over the spatial axes.
struct Tap {
  int64_t k;
  int64_t x;
};

/// Spatial multi-index of the row-major offset `flat` in `shape`.
inline std::vector<int64_t> unflatten(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d > 0; --d) {
    idx[d - 1] = flat % shape[d - 1];
    flat /= shape[d - 1];
  }
  return idx;
}

/// The taps t in [0, k) whose position start + t * dilation lies in [lo, hi), as [first, last):
/// found by arithmetic, since a kernel may be far wider than the input (a window of 2^31 taps
/// over five columns must not take 2^31 steps).
struct TapRange {
  int64_t first, last;
  int64_t count() const { return last - first; }
};
inline TapRange taps_within(int64_t start, int64_t dilation, int64_t k, int64_t lo, int64_t hi) {
  auto ceil_div = [](int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); };
  const int64_t first = std::clamp<int64_t>(ceil_div(lo - start, dilation), 0, k);
  return {first, std::clamp<int64_t>(ceil_div(hi - start, dilation), first, k)};
}

/// Fills `taps` for the output position at row-major spatial offset `p`. Returns how many window
/// positions fall inside the padded input (the divisor of AveragePool with count_include_pad).
inline int64_t window_taps(const Geometry& g, int64_t p, std::vector<Tap>& taps) {
  size_t rank = g.in.size();
  std::vector<int64_t> o = unflatten(p, g.out);
  taps.clear();
  int64_t in_padded = 1;
  std::vector<TapRange> inside(rank);
  std::vector<int64_t> start(rank);
  for (size_t d = 0; d < rank; ++d) {
    start[d] = o[d] * g.stride[d] - g.pad_begin[d];
    in_padded *=
        taps_within(start[d], g.dilation[d], g.kernel[d], -g.pad_begin[d], g.in[d] + g.pad_end[d])
            .count();
    inside[d] = taps_within(start[d], g.dilation[d], g.kernel[d], 0, g.in[d]);
  }
  for (size_t d = 0; d < rank; ++d)
    if (inside[d].count() == 0) return in_padded;
  // Every combination of the inside taps, the last axis fastest.
  std::vector<int64_t> k(rank);
  for (size_t d = 0; d < rank; ++d) k[d] = inside[d].first;
  while (true) {
    int64_t kf = 0, x = 0;
    for (size_t d = 0; d < rank; ++d) {
      kf = kf * g.kernel[d] + k[d];
      x = x * g.in[d] + start[d] + k[d] * g.dilation[d];
    }
    taps.push_back(Tap{kf, x});
    size_t d = rank;
    while (d-- > 0) {
      if (++k[d] < inside[d].last) break;
      k[d] = inside[d].first;
    }
    if (d == static_cast<size_t>(-1)) return in_padded;
  }
}

}  // namespace voxrt::ref
