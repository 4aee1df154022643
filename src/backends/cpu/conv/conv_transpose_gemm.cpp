// ConvTranspose as gemm: for each input position p, col[(m, tap), p] = sum_c W[c, m, tap] x[c, p],
// then col is scattered to output position p * stride + tap * dilation - pad.
#include <algorithm>
#include <cstring>

#include "backends/cpu/conv/conv_gemm.h"
#include "backends/cpu/conv/conv_transpose_phases.h"

namespace voxrt::cpu {

namespace {

constexpr int64_t kPanelBudget = 192 << 10;
constexpr int64_t kMaxStripsPerTile = 16;
// fp32 sums an overlapping work item keeps: a block of output planes that stays in L2.
constexpr int64_t kAccBudget = 1 << 20;

// Rounding toward minus infinity and plus infinity, for any sign of a (b > 0).
int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
int64_t ceil_div_signed(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

// Tile columns [q, q + len) are input positions (iz, iy, ix...) of one input row.
struct InputRun {
  int64_t q, len, iz, iy, ix;
};

void input_runs(const ConvWindow& w, int64_t p0, int64_t cols, std::vector<InputRun>& runs) {
  runs.clear();
  const int64_t iw = w.in[2], ih = w.in[1];
  int64_t ix = p0 % iw, iy = (p0 / iw) % ih, iz = p0 / (iw * ih);
  for (int64_t q = 0; q < cols;) {
    int64_t len = std::min(iw - ix, cols - q);
    runs.push_back({q, len, iz, iy, ix});
    q += len;
    ix = 0;
    if (++iy == ih) {
      iy = 0;
      ++iz;
    }
  }
}

// Consecutive whole input rows of one plane (`rows` of them from iy, tile columns from q), or one
// partial row (a tile's first or last): a tap adds a group to its output rows in one call.
struct RowGroup {
  int64_t q, rows, len, iz, iy, ix;
};

void row_groups(const std::vector<InputRun>& runs, int64_t width, std::vector<RowGroup>& groups) {
  groups.clear();
  for (const InputRun& r : runs) {
    const bool whole = r.ix == 0 && r.len == width;
    if (whole && !groups.empty()) {
      RowGroup& g = groups.back();
      if (g.ix == 0 && g.len == width && g.iz == r.iz && g.iy + g.rows == r.iy) {
        ++g.rows;
        continue;
      }
    }
    groups.push_back({r.q, 1, r.len, r.iz, r.iy, r.ix});
  }
}

struct Tiling {
  int64_t tile_cols, tiles;
};

Tiling tiling(const GemmKernel& g, int64_t steps, int64_t cols) {
  int64_t bb = static_cast<int64_t>(panel_type_bytes(g.b_panel));
  int64_t strips = std::clamp<int64_t>(kPanelBudget / std::max<int64_t>(1, steps * g.nr * bb), 1,
                                       kMaxStripsPerTile);
  strips = std::clamp<int64_t>(ceil_div(cols, g.nr), 1, strips);  // one strip, none to tile too
  int64_t tile_cols = strips * g.nr;
  return {tile_cols, ceil_div(cols, tile_cols)};
}

bool disjoint_taps(const ConvWindow& w) {
  for (int d = 0; d < 3; ++d)
    if (w.kernel[d] != w.stride[d] || (w.kernel[d] > 1 && w.dilation[d] != 1) || w.pad[d] != 0 ||
        w.out[d] != w.in[d] * w.stride[d])
      return false;
  return true;
}

void copy_strided(const uint8_t* src, int64_t n, size_t es, uint8_t* dst, int64_t stride) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * es);
  } else if (es == 4) {
    for (int64_t j = 0; j < n; ++j) std::memcpy(dst + j * stride * 4, src + j * 4, 4);
  } else {
    for (int64_t j = 0; j < n; ++j) std::memcpy(dst + j * stride * 2, src + j * 2, 2);
  }
}

