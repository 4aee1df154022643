#include "backends/cpu/conv/conv_gemm.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

#include "backends/cpu/kernels/gemm/gemm_rows.h"
#include "core/half.h"
#include "runtime/pages.h"

namespace voxrt::cpu {

namespace {

// Bytes of B panel a spatial tile may fill: with the kernel's A panel it should stay in L2.
constexpr int64_t kPanelBudget = 192 << 10;
constexpr int64_t kMaxStripsPerTile = 16;
// A 1x1 convolution does few operations per input element: long tiles keep its reads streaming.
constexpr int64_t kPointwisePanelBudget = 768 << 10;

// Tile columns [q, q + len) lie in one output row (oz, oy) starting at ox, and in one NR strip.
struct ColumnRun {
  int64_t q, len, oz, oy, ox;
};

void column_runs(const ConvWindow& w, int64_t p0, int64_t cols, int64_t nr,
                 std::vector<ColumnRun>& runs) {
  runs.clear();
  const int64_t ow = w.out[2], oh = w.out[1];
  int64_t ox = p0 % ow, oy = (p0 / ow) % oh, oz = p0 / (ow * oh);
  for (int64_t q = 0; q < cols;) {
    int64_t len = std::min({ow - ox, cols - q, nr - q % nr});
    runs.push_back({q, len, oz, oy, ox});
    q += len;
    ox += len;
    if (ox == ow) {
      ox = 0;
      if (++oy == oh) {
        oy = 0;
        ++oz;
      }
    }
  }
}

void gather(const uint8_t* src, int64_t stride, int64_t n, size_t es, uint8_t* dst) {
  if (es == 4) {
    for (int64_t j = 0; j < n; ++j) std::memcpy(dst + j * 4, src + j * stride * 4, 4);
  } else {
    for (int64_t j = 0; j < n; ++j) std::memcpy(dst + j * 2, src + j * stride * 2, 2);
  }
}

// The implicit im2col panel of one spatial tile: step k = (channel, kz, ky, kx), column q =
// output position p0 + q, laid out as micro-panels of k steps x NR columns, for `channels`
// input channels. `fill(c, kz, ky, kx, at)` writes one (channel, tap) row of the tile: the cols
// values of column q go to panel element at(q) (one member of it where k_pack > 1; then
// consecutive columns of a strip are elements apart), converted with g.to_panel. With k_pack 1
// it writes every value of its row, zeros included; with k_pack > 1 the panel starts zeroed and
// it may write only data.
template <class Fill>
void pack_im2col(const GemmKernel& g, const ConvWindow& w, int64_t channels, bool tap_pairs,
                 int64_t cols, uint8_t* panel, Fill fill) {
  const int64_t nr = g.nr, kvol = w.kernel_size(), kp = g.k_pack;
  const int64_t kw_elems = tap_pairs ? (w.kernel[2] + 1) / 2 : w.kernel[2];
  // Panel elements per column.
  const int64_t steps =
      tap_pairs ? w.kernel[0] * w.kernel[1] * kw_elems : (channels + kp - 1) / kp * kvol;
  const size_t bb = panel_type_bytes(g.b_panel);
  const size_t member = bb / static_cast<size_t>(kp);
  // Packed elements are filled one member at a time: zero everything first, write only data.
  if (kp > 1) std::memset(panel, 0, static_cast<size_t>(ceil_div(cols, nr) * steps * nr) * bb);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kz = 0; kz < w.kernel[0]; ++kz)
      for (int64_t ky = 0; ky < w.kernel[1]; ++ky)
        for (int64_t kx = 0; kx < w.kernel[2]; ++kx) {
          // Element (channel pack, tap), member c % kp; or (kz, ky, kx / 2), member kx % 2.
          const int64_t k = tap_pairs ? (kz * w.kernel[1] + ky) * kw_elems + kx / 2
                                      : c / kp * kvol + (kz * w.kernel[1] + ky) * w.kernel[2] + kx;
          uint8_t* row =
              panel + k * nr * bb + static_cast<size_t>(tap_pairs ? kx % 2 : c % kp) * member;
          fill(c, kz, ky, kx,
               [&](int64_t q) { return row + ((q / nr) * steps * nr + q % nr) * bb; });
        }
  if (int64_t tail = cols % nr; tail != 0 && kp == 1) {
    uint8_t* last = panel + (cols / nr) * steps * nr * bb;
    for (int64_t s = 0; s < steps; ++s)
      std::memset(last + (s * nr + tail) * bb, 0, (nr - tail) * bb);
  }
}

// The tile's panel straight from X, channels [c0, c0 + channels) of batch item n, in runs of
// columns along output rows (`runs`).
void pack_im2col_runs(const GemmKernel& g, const ConvWindow& w, const ConvInput& x, int64_t n,
                      int64_t c0, int64_t channels, bool tap_pairs, int64_t cols,
                      const std::vector<ColumnRun>& runs, uint8_t* panel, uint8_t* scratch) {
  const size_t es = dtype_size(g.storage), bb = panel_type_bytes(g.b_panel);
  const int64_t in_h = w.in[1], in_w = w.in[2], sx = w.stride[2];
  auto zero = [&](uint8_t* dst, int64_t count) {
    if (g.k_pack == 1) std::memset(dst, 0, static_cast<size_t>(count) * bb);
  };
  auto fill = [&](int64_t c, int64_t kz, int64_t ky, int64_t kx, auto at) {
    const uint8_t* xc = x.plane(n, c0 + c);
    for (const ColumnRun& r : runs) {
      uint8_t* dst = at(r.q);
      int64_t iz = r.oz * w.stride[0] - w.pad[0] + kz * w.dilation[0];
      int64_t iy = r.oy * w.stride[1] - w.pad[1] + ky * w.dilation[1];
      if (iz < 0 || iz >= w.in[0] || iy < 0 || iy >= in_h) {
        zero(dst, r.len);
        continue;
      }
      const int64_t ix0 = r.ox * sx - w.pad[2] + kx * w.dilation[2];
      int64_t lo = ix0 >= 0 ? 0 : (-ix0 + sx - 1) / sx;
      int64_t hi = ix0 > in_w - 1 ? 0 : (in_w - 1 - ix0) / sx + 1;
      lo = std::min(lo, r.len);
      hi = std::clamp(hi, lo, r.len);
      zero(dst, lo);
      if (hi > lo) {
        const uint8_t* src = xc + ((iz * in_h + iy) * in_w + ix0 + lo * sx) * es;
        if (sx == 1) {
          g.to_panel(src, dst + lo * bb, static_cast<size_t>(hi - lo));
        } else {
          gather(src, sx, hi - lo, es, scratch);
          g.to_panel(scratch, dst + lo * bb, static_cast<size_t>(hi - lo));
        }
      }
      zero(dst + hi * bb, r.len - hi);
    }
  };
  pack_im2col(g, w, channels, tap_pairs, cols, panel, fill);
}

// Output rows this short or shorter pack from a zero-padded copy of X (pack_im2col_padded):
// pack_im2col_runs's runs are as short as the rows, each a bounds check and a call. A 320 -> 320
// 3x3x3 convolution at 4^3 packed its im2col panel in runs of four and spent 42% of its time
// there.
constexpr int64_t kShortRow = 12;
// At most this many bytes of padded copy (deep layers on small planes need far less).
constexpr int64_t kPaddedBudget = 16 << 20;

// Channel c of batch item n of X at dst + (n * channels + c) * ext volume, zero-padded.
void pad_input(const RunContext& ctx, const ConvWindow& w, const ConvInput& x, const int64_t ext[3],
               size_t es, uint8_t* dst) {
  const int64_t vol = ext[0] * ext[1] * ext[2], channels = x.channels();
  parallel_for(ctx, x.batch() * channels, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      uint8_t* d = dst + i * vol * static_cast<int64_t>(es);
      const uint8_t* src = x.plane(i / channels, i % channels);
      std::memset(d, 0, static_cast<size_t>(vol) * es);
      for (int64_t iz = 0; iz < w.in[0]; ++iz)
        for (int64_t iy = 0; iy < w.in[1]; ++iy)
          std::memcpy(d + (((iz + w.pad[0]) * ext[1] + iy + w.pad[1]) * ext[2] + w.pad[2]) *
                              static_cast<int64_t>(es),
                      src + (iz * w.in[1] + iy) * w.in[2] * static_cast<int64_t>(es),
                      static_cast<size_t>(w.in[2]) * es);
    }
  });
}

