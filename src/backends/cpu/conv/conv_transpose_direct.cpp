// ConvTranspose with overlapping taps in its gather (sub-pixel) form (ConvTransposeDirect,
// conv_gemm.h): each phase a stride-1 convolution of one zero-padded copy of the input.
#include <algorithm>
#include <cstring>

#include "backends/cpu/conv/conv_gemm.h"
#include "backends/cpu/conv/conv_transpose_phases.h"

namespace voxrt::cpu {

namespace {

// Zeroes the elements (of bb bytes) of a padded plane of `plane` elements, rows `xlen` apart,
// that lie outside rows [r0, r1) and columns [c0, c1), which copies fill next: a row's trailing
// zeros and the next row's leading ones are one run (zero_run). Zeroing the whole plane before the
// copies had been 5% of MONAI's last up-convolution.
void zero_around(uint8_t* dst, int64_t plane, int64_t xlen, size_t bb, int64_t r0, int64_t r1,
                 int64_t c0, int64_t c1) {
  uint8_t* const end = dst + plane * static_cast<int64_t>(bb);
  auto zero = [&](int64_t from, int64_t to) {
    zero_run(dst + from * static_cast<int64_t>(bb), dst + to * static_cast<int64_t>(bb), end);
  };
  zero(0, r0 * xlen + c0);
  for (int64_t r = r0; r + 1 < r1; ++r) zero(r * xlen + c1, (r + 1) * xlen + c0);
  zero((r1 - 1) * xlen + c1, plane);
}

// Slab of padded input planes (all channel packs) a block of output planes reads, in bytes with
// fp32 panels and in proportion with narrower ones, like the direct convolution's. unet3d_monai
// on one thread: 4 MiB raised peak RSS by 4 MiB (fp32) and 2 MiB (fp16, bf16 products) over the
// scatter form; 2 MiB leaves it unchanged at the same speed; 1 MiB was slower on two threads
// (a barrier per slab).
constexpr int64_t kGatherSlabBudget = 2 << 20;
// The fewest slabs a thread's own range of the gather form is cut into. unet3d_monai on two
// threads, `voxrt bench`, eight alternations quiet and five with a competitor on one vCPU (means,
// ms): whole ranges 13.71 / 18.56, six slabs 13.64 / 17.52, three 13.48 / 17.32.
constexpr int64_t kOwnedSlabs = 3;

// Taps of class `cls` (kt = cls, cls + s, ... below k) along an axis.
int64_t class_taps(int64_t k, int64_t s, int64_t cls) {
  return cls < k ? ceil_div(k - cls, s) : 0;
}

}  // namespace

bool ConvTransposeDirect::applies(const ConvWindow& w, int64_t group) {
  if (group != 1) return false;
  bool disjoint = true;
  for (int d = 0; d < 3; ++d) {
    if ((w.kernel[d] > 1 && w.dilation[d] != 1) || w.kernel[d] < w.stride[d] || w.pad[d] < 0)
      return false;
    disjoint = disjoint && w.kernel[d] == w.stride[d] && w.pad[d] == 0;
  }
  return !disjoint;
}

ConvTransposeDirect::ConvTransposeDirect(const GemmKernel& g, const Tensor& w, const Tensor* bias,
                                         const ConvWindow& attrs, ConvEpilogue e)
    : g_(g), c_(w.dim(0)), m_(w.dim(1)), e_(e) {
  for (int d = 0; d < 3; ++d) {
    kernel_[d] = attrs.kernel[d];
    stride_[d] = attrs.stride[d];
    pad_[d] = attrs.pad[d];
    // Phase r's taps kt = cls + s * (taps - 1 - u), u < taps, read input j + (r + p - kt) / s.
    for (int64_t r = 0; r < stride_[d]; ++r) {
      Phase ph;
      ph.cls = (r + pad_[d]) % stride_[d];
      ph.taps = class_taps(kernel_[d], stride_[d], ph.cls);
      ph.lo = (r + pad_[d]) / stride_[d] - (ph.taps - 1);
      phases_[d].push_back(ph);
    }
  }
  wlo_ = phases_[2][0].lo;
  for (const Phase& ph : phases_[2]) wlo_ = std::min(wlo_, ph.lo);
  const int64_t kp = g_.k_pack, packs = ceil_div(c_, kp);
  const int64_t kh = kernel_[1], kw = kernel_[2], kvol = kernel_[0] * kh * kw, mr = g_.mr;
  // One micro-panel of MR output channels at a time, widened and ordered for each phase, so the
  // float32 copies beside the packed panels stay small: wf[c][m - m0][tap].
  std::vector<float> wf(static_cast<size_t>(c_ * mr * kvol)), ordered;
  std::vector<int64_t> steps_of;
  for (const Phase& pd : phases_[0])
    for (const Phase& ph : phases_[1])
      for (const Phase& pw : phases_[2]) {
        const int64_t steps = packs * pd.taps * ph.taps * pw.taps * kp;
        a_at_.push_back(a_block_bytes_);
        a_block_bytes_ += packed_a_bytes(g_, mr, steps);
        a_steps_.push_back(packed_steps(g_, steps));
        steps_of.push_back(steps);
      }
  a_ = APanels(g_, a_block_bytes_ * static_cast<size_t>(ceil_div(m_, mr)));
  for (int64_t m0 = 0; m0 < m_; m0 += mr) {
    const int64_t rows = std::min(mr, m_ - m0);
    for (int64_t c = 0; c < c_; ++c)
      weights_to_f32(w, (c * m_ + m0) * kvol, rows * kvol, wf.data() + c * rows * kvol);
    size_t phase = 0;
    for (const Phase& pd : phases_[0])
      for (const Phase& ph : phases_[1])
        for (const Phase& pw : phases_[2]) {
          // Steps in packing order, k_pack to an element: (channel pack, tap d, tap h, tap w,
          // channel within the pack); channels past C zero.
          const int64_t taps = pd.taps * ph.taps * pw.taps, steps = steps_of[phase];
          ordered.assign(static_cast<size_t>(rows * steps), 0.0f);
          for (int64_t m = 0; m < rows; ++m)
            for (int64_t c = 0; c < c_; ++c)
              for (int64_t ud = 0; ud < pd.taps; ++ud)
                for (int64_t uh = 0; uh < ph.taps; ++uh)
                  for (int64_t uw = 0; uw < pw.taps; ++uw) {
                    const int64_t td = pd.cls + stride_[0] * (pd.taps - 1 - ud),
                                  th = ph.cls + stride_[1] * (ph.taps - 1 - uh),
                                  tw = pw.cls + stride_[2] * (pw.taps - 1 - uw);
                    const int64_t t = (ud * ph.taps + uh) * pw.taps + uw;
                    ordered[static_cast<size_t>(m * steps + ((c / kp) * taps + t) * kp + c % kp)] =
                        wf[static_cast<size_t>((c * rows + m) * kvol + (td * kh + th) * kw + tw)];
                  }
          const size_t panel_bytes = packed_a_bytes(g_, mr, steps);
          a_.fill(static_cast<size_t>(m0 / mr) * a_block_bytes_ + a_at_[phase], panel_bytes,
                  [&](uint8_t* dst) { pack_a(g_, ordered.data(), steps, 1, rows, steps, dst); });
          ++phase;
        }
  }
  bias_.assign(static_cast<size_t>(m_), 0.0f);
  if (bias) bias_ = weights_to_f32(*bias);
}

void ConvTransposeDirect::run(const RunContext& ctx, const ConvWindow& win, const ConvInput& x,
                              Tensor& y) const {
  const int64_t n_batch = x.batch();
  if (n_batch == 0 || y.numel() == 0) return;
  for (int d = 0; d < 3; ++d)
    if (win.pad[d] != pad_[d] || win.stride[d] != stride_[d] || win.kernel[d] != kernel_[d])
      throw Error("ConvTransposeDirect: window differs from the one its weights were built for");
  ThreadPool* pool = ctx.pool;
  const int64_t kp = g_.k_pack, packs = ceil_div(c_, kp), mr = g_.mr, nr = g_.nr;
  const size_t es = dtype_size(g_.storage), bb = panel_type_bytes(g_.b_panel),
               member = bb / static_cast<size_t>(kp);
  const int64_t sd = stride_[0], sh = stride_[1], sw = stride_[2];
  // A strip's tiles: per width phase, M rows padded to whole micro-panels.
  const int64_t mblocks = ceil_div(m_, mr), mpad = mblocks * mr;
  const int64_t in_d = win.in[0], in_h = win.in[1], in_w = win.in[2];
  const int64_t od = win.out[0], oh = win.out[1], ow = win.out[2];

  // Input offsets each axis reads, over its phases: [lo, hi] from output j, and the most
  // outputs a phase has (phase 0).
  int64_t lo[3], hi[3], most[3];
  for (int d = 0; d < 3; ++d) {
    lo[d] = phases_[d][0].lo;
    hi[d] = lo[d] + phases_[d][0].taps - 1;
    for (const Phase& ph : phases_[d]) {
      lo[d] = std::min(lo[d], ph.lo);
      hi[d] = std::max(hi[d], ph.lo + ph.taps - 1);
    }
    most[d] = phase_count(win.out[d], stride_[d], 0);
  }
  // Padded rows: input row iy at iy - lo[1]; columns likewise (lo[2] is wlo_).
  const int64_t ylen = most[1] + hi[1] - lo[1], xlen = most[2] + hi[2] - lo[2];
  const int64_t plane = ylen * xlen;
  // Blocks of output plane indices j (all depth phases); a block reads input planes
  // [j0 + lo, j1 - 1 + hi].
  const int64_t reach = hi[0] - lo[0];
  // With two threads or more and planes enough, each thread takes its own range of output
  // planes through a slab of its own (ConvGemm::run_direct's owned rings): the planes a core
  // copies are the ones it reads, with no barrier between slabs. Otherwise the threads share
  // one slab, filling and computing it between barriers.
  const int64_t threads = pool ? pool->size() : 1;
  const bool owned = threads > 1 && most[0] >= kMinOwnedPlanes * threads;
  const int64_t budget = kGatherSlabBudget * static_cast<int64_t>(member) / 4;
  int64_t zb = std::clamp<int64_t>(
      budget / std::max<int64_t>(1, packs * plane * static_cast<int64_t>(bb)) - reach, 1, most[0]);
  // Owned ranges in kOwnedSlabs slabs at least, so that a thread done early has slabs of a slower
  // one's to take (split_ranges); each slab copies `reach` planes its neighbour copies too.
  if (owned) zb = std::min(zb, ceil_div(ceil_div(most[0], threads), kOwnedSlabs));
  const int64_t slab_planes = zb + reach, chan = slab_planes * plane;
  // A strip reads NR lanes from its first column: past the last plane, zeros.
  const size_t slab_elems = static_cast<size_t>(packs * chan + nr + hi[2] - lo[2]);
  RingBuffers slabs(slab_elems * bb, static_cast<size_t>(packs * chan) * bb, ctx);

  // Per (depth, height, width) phase: the offset of each panel element from a strip's base.
  std::vector<std::vector<int64_t>> offsets(static_cast<size_t>(sd * sh * sw));
  for (int64_t rd = 0; rd < sd; ++rd)
    for (int64_t rh = 0; rh < sh; ++rh)
      for (int64_t rw = 0; rw < sw; ++rw) {
        const Phase &pd = phases_[0][static_cast<size_t>(rd)],
                    &ph = phases_[1][static_cast<size_t>(rh)],
                    &pw = phases_[2][static_cast<size_t>(rw)];
        std::vector<int64_t>& o = offsets[static_cast<size_t>((rd * sh + rh) * sw + rw)];
        for (int64_t p = 0; p < packs; ++p)
          for (int64_t ud = 0; ud < pd.taps; ++ud)
            for (int64_t uh = 0; uh < ph.taps; ++uh)
              for (int64_t uw = 0; uw < pw.taps; ++uw)
                o.push_back(p * chan + ud * plane + uh * xlen + pw.lo - wlo_ + uw);
      }

  // Panels kept as fp16 (APanels::narrow) are widened for each slab a few blocks of MR output
  // channels at a time, at most APanels::widen_budget() bytes (one block at least).
  const int64_t wblocks = a_.blocks_at_once(static_cast<int64_t>(a_block_bytes_), mblocks);

  uint8_t* yb = static_cast<uint8_t*>(y.raw());
  const int64_t x_plane = in_h * in_w;
  // Input columns [ix0, ix1) land at padded column ix - wlo_.
  const int64_t ix0 = std::max<int64_t>(0, wlo_), ix1 = std::min(in_w, xlen + wlo_);
  const int64_t iy0 = std::max<int64_t>(0, lo[1]), iy1 = std::min(in_h, ylen + lo[1]);
  // Output plane indices [j_begin, j_end) of batch item n, slab by slab through `slab`; `shared`:
  // the pool splits each slab's fill and computes (a barrier after each), else the calling
  // thread does them all.
  auto run_slabs = [&](int64_t n, int64_t j_begin, int64_t j_end, uint8_t* slab, uint8_t* widened,
                       bool shared) {
    auto run = [&](int64_t count, const std::function<void(int64_t, int64_t)>& fn) {
      if (shared)
        split_items(pool, count, fn);
      else
        fn(0, count);
    };
    for (int64_t j0 = j_begin; j0 < j_end; j0 += zb) {
      const int64_t j1 = std::min(j_end, j0 + zb);
      // Slab plane sp holds input plane j0 + lo + sp of each channel pack.
      // The planes these outputs read: a shorter block (the last, or a thread's range) fills
      // fewer than the slab holds.
      const int64_t planes = j1 - j0 + reach;
      run(packs * planes, [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
          const int64_t pack = item / planes, sp = item % planes;
          const int64_t iz = j0 + lo[0] + sp;
          uint8_t* dst = slab + (pack * chan + sp * plane) * static_cast<int64_t>(bb);
          if (iz < 0 || iz >= in_d || ix1 <= ix0 || iy1 <= iy0) {
            std::memset(dst, 0, static_cast<size_t>(plane) * bb);
            continue;
          }
          zero_around(dst, plane, xlen, bb, iy0 - lo[1], iy1 - lo[1], ix0 - wlo_, ix1 - wlo_);
          // The pack's channels' input plane iz, from X's part each is in.
          const int64_t c0 = pack * kp;
          const int64_t at = (iz * x_plane + ix0) * static_cast<int64_t>(es),
                        row_bytes = in_w * static_cast<int64_t>(es);
          const uint8_t* first = x.plane(n, c0) + at;
          const uint8_t* second = kp == 2 && c0 + 1 < c_ ? x.plane(n, c0 + 1) + at : nullptr;
          for (int64_t iy = iy0; iy < iy1; ++iy) {
            uint8_t* row = dst + ((iy - lo[1]) * xlen + ix0 - wlo_) * static_cast<int64_t>(bb);
            if (kp == 2)
              g_.to_panel_pair(first + iy * row_bytes, second ? second + iy * row_bytes : nullptr,
                               row, static_cast<size_t>(ix1 - ix0));
            else
              g_.to_panel(first + iy * row_bytes, row, static_cast<size_t>(ix1 - ix0));
          }
        }
      });
      for (int64_t w0 = 0; w0 < mblocks; w0 += wblocks) {
        // Output channels [m0, m1): blocks [w0, w1) of every phase's panels.
        const int64_t w1 = std::min(mblocks, w0 + wblocks), m0 = w0 * mr,
                      m1 = std::min(m_, w1 * mr);
        const uint8_t* a =
            a_.range(static_cast<size_t>(w0) * a_block_bytes_,
                     static_cast<size_t>(w1 - w0) * a_block_bytes_, widened, ctx, shared);
        // Items (depth phase, plane j, height phase): rows of strips, each strip's tiles (output
        // channels of each width phase) interleaved into the output rows.
        run(sd * (j1 - j0) * sh, [&](int64_t begin, int64_t end) {
          std::vector<uint8_t> strip(static_cast<size_t>(sw * mpad * nr) * es);
          for (int64_t item = begin; item < end; ++item) {
            const int64_t rh = item % sh, jd = j0 + item / sh % (j1 - j0),
                          rd = item / sh / (j1 - j0);
            const Phase &pd = phases_[0][static_cast<size_t>(rd)],
                        &ph = phases_[1][static_cast<size_t>(rh)];
            const int64_t nd = phase_count(od, sd, rd), nh = phase_count(oh, sh, rh);
            if (jd >= nd) continue;
            const size_t phases =
                static_cast<size_t>((rd * sh + rh) * sw);  // its first width phase
            const int64_t z = sd * jd + rd;
            // The phase plane's first padded row; output row jh reads from jh * xlen on.
            const uint8_t* first =
                slab + ((jd - j0 + pd.lo - lo[0]) * plane + (ph.lo - lo[1]) * xlen) *
                           static_cast<int64_t>(bb);
            // Columns [x0, x0 + len) of output row jh from strip lanes [lane, lane + len): each
            // channel's width phases interleaved.
            auto store = [&](int64_t jh, int64_t x0, int64_t lane, int64_t len) {
              uint8_t* out = yb + (((n * m_ + m0) * od + z) * oh + sh * jh + rh) * ow *
                                      static_cast<int64_t>(es);
              interleave_phases(strip.data() + (m0 * nr + lane) * static_cast<int64_t>(es),
                                mpad * nr, es, sw, ow, x0, len, out, m1 - m0, nr, od * oh * ow);
            };
            // Strips along each row, or straight across rows `xlen` apart where rows are short
            // against NR (the lanes between rows computed and dropped).
            const int64_t width = most[2];
            const bool by_rows =
                static_cast<double>(width) / static_cast<double>(ceil_div(width, nr) * nr) >=
                0.97 * static_cast<double>(nh * width) /
                    static_cast<double>(ceil_div(nh * xlen, nr) * nr);
            const int64_t span = by_rows ? nh * ceil_div(width, nr) : ceil_div(nh * xlen, nr);
            for (int64_t k = 0; k < span; ++k) {
              // Strip k starts at padded-row offset q0 (row jh0 when by rows).
              const int64_t per_row = ceil_div(width, nr);
              const int64_t q0 = by_rows ? k / per_row * xlen + k % per_row * nr : k * nr;
              const int64_t nc = by_rows ? std::min(nr, width - k % per_row * nr) : nr;
              for (int64_t rw = 0; rw < sw; ++rw) {
                const size_t phase = phases + static_cast<size_t>(rw);
                const int64_t steps = a_steps_[phase];
                for (int64_t mb = w0; mb < w1; ++mb) {
                  GemmParams p;
                  p.bias = bias_.data() + mb * mr;
                  p.act = e_.act;
                  p.alpha = e_.alpha;
                  g_.ukernel(static_cast<size_t>(std::min(mr, m_ - mb * mr)),
                             static_cast<size_t>(nc), static_cast<size_t>(steps),
                             a + (mb - w0) * static_cast<int64_t>(a_block_bytes_) + a_at_[phase],
                             first + q0 * static_cast<int64_t>(bb), offsets[phase].data(),
                             strip.data() + (rw * mpad + mb * mr) * nr * static_cast<int64_t>(es),
                             static_cast<size_t>(nr), p);
                }
              }
              for (int64_t jh = q0 / xlen; jh < nh && jh * xlen < q0 + nc; ++jh) {
                const int64_t c0 = std::max(q0, jh * xlen) - jh * xlen,
                              c1 = std::min(q0 + nc, jh * xlen + width) - jh * xlen;
                if (c1 > c0) store(jh, c0, jh * xlen + c0 - q0, c1 - c0);
              }
            }
          }
        });
      }
    }
  };