// The two taps of a width run at `src` (tile rows `row_stride` elements apart) into dst, on
// storage-dtype bytes (fp32 or fp16), streamed or not.
void interleave_taps(const uint8_t* src, int64_t row_stride, int64_t n, size_t es, uint8_t* dst,
                     bool stream) {
  auto go = [&](auto* d) {
    using T = std::remove_pointer_t<decltype(d)>;
    const T* a = reinterpret_cast<const T*>(src);
    if (stream)
      interleave_stream(a, a + row_stride, n, d);
    else
      interleave(a, a + row_stride, n, d);
  };
  if (es == 4)
    go(reinterpret_cast<float*>(dst));
  else
    go(reinterpret_cast<uint16_t*>(dst));
}

}  // namespace

ConvTransposeGemm::ConvTransposeGemm(const GemmKernel& g, Isa isa, const Tensor& w,
                                     const Tensor* bias, int64_t group, ConvEpilogue e)
    : g_(g),
      cast_(cast_kernels(isa)),
      f32_(*eltwise_kernels(DType::f32, isa)),
      e_(e),
      c_(w.dim(0)),
      mg_(w.dim(1)),
      group_(group),
      kvol_(1) {
  for (int64_t d = 2; d < w.rank(); ++d) kvol_ *= w.dim(d);
  // MR channels to a chunk keep its (channel, tap) rows a whole number of micro-panels.
  chunk_ = std::max<int64_t>(1, std::min<int64_t>(mg_, g_.mr));
  const int64_t cg = c_ / group_, chunks = ceil_div(mg_, chunk_), rows = chunk_ * kvol_;
  bias_.assign(static_cast<size_t>(mg_ * group_), 0.0f);
  if (bias) bias_ = weights_to_f32(*bias);
  a_chunk_bytes_ = packed_a_bytes(g_, rows, cg);
  a_ = APanels(g_, a_chunk_bytes_ * static_cast<size_t>(group_ * chunks));
  bias_rows_.assign(static_cast<size_t>(group_ * chunks * rows), 0.0f);
  // One chunk's weights in float32 at a time, step (input channel) by step, never the layer's.
  std::vector<float> wf(static_cast<size_t>(cg * rows));
  for (int64_t grp = 0; grp < group_; ++grp)
    for (int64_t ch = 0; ch < chunks; ++ch) {
      int64_t m0 = ch * chunk_, count = std::min(chunk_, mg_ - m0);
      // Row r = (channel m0 + r / kvol, tap r % kvol); step c = input channel of the group.
      for (int64_t c = 0; c < cg; ++c)
        weights_to_f32(w, ((grp * cg + c) * mg_ + m0) * kvol_, count * kvol_,
                       wf.data() + c * count * kvol_);
      a_.fill((grp * chunks + ch) * a_chunk_bytes_, a_chunk_bytes_, [&](uint8_t* dst) {
        pack_a(g_, wf.data(), 1, count * kvol_, count * kvol_, cg, dst);
      });
      for (int64_t r = 0; r < count * kvol_; ++r)
        bias_rows_[static_cast<size_t>((grp * chunks + ch) * rows + r)] =
            bias_[static_cast<size_t>(grp * mg_ + m0 + r / kvol_)];
    }
}

void ConvTransposeGemm::run(const RunContext& ctx, const ConvWindow& win, const Tensor& x,
                            Tensor& y) const {
  if (x.dim(0) == 0 || y.numel() == 0) return;
  if (disjoint_taps(win)) {
    run_disjoint(ctx, win, x, y);
    return;
  }
  const APanels::Open a = a_.open(ctx);
  run_overlapping(ctx, win, x, y, a.data());
}

