// The direct convolution's input copies (padded_planes.h).
#include "backends/cpu/conv/padded_planes.h"

#include <algorithm>
#include <cstring>

namespace voxrt::cpu {

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

void gather(const uint8_t* src, int64_t stride, int64_t n, size_t es, uint8_t* dst) {
  if (es == 4) {
    for (int64_t j = 0; j < n; ++j) std::memcpy(dst + j * 4, src + j * stride * 4, 4);
  } else {
    for (int64_t j = 0; j < n; ++j) std::memcpy(dst + j * 2, src + j * stride * 2, 2);
  }
}

}  // namespace

void copy_rows(const GemmKernel& g, const ConvWindow& win, const PhaseLayout& ph,
               const uint8_t* src, bool pair, const uint8_t* second, int64_t iy0, int64_t iy1,
               int64_t y0, int64_t shift, uint8_t* dst, uint8_t* scratch) {
  const int64_t sy = ph.sy, sx = ph.sx, es = static_cast<int64_t>(dtype_size(g.storage));
  const int64_t bb = static_cast<int64_t>(ph.bb), in_row = win.in[2] * es;
  // n elements from `a` (and with a pair, from `b` or zeros) into the element at `to`.
  auto convert = [&](const uint8_t* a, const uint8_t* b, uint8_t* to, int64_t n) {
    if (pair)
      g.to_panel_pair(a, second ? b : nullptr, to, static_cast<size_t>(n));
    else
      g.to_panel(a, to, static_cast<size_t>(n));
  };
  // Everything but the row is the same for every row (a plane's rows are most calls' whole
  // work: the divisions per row took half of the copy at stride 2, rows of 48).
  // Row iy's phase row: padded row py = iy + pad in phase py % sy, row py / sy - y0.
  auto row_base = [&](int64_t iy) {
    const int64_t py = iy + win.pad[1];
    return dst + ((py % sy * sx) * ph.phase_plane + (py / sy - y0) * ph.xlen) * bb;
  };
  if (sx == 1) {
    const int64_t skip = std::clamp<int64_t>(shift - win.pad[2], 0, win.in[2]);
    const int64_t to = (win.pad[2] - shift + skip) * bb, n = win.in[2] - skip;
    for (int64_t iy = iy0; iy < iy1; ++iy)
      convert(src + (iy - iy0) * in_row + skip * es,
              second ? second + (iy - iy0) * in_row + skip * es : nullptr, row_base(iy) + to, n);
    return;
  }
  // Phase rx holds input columns j * sx + rx - pad for j in [j0, j1): from the row's element
  // at[rx] into the phase row's element j0[rx]. Rows without a split convert, and phases of
  // unequal lengths, gather each phase's columns of `row` into the scratch from 0 (of `second`'s
  // row from 2 * xlen) and convert them from there.
  int64_t j0[kMaxPhases], j1[kMaxPhases], at[kMaxPhases], to[kMaxPhases];
  for (int64_t r = 0; r < sx; ++r) {
    j0[r] = std::max<int64_t>(0, ceil_div(win.pad[2] - r, sx));
    j1[r] = std::max(j0[r], floor_div(win.in[2] - 1 + win.pad[2] - r, sx) + 1);
    at[r] = (j0[r] * sx + r - win.pad[2]) * es;
    to[r] = (r * ph.phase_plane + j0[r]) * bb;
  }
  if (sx == 2 && j1[0] - j0[0] == j1[1] - j0[1] &&
      (pair ? g.to_panel_pair_split != nullptr : g.to_panel_split != nullptr)) {
    // Both phases in one pass (split and convert), starting at the first input column of
    // either.
    const int64_t first = at[0] < at[1] ? 0 : 1, n = j1[0] - j0[0];
    for (int64_t iy = iy0; iy < iy1; ++iy) {
      const uint8_t* row = src + (iy - iy0) * in_row + at[first];
      uint8_t* base = row_base(iy);
      if (pair)
        g.to_panel_pair_split(row, second ? second + (iy - iy0) * in_row + at[first] : nullptr,
                              base + to[first], base + to[1 - first], static_cast<size_t>(n));
      else
        g.to_panel_split(row, base + to[first], base + to[1 - first], static_cast<size_t>(n));
    }
    return;
  }
  uint8_t* scratch2 = scratch + 2 * ph.xlen * es;
  for (int64_t iy = iy0; iy < iy1; ++iy) {
    const uint8_t* row = src + (iy - iy0) * in_row;
    const uint8_t* row2 = second ? second + (iy - iy0) * in_row : nullptr;
    uint8_t* base = row_base(iy);
    for (int64_t r = 0; r < sx; ++r) {
      if (j1[r] <= j0[r]) continue;
      gather(row + at[r], sx, j1[r] - j0[r], static_cast<size_t>(es), scratch);
      if (row2) gather(row2 + at[r], sx, j1[r] - j0[r], static_cast<size_t>(es), scratch2);
      convert(scratch, scratch2, base + to[r], j1[r] - j0[r]);
    }
  }
}