// The tile's panel from X's zero-padded copy: `padded` holds the tile's first input channel,
// channel after channel ext volume apart; column q's tap (0, 0, 0) is element index[q] of a
// channel. Each (channel, tap) row is gathered into `row` (cols values of the storage dtype),
// then converted into the panel a strip at a time.
void pack_im2col_padded(const GemmKernel& g, const ConvWindow& w, const uint8_t* padded,
                        const int64_t ext[3], int64_t channels, bool tap_pairs, int64_t cols,
                        const int64_t* index, uint8_t* panel, uint8_t* row) {
  const int64_t es = static_cast<int64_t>(dtype_size(g.storage)), nr = g.nr;
  const int64_t vol = ext[0] * ext[1] * ext[2];
  auto fill = [&](int64_t c, int64_t kz, int64_t ky, int64_t kx, auto at) {
    const int64_t tap =
        c * vol + (kz * w.dilation[0] * ext[1] + ky * w.dilation[1]) * ext[2] + kx * w.dilation[2];
    if (es == 4) {
      const float* src = reinterpret_cast<const float*>(padded) + tap;
      float* dst = reinterpret_cast<float*>(row);
      for (int64_t q = 0; q < cols; ++q) dst[q] = src[index[q]];
    } else {
      const uint16_t* src = reinterpret_cast<const uint16_t*>(padded) + tap;
      uint16_t* dst = reinterpret_cast<uint16_t*>(row);
      for (int64_t q = 0; q < cols; ++q) dst[q] = src[index[q]];
    }
    for (int64_t q = 0; q < cols; q += nr)
      g.to_panel(row + q * es, at(q), static_cast<size_t>(std::min(nr, cols - q)));
  };
  pack_im2col(g, w, channels, tap_pairs, cols, panel, fill);
}

}  // namespace