// Kernel equal to stride: every output element comes from exactly one (input position, tap), so
// the kernel adds the bias and the tiles are copied to their places.
void ConvTransposeGemm::run_disjoint(const RunContext& ctx, const ConvWindow& win, const Tensor& x,
                                     Tensor& y) const {
  ThreadPool* pool = ctx.pool;
  const int64_t n_batch = x.dim(0), cg = c_ / group_, m_out = mg_ * group_;
  const int64_t s_in = win.in_size(), s_out = win.out_size();
  const int64_t mr = g_.mr, nr = g_.nr, chunks = ceil_div(mg_, chunk_), rows_full = chunk_ * kvol_;
  const size_t es = dtype_size(g_.storage), ab = panel_type_bytes(g_.a_panel),
               bb = panel_type_bytes(g_.b_panel);
  const int64_t ks = packed_steps(g_, cg);  // the gemm's steps: input channels (in pairs for bf16)
  const Tiling t = tiling(g_, ks, s_in);
  const int64_t items = n_batch * group_ * t.tiles * chunks;
  const std::vector<int64_t> offsets = panel_offsets(g_, cg);
  const uint8_t* xb = static_cast<const uint8_t*>(x.raw());
  uint8_t* yb = static_cast<uint8_t*>(y.raw());
  // A tile row (or pair of rows, the two taps of a kernel-2 width axis) and where it lands in
  // the output, as an offset from the output corner of an input position.
  struct Dest {
    int64_t row, offset;
  };
  const bool pairs = win.kernel[2] == 2;  // rows r, r + 1 are taps tx = 0, 1
  // Large outputs streamed (streams_output): the interleave's stores were its time. Zen 5, `voxrt
  // profile`, nnunet3d fp32, four alternations: its 16 -> 8 up-convolution to 96^3 (28 MB)
  // 2.76-3.12 -> 2.20-2.56 ms on two threads; `conv_bench` 32 -> 16 from 48^3 (56 MB) one
  // thread 10.9-11.7 -> 9.1-10.8 ms.
  const bool stream = pairs && streams_output(y.nbytes());
  // Items (batch item, group, tile of input positions, chunk of output channels) in one range a
  // thread, range t first on thread t (split_ranges): a thread's tiles are a band of input rows
  // (depths in 3D), whose outputs are the band of output rows the convolution after it reads on
  // that core.
  split_ranges(pool, items, [&](RangeCursor& cursor) {
    PanelBuffer panel(static_cast<size_t>(ks * t.tile_cols) * bb, ctx.scratch);
    std::vector<uint8_t> tile(static_cast<size_t>(mr * t.tile_cols) * es);
    std::vector<InputRun> runs;
    std::vector<Dest> dests;
    int64_t packed = -1;
    // fp16-kept panels: the item's chunk widened here.
    PanelBuffer widened = a_.scratch(a_chunk_bytes_, ctx);
    for (int64_t item; (item = cursor.next()) >= 0;) {
      const int64_t ch = item % chunks, rest = item / chunks;
      const int64_t tl = rest % t.tiles, grp = (rest / t.tiles) % group_,
                    n = rest / t.tiles / group_;
      const int64_t p0 = tl * t.tile_cols, cols = std::min(t.tile_cols, s_in - p0);
      if (rest != packed) {
        pack_b(g_, xb + ((n * c_ + grp * cg) * s_in + p0) * static_cast<int64_t>(es), s_in, cg,
               cols, panel.data());
        input_runs(win, p0, cols, runs);
        packed = rest;
      }
      const int64_t rows = std::min(chunk_, mg_ - ch * chunk_) * kvol_;
      const uint8_t* a = a_.range((grp * chunks + ch) * a_chunk_bytes_, a_chunk_bytes_,
                                  widened.data(), ctx, false);
      const float* bias = bias_rows_.data() + (grp * chunks + ch) * rows_full;
      for (int64_t r0 = 0; r0 < rows; r0 += mr) {
        const int64_t mrr = std::min(mr, rows - r0);
        GemmParams p;
        p.bias = bias + r0;
        p.act = e_.act;
        p.alpha = e_.alpha;
        for (int64_t st = 0; st * nr < cols; ++st)
          g_.ukernel(static_cast<size_t>(mrr), static_cast<size_t>(std::min(nr, cols - st * nr)),
                     static_cast<size_t>(ks), a + r0 * ks * ab, panel.data() + st * ks * nr * bb,
                     offsets.data(), tile.data() + st * nr * es, static_cast<size_t>(t.tile_cols),
                     p);
        // Input rows outside, tile rows inside: the writes of consecutive input rows advance
        // together through the few output planes of the block's taps instead of jumping.
        dests.clear();
        for (int64_t i = 0; i < mrr; i += pairs ? 2 : 1) {
          const int64_t r = r0 + i, m = grp * mg_ + ch * chunk_ + r / kvol_, tap = r % kvol_;
          const int64_t tz = tap / (win.kernel[1] * win.kernel[2]),
                        ty = (tap / win.kernel[2]) % win.kernel[1], tx = tap % win.kernel[2];
          dests.push_back({i, (n * m_out + m) * s_out + (tz * win.out[1] + ty) * win.out[2] + tx});
        }
        for (const InputRun& run : runs) {
          const int64_t corner =
              (run.iz * win.stride[0] * win.out[1] + run.iy * win.stride[1]) * win.out[2] +
              run.ix * win.stride[2];
          for (const Dest& d : dests) {
            const uint8_t* src =
                tile.data() + (d.row * t.tile_cols + run.q) * static_cast<int64_t>(es);
            uint8_t* dst = yb + (d.offset + corner) * static_cast<int64_t>(es);
            if (pairs)
              interleave_taps(src, t.tile_cols, run.len, es, dst, stream);
            else
              copy_strided(src, run.len, es, dst, win.stride[2]);
          }
        }
      }
    }
    if (stream) _mm_sfence();
  });
}

