// Conv without forming col: the input of a slab of output planes is copied once into a
// zero-padded buffer (converted to the kernel's panel type; channels interleaved in packs where
// a panel element holds several steps), and step k = (channel pack, kz, ky, kx) of the gemm
// reads NR consecutive buffer elements at a fixed offset from the strip's start.
// Height and width strides are undone by storing each padded plane as sy * sx phase planes
// (rows r, r + sy, ...; columns c, c + sx, ...), so consecutive outputs read consecutive
// elements and output rows follow each other at a fixed pitch, as with unit strides. Strips run
// along an output plane one row at a time or, when rows are short against NR, straight across
// rows (the columns between rows computed and dropped).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "backends/cpu/conv/conv_gemm.h"
#include "backends/cpu/conv/padded_planes.h"
#include "backends/cpu/kernels/gemm/gemm_rows.h"

namespace voxrt::cpu {

namespace {

// Padded input planes of all channels of a slab should stay within this many bytes per thread
// sharing it (the L2 of an Intel Xeon core), at most kSlabMax, with fp32 panels and fp32
// storage, and in proportion with narrower ones (2 bytes a channel with bf16 pairs or fp16
// storage), so that reduced precision halves the scratch with the activations (fp16 model with
// bf16 products, unet3d_resize: peak RSS 70.5 -> 67.6 MiB, 0.54 of fp32; fp16 storage with fp32
// panels, F16C: unet3d_bn 60.6 -> 56.5 MiB, MONAI's spleen UNet 41.7 -> 37.9). The slab is a
// ring of planes, so smaller slabs copy no plane twice: against one 8 MiB slab, `voxrt bench`
// on the Intel Xeon, three alternations, one thread (2 MiB) unet3d_resize 131.5 / 142.7 / 133.8
// -> 127.7 / 131.4 / 128.6 ms, nnunet3d 193.0 / 198.4 / 194.1 -> 187.6 / 187.6 / 191.9; two
// threads (4 MiB), four alternations, unet3d_resize 74.2 / 74.3 / 74.0 / 73.5 -> 79.3 / 70.9 /
// 71.0 / 72.2, nnunet3d 103.6 / 108.2 / 106.9 / 104.6 -> 102.8 / 100.7 / 101.5 / 109.7 (2 MiB
// on two threads, twice the slabs and barriers, read 105.0-137.7 there).
constexpr int64_t kSlabPerThread = 2 << 20;
constexpr int64_t kSlabMax = 8 << 20;
std::atomic<int64_t> slab_per_thread{kSlabPerThread};
// Where input planes serve one output plane each (a kernel one deep: 2D convolutions), each
// thread copies and computes bands of output rows whose padded input stays within this many
// bytes, half of a Zen 4 core's L2. A 24-channel 256x256 fp32 layer on Zen 4: one thread 62 ->
// 85 GFLOP/s with bands at all; two threads 159 -> 184 GFLOP/s with bands per thread instead of
// one buffer both threads fill and read (copying did not scale, and each core read lines the
// other had just written).
constexpr int64_t kBandBudget = 512 << 10;
// A 3D layer whose reach of whole padded planes exceeds this many per-thread slab budgets runs in
// bands of rows (each band's planes through the ring). nnU-Net's full-resolution stage on
// anisotropic scans, 32 -> 32 channels at 20x256x224 (22 MB of planes), `conv_bench` on Zen 5,
// two runs: one thread 136 / 162 -> 198 / 195 GFLOP/s, two 322 / 321 -> 370 / 377; fp16
// storage 180 / 187 -> 197 / 192 and 331 / 329 -> 377 / 384. Bands at any reach past one budget
// were 2-8% slower at 32 channels of 96^3 and 128^3 and 64 of 64^3 (3.3-6.5 MB; two bands or
// more each restart the ring and copy the rows between them twice), so those keep whole planes
// on one thread. On two threads or more, where each thread fills and reads its own ring, the
// rings past one budget run in bands: MONAI's SegResNet (16 channels at 128^3, 3.2 MB a ring)
// on two threads, `voxrt bench --runs 5`, three alternations, 1184 / 1259 / 1180 -> 1045 / 1136
// / 1076 ms, nnU-Net 3d at 128^3 (32 channels, 6.5 MB) 3401 / 3325 / 3073 -> 3250 / 3160 / 2910
// ms; `conv_bench` 16 -> 16 at 128^3 114-125 -> 92-95 ms (1.55x one thread's time before, a
// 96^3 layer of 1.8 MB 2.06x), 32 -> 32 at 128^3 371-409 -> 338-380; SegResNet on one thread
// with bands level (1812 / 1775 against 1801 / 1847 ms).
constexpr int64_t kBandsAbove = 4;
constexpr int64_t kBandsAboveThreaded = 1;
// (2D) A layer whose packed weights of a group exceed kWideA bytes (more than a core's L2 holds)
// computes a band one block of output channels at a time, every strip of the band with each
// block's panel, so that the panel is read from L3 once a band rather than once a strip, and
// takes bands of up to kWideBandBudget bytes of padded input, so that there are few bands; on
// several threads the bands are not cut thinner, their blocks are split. With NR lanes of a
// strip against 9216 steps (1024 channels in), strip by strip each strip read all 18.9 MB of
// panels. nnU-Net's 2d configuration at 512x512, `conv_bench` on Zen 5, least of three
// repetitions, two rounds: one thread, 1024 -> 512 channels at 32x32 81.1 / 88.7 -> 52.7 / 52.9
// ms, at 16x16 23.7 / 23.8 -> 15.4 / 15.4, 512 -> 512 at 32x32 33.4 / 37.9 -> 26.2 / 26.4 (with
// either change alone 79-83 and 21 (the order), 64 and 17 ms (the bands)); then the blocks split
// instead of bands of 8 rows, two threads: 512 -> 512 at 8x8 2.60-2.67 -> 1.18-1.35 ms (one band,
// which one thread had computed alone), at 32x32 14.3-14.6 -> 12.6-13.2, 1024 -> 512 at 16x16
// 8.1-8.6 -> 7.4-8.0; one thread (whole bands) 1024 -> 512 at 32x32 53.2-62.1 -> 50.7-53.9.
constexpr int64_t kWideA = 1 << 20;
constexpr int64_t kWideBandBudget = 2 << 20;
std::atomic<int64_t> wide_panels_above{kWideA};
// (2D) The fewest output rows a band holds where kWideBandBudget allows, though kBandBudget
// would give fewer: a band copies the kernel's reach of input rows more, two for a 3x3 kernel,
// so one row a band copied its input three times (64 channels of 512 columns are 131 KB a row).
// nnU-Net's 2d decoder's last layer, 64 -> 32 channels at 512x512, `conv_bench` one thread,
// least of three, three rounds with the host's speed changing between them: fp32 62.4 / 84.4 /
// 78.4 ms at one row, 58.4 / 77.3 / 72.9 at four; fp16 storage 59.0 / 79.7 / 72.3 and 55.7 /
// 73.5 / 67.2. (Six rows read the same as four.)
constexpr int64_t kMinBandRowsCopied = 4;
// (2D) Bands per thread to aim for, and the fewest output rows a band is cut to for that.
constexpr int64_t kBandsPerThread = 4;
constexpr int64_t kMinBandRows = 8;
// Below this share of useful lanes the packed path (conv_gemm.cpp) is used instead.
constexpr double kMinLaneUse = 0.5;

// Lanes [lane, lane + len) of a strip are output positions [out, out + len) of its plane.
struct Segment {
  int64_t lane, len, out;
};

// NR lanes starting at padded-plane offset q; segments [first, first + count) say where they go.
struct Strip {
  int64_t q;
  size_t first, count;
};

// Output rows start `pitch` elements apart. Row-aligned strips waste the tail of each row's
// last strip; strips across rows waste the columns between rows and store through a scratch
// tile. The share of computed lanes that are outputs either way.
struct StripShares {
  double by_rows, across;
  bool rows_win() const { return by_rows >= 0.97 * across; }
  // The share of computed lanes that are outputs in the layout plane_strips picks.
  double lane_use() const { return rows_win() ? by_rows : across; }
  // What a strip layout is worth: output lanes, strips across rows discounted for their stores
  // through a scratch tile (6-row bf16 tiles: 155 against 188 GFLOP/s for in-place ones).
  double score() const { return rows_win() ? by_rows : 0.85 * across; }
};
StripShares strip_shares(const ConvWindow& w, int64_t pitch, int64_t nr) {
  const int64_t oh = w.out[1], ow = w.out[2];
  return {static_cast<double>(ow) / static_cast<double>(ceil_div(ow, nr) * nr),
          static_cast<double>(oh * ow) / static_cast<double>(ceil_div(oh * pitch, nr) * nr)};
}

// The strips of a plane of w.out[1] x w.out[2] outputs, in the cheaper layout (strip_shares).
void plane_strips(const ConvWindow& w, int64_t pitch, int64_t nr, std::vector<Strip>& strips,
                  std::vector<Segment>& segs) {
  const int64_t oh = w.out[1], ow = w.out[2];
  strips.clear();
  segs.clear();
  const StripShares shares = strip_shares(w, pitch, nr);
  // At most one strip a row more than the lanes need, and a segment more a row where strips
  // cross rows.
  const size_t most = static_cast<size_t>(ceil_div(oh * pitch, nr) + oh);
  strips.reserve(most);
  segs.reserve(most + static_cast<size_t>(oh));
  if (shares.rows_win()) {
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t x0 = 0; x0 < ow; x0 += nr) {
        strips.push_back({oy * pitch + x0, segs.size(), 1});
        segs.push_back({0, std::min(nr, ow - x0), oy * ow + x0});
      }
    return;
  }
  for (int64_t q0 = 0; q0 < oh * pitch; q0 += nr) {
    Strip s{q0, segs.size(), 0};
    for (int64_t oy = q0 / pitch; oy < oh && oy * pitch < q0 + nr; ++oy) {
      int64_t begin = std::max(q0, oy * pitch), end = std::min(q0 + nr, oy * pitch + ow);
      if (end <= begin) continue;
      segs.push_back({begin - q0, end - begin, oy * ow + begin - oy * pitch});
      ++s.count;
    }
    if (s.count > 0) strips.push_back(s);
  }
}

}  // namespace

