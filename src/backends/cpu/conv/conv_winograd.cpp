#include "backends/cpu/conv/conv_winograd.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "backends/cpu/kernels/softmax/softmax.h"
#include "backends/ref/ops/fused.h"
#include "runtime/thread_pool.h"

namespace voxrt::cpu {

namespace {

// G, the weight transform along one axis: 4 x 3 for F(2, 3), 6 x 3 for F(4, 3).
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
// F(4, 3)'s rows are multiplied by 4, 6, 6, 24, 24 and 1, and A^T's columns divided by them
// (kernels/winograd/winograd_impl.h, at6): transformed weights as large as the weights, not down
// to 1/24^2 of them where fp16 keeps them (2D's deep layers; 1/576 of a weight of 0.01 is below
// fp16's least normal value, 6.1e-5).
constexpr double kG43[6][3] = {{1, 0, 0}, {-1, -1, -1}, {-1, 1, -1},
                               {1, 2, 4}, {1, -2, 4},   {0, 0, 1}};

// Output channels a block's products are made and transformed back for at a time: the products'
// scratch stays at positions x this x NR values (half of it in 3D's F(4, 3), with 216 positions).
constexpr int64_t kChannelChunk = 64;

// Floats between the positions' panels past the panels themselves: consecutive positions then
// start on different cache sets (panels of 32 x 48 floats, 6 KiB, put all 64 positions in two sets
// of the L1, and the transforms, which read or write every position of a lane vector together,
// missed it on every access).
constexpr int64_t kPositionPad = 16;

// One run of a block's tiles along the width: batch item n, tile plane tz and row ty, tiles [tx,
// tx + len), in lanes [lane, lane + len) of the block.
struct Segment {
  int64_t n, tz, ty, tx, len, lane;
};

// A thread's slots of made rows (ConvWinograd::run): rows [y0, y1) of depth plane iz of batch
// item n, for every made channel. A block asks for the slots it reads (after next_block()); the
// slot asked for the longest ago is made over when one is missing, never one the block holds.
class MadeRows {
 public:
  struct Key {
    int64_t n, iz, y0, y1;
    bool operator==(const Key&) const = default;
  };
  MadeRows(int64_t slots, int64_t slot_bytes, ScratchCache* cache)
      : bytes_(static_cast<size_t>(slot_bytes)),
        keys_(static_cast<size_t>(slots)),
        used_(static_cast<size_t>(slots), -1),
        buf_(slots > 0 ? PanelBuffer(bytes_ * static_cast<size_t>(slots), cache) : PanelBuffer()) {}
  void next_block() { ++block_; }
  /// The slot holding `key`'s rows, made by make(slot) where no slot holds them.
  template <class Make>
  const uint8_t* find(const Key& key, Make&& make) {
    size_t oldest = 0;
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (used_[i] >= 0 && keys_[i] == key) {
        used_[i] = block_;
        return buf_.data() + i * bytes_;
      }
      if (used_[i] < used_[oldest]) oldest = i;
    }
    if (used_.empty() || used_[oldest] == block_)
      throw Error("ConvWinograd: a block reads more made planes than its slots");
    used_[oldest] = -1;  // until made
    make(buf_.data() + oldest * bytes_);
    keys_[oldest] = key;
    used_[oldest] = block_;
    return buf_.data() + oldest * bytes_;
  }

 private:
  size_t bytes_;
  std::vector<Key> keys_;
  std::vector<int64_t> used_;  // the last block that asked for each slot, -1 where none holds rows
  PanelBuffer buf_;
  int64_t block_ = 0;  // blocks begun
};

}  // namespace

int64_t ConvWinograd::min_pairs(size_t dims, bool narrow, bool f43) {
  if (f43) return narrow ? (dims == 3 ? 8 * 8 : 8 * 16) : 32 * 32;
  if (dims == 2) return narrow ? 32 * 32 : 64 * 64;
  return narrow ? 16 * 16 : 16 * 32;
}

namespace {
// Whether an expected output `y` (null: not known) of `dims` spatial axes has at least 24^3
// positions an item in 3D, 32^2 in 2D, or is not known.
bool unknown_or_large(const Shape* y, size_t dims) {
  if (!y || y->size() != dims + 2) return true;
  int64_t positions = 1;
  for (size_t d = 2; d < y->size(); ++d) positions *= (*y)[d];
  return positions >= (dims == 3 ? 24 * 24 * 24 : 32 * 32);
}
}  // namespace