// Input rows [iy0, iy1) of one channel's plane into a padded plane of width pairs (`ph` with
// one width phase): element j of a padded row holds padded columns 2j and 2j + 1, so the padded
// row is its columns as consecutive bf16 values, written whole (padding zeros included). One
// pass per row: a copy into a padded scratch row, a deinterleave and a pair convert took 40% of
// MONAI's first layer.
void copy_wide_rows(const GemmKernel& g, const ConvWindow& win, const PhaseLayout& ph,
                    const uint8_t* src, int64_t iy0, int64_t iy1, int64_t y0, uint8_t* dst) {
  const int64_t es = static_cast<int64_t>(dtype_size(g.storage)), n = ph.xlen;
  const int64_t left = win.pad[2], width = win.in[2], right = 2 * n - left - width;
  for (int64_t iy = iy0; iy < iy1; ++iy) {
    const int64_t py = iy + win.pad[1];
    uint16_t* d = reinterpret_cast<uint16_t*>(
        dst + (py % ph.sy * ph.phase_plane + (py / ph.sy - y0) * n) * static_cast<int64_t>(ph.bb));
    std::memset(d, 0, static_cast<size_t>(left) * 2);
    g.to_bf16_values(src + (iy - iy0) * width * es, d + left, static_cast<size_t>(width));
    std::memset(d + left + width, 0, static_cast<size_t>(right) * 2);
  }
}

// Zeroes what the copies leave unwritten in a padded plane of `ylen` rows per phase: in each
// phase (ry, rx) the rows whose input row lies outside [iy0, iy1), and in the others the columns
// before and after the input's columns in that phase (all columns are written with
// `whole_rows`: copy_wide_rows). Most of the plane is then written once: clearing it all first
// doubled the stores, and two threads clearing at once ran four times slower per byte on the
// development VM. A row's trailing zeros and the next row's leading ones are one run of memory
// (as are whole rows outside the input), one store or memset each: with pads of one element the
// memset calls were most of the cost.
void zero_padding(const ConvWindow& win, const PhaseLayout& ph, uint8_t* dst, int64_t iy0,
                  int64_t iy1, int64_t y0, int64_t ylen, bool whole_rows) {
  const int64_t bb = static_cast<int64_t>(ph.bb), pitch = ph.xlen * bb;
  uint8_t* const end = dst + ph.sy * ph.sx * ph.phase_plane * bb;
  auto zero = [end](uint8_t* p, uint8_t* q) { zero_run(p, q, end); };
  for (int64_t ry = 0; ry < ph.sy; ++ry)
    for (int64_t rx = 0; rx < ph.sx; ++rx) {
      // Columns [j0, j1) of the phase hold input columns j * sx + rx - pad (copy_rows' range).
      int64_t j0 = 0, j1 = ph.xlen;
      if (!whole_rows) {
        j0 = std::min(ph.xlen, std::max<int64_t>(0, ceil_div(win.pad[2] - rx, ph.sx)));
        j1 =
            std::clamp<int64_t>(floor_div(win.in[2] - 1 + win.pad[2] - rx, ph.sx) + 1, j0, ph.xlen);
      }
      uint8_t* base = dst + (ry * ph.sx + rx) * ph.phase_plane * bb;
      uint8_t* zero_from = base;  // the start of the zeros not yet written
      for (int64_t r = 0; r < ylen; ++r) {
        const int64_t iy = (r + y0) * ph.sy + ry - win.pad[1];
        if (iy < iy0 || iy >= iy1 || j1 == j0) continue;  // zeros: the run goes on
        uint8_t* data = base + r * pitch + j0 * bb;
        zero(zero_from, data);
        zero_from = base + r * pitch + j1 * bb;
      }
      zero(zero_from, base + ylen * pitch);
    }
}

}  // namespace voxrt::cpu