void weights_to_f32(const Tensor& w, int64_t begin, int64_t count, float* out) {
  if (begin < 0 || count < 0 || begin + count > w.numel())
    throw Error("weights_to_f32: elements past the tensor's " + std::to_string(w.numel()));
  if (w.dtype() == DType::f32) {
    std::memcpy(out, w.data<float>() + begin, static_cast<size_t>(count) * sizeof(float));
  } else if (w.dtype() == DType::f16) {
    const uint16_t* h = static_cast<const uint16_t*>(w.raw()) + begin;
    for (int64_t i = 0; i < count; ++i) out[i] = half_to_float(h[i]);
  } else {
    throw Error("weights_to_f32: float32 or float16 weights expected, not " +
                std::string(dtype_name(w.dtype())));
  }
}

std::vector<float> weights_to_f32(const Tensor& w) {
  std::vector<float> f(static_cast<size_t>(w.numel()));
  weights_to_f32(w, 0, w.numel(), f.data());
  return f;
}

ConvWindow conv_window(const ref::Geometry& g) {
  ConvWindow w;
  size_t rank = g.in.size();
  for (size_t d = 0; d < 3; ++d) {
    bool lead = d + rank < 3;
    size_t s = d + rank - 3;
    w.in[d] = lead ? 1 : g.in[s];
    w.out[d] = lead ? 1 : g.out[s];
    w.kernel[d] = lead ? 1 : g.kernel[s];
    w.stride[d] = lead ? 1 : g.stride[s];
    w.dilation[d] = lead ? 1 : g.dilation[s];
    w.pad[d] = lead ? 0 : g.pad_begin[s];
  }
  return w;
}

namespace {
// Packed weights of at least this many bytes get a mapping of their own (PanelBuffer::packed).
constexpr size_t kMappedPanels = 64 << 10;
}  // namespace

void PanelBuffer::Free::operator()(uint8_t* p) const {
  if (cache)
    cache->give_back({p, capacity});
  else if (capacity > 0)
    unmap_pages(p, capacity);
  else
    ::operator delete[](p, std::align_val_t(64));
}

PanelBuffer::PanelBuffer(size_t bytes, ScratchCache* cache) {
  bytes = std::max<size_t>(bytes, 64);
  bytes_ = bytes;
  if (cache) {
    ScratchCache::Block b = cache->take(bytes);
    data_ = std::unique_ptr<uint8_t, Free>(b.data, Free{cache, b.capacity});
  } else {
    data_ = std::unique_ptr<uint8_t, Free>(
        static_cast<uint8_t*>(::operator new[](bytes, std::align_val_t(64))), Free{});
  }
  poison();
}

PanelBuffer PanelBuffer::packed(size_t bytes) {
  bytes = std::max<size_t>(bytes, 64);
  if (bytes < kMappedPanels) return PanelBuffer(bytes);
  PanelBuffer b;
  b.bytes_ = bytes;
  b.data_ = std::unique_ptr<uint8_t, Free>(map_pages(bytes, true), Free{nullptr, bytes});
  b.poison();
  return b;
}

void PanelBuffer::poison() {
#ifndef NDEBUG
  // NaN in every float type: a kernel that reads scratch nobody wrote fails the Debug tests,
  // even where it multiplies it by a zero weight.
  std::memset(data_.get(), 0xff, bytes_);
#endif
}