bool ConvWinograd::pays_over_fast(size_t dims, int64_t m, int64_t c, bool fp16_arith,
                                  const Shape* y) {
  if (!fp16_arith) return m * c >= (dims == 3 ? 16 * 16 : 64 * 64);
  return m * c >= (dims == 3 ? 32 * 64 : 64 * 64) && unknown_or_large(y, dims);
}

namespace {
std::atomic<int64_t> fp16_kept_pairs{256 * 256};
}  // namespace

int64_t ConvWinograd::fp16_kept_from() {
  return fp16_kept_pairs.load(std::memory_order_relaxed);
}

int64_t ConvWinograd::set_fp16_kept_from(int64_t pairs) {
  return fp16_kept_pairs.exchange(pairs);
}

bool ConvWinograd::narrow_fma(const GemmKernel& g) {
  return runs_on(g) < Isa::avx512 || cpu_features().avx512_split;
}

bool ConvWinograd::applies(const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                           const std::vector<int64_t>& dilations, int64_t group, int64_t m,
                           int64_t c, const GemmKernel& g, bool wide) {
  const bool four = !fp16_products(g) && f43(g.storage, kernel.size(), m, c, wide);
  const int64_t least = !four                ? kMinChannels
                        : kernel.size() == 3 ? kF43MinChannels3d
                                             : kF43MinChannels2d;
  if (kernel.size() < 2 || kernel.size() > 3 || group != 1 || m < least || c < least ||
      m * c < min_pairs(kernel.size(), narrow_fma(g), four) || m * c > kMaxPairs)
    return false;
  for (size_t d = 0; d < kernel.size(); ++d)
    if (kernel[d] != 3 || (!strides.empty() && strides[d] != 1) ||
        (!dilations.empty() && dilations[d] != 1))
      return false;
  if (fp16_products(g) && m * c < kMinPairsFp16Products) return false;
  return (f32_products(g) || fp16_products(g)) && g.nr <= kWinogradMaxLen &&
         winograd_kernels(g.storage, runs_on(g));
}

bool ConvWinograd::fp16_f23_pays(size_t dims, int64_t m, int64_t c, const Shape* y) {
  return m * c > kMinPairsFp16Products || unknown_or_large(y, dims);
}

bool ConvWinograd::f32_products(const GemmKernel& g) {
  return g.a_panel == PanelType::f32 && g.b_panel == PanelType::f32 && g.k_pack == 1 &&
         g.k_carry == 0;
}

bool ConvWinograd::fp16_products(const GemmKernel& g) {
  return g.k_carry > 0 && g.a_panel == PanelType::f16_pair && g.b_panel == PanelType::f16 &&
         g.k_pack == 1;
}