void ConvTransposeGemm::planes(const RunContext& ctx, const ConvWindow& win, const Tensor& x,
                               int64_t n, int64_t iz, int64_t oy0, int64_t oy1, uint8_t* dst,
                               PlanesScratch& s) const {
  if (group_ != 1 || g_.mr % 2 != 0 || win.kernel[1] != 2 || win.kernel[2] != 2 ||
      !disjoint_taps(win) || kvol_ != win.kernel_size() || iz < 0 || iz >= win.in[0] || oy0 < 0 ||
      oy1 > win.out[1])
    throw Error("ConvTransposeGemm::planes: plane " + std::to_string(iz) + ", rows [" +
                std::to_string(oy0) + ", " + std::to_string(oy1) +
                ") of a window it does not make by planes");
  if (oy1 <= oy0) return;
  const int64_t s_in = win.in_size(), cg = c_;
  const int64_t mr = g_.mr, nr = g_.nr, chunks = ceil_div(mg_, chunk_), rows_full = chunk_ * kvol_;
  const size_t es = dtype_size(g_.storage), ab = panel_type_bytes(g_.a_panel),
               bb = panel_type_bytes(g_.b_panel);
  const int64_t ks = packed_steps(g_, cg);
  // The input rows [iy0, iy1) of plane iz whose outputs (2 iy + ty) reach rows [oy0, oy1).
  const int64_t iy0 = oy0 / 2, iy1 = ceil_div(oy1, 2);
  const int64_t p0 = (iz * win.in[1] + iy0) * win.in[2], cols_all = (iy1 - iy0) * win.in[2];
  const Tiling t = tiling(g_, ks, cols_all);
  const std::vector<int64_t> offsets = panel_offsets(g_, cg);
  const uint8_t* xb = static_cast<const uint8_t*>(x.raw());
  // The thread's buffers, grown as calls need (a call per input plane and band of rows).
  const size_t panel_bytes = static_cast<size_t>(ks * t.tile_cols) * bb,
               tile_bytes = static_cast<size_t>(mr * t.tile_cols) * es;
  if (s.panel.size() < panel_bytes) s.panel = PanelBuffer(panel_bytes, ctx.scratch);
  if (s.tile.size() < tile_bytes) s.tile = PanelBuffer(tile_bytes, ctx.scratch);
  if (a_.narrow() && s.widened.size() < a_chunk_bytes_)
    s.widened = PanelBuffer(a_chunk_bytes_, ctx.scratch);
  const PanelBuffer &panel = s.panel, &tile = s.tile;
  std::vector<InputRun> runs;
  const int64_t plane_elems = (oy1 - oy0) * win.out[2];  // a channel's rows in dst
  for (int64_t q0 = 0; q0 < cols_all; q0 += t.tile_cols) {
    const int64_t cols = std::min(t.tile_cols, cols_all - q0);
    pack_b(g_, xb + (n * c_ * s_in + p0 + q0) * static_cast<int64_t>(es), s_in, cg, cols,
           panel.data());
    input_runs(win, p0 + q0, cols, runs);
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const int64_t rows = std::min(chunk_, mg_ - ch * chunk_) * kvol_;
      // fp16-kept panels widened once a chunk: with one chunk (most up-convolutions of a UNet's
      // top levels), once a thread for the run.
      const uint8_t* a = a_.kept() + ch * a_chunk_bytes_;
      if (a_.narrow()) {
        if (s.widened_chunk != ch) a_.widen(ch * a_chunk_bytes_, a_chunk_bytes_, s.widened.data());
        s.widened_chunk = ch;
        a = s.widened.data();
      }
      const float* bias = bias_rows_.data() + ch * rows_full;
      for (int64_t r0 = 0; r0 < rows; r0 += mr) {
        const int64_t mrr = std::min(mr, rows - r0);
        GemmParams p;
        p.bias = bias + r0;
        for (int64_t st = 0; st * nr < cols; ++st)
          g_.ukernel(static_cast<size_t>(mrr), static_cast<size_t>(std::min(nr, cols - st * nr)),
                     static_cast<size_t>(ks), a + r0 * ks * ab, panel.data() + st * ks * nr * bb,
                     offsets.data(), tile.data() + st * nr * es, static_cast<size_t>(t.tile_cols),
                     p);
        // Rows r, r + 1 are the width taps 0 and 1 of channel m's tap (tz, ty).
        for (int64_t i = 0; i + 1 < mrr; i += 2) {
          const int64_t r = r0 + i, m = ch * chunk_ + r / kvol_, tap = r % kvol_;
          const int64_t tz = tap / 4, ty = (tap / 2) % 2;
          uint8_t* out = dst + (tz * mg_ + m) * plane_elems * static_cast<int64_t>(es);
          for (const InputRun& run : runs) {
            const int64_t oy = 2 * run.iy + ty;
            if (oy < oy0 || oy >= oy1) continue;
            interleave_taps(tile.data() + (i * t.tile_cols + run.q) * static_cast<int64_t>(es),
                            t.tile_cols, run.len, es,
                            out + ((oy - oy0) * win.out[2] + 2 * run.ix) * static_cast<int64_t>(es),
                            false);
          }
        }
      }
    }
  }
}