bool ConvGemm::run_direct(const RunContext& ctx, const ConvWindow& win, const ConvInput& x,
                          const ConvResidual& residual, Tensor& y, bool head) const {
  ThreadPool* pool = ctx.pool;
  const int64_t n_batch = x.batch();
  // Padded extents: every tap of every output position lands inside.
  const int64_t ext[3] = {win.padded(0), win.padded(1), win.padded(2)};
  // Phase plane (ry, rx) holds padded rows ry, ry + sy, ... and columns rx, rx + sx, ...
  const int64_t sy = win.stride[1], sx = win.stride[2];
  // Tap pairs read the pair's second tap one dilation to the right in the same row, at unit
  // width stride. At width stride 2 without dilation (a MONAI UNet's first layer) element j of
  // a padded row holds its columns 2j and 2j + 1 instead: output j's pair p (taps 2p, 2p + 1) is
  // element j + p, and the width needs no phases. The packed path takes other strides.
  const bool wide_pairs =
      tap_pairs_ && sx == 2 && win.dilation[2] == 1 && g_.to_bf16_values != nullptr;
  if (sx > kMaxPhases || sy > kMaxPhases || (tap_pairs_ && sx != 1 && !wide_pairs)) return false;
  const int64_t px = wide_pairs ? 1 : sx;  // width phases of the padded planes
  const int64_t xlen = ceil_div(ext[2], sx);

  // The sibling row (same A panels, another NR) whose strips fit these output rows best.
  const GemmKernel* pick = &g_;
  double best = -1;
  for (const GemmKernel* r : rows_) {
    const double score = strip_shares(win, xlen, r->nr).score();
    if (score > best + 1e-9) {
      best = score;
      pick = r;
    }
  }
  const GemmKernel& g = *pick;
  // Channels are stored in packs of k_pack (the members of a panel element), so a step reads
  // whole elements: step k = (channel pack, kz, ky, kx).
  const int64_t kp = g.k_pack, packs = tap_pairs_ ? 1 : packed_channels();
  const int64_t mg = m_ / group_, steps = elements();
  const int64_t mr = g.mr, nr = g.nr, mblocks = ceil_div(mg, mr);
  const size_t es = dtype_size(g.storage), ab = panel_type_bytes(g.a_panel),
               bb = panel_type_bytes(g.b_panel), member = bb / static_cast<size_t>(kp);
  const int64_t block_bytes = mr * steps * static_cast<int64_t>(ab);  // one MR block's panel
  const int64_t s_out = win.out_size(), out_plane = win.out[1] * win.out[2];
  const int64_t threads = pool ? pool->size() : 1;
  const int64_t sz = win.stride[0], reach = (win.kernel[0] - 1) * win.dilation[0] + 1;

  // A band: `rows` output rows of a plane and the padded rows they read, band_ylen(rows) per
  // phase. With a kernel deeper than one, a plane is one band unless planes are wide
  // (kBandsAbove), and slabs of planes (of a band) pass through a ring. A kernel one deep (2D
  // convolutions) needs one input plane per output plane: each thread then takes whole bands,
  // copying the input rows it computes from into its own buffer small enough for L2, so nothing
  // it writes is read by another core.
  const int64_t oh = win.out[1], ow = win.out[2];
  const int64_t reach_y = (win.kernel[1] - 1) * win.dilation[1] + 1;
  const bool per_thread = reach == 1;
  // Blocks of output channels outermost in a band (kWideA); a head mixes every block's tile of a
  // strip at once.
  const bool wide_a = per_thread && !head && mblocks * block_bytes > wide_panels_above.load();
  auto band_ylen = [&](int64_t rows) {
    return rows == oh ? ceil_div(ext[1], sy) : ceil_div((rows - 1) * sy + reach_y, sy);
  };
  auto band_bytes = [&](int64_t rows) {
    return packs * reach * sy * px * band_ylen(rows) * xlen * static_cast<int64_t>(bb);
  };
  // Bytes at fp32 panels and storage, given in those of this layer's.
  auto scaled = [&](int64_t budget) {
    return budget * static_cast<int64_t>(std::min(member, es)) / 4;
  };
  // The most output rows, at least `least`, whose band reads at most `budget` bytes.
  auto rows_within = [&](int64_t budget, int64_t least) {
    int64_t lo = std::min(least, oh), hi = oh;
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (band_bytes(mid) <= budget)
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  };
  int64_t band_rows = oh;
  const int64_t slab_budget = slab_per_thread.load();
  const int64_t bands_above = threads > 1 ? kBandsAboveThreaded : kBandsAbove;
  if (!per_thread && band_bytes(oh) > bands_above * slab_budget) {
    // Wide planes (a kernel deeper than one whose reach of whole planes exceeds kBandsAbove
    // per-thread budgets, kBandsAboveThreaded on several threads): band by band, each band's
    // planes through the ring, as many rows as the per-thread budget holds, so that a thread's
    // ring fits its core's L2 and each thread may own one.
    const int64_t rows = rows_within(scaled(slab_budget), kMinBandRows);
    band_rows = ceil_div(oh, ceil_div(oh, rows));  // bands of even size
  } else if (per_thread) {
    const int64_t lo =
        wide_a ? rows_within(kWideBandBudget, 1)
               : std::max(rows_within(kBandBudget, 1),
                          std::min(kMinBandRowsCopied, rows_within(kWideBandBudget, 1)));
    // Enough bands to keep every thread busy, unless that makes them thin.
    const int64_t planes_total = n_batch * group_ * win.out[0];
    const int64_t want = ceil_div(kBandsPerThread * threads, planes_total);
    // Wide layers keep whole bands and split their blocks of output channels instead (below).
    const int64_t rows = wide_a ? lo : std::min(lo, std::max(kMinBandRows, ceil_div(oh, want)));
    band_rows = ceil_div(oh, ceil_div(oh, rows));  // bands of even size
  }
  const int64_t n_bands = ceil_div(oh, band_rows);
  const int64_t ylen = band_ylen(band_rows);
  const int64_t phase_plane = ylen * xlen, plane = sy * px * phase_plane;
  const PhaseLayout layout{sy, px, xlen, phase_plane, bb};

  // Mostly idle lanes (very short rows): packing col costs less.
  if (strip_shares(win, xlen, nr).lane_use() < kMinLaneUse) return false;
  // Strips of a full band (the whole plane without bands) and of the last, shorter one. Only
  // these are built: a 256x256 plane's strips took 30 us to build, a 2D layer's bands 1/8 of it.
  std::vector<Strip> strips, last_strips;
  std::vector<Segment> segs, last_segs;
  auto band_strips = [&](int64_t rows, std::vector<Strip>& st, std::vector<Segment>& sg) {
    ConvWindow band = win;
    band.out[1] = rows;
    plane_strips(band, xlen, nr, st, sg);
  };
  band_strips(band_rows, strips, segs);
  if (oh % band_rows != 0) band_strips(oh % band_rows, last_strips, last_segs);

  // A slab: `slab_out` output planes and the input planes they read, as many as a ring of
  // `budget` bytes (at fp32 panels and storage; `scaled` gives the bytes at this layer's) holds.
  const int64_t plane_bytes = packs * plane * static_cast<int64_t>(bb);
  auto slab_outs = [&](int64_t budget) {
    return std::clamp<int64_t>(
        (scaled(budget) / std::max<int64_t>(1, plane_bytes) - reach) / sz + 1, 1, win.out[0]);
  };
  // With several threads and planes enough, each thread takes its own range of output planes
  // through a ring of its own in its core's L2: the planes a core copies are the ones it reads,
  // and no barrier separates one slab from the next. Otherwise the threads share one ring, a
  // slab at a time. A range should hold kMinOwnedPlanes planes, and one output plane's input
  // (the kernel's reach) should fit the per-thread budget at the ring's own bytes: wider planes
  // would make every thread's ring exceed it, where one shared ring does so once. Asking for two
  // output planes' input instead left fp16 storage on the shared ring at 8 channels of 96^3 (Intel
  // Xeon, two threads, three alternations: unet3d_bn fp16 81.9 / 81.0 / 80.7 -> 80.0 / 78.9 /
  // 78.6 ms, nnunet3d fp16 89.0 / 89.6 / 88.3 -> 84.6 / 84.3 / 84.9); asking for it within the
  // budget scaled down for fp16 storage left 16 and 18 channels of 96^3 shared, where each core
  // read planes the other had just widened: Zen 5, conv_bench two threads, 18 -> 6 fp16 27.9 ->
  // 17.3 ms, 16 -> 16 44.3 -> 35.8; `voxrt bench`, three alternations, unet3d_resize fp16 68.1 /
  // 67.2 / 68.5 -> 56.3 / 55.4 / 55.9 ms, nnunet3d fp16 84.3 / 86.2 / 82.8 -> 73.9 / 74.7 / 74.2,
  // unet3d_bn fp16 79.4 / 84.0 / 81.0 -> 72.3 / 71.2 / 71.1 (fp32 unchanged; two threads' scratch
  // 3.1 -> 4.7 MiB, one thread's unchanged). (At nnU-Net's real size, whose layers run at 84-86%
  // of two cores' peak either way, the forms measured within noise.)
  const bool owned = !per_thread && threads > 1 && win.out[0] >= kMinOwnedPlanes * threads &&
                     slab_budget >= reach * plane_bytes;
  const int64_t slab_out =
      per_thread ? 1 : slab_outs(owned ? slab_budget : std::min(kSlabMax, slab_budget * threads));
  const int64_t slab_planes = (slab_out - 1) * sz + reach, chan = slab_planes * plane;

  std::vector<int64_t> offsets(static_cast<size_t>(steps));
  // Element k reads the pack's plane at (kz, ky, kx) taps away; a tap pair's first tap is even.
  const int64_t kx_step = tap_pairs_ ? 2 : 1,
                kx_count = tap_pairs_ ? width_elements() : win.kernel[2];
  for (int64_t c = 0, k = 0; c < packs; ++c)
    for (int64_t kz = 0; kz < win.kernel[0]; ++kz)
      for (int64_t ky = 0; ky < win.kernel[1]; ++ky)
        for (int64_t e = 0; e < kx_count; ++e, ++k) {
          // dx: padded columns, or with wide pairs elements.
          const int64_t dy = ky * win.dilation[1],
                        dx = wide_pairs ? e : e * kx_step * win.dilation[2];
          offsets[static_cast<size_t>(k)] = c * chan + kz * win.dilation[0] * plane +
                                            (dy % sy * px + dx % px) * phase_plane +
                                            dy / sy * xlen + dx / px;
        }
  // The shared slab is a ring of slab_planes plane slots per channel pack: padded input plane
  // p (p = 0 the first any output reads) lives in slot p % slab_planes, and each slab after the
  // first copies only the planes the one before did not hold. Output plane oz reads slots from
  // first_slot(oz) on: where they run past the last slot they wrap, through an offset table of
  // their own (wrapped[first slot]); otherwise `offsets` from the strip's base in that slot.
  const int64_t ring = slab_planes;
  auto first_slot = [&](int64_t oz) { return oz * sz % ring; };
  auto wraps = [&](int64_t s0) { return s0 + reach > ring; };
  std::vector<std::vector<int64_t>> wrapped(per_thread ? 0 : static_cast<size_t>(ring));
  const int64_t deepest = steps > 0 ? *std::max_element(offsets.begin(), offsets.end()) : 0;
  int64_t furthest = deepest;
  for (int64_t oz = 0; !per_thread && oz < win.out[0]; ++oz) {
    const int64_t s0 = first_slot(oz);
    std::vector<int64_t>& t = wrapped[static_cast<size_t>(s0)];
    if (!wraps(s0)) {
      furthest = std::max(furthest, s0 * plane + deepest);
      continue;
    }
    if (!t.empty()) continue;
    t.resize(static_cast<size_t>(steps));
    for (int64_t k = 0; k < steps; ++k) {
      // Pack c's plane kz * dilation after s0, modulo the ring.
      const int64_t o = offsets[static_cast<size_t>(k)], c = o / chan, in_chan = o % chan;
      t[static_cast<size_t>(k)] =
          c * chan + (s0 + in_chan / plane) % ring * plane + in_chan % plane;
      furthest = std::max(furthest, t[static_cast<size_t>(k)]);
    }
  }
  // The furthest a strip reads: its furthest step, NR lanes past the last strip.
  const int64_t reads = strips.back().q + nr + furthest;
  const size_t buffer_elems = static_cast<size_t>(std::max(reads, packs * chan));
  // One buffer shared by the threads, or one per thread from its own scratch. Past the last
  // plane a strip may read the tail of the reach (lanes it drops): zeroed once.
  RingBuffers slots(buffer_elems * bb, static_cast<size_t>(packs * chan) * bb, ctx);

  uint8_t* yb = static_cast<uint8_t*>(y.raw());
  const int64_t ys = static_cast<int64_t>(dtype_size(y.dtype()));  // fp32 Y of fp16 storage
  // Small chunks: a slab ends at a barrier, so the last chunk decides when the next slab starts.
  auto parallel = [&](int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
    split_items(pool, n, fn, ceil_div(n, 16 * threads));
  };

  // The band of output rows from y0: padded rows [py0, py1) it reads (phase row py / sy - y0
  // holds padded row py) come from input rows [iy0, iy1).
  struct Band {
    int64_t y0, iy0, iy1;
    const std::vector<Strip>* strips;
    const Segment* segs;
  };
  auto band_at = [&](int64_t y0) {
    const int64_t py0 = y0 * sy, py1 = py0 + (std::min(band_rows, oh - y0) - 1) * sy + reach_y;
    const bool last = y0 + band_rows > oh;
    return Band{y0, std::max<int64_t>(0, py0 - win.pad[1]),
                band_rows == oh ? win.in[1] : std::min(win.in[1], py1 - win.pad[1]),
                last ? &last_strips : &strips, last ? last_segs.data() : segs.data()};
  };

  // Input plane iz of channel pack `pack` of group grp of batch item n, the band's rows, into
  // `dst`. Channel pairs convert both members in one pass; an odd last channel pairs with
  // zeros. `padded`: dst already holds zeros wherever this band's copy leaves padding (an
  // earlier fill of the same band layout at dst wrote them, and copies write only the rest).
  const bool pair_rows = g.to_panel_pair != nullptr && !tap_pairs_;
  // Upsampled parts of X (ConvInput::depth_plane) make the band's rows of a plane into `up`: room
  // for two planes (a channel pair) a filling thread.
  const size_t up_bytes = x.resized() ? 2 * static_cast<size_t>(x.depth_plane_bytes()) : 0;
  auto fill_plane = [&](int64_t n, int64_t grp, int64_t pack, int64_t iz, const Band& band,
                        uint8_t* dst, uint8_t* scratch, uint8_t* up, bool padded) {
    // A pack short of channels (the last, with an odd count) or a tap pair (its second member
    // shifted) keeps zeros where no member lands; pair_rows writes them.
    // Wide pairs write whole rows, zeros included.
    const bool partial = (pack + 1) * kp > cg_ && !pair_rows && !wide_pairs;
    if (iz < 0 || iz >= win.in[0] || partial)
      std::memset(dst, 0, static_cast<size_t>(plane) * bb);
    else if (!padded)
      zero_padding(win, layout, dst, band.iy0, band.iy1, band.y0, ylen, wide_pairs);
    if (iz < 0 || iz >= win.in[0]) return;
    // Channel c's plane iz, its band's rows in place (or made into `up`, slot 0 or 1).
    auto rows = [&](int64_t c, int slot) {
      return x.depth_plane(n, c, iz, band.iy0, band.iy1,
                           up ? up + static_cast<size_t>(slot) * (up_bytes / 2) : nullptr);
    };
    if (wide_pairs) {
      copy_wide_rows(g, win, layout, rows(grp * cg_, 0), band.iy0, band.iy1, band.y0, dst);
      return;
    }
    if (pair_rows) {
      const int64_t c = grp * cg_ + pack * 2;
      copy_rows(g, win, layout, rows(c, 0), true, pack * 2 + 1 < cg_ ? rows(c + 1, 1) : nullptr,
                band.iy0, band.iy1, band.y0, 0, dst, scratch);
      return;
    }
    // Member h: channel pack * kp + h, or with tap pairs the one channel shifted by h taps.
    for (int64_t h = 0; h < kp; ++h) {
      const int64_t c = tap_pairs_ ? 0 : pack * kp + h;
      if (c >= cg_) break;
      const uint8_t* src = rows(grp * cg_ + c, 0);
      copy_rows(g, win, layout, src, false, nullptr, band.iy0, band.iy1, band.y0,
                tap_pairs_ ? h * win.dilation[2] : 0, dst + static_cast<size_t>(h) * member,
                scratch);
    }
  };

  // Output plane oz of batch item n, group grp: one strip of the band, output-channel blocks
  // [mb0, mb1) with the panels of block mb0 at `a0`, reading the strip from `b`. `tile_out` and
  // `tile_res` hold MR x NR elements.
  const CastKernels& cast = cast_kernels(g.isa);
  // With a head, mixed straight into Y's dtype.
  const EltwiseKernels* mix_y = head ? eltwise_kernels(y.dtype(), g_.isa) : nullptr;
  const float* head_b = head_.b.empty() ? nullptr : head_.b.data();
  auto compute = [&](int64_t n, int64_t grp, int64_t oz, const Band& band, int64_t st,
                     const uint8_t* b, const int64_t* offs, int64_t mb0, int64_t mb1,
                     const uint8_t* a0, uint8_t* tile_out, uint8_t* tile_res) {
    const Strip& strip = (*band.strips)[static_cast<size_t>(st)];
    const Segment* sg = band.segs + strip.first;
    // The residual rows of the tile from output row0 on, `rows` of them, into tile_res.
    auto gather_residual = [&](int64_t row0, int64_t rows) {
      for (int64_t i = 0; i < rows; ++i)
        for (size_t s = 0; s < strip.count; ++s)
          std::memcpy(tile_res + (i * nr + sg[s].lane) * static_cast<int64_t>(es),
                      residual.at(n, row0 + i * s_out + sg[s].out),
                      static_cast<size_t>(sg[s].len) * es);
    };
    if (head) {
      // Every block's fp32 tile (mb0 = 0, mb1 = mblocks), then the head's rows after them,
      // stored to the head's channels of Y.
      float* t = reinterpret_cast<float*>(tile_out);
      for (int64_t mb = mb0; mb < mb1; ++mb) {
        const int64_t m0 = mb * mr, rows = std::min(mr, mg - m0);
        const int64_t row0 = (n * m_ + m0) * s_out + oz * out_plane + band.y0 * ow;
        if (residual) gather_residual(row0, rows);
        GemmParams p = params(m0, residual ? tile_res : nullptr, y);
        p.f32_out = true;
        g.ukernel(static_cast<size_t>(rows), static_cast<size_t>(nr), static_cast<size_t>(steps),
                  a0 + (mb - mb0) * block_bytes, b, offs, t + m0 * nr, static_cast<size_t>(nr), p);
      }
      const int64_t mh = head_.channels,
                    row0 = n * mh * s_out + oz * out_plane + band.y0 * ow;  // channel 0's
      if (!head_.softmax || y.dtype() == DType::f32) {
        // Mixed straight into Y's rows, each segment's lanes, softmax (fp32) in place.
        for (size_t s = 0; s < strip.count; ++s) {
          uint8_t* dst = yb + (row0 + sg[s].out) * ys;
          mix_y->mix(t + sg[s].lane, nr, m_, head_.w.data(), head_b, mh, sg[s].len, dst, s_out);
          if (head_.softmax) softmax_f32_->strided(dst, dst, mh, s_out, sg[s].len);
        }
        return;
      }
      // Softmax before rounding to fp16: through fp32 rows after the tiles.
      float* mixed = t + mblocks * mr * nr;
      head_tile(t, nr, nr, mixed, nr);
      for (int64_t h = 0; h < mh; ++h)
        for (size_t s = 0; s < strip.count; ++s)
          cast.f32_to_f16(mixed + h * nr + sg[s].lane, yb + (row0 + h * s_out + sg[s].out) * ys,
                          sg[s].len);
      return;
    }
    const bool in_place = strip.count == 1 && sg[0].lane == 0;
    for (int64_t mb = mb0; mb < mb1; ++mb) {
      const int64_t m0 = grp * mg + mb * mr, rows = std::min(mr, mg - mb * mr);
      const int64_t row0 = (n * m_ + m0) * s_out + oz * out_plane + band.y0 * ow;
      const uint8_t* a = a0 + (mb - mb0) * block_bytes;
      if (in_place) {
        const int64_t at = row0 + sg[0].out;
        g.ukernel(static_cast<size_t>(rows), static_cast<size_t>(sg[0].len),
                  static_cast<size_t>(steps), a, b, offs, yb + at * ys, static_cast<size_t>(s_out),
                  params(m0, residual ? residual.at(n, at) : nullptr, y));
        continue;
      }
      // Lanes scattered over several output rows: through a scratch tile.
      if (residual) gather_residual(row0, rows);
      g.ukernel(static_cast<size_t>(rows), static_cast<size_t>(nr), static_cast<size_t>(steps), a,
                b, offs, tile_out, static_cast<size_t>(nr),
                params(m0, residual ? tile_res : nullptr, y));
      for (int64_t i = 0; i < rows; ++i)
        for (size_t s = 0; s < strip.count; ++s)
          std::memcpy(yb + (row0 + i * s_out + sg[s].out) * ys,
                      tile_out + (i * nr + sg[s].lane) * ys, static_cast<size_t>(sg[s].len * ys));
    }
  };
  // With a head: fp32 tiles of every block, then the head's rows.
  const size_t tile_bytes =
      head ? static_cast<size_t>((mblocks * mr + head_.channels) * nr) * sizeof(float)
           : static_cast<size_t>(mr * nr * ys);
  // Panels kept as fp16 (APanels::narrow) are widened for each slab or band a block of output
  // channels at a time, of at most APanels::widen_budget() bytes (one MR block at least), so a
  // layer's fp32 weights are never whole in memory.
  const int64_t wblocks = head ? mblocks : a_.blocks_at_once(block_bytes, mblocks);
  // Blocks [w0, w1) of group grp's panels: kept, or widened into `widened`.
  auto panels_at = [&](int64_t grp, int64_t w0, int64_t w1, uint8_t* widened, bool parallel) {
    return a_.range(grp * a_group_bytes_ + static_cast<size_t>(w0 * block_bytes),
                    static_cast<size_t>((w1 - w0) * block_bytes), widened, ctx, parallel);
  };

  if (per_thread) {
    // Items (batch item, group, output plane, band), each filled and computed by one thread.
    const int64_t per_group = win.out[0] * n_bands;
    const int64_t base_items = n_batch * group_ * per_group;
    // A wide layer's items are (band, part of its blocks of output channels), enough of them for
    // kBandsPerThread a thread: its bands are few (a 512-channel layer at 8x8 is one), and each
    // thread then reads only its blocks' panels. A thread given consecutive parts of one band
    // fills it once.
    int64_t part_blocks = mblocks;
    if (wide_a && threads > 1)
      part_blocks = ceil_div(
          mblocks,
          std::clamp<int64_t>(ceil_div(kBandsPerThread * threads, base_items), 1, mblocks));
    const int64_t parts = ceil_div(mblocks, part_blocks);
    // Thread t takes the t-th range of items first, so the next layer's bands over the same
    // rows find them in its core's cache: unet2d on two threads, `voxrt bench`, four
    // alternations, 4.25 / 4.28 / 4.20 / 4.23 ms with items dealt to whichever thread came for
    // them, 4.13 / 4.13 / 4.14 / 4.14 with ranges.
    split_ranges(pool, base_items * parts, [&](RangeCursor& items) {
      RingBuffers::Lease buf(slots, items);
      std::vector<uint8_t> scratch(static_cast<size_t>(4 * xlen) * es);
      // From the run's scratch (kept between steps and runs): every row is made before it is read.
      const PanelBuffer up = up_bytes ? PanelBuffer(up_bytes, ctx.scratch) : PanelBuffer();
      std::vector<uint8_t> tile_out(tile_bytes), tile_res(tile_bytes);
      PanelBuffer widened = a_.scratch(static_cast<size_t>(wblocks * block_bytes), ctx);
      int64_t filled = -1;
      for (int64_t part_item; (part_item = items.next()) >= 0;) {
        const int64_t item = part_item / parts, part = part_item % parts;
        const int64_t n = item / (group_ * per_group), grp = item / per_group % group_,
                      oz = item % per_group / n_bands, y0 = item % n_bands * band_rows;
        const Band band = band_at(y0);
        if (filled != item)
          for (int64_t pack = 0; pack < packs; ++pack)
            fill_plane(n, grp, pack, oz * sz - win.pad[0], band,
                       buf.data() + pack * chan * static_cast<int64_t>(bb), scratch.data(),
                       up_bytes ? up.data() : nullptr, false);
        filled = item;
        const int64_t mb_end = std::min(mblocks, (part + 1) * part_blocks);
        for (int64_t w0 = part * part_blocks; w0 < mb_end; w0 += wblocks) {
          const int64_t w1 = std::min(mb_end, w0 + wblocks);
          const uint8_t* a_w0 = panels_at(grp, w0, w1, widened.data(), false);
          const int64_t n_strips = static_cast<int64_t>(band.strips->size());
          auto strip_at = [&](int64_t st) {
            return buf.data() +
                   (*band.strips)[static_cast<size_t>(st)].q * static_cast<int64_t>(bb);
          };
          if (wide_a) {
            for (int64_t mb = w0; mb < w1; ++mb)
              for (int64_t st = 0; st < n_strips; ++st)
                compute(n, grp, oz, band, st, strip_at(st), offsets.data(), mb, mb + 1,
                        a_w0 + (mb - w0) * block_bytes, tile_out.data(), tile_res.data());
          } else {
            for (int64_t st = 0; st < n_strips; ++st)
              compute(n, grp, oz, band, st, strip_at(st), offsets.data(), w0, w1, a_w0,
                      tile_out.data(), tile_res.data());
          }
        }
      }
    });
    return true;
  }

  // What a ring's slots hold between slabs.
  struct RingState {
    int64_t key = -1;  // the (batch item, group, band) of the planes held
    // Output planes [z_lo, z_hi) read only planes held; a slab from z_hi on copies only the
    // planes after them.
    int64_t z_lo = -1, z_hi = -1;
    int64_t held = 0;  // padded planes [.., held) are in the ring
    // Per slot: its first fill has written the padding's zeros (every slot of a band has the
    // same layout), which the copies into it after leave in place.
    std::vector<char> slot_padded;
    bool holds(int64_t k, int64_t z) const { return key == k && z >= z_lo && z < z_hi; }
  };
  auto run = [&](bool shared, int64_t count, const std::function<void(int64_t, int64_t)>& fn) {
    if (shared)
      parallel(count, fn);
    else
      fn(0, count);
  };
  // Copies into the ring at `padded` the input planes that output planes [z0, z0 + outs) of
  // batch item n, group grp, band `band` (`key` names the three) read and rs does not hold;
  // `shared`: the pool splits the copies, else the calling thread makes them all.
  auto fill_slab = [&](RingState& rs, int64_t n, int64_t grp, const Band& band, int64_t key,
                       int64_t z0, int64_t outs, uint8_t* padded, bool shared) {
    if (rs.key != key || rs.z_hi != z0) {
      if (rs.key != key) rs.slot_padded.assign(static_cast<size_t>(ring), 0);
      rs.key = key;
      rs.held = z0 * sz;
    }
    rs.z_lo = z0;
    rs.z_hi = z0 + outs;
    const int64_t from = std::max(rs.held, z0 * sz), to = (z0 + outs - 1) * sz + reach;
    const int64_t planes = to - from;
    // A pack's planes one after another; where X has a transposed part, a plane's packs, which
    // its planes' products make together (ConvInput::depth_plane).
    const bool by_plane = x.transposed();
    run(shared, packs * planes, [&](int64_t begin, int64_t end) {
      std::vector<uint8_t> scratch(static_cast<size_t>(4 * xlen) * es);
      // From the run's scratch (kept between steps and runs): every row is made before it is read.
      const PanelBuffer up = up_bytes ? PanelBuffer(up_bytes, ctx.scratch) : PanelBuffer();
      for (int64_t i = begin; i < end; ++i) {
        const int64_t pack = by_plane ? i % packs : i / planes,
                      p = from + (by_plane ? i / packs : i % planes), slot = p % ring;
        fill_plane(n, grp, pack, p - win.pad[0], band,
                   padded + (pack * chan + slot * plane) * static_cast<int64_t>(bb), scratch.data(),
                   up_bytes ? up.data() : nullptr, rs.slot_padded[static_cast<size_t>(slot)] != 0);
      }
    });
    for (int64_t p = from; p < to; ++p) rs.slot_padded[static_cast<size_t>(p % ring)] = 1;
    rs.held = to;
  };
  // Output planes [z0, z0 + outs) of batch item n, group grp, band `band` from the ring at
  // `padded` (filled for them), output-channel blocks [w0, w1) with the panels of block w0 at
  // a_w0; `shared`: the pool splits the work, else the calling thread does it all, through its
  // `tiles` (two of tile_bytes) where given.
  auto compute_slab = [&](int64_t n, int64_t grp, const Band& band, int64_t z0, int64_t outs,
                          int64_t w0, int64_t w1, const uint8_t* a_w0, const uint8_t* padded,
                          bool shared, uint8_t* tiles = nullptr) {
    const int64_t n_strips = static_cast<int64_t>(band.strips->size()), blocks = w1 - w0;
    // Work items: (output plane, strip, block of output channels).
    const int64_t base = outs * n_strips;
    int64_t mchunk = blocks;
    if (shared && base < 4 * threads && !head)
      mchunk = ceil_div(blocks, std::min(blocks, ceil_div(4 * threads, base)));
    const int64_t msplit = ceil_div(blocks, mchunk);
    run(shared, base * msplit, [&](int64_t begin, int64_t end) {
      std::vector<uint8_t> own(tiles ? 0 : 2 * tile_bytes);
      uint8_t* const tile_out = tiles ? tiles : own.data();
      uint8_t* const tile_res = tile_out + tile_bytes;
      for (int64_t item = begin; item < end; ++item) {
        const int64_t ms = item % msplit, st = (item / msplit) % n_strips,
                      oz = z0 + item / msplit / n_strips;
        const int64_t mb0 = w0 + ms * mchunk, s0 = first_slot(oz);
        const int64_t q = (*band.strips)[static_cast<size_t>(st)].q;
        if (wraps(s0))
          compute(n, grp, oz, band, st, padded + q * static_cast<int64_t>(bb),
                  wrapped[static_cast<size_t>(s0)].data(), mb0, std::min(w1, mb0 + mchunk),
                  a_w0 + (mb0 - w0) * block_bytes, tile_out, tile_res);
        else
          compute(n, grp, oz, band, st, padded + (s0 * plane + q) * static_cast<int64_t>(bb),
                  offsets.data(), mb0, std::min(w1, mb0 + mchunk), a_w0 + (mb0 - w0) * block_bytes,
                  tile_out, tile_res);
      }
    });
  };
  // A slab: filled, then computed a few blocks of output channels at a time (all of them, or
  // with fp16-kept panels as many as the widening budget holds, widened here).
  auto run_slab = [&](RingState& rs, int64_t n, int64_t grp, const Band& band, int64_t key,
                      int64_t z0, int64_t outs, uint8_t* padded, uint8_t* widened, bool shared) {
    fill_slab(rs, n, grp, band, key, z0, outs, padded, shared);
    for (int64_t w0 = 0; w0 < mblocks; w0 += wblocks) {
      const int64_t w1 = std::min(mblocks, w0 + wblocks);
      compute_slab(n, grp, band, z0, outs, w0, w1, panels_at(grp, w0, w1, widened, shared), padded,
                   shared);
    }
  };

  if (owned) {
    // Items (batch item, group, depth range r, band, unit of the range), `threads` depth ranges
    // per batch item and group, each band by band and unit by unit (`per_band` units, the last
    // of a shorter range empty): with one batch item and group thread t starts on range t, and
    // a thread done early takes units off the end of another's (split_ranges), refilling its
    // ring for the first it takes. A unit is one output plane, the ring filled a slab ahead,
    // where every block of panels is at hand at once (widened once a thread); otherwise a slab,
    // each block of panels widened once for all its planes. Slabs alone were too coarse to hand
    // over: unet3d_monai's 48^3 layers hold a thread's range in one or two. With a competing
    // process taking 200 us of every 800 on one vCPU, `voxrt bench --threads 2` of
    // unet3d_monai, five alternations: whole ranges 18.1-19.0 ms, slab units no better, plane
    // units 16.4-17.1 (one thread 22.5 on the quiet vCPU, 32.2 on the other).
    const bool by_plane = wblocks == mblocks;
    const int64_t unit = by_plane ? 1 : slab_out;
    const int64_t ranges = threads, per_band = ceil_div(ceil_div(win.out[0], ranges), unit);
    const int64_t per_range = n_bands * per_band;
    split_ranges(pool, n_batch * group_ * ranges * per_range, [&](RangeCursor& items) {
      RingBuffers::Lease buf(slots, items);
      PanelBuffer widened = a_.scratch(static_cast<size_t>(wblocks * block_bytes), ctx);
      RingState rs;
      int64_t a_grp = -1;  // by plane: the group whose panels a_all points at
      const uint8_t* a_all = nullptr;
      std::vector<uint8_t> tiles(by_plane ? 2 * tile_bytes : 0);  // by plane: every plane's
      for (int64_t item; (item = items.next()) >= 0;) {
        const int64_t range = item / per_range, n = range / (group_ * ranges),
                      grp = range / ranges % group_, r = range % ranges;
        const int64_t band = item % per_range / per_band, z_end = win.out[0] * (r + 1) / ranges;
        const int64_t z0 = win.out[0] * r / ranges + item % per_band * unit;
        if (z0 >= z_end) continue;
        const Band at = band_at(band * band_rows);
        const int64_t key = (n * group_ + grp) * n_bands + band;
        if (!by_plane) {
          run_slab(rs, n, grp, at, key, z0, std::min(slab_out, z_end - z0), buf.data(),
                   widened.data(), false);
          continue;
        }
        if (!rs.holds(key, z0))
          fill_slab(rs, n, grp, at, key, z0, std::min(slab_out, z_end - z0), buf.data(), false);
        if (grp != a_grp) {
          a_all = panels_at(grp, 0, mblocks, widened.data(), false);
          a_grp = grp;
        }
        compute_slab(n, grp, at, z0, 1, 0, mblocks, a_all, buf.data(), false, tiles.data());
      }
    });
    return true;
  }
  PanelBuffer widened = a_.scratch(static_cast<size_t>(wblocks * block_bytes), ctx);
  RingState rs;
  for (int64_t n = 0; n < n_batch; ++n)
    for (int64_t grp = 0; grp < group_; ++grp)
      for (int64_t band = 0; band < n_bands; ++band)
        for (int64_t z0 = 0; z0 < win.out[0]; z0 += slab_out)
          run_slab(rs, n, grp, band_at(band * band_rows), (n * group_ + grp) * n_bands + band, z0,
                   std::min(slab_out, win.out[0] - z0), slots.shared(), widened.data(), true);
  return true;
}

int64_t ConvGemm::set_wide_panels_above(int64_t bytes) {
  return wide_panels_above.exchange(std::max<int64_t>(bytes, 0));
}

int64_t ConvGemm::set_slab_budget(int64_t bytes_per_thread) {
  return slab_per_thread.exchange(std::max<int64_t>(bytes_per_thread, 1));
}

}  // namespace voxrt::cpu