ConvWinograd::ConvWinograd(const GemmKernel& g, Isa isa, const Tensor& w, const Tensor* bias,
                           ConvEpilogue e, ConvHead head, bool wide)
    : g_(g),
      k_(*winograd_kernels(g.storage, std::min(isa, runs_on(g)))),
      m_(w.dim(0)),
      c_(w.dim(1)),
      depth_(w.rank() == 5),
      f43_(!fp16_products(g) &&
           f43(g.storage, static_cast<size_t>(w.rank() - 2), w.dim(0), w.dim(1), wide)),
      tile_(f43_ ? 4 : 2),
      positions_((depth_ ? tile_ + 2 : 1) * (tile_ + 2) * (tile_ + 2)),
      e_(std::move(e)),
      head_(std::move(head)) {
  if (w.rank() < 4 || w.rank() > 5)
    throw Error("ConvWinograd: weights of shape " + shape_str(w.shape()) +
                ", expected (M, C, 3, 3) or (M, C, 3, 3, 3)");
  for (int64_t d = 2; d < w.rank(); ++d)
    if (w.dim(d) != 3)
      throw Error("ConvWinograd: weights of shape " + shape_str(w.shape()) + ", expected kernel 3");
  if (head_.channels > 0) {
    if (m_ > kMaxFusedHeadChannels || head_.w.size() != static_cast<size_t>(head_.channels * m_) ||
        (!head_.b.empty() && head_.b.size() != static_cast<size_t>(head_.channels)))
      throw Error("ConvWinograd: a head of " + std::to_string(head_.channels) + " channels after " +
                  std::to_string(m_) + " takes " + std::to_string(head_.channels * m_) +
                  " weights, and at most " + std::to_string(kMaxFusedHeadChannels) +
                  " channels before it");
    mix_f32_ = eltwise_kernels(DType::f32, g_.isa);
    softmax_f32_ = softmax_kernels(DType::f32, g_.isa);
  }
  u_bytes_ = packed_a_bytes(g_, m_, c_);
  // Kept as the row takes them, fp32, but for fp16 storage's deep layers (keeps_fp16): transformed
  // fp16 weights are not fp16 values, rounding them costs accuracy. fp16 products round them
  // anyway: kept in fp16, widened to pairs a chunk at a time.
  u_ = APanels(g_, u_bytes_ * static_cast<size_t>(positions_),
               fp16_products(g_) || keeps_fp16(g_.storage, m_, c_, f43_, depth_));
  // U[xi][m][c] = (G g G^T) over the axes, in double, a block of MR output channels at a time,
  // each position's micro-panel of the block packed from it: the copies beside the panels stay a
  // block's (a whole layer's transformed weights in floats were as large as the panels).
  const int64_t n = tile_ + 2;  // transform positions along each axis
  const int64_t taps = depth_ ? 27 : 9, pd = depth_ ? n : 1, kd = depth_ ? 3 : 1, mr = g_.mr;
  double gm[6][3];  // G, n x 3
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < 3; ++k) gm[i][k] = f43_ ? kG43[i][k] : kG[i][k];
  const size_t panel_bytes = packed_a_bytes(g_, mr, c_);
  std::vector<float> wf(static_cast<size_t>(mr * c_ * taps));
  std::vector<float> u(static_cast<size_t>(positions_ * mr * c_));
  for (int64_t m0 = 0; m0 < m_; m0 += mr) {
    const int64_t rows = std::min(mr, m_ - m0);
    weights_to_f32(w, m0 * c_ * taps, rows * c_ * taps, wf.data());
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t c = 0; c < c_; ++c) {
        // G along the width, then the height, then the depth, one axis at a time: 444 products a
        // pair in 3D's F(2, 3) where the whole sum took 1728 (nnU-Net 3d's session 1.8 s).
        const float* k = wf.data() + (m * c_ + c) * taps;
        double t1[3][3][6], t2[3][6][6];  // [a][b][r], [a][q][r]
        for (int64_t a = 0; a < kd; ++a)
          for (int64_t bb = 0; bb < 3; ++bb)
            for (int64_t r = 0; r < n; ++r) {
              const float* kr = k + (a * 3 + bb) * 3;
              t1[a][bb][r] = gm[r][0] * kr[0] + gm[r][1] * kr[1] + gm[r][2] * kr[2];
            }
        for (int64_t a = 0; a < kd; ++a)
          for (int64_t q = 0; q < n; ++q)
            for (int64_t r = 0; r < n; ++r)
              t2[a][q][r] =
                  gm[q][0] * t1[a][0][r] + gm[q][1] * t1[a][1][r] + gm[q][2] * t1[a][2][r];
        for (int64_t p = 0; p < pd; ++p)
          for (int64_t q = 0; q < n; ++q)
            for (int64_t r = 0; r < n; ++r) {
              const double v =
                  depth_ ? gm[p][0] * t2[0][q][r] + gm[p][1] * t2[1][q][r] + gm[p][2] * t2[2][q][r]
                         : t2[0][q][r];
              u[static_cast<size_t>((((p * n + q) * n + r) * rows + m) * c_ + c)] =
                  static_cast<float>(v);
            }
      }
    for (int64_t xi = 0; xi < positions_; ++xi)
      u_.fill(static_cast<size_t>(xi) * u_bytes_ + static_cast<size_t>(m0 / mr) * panel_bytes,
              panel_bytes,
              [&](uint8_t* dst) { pack_a(g_, u.data() + xi * rows * c_, c_, 1, rows, c_, dst); });
  }
  bias_ = bias ? weights_to_f32(*bias) : std::vector<float>(static_cast<size_t>(m_), 0.0f);
}