// Overlapping taps: a work item owns a chunk of output channels over a block of output planes
// (depth), sums into an fp32 copy of that block the taps of the input planes that reach it, and
// converts once at the end. The width axis is kept in stride-many phases (output x = q * stride
// + phase): the taps of one input run then add to consecutive elements of one phase, a loop the
// compiler vectorizes, and the phases are interleaved when the block is stored. Input planes
// next to a block boundary feed both blocks and are multiplied twice, a few percent of the
// products, in exchange for blocks that fit the L2 cache and keep both threads busy.
void ConvTransposeGemm::run_overlapping(const RunContext& ctx, const ConvWindow& win,
                                        const Tensor& x, Tensor& y, const uint8_t* a_panels) const {
  ThreadPool* pool = ctx.pool;
  const int64_t n_batch = x.dim(0), cg = c_ / group_, m_out = mg_ * group_;
  const int64_t s_in = win.in_size(), s_out = win.out_size();
  const int64_t mr = g_.mr, nr = g_.nr, chunks = ceil_div(mg_, chunk_);
  const size_t es = dtype_size(g_.storage), ab = panel_type_bytes(g_.a_panel),
               bb = panel_type_bytes(g_.b_panel);
  const int64_t ks = packed_steps(g_, cg);  // the gemm's steps: input channels (in pairs for bf16)
  const Tiling t = tiling(g_, ks, s_in);
  // A row holds the phases that have outputs: all sx of them, or, with a stride wider than the
  // row (a fuzzed 2^31 - 1), only the first out[2], one output each.
  const int64_t sx = win.stride[2], wq = ceil_div(win.out[2], sx);
  const int64_t acc_row = std::min(sx, win.out[2]) * wq;
  const int64_t acc_plane = win.out[1] * acc_row, plane_in = win.in[1] * win.in[2];
  const int64_t zb = std::clamp<int64_t>(kAccBudget / (chunk_ * acc_plane * 4), 1, win.out[0]);
  const int64_t zblocks = ceil_div(win.out[0], zb);
  const int64_t items = n_batch * group_ * chunks * zblocks;
  const std::vector<int64_t> offsets = panel_offsets(g_, cg);
  const uint8_t* xb = static_cast<const uint8_t*>(x.raw());
  uint8_t* yb = static_cast<uint8_t*>(y.raw());
  ActParams act;
  act.act = e_.act;
  act.alpha = e_.alpha;
  // Where each tap's products land (a gemm row r is output channel r / kvol_, tap r % kvol_).
  struct Tap {
    int64_t tz, ty, shift, ph, q_end, oy_off, iy_min, iy_end;
  };
  std::vector<Tap> taps(static_cast<size_t>(kvol_));
  for (int64_t tap = 0; tap < kvol_; ++tap) {
    Tap& tp = taps[static_cast<size_t>(tap)];
    tp.tz = tap / (win.kernel[1] * win.kernel[2]);
    tp.ty = (tap / win.kernel[2]) % win.kernel[1];
    // Input x + j lands in phase `ph` at q = x + j + shift.
    const int64_t off = tap % win.kernel[2] * win.dilation[2] - win.pad[2];
    tp.shift = floor_div(off, sx);
    tp.ph = off - tp.shift * sx;
    tp.q_end = ceil_div(win.out[2] - tp.ph, sx);
    // Input rows iy land on output rows oy = iy * sy + ty * dy - py: those in [0, out_h).
    tp.oy_off = tp.ty * win.dilation[1] - win.pad[1];
    tp.iy_min = ceil_div_signed(-tp.oy_off, win.stride[1]);
    tp.iy_end = floor_div(win.out[1] - 1 - tp.oy_off, win.stride[1]) + 1;
  }
  auto work = [&](int64_t begin, int64_t end) {
    PanelBuffer panel(static_cast<size_t>(ks * t.tile_cols) * bb, ctx.scratch);
    std::vector<float> tile(static_cast<size_t>(mr * t.tile_cols));
    PanelBuffer acc_buffer(static_cast<size_t>(chunk_ * zb * acc_plane) * 4, ctx.scratch);
    float* acc = reinterpret_cast<float*>(acc_buffer.data());
    std::vector<float> row(static_cast<size_t>(win.out[2]));
    std::vector<InputRun> runs;
    std::vector<RowGroup> groups;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t zk = item % zblocks, rest = item / zblocks;
      const int64_t ch = rest % chunks, grp = (rest / chunks) % group_, n = rest / chunks / group_;
      const int64_t m0 = grp * mg_ + ch * chunk_, count = std::min(chunk_, mg_ - ch * chunk_);
      const int64_t oz0 = zk * zb, nz = std::min(zb, win.out[0] - oz0), rows = count * kvol_;
      const uint8_t* a = a_panels + (grp * chunks + ch) * a_chunk_bytes_;
      // Zeros, not the bias: a memset is several times faster than a fill, and the store adds
      // the bias with the activation.
      std::memset(acc, 0, static_cast<size_t>(count * nz * acc_plane) * 4);
      // Input planes iz with iz * stride + tz * dilation - pad in [oz0, oz0 + nz) for some tz.
      const int64_t iz_lo = std::max<int64_t>(
          0,
          ceil_div_signed(oz0 + win.pad[0] - (win.kernel[0] - 1) * win.dilation[0], win.stride[0]));
      const int64_t iz_end =
          std::min(win.in[0], floor_div(oz0 + nz - 1 + win.pad[0], win.stride[0]) + 1);
      for (int64_t p0 = iz_lo * plane_in; p0 < iz_end * plane_in; p0 += t.tile_cols) {
        const int64_t cols = std::min(t.tile_cols, iz_end * plane_in - p0);
        pack_b(g_, xb + ((n * c_ + grp * cg) * s_in + p0) * static_cast<int64_t>(es), s_in, cg,
               cols, panel.data());
        input_runs(win, p0, cols, runs);
        row_groups(runs, win.in[2], groups);
        for (int64_t r0 = 0; r0 < rows; r0 += mr) {
          const int64_t mrr = std::min(mr, rows - r0);
          GemmParams p;
          p.f32_out = true;
          for (int64_t st = 0; st * nr < cols; ++st)
            g_.ukernel(static_cast<size_t>(mrr), static_cast<size_t>(std::min(nr, cols - st * nr)),
                       static_cast<size_t>(ks), a + r0 * ks * ab, panel.data() + st * ks * nr * bb,
                       offsets.data(), tile.data() + st * nr, static_cast<size_t>(t.tile_cols), p);
          for (int64_t i = 0; i < mrr; ++i) {
            const int64_t r = r0 + i;
            const Tap& tp = taps[static_cast<size_t>(r % kvol_)];
            if (tp.ph >= win.out[2]) continue;  // a phase past the row: nothing lands
            float* out = acc + (r / kvol_) * nz * acc_plane + tp.ph * wq;
            const float* src_row = tile.data() + i * t.tile_cols;
            for (const RowGroup& gr : groups) {
              const int64_t oz = gr.iz * win.stride[0] + tp.tz * win.dilation[0] - win.pad[0] - oz0;
              if (oz < 0 || oz >= nz) continue;
              const int64_t iy0 = std::max(gr.iy, tp.iy_min),
                            iy1 = std::min(gr.iy + gr.rows, tp.iy_end);
              if (iy1 <= iy0) continue;
              const int64_t q0 = gr.ix + tp.shift;
              const int64_t j0 = std::max<int64_t>(0, -q0), j1 = std::min(gr.len, tp.q_end - q0);
              if (j1 <= j0) continue;
              const int64_t oy = iy0 * win.stride[1] + tp.oy_off;
              f32_.add_rows(src_row + gr.q + (iy0 - gr.iy) * gr.len + j0, gr.len,
                            out + (oz * win.out[1] + oy) * acc_row + q0 + j0,
                            win.stride[1] * acc_row, iy1 - iy0, j1 - j0);
            }
          }
        }
      }
      // Interleave the phases of each row, add the bias (and the activation) and store it in the
      // output's dtype.
      for (int64_t m = 0; m < count; ++m)
        for (int64_t zy = 0; zy < nz * win.out[1]; ++zy) {
          const float* src = acc + m * nz * acc_plane + zy * acc_row;
          uint8_t* dst = yb + ((n * m_out + m0 + m) * s_out + oz0 * win.out[1] * win.out[2] +
                               zy * win.out[2]) *
                                  static_cast<int64_t>(es);
          // fp32 output is interleaved in place; fp16 through a row of fp32 first.
          const bool f32 = g_.storage == DType::f32;
          float* out_row = f32 ? reinterpret_cast<float*>(dst) : row.data();
          interleave_phases(src, wq, sx, win.out[2], 0, wq, out_row);
          f32_.affine(out_row, nullptr, out_row, win.out[2], 0.0f, 1.0f,
                      bias_[static_cast<size_t>(m0 + m)], act, false);
          if (!f32) cast_.f32_to_f16(out_row, dst, win.out[2]);
        }
    }
  };
  split_items(pool, items, work);
}

}  // namespace voxrt::cpu