  if (owned) {
    // Items (batch item, range r of output plane indices, slab of the range), `threads` ranges
    // per batch item, each cut into `per_range` slabs of zb plane indices (the last of a shorter
    // range empty): with one batch item thread t starts on range t, and a thread done early
    // takes slabs off the end of another's (split_ranges). Each slab is filled whole.
    const int64_t per_range = ceil_div(ceil_div(most[0], threads), zb);
    split_ranges(pool, n_batch * threads * per_range, [&](RangeCursor& items) {
      RingBuffers::Lease slab(slabs, items);
      PanelBuffer widened = a_.scratch(static_cast<size_t>(wblocks) * a_block_bytes_, ctx);
      for (int64_t item; (item = items.next()) >= 0;) {
        const int64_t n = item / (threads * per_range), r = item / per_range % threads;
        const int64_t j0 = most[0] * r / threads + item % per_range * zb,
                      j1 = std::min(most[0] * (r + 1) / threads, j0 + zb);
        if (j0 < j1) run_slabs(n, j0, j1, slab.data(), widened.data(), false);
      }
    });
    return;
  }
  PanelBuffer widened = a_.scratch(static_cast<size_t>(wblocks) * a_block_bytes_, ctx);
  for (int64_t n = 0; n < n_batch; ++n)
    run_slabs(n, 0, most[0], slabs.shared(), widened.data(), true);
}

}  // namespace voxrt::cpu