void ConvWinograd::run(const RunContext& ctx, const ConvWindow& win, const ConvInput& x,
                       const ConvResidual& residual, Tensor& y) const {
  if (x.channels() != c_)
    throw Error("ConvWinograd: X has " + std::to_string(x.channels()) + " channels, expected " +
                std::to_string(c_));
  const int64_t nr = g_.nr, mr = g_.mr;
  const int64_t od = win.out[0], oh = win.out[1], ow = win.out[2];
  const int64_t id = win.in[0], ih = win.in[1], iw = win.in[2];
  const WinogradForm& f = form();
  const int64_t te = tile_, n = te + 2;  // a tile's outputs and inputs along each axis
  const int64_t td = depth_ ? ceil_div(od, te) : od, th = ceil_div(oh, te), tw = ceil_div(ow, te);
  const int64_t per_item = td * th * tw, total = x.batch() * per_item;
  const int64_t blocks = ceil_div(total, nr);
  const int64_t stride = ceil_div(nr, kWinogradLanePad) * kWinogradLanePad + kWinogradLanePad;
  const int64_t rows = depth_ ? n * n : n;  // input rows of a tile
  // With a head, every output channel in one chunk: the head mixes them all.
  const int64_t chunk =
      head_.channels > 0
          ? m_
          : std::min(m_, std::max<int64_t>(
                             1, (f43_ && depth_ ? kChannelChunk / 2 : kChannelChunk) / mr) *
                             mr);
  if (y.dtype() != g_.storage && y.dtype() != DType::f32)
    throw Error("ConvWinograd: Y of dtype " + std::string(dtype_name(y.dtype())) +
                ", expected the storage's or fp32");
  const int64_t es = static_cast<int64_t>(dtype_size(g_.storage)),
                ys = static_cast<int64_t>(dtype_size(y.dtype()));
  // Y's rows stored as the storage dtype or as fp32 (a fused Cast of fp16 storage); with a head,
  // a block's M channels go to fp32 rows of the thread's, their positions one after the other.
  const auto put_row = y.dtype() == g_.storage ? f.output_row : f.output_row_f32;
  const int64_t mh = head_.channels;
  if (y.dim(1) != (mh > 0 ? mh : m_))
    throw Error("ConvWinograd: Y has " + std::to_string(y.dim(1)) + " channels, expected " +
                std::to_string(mh > 0 ? mh : m_));
  const int64_t block_outputs = nr * te * te * (depth_ ? te : 1);
  const std::vector<int64_t> offsets = panel_offsets(g_, c_);
  const size_t panel_bytes = packed_a_bytes(g_, mr, c_);  // one micro-panel of MR channels
  // Floats from one position's B panel (products) to the next's.
  const int64_t v_step = c_ * nr + kPositionPad, m_step = chunk * nr + kPositionPad;
  const int64_t out_plane = oh * ow, out_vol = od * out_plane;
  uint8_t* yb = static_cast<uint8_t*>(y.raw());
  const CastKernels& cast = cast_kernels(g_.isa);
  GemmParams gp;
  gp.f32_out = true;
  // Channels of parts made where they are read (upsampled, or a transposed convolution's output):
  // each one's index among them, -1 for those read as stored. Their rows are made into slots of
  // the thread's (MadeRows): in 3D whole depth planes, kept from block to block, so that each is
  // made once as a thread's tiles go down the depth (a block's tiles read n planes and the next
  // tile plane's te of them more; a transposed part makes depth planes two at a time, every
  // channel together, and the planes read in order ask for each pair twice in a row); in 2D a tile
  // row's n input rows, kept likewise, so that consecutive blocks share the tile row between them
  // (a plane per thread would be the whole part, and a block's whole run of rows, made for each
  // block, made every row about three times over).
  std::vector<int64_t> made(static_cast<size_t>(c_), -1);
  int64_t made_channels = 0;
  for (int64_t c = 0; x.upsampled() && c < c_; ++c)
    if (!x.in_place(c)) made[static_cast<size_t>(c)] = made_channels++;
  const int64_t row_bytes = iw * es, planes_read = depth_ ? n : 1;
  // A block's tiles lie in at most this many tile rows and tile planes (and batch items).
  const int64_t tile_rows = std::min(nr, ceil_div(nr, tw) + 1);
  const int64_t tile_planes = std::min(nr, ceil_div(nr, th * tw) + 1);
  // Slots: 3D, the planes a block reads, a run of k tile planes of a batch item te k + 2 (at most
  // the item's planes); 2D, the tile rows a block reads, n rows each.
  const int64_t items = std::min({x.batch(), tile_planes, ceil_div(nr, per_item) + 1});
  const int64_t slot_rows = depth_ ? ih : std::min(ih, n);
  const int64_t slots = made_channels == 0 ? 0
                        : depth_           ? std::min(te * tile_planes + 2 * items, items * id)
                                           : tile_rows;
  // Where every thread's slots would take more bytes than X made whole (layers a few planes deep
  // of wide planes, small 2D ones), X is made whole (ConvInput::joined) and read as stored, so
  // that the slots never take more than that.
  const int64_t threads = ctx.pool ? ctx.pool->size() : 1;
  if (made_channels > 0 && slots * made_channels * slot_rows * threads > x.batch() * c_ * id * ih) {
    const Tensor whole = x.joined();
    run(ctx, win, ConvInput(whole), residual, y);
    return;
  }
  auto work = [&](RangeCursor& cur) {
    ScratchCache* own = ctx.own_scratch(cur.thread());
    // Per thread: the B panels of every position (C steps x NR lanes each), the products of a
    // chunk of output channels, the width-transformed rows of one input channel, the inverse
    // transforms of one output channel.
    // With fp16 products V holds fp16 values, made a channel at a time in fp32 (`vc`).
    const bool halves = fp16_products(g_);
    const int64_t vh_floats = ceil_div(positions_ * v_step, 2);  // V's fp16 values
    const size_t v_floats =
        static_cast<size_t>(halves ? vh_floats + positions_ * nr : positions_ * v_step);
    const size_t m_floats = static_cast<size_t>(positions_ * m_step + kWinogradLanePad);
    const size_t t_floats = static_cast<size_t>(rows * n * stride);
    PanelBuffer buf((v_floats + m_floats + 2 * t_floats) * sizeof(float), own);
    MadeRows made_rows(slots, made_channels * slot_rows * row_bytes, own);
    // Per segment and plane it reads: the slot holding its made rows (null outside X), and the
    // first row and rows of the segment's run the slot holds.
    std::vector<const uint8_t*> run_rows;
    std::vector<int64_t> run_y0, run_len;
    float* v = reinterpret_cast<float*>(buf.data());
    uint16_t* vh = reinterpret_cast<uint16_t*>(v);
    float* vc = v + vh_floats;  // fp16 products: one channel's, fp32
    float* prod = v + v_floats;
    float* tmp = prod + m_floats;
    float* o = tmp + t_floats;
    // With a head: the block's M channels, then the head's, block_outputs floats a channel.
    PanelBuffer head_rows(
        mh > 0 ? static_cast<size_t>((m_ + mh) * block_outputs) * sizeof(float) : 0, own);
    float* mid = reinterpret_cast<float*>(head_rows.data());
    float* mixed = mid + m_ * block_outputs;
    std::vector<Segment> segs;
    std::vector<const void*> row(static_cast<size_t>(rows));
    // A chunk's panels at one position, widened where the transformed weights are kept in fp16.
    PanelBuffer wide =
        u_.narrow() ? PanelBuffer(static_cast<size_t>(ceil_div(chunk, mr)) * panel_bytes, own)
                    : PanelBuffer();
    // Block b's runs of tiles along the width.
    auto segments = [&](int64_t b, std::vector<Segment>& out) {
      out.clear();
      const int64_t t0 = b * nr, nt = std::min(nr, total - t0);
      for (int64_t t = t0; t < t0 + nt;) {
        const int64_t n = t / per_item, r = t % per_item, tx = r % tw, ty = r / tw % th,
                      tz = r / tw / th;
        const int64_t len = std::min({tw - tx, t0 + nt - t, kWinogradMaxLen});
        out.push_back({n, tz, ty, tx, len, t - t0});
        t += len;
      }
    };
    // Finds or makes the rows the block's segments read of the made channels: per run of
    // segments in one batch item and tile plane (2D: tile row), rows [y0, y1) of each depth plane
    // it reads (3D: every row), channel by channel within a plane.
    auto stage = [&]() {
      made_rows.next_block();
      run_rows.assign(segs.size() * static_cast<size_t>(planes_read), nullptr);
      run_y0.assign(segs.size(), 0);
      run_len.assign(segs.size(), 0);
      for (size_t first = 0; first < segs.size();) {
        size_t last = first;
        while (last + 1 < segs.size() && segs[last + 1].n == segs[first].n &&
               segs[last + 1].tz == segs[first].tz &&
               (depth_ || segs[last + 1].ty == segs[first].ty))
          ++last;
        const Segment& s = segs[first];
        const int64_t y0 = depth_ ? 0 : std::max<int64_t>(0, te * s.ty - win.pad[1]),
                      y1 = depth_ ? ih : std::min(ih, te * s.ty - win.pad[1] + n);
        for (int64_t a = 0; a < planes_read && y1 > y0; ++a) {
          const int64_t iz = depth_ ? te * s.tz - win.pad[0] + a : s.tz;
          if (iz < 0 || iz >= id) continue;
          const uint8_t* slot = made_rows.find({s.n, iz, y0, y1}, [&](uint8_t* dst) {
            for (int64_t c = 0; c < c_; ++c) {
              const int64_t mc = made[static_cast<size_t>(c)];
              if (mc < 0) continue;
              uint8_t* to = dst + mc * (y1 - y0) * row_bytes;
              const uint8_t* from = x.depth_plane(s.n, c, iz, y0, y1, to);
              if (from != to) std::memcpy(to, from, static_cast<size_t>((y1 - y0) * row_bytes));
            }
          });
          for (size_t k = first; k <= last; ++k)
            run_rows[k * static_cast<size_t>(planes_read) + static_cast<size_t>(a)] = slot;
        }
        for (size_t k = first; k <= last; ++k) {
          run_y0[k] = y0;
          run_len[k] = y1 - y0;
        }
        first = last + 1;
      }
    };
    // fn(segment, dz, dy, cols, at) for each output row of the block inside Y, always in one
    // order (a head's rows follow it): (dz, dy) the row within the segment's tiles, `cols` its
    // values in Y, `at` its first element's offset within an output channel of its batch item.
    auto each_row = [&](auto&& fn) {
      for (const Segment& s : segs)
        for (int64_t dz = 0; dz < (depth_ ? te : 1); ++dz)
          for (int64_t dy = 0; dy < te; ++dy) {
            const int64_t oz = depth_ ? te * s.tz + dz : s.tz, oy = te * s.ty + dy;
            if (oz >= od || oy >= oh) continue;
            fn(s, dz, dy, std::min(te * s.len, ow - te * s.tx),
               oz * out_plane + oy * ow + te * s.tx);
          }
    };
    // The rows of channel c segment k reads (null outside X).
    auto rows_of = [&](size_t k, int64_t c) {
      const Segment& s = segs[k];
      const int64_t mc = made[static_cast<size_t>(c)];
      const uint8_t* plane = mc < 0 ? x.plane(s.n, c) : nullptr;
      for (int64_t a = 0; a < planes_read; ++a)
        for (int64_t bb = 0; bb < n; ++bb) {
          const int64_t iz = depth_ ? te * s.tz - win.pad[0] + a : s.tz;
          const int64_t iy = te * s.ty - win.pad[1] + bb;
          const uint8_t* r = nullptr;
          if (iz >= 0 && iz < id && iy >= 0 && iy < ih)
            r = mc < 0 ? plane + (iz * ih + iy) * row_bytes
                       : run_rows[k * static_cast<size_t>(planes_read) + static_cast<size_t>(a)] +
                             (mc * run_len[k] + iy - run_y0[k]) * row_bytes;
          row[static_cast<size_t>(a * n + bb)] = r;
        }
    };
    for (int64_t b = cur.next(); b >= 0; b = cur.next()) {
      const int64_t nt = std::min(nr, total - b * nr);
      segments(b, segs);
      if (made_channels > 0) stage();
      // Input transform, a channel at a time: each segment's rows, lanes past the block's tiles
      // zero (the gemms read whole panels), then the height and depth transforms.
      for (int64_t c = 0; c < c_; ++c) {
        for (size_t k = 0; k < segs.size(); ++k) {
          const Segment& s = segs[k];
          rows_of(k, c);
          f.input_rows(row.data(), rows, te * s.tx - win.pad[2], iw, s.len, tmp + s.lane, stride);
        }
        if (nt < nr) {
          std::fill(row.begin(), row.end(), nullptr);
          f.input_rows(row.data(), rows, 0, iw, nr - nt, tmp + nt, stride);
        }
        if (halves) {
          f.input_finish(tmp, stride, depth_, nr, vc, nr);
          for (int64_t xi = 0; xi < positions_; ++xi)
            cast.f32_to_f16(vc + xi * nr, vh + xi * v_step + c * nr, nr);
        } else {
          f.input_finish(tmp, stride, depth_, nr, v + c * nr, v_step);
        }
      }
      int64_t count = 0;  // with a head: the block's output positions inside Y
      for (int64_t m0 = 0; m0 < m_; m0 += chunk) {
        const int64_t mc = std::min(chunk, m_ - m0);
        for (int64_t xi = 0; xi < positions_; ++xi) {
          const size_t at =
              static_cast<size_t>(xi) * u_bytes_ + static_cast<size_t>(m0 / mr) * panel_bytes;
          const uint8_t* a = u_.kept() + at;
          if (u_.narrow()) {  // the chunk's panels at this position, widened
            u_.widen(at, static_cast<size_t>(ceil_div(mc, mr)) * panel_bytes, wide.data());
            a = wide.data();
          }
          for (int64_t mb = m0; mb < m0 + mc; mb += mr, a += panel_bytes)
            g_.ukernel(static_cast<size_t>(std::min(mr, m0 + mc - mb)), static_cast<size_t>(nt),
                       static_cast<size_t>(c_), a,
                       halves ? static_cast<const void*>(vh + xi * v_step)
                              : static_cast<const void*>(v + xi * v_step),
                       offsets.data(), prod + xi * m_step + (mb - m0) * nr, static_cast<size_t>(nr),
                       gp);
        }
        for (int64_t m = m0; m < m0 + mc; ++m) {
          f.output_gather(prod + (m - m0) * nr, m_step, depth_, nt, o, stride);
          ActParams act{e_.act, e_.slopes.empty() ? e_.alpha : e_.slopes[static_cast<size_t>(m)]};
          int64_t next = 0;  // a head's next position in the block
          each_row([&](const Segment& s, int64_t dz, int64_t dy, int64_t cols, int64_t at0) {
            const int64_t at = (s.n * m_ + m) * out_vol + at0;
            const float* from = o + (dz * te + dy) * n * stride + s.lane;
            const void* r = residual ? residual.at(s.n, at) : nullptr;
            const float b = bias_[static_cast<size_t>(m)];
            if (mh > 0) {
              f.output_row_f32(from, stride, s.len, cols, b, r, act, e_.residual_after_act,
                               mid + m * block_outputs + next);
              next += cols;
            } else {
              put_row(from, stride, s.len, cols, b, r, act, e_.residual_after_act, yb + at * ys);
            }
          });
          count = next;  // the same for every channel
        }
      }
      if (mh > 0) {  // the head's channels of the block's `count` positions, into Y
        mix_f32_->mix(mid, block_outputs, m_, head_.w.data(),
                      head_.b.empty() ? nullptr : head_.b.data(), mh, count, mixed, block_outputs);
        if (head_.softmax) softmax_f32_->strided(mixed, mixed, mh, block_outputs, count);
        int64_t next = 0;
        each_row([&](const Segment& s, int64_t, int64_t, int64_t cols, int64_t at0) {
          for (int64_t h = 0; h < mh; ++h) {
            const float* from = mixed + h * block_outputs + next;
            uint8_t* to = yb + ((s.n * mh + h) * out_vol + at0) * ys;
            if (y.dtype() == DType::f32)
              std::memcpy(to, from, static_cast<size_t>(cols) * sizeof(float));
            else
              cast.f32_to_f16(from, to, cols);
          }
          next += cols;
        });
      }
    }
  };
  if (ctx.pool)
    ctx.pool->parallel_ranges(blocks, work);
  else {
    RangeCursor cur(blocks);
    work(cur);
  }
}

}  // namespace voxrt::cpu