APanels::APanels(const GemmKernel& g, size_t bytes, bool fp16_values)
    : g_(&g),
      narrow_(fp16_values && g.storage == DType::f16 &&
              (g.a_panel == PanelType::f32 || g.a_panel == PanelType::f16_pair)),
      bytes_(bytes),
      kept_(PanelBuffer::packed(narrow_ ? bytes / 2 : bytes)) {}

void APanels::narrow(size_t offset, const std::vector<float>& values) {
  uint16_t* dst = reinterpret_cast<uint16_t*>(kept_.data() + offset / 2);
  if (g_->a_panel == PanelType::f16_pair) {
    // Each element holds its fp16 value twice: keep one.
    for (size_t i = 0; i < values.size(); ++i) {
      uint32_t pair;
      std::memcpy(&pair, &values[i], 4);
      dst[i] = static_cast<uint16_t>(pair);
    }
    return;
  }
  // The values are fp16 weights widened (or zeros): narrowing them back is exact.
  cast_kernels(g_->isa).f32_to_f16(values.data(), dst, static_cast<int64_t>(values.size()));
}

void APanels::widen(size_t offset, size_t bytes, uint8_t* dst) const {
  const uint16_t* src = reinterpret_cast<const uint16_t*>(kept_.data() + offset / 2);
  const size_t n = bytes / 4;
  if (g_->a_panel == PanelType::f16_pair) {
    uint32_t* out = reinterpret_cast<uint32_t*>(dst);
    for (size_t i = 0; i < n; ++i) out[i] = src[i] * 0x10001u;
    return;
  }
  cast_kernels(g_->isa).f16_to_f32(src, dst, static_cast<int64_t>(n));
}

namespace {
// Half of a Zen 4 core's L2. MONAI's spleen UNet, fp16 model on AVX-512 without AVX512-FP16, one
// thread: 2 MiB -> 512 KiB took its peak RSS from 37.1 to 35.8 MiB (0.57 -> 0.55 of fp32) at the
// same speed (120.7-123.9 ms against 122.6-123.2), as did nnU-Net's PlainConvUNet at 96^3 (3.92-
// 3.93 s against 3.94-3.96, one and two threads) and the AVX2 rows.
std::atomic<size_t> widen_budget_bytes{512 << 10};
}  // namespace

size_t APanels::widen_budget() {
  return widen_budget_bytes.load(std::memory_order_relaxed);
}

size_t APanels::set_widen_budget(size_t bytes) {
  return widen_budget_bytes.exchange(std::max<size_t>(bytes, 64));
}

int64_t APanels::blocks_at_once(int64_t block_bytes, int64_t all) const {
  if (!narrow_) return all;
  return std::clamp<int64_t>(
      static_cast<int64_t>(widen_budget()) / std::max<int64_t>(1, block_bytes), 1,
      std::max<int64_t>(1, all));
}

PanelBuffer APanels::scratch(size_t bytes, const RunContext& ctx) const {
  if (!narrow_) return PanelBuffer();
  const size_t budget = widen_budget();
  return PanelBuffer((bytes + budget - 1) / budget * budget, ctx.panels ? ctx.panels : ctx.scratch);
}

const uint8_t* APanels::range(size_t offset, size_t bytes, uint8_t* widened, const RunContext& ctx,
                              bool parallel) const {
  if (!narrow_) return kept_.data() + offset;
  if (!parallel) {
    widen(offset, bytes, widened);
    return widened;
  }
  parallel_for(ctx, static_cast<int64_t>(bytes / sizeof(float)), kChunkElems,
               [&](int64_t b, int64_t e) {
                 widen(offset + static_cast<size_t>(b) * sizeof(float),
                       static_cast<size_t>(e - b) * sizeof(float), widened + b * sizeof(float));
               });
  return widened;
}

APanels::Open APanels::open(const RunContext& ctx) const {
  Open o;
  o.widened_ = scratch(bytes_, ctx);
  o.data_ = range(0, bytes_, o.widened_.data(), ctx, true);
  return o;
}

ConvGemm::ConvGemm(const GemmKernel& g, const Tensor& w, const Tensor* bias, int64_t group,
                   ConvEpilogue epilogue, ConvHead head)
    : g_(g),
      rows_(gemm_siblings(g)),
      m_(w.dim(0)),
      group_(group),
      cg_(w.dim(1)),
      kvol_(1),
      epilogue_(epilogue),
      head_(std::move(head)) {
  if (head_.channels > 0 &&
      (group_ != 1 || head_.w.size() != static_cast<size_t>(head_.channels * m_) ||
       (!head_.b.empty() && head_.b.size() != static_cast<size_t>(head_.channels))))
    throw Error("ConvGemm: a head takes " + std::to_string(head_.channels) + " x " +
                std::to_string(m_) + " weights, one group");
  if (head_.channels > 0) {
    mix_f32_ = eltwise_kernels(DType::f32, g_.isa);
    softmax_f32_ = softmax_kernels(DType::f32, g_.isa);
  }
  for (int64_t d = 2; d < w.rank(); ++d) kvol_ *= w.dim(d);
  for (int d = 0; d < 3; ++d) {
    const int64_t axis = d + w.rank() - 3;
    kernel_[d] = axis >= 2 ? w.dim(axis) : 1;
  }
  tap_pairs_ = g_.k_pack == 2 && cg_ == 1 && kernel_[2] >= 2;
  const int64_t mg = m_ / group_, kp = g_.k_pack;
  // Steps in packing order, k_pack to an element: (channel pack, tap, channel within the pack),
  // channels past cg in the last pack zero; with k_pack 1 that is W's own (channel, tap) order.
  // With tap pairs: (kz, ky, kx), kx padded to even with zero taps. One micro-panel of MR rows is
  // ordered and packed at a time, so the copies beside the packed panels stay small.
  const int64_t steps = elements() * kp, per_m = cg_ * kvol_, mr = g_.mr;
  a_group_bytes_ = packed_a_bytes(g_, mg, steps);
  a_ = APanels(g_, a_group_bytes_ * static_cast<size_t>(group_));
  const size_t panel_bytes = packed_a_bytes(g_, mr, steps);
  std::vector<float> wf(static_cast<size_t>(mr * per_m)), ordered(static_cast<size_t>(mr * steps));
  for (int64_t grp = 0; grp < group_; ++grp)
    for (int64_t m0 = 0; m0 < mg; m0 += mr) {
      const int64_t rows = std::min(mr, mg - m0);
      weights_to_f32(w, (grp * mg + m0) * per_m, rows * per_m, wf.data());
      std::fill(ordered.begin(), ordered.end(), 0.0f);
      for (int64_t m = 0; m < rows; ++m)
        for (int64_t c = 0; c < cg_; ++c)
          for (int64_t t = 0; t < kvol_; ++t) {
            const int64_t step = tap_pairs_ ? t / kernel_[2] * width_elements() * 2 + t % kernel_[2]
                                            : ((c / kp) * kvol_ + t) * kp + c % kp;
            ordered[static_cast<size_t>(m * steps + step)] =
                wf[static_cast<size_t>((m * cg_ + c) * kvol_ + t)];
          }
      a_.fill(grp * a_group_bytes_ + static_cast<size_t>(m0 / mr) * panel_bytes, panel_bytes,
              [&](uint8_t* dst) { pack_a(g_, ordered.data(), steps, 1, rows, steps, dst); });
    }
  if (bias) bias_ = weights_to_f32(*bias);
}

std::string ConvGemm::kernel_names() const {
  std::string name = g_.name;
  for (const GemmKernel* r : rows_)
    if (r != &g_)
      name.append("+").append(std::to_string(r->mr)).append("x").append(std::to_string(r->nr));
  if (head_.channels > 0) name += head_.softmax ? " +head+softmax" : " +head";
  return name;
}

void ConvGemm::head_tile(const float* tile, int64_t in_stride, int64_t n, float* out,
                         int64_t out_stride) const {
  mix_f32_->mix(tile, in_stride, m_, head_.w.data(), head_.b.empty() ? nullptr : head_.b.data(),
                head_.channels, n, out, out_stride);
  if (head_.softmax) softmax_f32_->strided(out, out, head_.channels, out_stride, n);
}

void ConvGemm::run_head(const RunContext& ctx, const Tensor& mid, Tensor& y) const {
  const int64_t n_batch = mid.dim(0), s = mid.numel() / std::max<int64_t>(1, n_batch * m_),
                mh = head_.channels;
  const float* src = static_cast<const float*>(mid.raw());
  uint8_t* dst = static_cast<uint8_t*>(y.raw());
  const size_t ys = dtype_size(y.dtype());
  const CastKernels& cast = cast_kernels(g_.isa);
  constexpr int64_t kLanes = 1024;
  const int64_t per_item = ceil_div(s, kLanes);
  parallel_for(ctx, n_batch * per_item, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> out(static_cast<size_t>(mh * kLanes));
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t n = i / per_item, p = i % per_item * kLanes, len = std::min(kLanes, s - p);
      head_tile(src + n * m_ * s + p, s, len, out.data(), kLanes);
      for (int64_t h = 0; h < mh; ++h) {
        uint8_t* row = dst + ((n * mh + h) * s + p) * static_cast<int64_t>(ys);
        if (y.dtype() == DType::f32)
          std::memcpy(row, out.data() + h * kLanes, static_cast<size_t>(len) * sizeof(float));
        else
          cast.f32_to_f16(out.data() + h * kLanes, row, len);
      }
    }
  });
}

GemmParams ConvGemm::params(int64_t m0, const uint8_t* residual, const Tensor& y) const {
  GemmParams p;
  p.bias = bias_.empty() ? nullptr : bias_.data() + m0;
  p.residual = residual;
  p.f32_out = y.dtype() != g_.storage;
  p.act = epilogue_.act;
  p.alpha = epilogue_.alpha;
  p.slopes = epilogue_.slopes.empty() ? nullptr : epilogue_.slopes.data() + m0;
  p.residual_after_act = epilogue_.residual_after_act;
  return p;
}

void ConvGemm::run(const RunContext& ctx, const ConvWindow& win, const ConvInput& x,
                   const ConvResidual& residual, Tensor& y) const {
  if (y.dtype() != g_.storage && y.dtype() != DType::f32)
    throw Error("ConvGemm: output of dtype " + std::string(dtype_name(y.dtype())) +
                " for storage " + std::string(dtype_name(g_.storage)) +
                "; an output may differ from the storage only as fp32");
  if (x.batch() == 0 || win.out_size() == 0 || m_ == 0) return;
  // Upsampled parts are made row by row where the direct path copies X's rows; the packed path
  // reads X joined, made whole first.
  auto packed = [&](Tensor& out) {
    if (!x.upsampled()) return run_packed(ctx, win, x, residual, out);
    const Tensor whole = x.joined();
    run_packed(ctx, win, ConvInput(whole), residual, out);
  };
  if (head_.channels > 0) {
    // The direct path mixes each strip's tiles through the head; elsewhere the M channels go
    // through an fp32 tensor of their own first, in the run's scratch.
    if (!pointwise(win) && run_direct(ctx, win, x, residual, y, true)) return;
    Shape shape = y.shape();
    shape[1] = m_;
    const PanelBuffer bytes(static_cast<size_t>(shape_numel(shape)) * sizeof(float), ctx.scratch);
    Tensor mid = Tensor::view(DType::f32, shape, bytes.data());
    if (pointwise(win) && x.single())
      run_pointwise(ctx, win, x.part(0), residual, mid);
    else if (pointwise(win))
      run_pointwise(ctx, win, x.joined(), residual, mid);
    else if (!run_direct(ctx, win, x, residual, mid, false))
      packed(mid);
    run_head(ctx, mid, y);
    return;
  }
  if (pointwise(win)) {
    // Its tiles are packed straight from X's rows: parts are joined first (a 1x1 conv after a
    // Concat is rare in UNets; the joined copy is what the Concat would have cost).
    if (x.single())
      run_pointwise(ctx, win, x.part(0), residual, y);
    else
      run_pointwise(ctx, win, x.joined(), residual, y);
    return;
  }
  if (run_direct(ctx, win, x, residual, y, false)) return;
  packed(y);
}

bool ConvGemm::pointwise(const ConvWindow& win) {
  for (int d = 0; d < 3; ++d)
    if (win.kernel[d] != 1 || win.stride[d] != 1 || win.pad[d] != 0 || win.in[d] != win.out[d])
      return false;
  return true;
}

void ConvGemm::run_pointwise(const RunContext& ctx, const ConvWindow& win, const Tensor& x,
                             const ConvResidual& residual, Tensor& y) const {
  // 1x1 kernels: few weights, widened whole.
  const APanels::Open open = a_.open(ctx);
  const uint8_t* a = open.data();
  ThreadPool* pool = ctx.pool;
  const int64_t n_batch = x.dim(0), c_in = x.dim(1), mg = m_ / group_, s = win.out_size();
  const int64_t mr = g_.mr, nr = g_.nr, mblocks = ceil_div(mg, mr), steps = packed_channels();
  const size_t es = dtype_size(g_.storage), ab = panel_type_bytes(g_.a_panel),
               bb = panel_type_bytes(g_.b_panel);
  // Long tiles, but at least four per thread where there are enough strips (a head conv with
  // few input channels would otherwise be three tiles on two threads).
  const int64_t threads = pool ? pool->size() : 1;
  const int64_t strips = std::clamp<int64_t>(
      std::min(kPointwisePanelBudget / std::max<int64_t>(1, steps * nr * static_cast<int64_t>(bb)),
               ceil_div(n_batch * group_ * ceil_div(s, nr), 4 * threads)),
      1, ceil_div(s, nr));
  const int64_t tile_cols = strips * nr, tiles = ceil_div(s, tile_cols);
  const std::vector<int64_t> offsets = panel_offsets(g_, cg_);
  // Rows whose panels hold the storage's own values (fp32), and fp16 rows through their tile
  // that widens B as it loads it, read full strips of B in place, X's channel rows through a
  // table of row offsets: packing them only copied X into L2 and back.
  const GemmUkernel in_place_kernel = g_.to_panel == copy_f32_panel ? g_.ukernel : g_.ukernel_f16_b;
  const bool in_place = in_place_kernel != nullptr;
  std::vector<int64_t> row_offsets(in_place ? static_cast<size_t>(cg_) : 0);
  for (size_t c = 0; c < row_offsets.size(); ++c) row_offsets[c] = static_cast<int64_t>(c) * s;
  const int64_t items = n_batch * group_ * tiles;
  const uint8_t* xb = static_cast<const uint8_t*>(x.raw());
  uint8_t* yb = static_cast<uint8_t*>(y.raw());
  const int64_t ys = static_cast<int64_t>(dtype_size(y.dtype()));
  auto work = [&](RangeCursor& items) {
    // In place, a panel for the one short strip a tile may end in.
    PanelBuffer panel(packed_b_bytes(g_, cg_, in_place ? nr : tile_cols), ctx.scratch);
    for (int64_t item; (item = items.next()) >= 0;) {
      const int64_t tile = item % tiles, grp = (item / tiles) % group_, n = item / tiles / group_;
      const int64_t p0 = tile * tile_cols, cols = std::min(tile_cols, s - p0);
      const uint8_t* x0 = xb + ((n * c_in + grp * cg_) * s + p0) * static_cast<int64_t>(es);
      // In place, only the last strip (short of NR columns) is packed.
      const int64_t packed_from = in_place ? cols / nr * nr : 0;
      if (packed_from < cols)
        pack_b(g_, x0 + packed_from * static_cast<int64_t>(es), s, cg_, cols - packed_from,
               panel.data());
      for (int64_t st = 0; st * nr < cols; ++st) {
        const bool own = st * nr < packed_from;
        const uint8_t* b = own ? x0 + st * nr * static_cast<int64_t>(es)
                               : panel.data() + (st - packed_from / nr) * steps * nr * bb;
        for (int64_t mb = 0; mb < mblocks; ++mb) {
          const int64_t m0 = grp * mg + mb * mr;
          const int64_t at = (n * m_ + m0) * s + p0 + st * nr;
          (own ? in_place_kernel : g_.ukernel)(
              static_cast<size_t>(std::min(mr, mg - mb * mr)),
              static_cast<size_t>(std::min(nr, cols - st * nr)), static_cast<size_t>(steps),
              a + grp * a_group_bytes_ + mb * mr * steps * ab, b,
              own ? row_offsets.data() : offsets.data(), yb + at * ys, static_cast<size_t>(s),
              params(m0, residual ? residual.at(n, at) : nullptr, y));
        }
      }
    }
  };
  split_ranges(pool, items, work);
}

void ConvGemm::run_packed(const RunContext& ctx, const ConvWindow& win, const ConvInput& x,
                          const ConvResidual& residual, Tensor& y) const {
  ThreadPool* pool = ctx.pool;
  const int64_t n_batch = x.batch();
  const int64_t mg = m_ / group_, steps = elements();
  const int64_t s_out = win.out_size();
  const int64_t mr = g_.mr, nr = g_.nr;
  const size_t es = dtype_size(g_.storage), ab = panel_type_bytes(g_.a_panel),
               bb = panel_type_bytes(g_.b_panel);
  int64_t strips = std::clamp<int64_t>(
      kPanelBudget / std::max<int64_t>(1, steps * nr * static_cast<int64_t>(bb)), 1,
      kMaxStripsPerTile);
  strips = std::min(strips, ceil_div(s_out, nr));
  const int64_t tile_cols = strips * nr, tiles = ceil_div(s_out, tile_cols);
  const int64_t mblocks = ceil_div(mg, mr);
  // Few tiles (deep layers, small inputs): split the output channels too, so every thread works.
  const int64_t threads = pool ? pool->size() : 1, base = n_batch * group_ * tiles;
  int64_t mchunk = mblocks;
  if (base < 4 * threads)
    mchunk = ceil_div(mblocks, std::min(mblocks, ceil_div(4 * threads, base)));
  const int64_t msplit = ceil_div(mblocks, mchunk), items = base * msplit;
  const std::vector<int64_t> offsets = panel_offsets(g_, steps * g_.k_pack);

  // Short output rows: the tiles pack from a zero-padded copy of X.
  const int64_t ext[3] = {win.padded(0), win.padded(1), win.padded(2)};
  const int64_t ext_vol = ext[0] * ext[1] * ext[2];
  const int64_t padded_bytes = n_batch * x.channels() * ext_vol * static_cast<int64_t>(es);
  const bool from_padded = win.out[2] <= kShortRow && padded_bytes <= kPaddedBudget;
  PanelBuffer padded(from_padded ? static_cast<size_t>(padded_bytes) : 0, ctx.scratch);
  if (from_padded) pad_input(ctx, win, x, ext, es, padded.data());

  uint8_t* yb = static_cast<uint8_t*>(y.raw());
  const int64_t ys = static_cast<int64_t>(dtype_size(y.dtype()));
  auto work = [&](int64_t begin, int64_t end) {
    PanelBuffer panel(static_cast<size_t>(steps * tile_cols) * bb, ctx.scratch);
    std::vector<int64_t> index(from_padded ? static_cast<size_t>(tile_cols) : 0);
    std::vector<uint8_t> row(from_padded ? static_cast<size_t>(tile_cols) * es : 0);
    std::vector<uint8_t> scratch(static_cast<size_t>(nr) * es);
    std::vector<ColumnRun> runs;
    int64_t packed = -1;
    // fp16-kept panels: the item's blocks of output channels widened here, at most
    // APanels::widen_budget() bytes (one MR block at least) at a time.
    const size_t block_bytes = static_cast<size_t>(mr * steps) * ab;
    const int64_t wblocks = a_.blocks_at_once(static_cast<int64_t>(block_bytes), mchunk);
    PanelBuffer widened = a_.scratch(static_cast<size_t>(wblocks) * block_bytes, ctx);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t ms = item % msplit, rest = item / msplit;
      const int64_t tile = rest % tiles, grp = (rest / tiles) % group_, n = rest / tiles / group_;
      const int64_t p0 = tile * tile_cols, cols = std::min(tile_cols, s_out - p0);
      if (rest != packed && from_padded) {
        const int64_t ow = win.out[2], oh = win.out[1];
        for (int64_t q = 0; q < cols; ++q) {
          const int64_t p = p0 + q, ox = p % ow, oy = p / ow % oh, oz = p / (ow * oh);
          index[static_cast<size_t>(q)] =
              (oz * win.stride[0] * ext[1] + oy * win.stride[1]) * ext[2] + ox * win.stride[2];
        }
        pack_im2col_padded(
            g_, win,
            padded.data() + (n * x.channels() + grp * cg_) * ext_vol * static_cast<int64_t>(es),
            ext, cg_, tap_pairs_, cols, index.data(), panel.data(), row.data());
      } else if (rest != packed) {
        column_runs(win, p0, cols, nr, runs);
        pack_im2col_runs(g_, win, x, n, grp * cg_, cg_, tap_pairs_, cols, runs, panel.data(),
                         scratch.data());
      }
      packed = rest;
      const int64_t mb_end = std::min(mblocks, (ms + 1) * mchunk);
      for (int64_t w0 = ms * mchunk; w0 < mb_end; w0 += wblocks) {
        const int64_t w1 = std::min(mb_end, w0 + wblocks);
        // The panels of blocks [w0, w1) of the group, kept or widened.
        const uint8_t* a_w0 =
            a_.range(grp * a_group_bytes_ + static_cast<size_t>(w0) * block_bytes,
                     static_cast<size_t>(w1 - w0) * block_bytes, widened.data(), ctx, false);
        for (int64_t st = 0; st * nr < cols; ++st) {
          const uint8_t* b = panel.data() + st * steps * nr * bb;
          const size_t nc = static_cast<size_t>(std::min(nr, cols - st * nr));
          for (int64_t mb = w0; mb < w1; ++mb) {
            const int64_t m0 = grp * mg + mb * mr;
            const int64_t at = (n * m_ + m0) * s_out + p0 + st * nr;
            g_.ukernel(static_cast<size_t>(std::min(mr, mg - mb * mr)), nc,
                       static_cast<size_t>(steps), a_w0 + (mb - w0) * block_bytes, b,
                       offsets.data(), yb + at * ys, static_cast<size_t>(s_out),
                       params(m0, residual ? residual.at(n, at) : nullptr, y));
          }
        }
      }
    }
  };
  split_items(pool, items, work);
}

}  // namespace voxrt::cpu
