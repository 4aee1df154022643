// Convolution and transposed convolution on the gemm microkernels, in plain NCDHW. Per batch item
// and group, Conv is C[oc, spatial] = W[oc, ic * kernel] x col[ic * kernel, spatial]: the weights
// are packed once here; col is never formed where the width stride is 1 (the kernel reads input
// rows of a zero-padded copy through a table of per-step offsets), and is packed per spatial tile
// into per-thread scratch otherwise. The microkernel writes output rows in place, epilogue fused.
//
//   ConvGemm conv(*find_gemm_kernel(max_isa(), DType::f32), w, &b, group, epilogue);
//   conv.run(RunContext{&pool, &scratch}, conv_window(geometry), x, nullptr, y);
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/driver_util.h"
#include "backends/cpu/kernels/eltwise/eltwise.h"
#include "backends/cpu/kernels/gemm/gemm.h"
#include "backends/cpu/kernels/resize/resize.h"
#include "backends/cpu/kernels/softmax/softmax.h"
#include "backends/ref/ops/fused.h"
#include "backends/ref/ops/window.h"
#include "runtime/scratch.h"
#include "runtime/thread_pool.h"
#include "voxrt/tensor.h"

namespace voxrt::cpu {

/// Window of one run over three spatial axes (depth, height, width); 1D and 2D convolutions get
/// leading axes of size 1.
struct ConvWindow {
  int64_t in[3], out[3], kernel[3], stride[3], dilation[3], pad[3];  // pad: at the start
  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
  /// Extent of axis d of X zero-padded so that every tap of every output position lands inside.
  int64_t padded(int d) const {
    return std::max(in[d] + pad[d], (out[d] - 1) * stride[d] + (kernel[d] - 1) * dilation[d] + 1);
  }
};

/// The window of a resolved reference geometry of spatial rank 1 to 3.
ConvWindow conv_window(const ref::Geometry& g);

class ConvTransposeGemm;

/// Part `part` of a ConvInput is `up`'s output over the tensor given as that part: a
/// ConvTranspose of kernel and stride 2 along every spatial axis (ConvTransposeGemm::planes), run
/// with ctx's scratch on the thread that reads a plane.
struct TransposedPart {
  int64_t part = -1;
  const ConvTransposeGemm* up = nullptr;
  RunContext ctx;
};

/// X of a convolution: one tensor, or several whose channels follow each other (a channel
/// Concat the graph passes fused into the convolution, so it is never written), or `channels`
/// channels of one tensor from channel `from` on (an output of a channel Split, read in place
/// from the Split's input). The parts share dtype and batch, and spatial shape as X reads them:
/// a part may be stored at half X's size along each spatial axis and read upsampled by 2 (a
/// Resize fused into the convolution, x_upsample), its rows made where they are read, or be the
/// output of a transposed convolution of kernel and stride 2 of the tensor given (x_transposed),
/// its depth planes made where they are read.
class ConvInput {
 public:
  ConvInput(const Tensor& x);  // NOLINT(google-explicit-constructor): one part
  explicit ConvInput(std::vector<const Tensor*> parts);
  ConvInput(const Tensor& x, int64_t from, int64_t channels);
  /// Part p read upsampled in modes[p] (none: as stored), its rows made by `k`, the resize
  /// kernels of the parts' dtype.
  ConvInput(std::vector<const Tensor*> parts, std::vector<Upsample> modes, const ResizeKernels* k,
            TransposedPart transposed = {});
  /// X's spatial dims as the convolution reads these parts in these modes (none where empty),
  /// part `transposed` (if any) a transposed convolution's input: those of the first part read
  /// as stored, else part 0's doubled (every part upsampled or transposed by 2).
  static std::vector<int64_t> spatial_as_read(const std::vector<const Tensor*>& parts,
                                              const std::vector<Upsample>& modes,
                                              int64_t transposed = -1);
  int64_t batch() const { return parts_[0]->dim(0); }
  int64_t channels() const { return first_.back(); }
  /// One tensor, whole, read as stored: part(0) is X.
  bool single() const {
    return parts_.size() == 1 && from_ == 0 && channels() == parts_[0]->dim(1) && !upsampled();
  }
  /// Some part is read upsampled or transposed: plane() refuses it, depth_plane() makes its rows.
  bool upsampled() const { return !modes_.empty() || transposed_.part >= 0; }
  /// A part is a transposed convolution's output (its planes made a channel-complete pair at a
  /// time: its readers go plane by plane, every channel of a plane together).
  bool transposed() const { return transposed_.part >= 0; }
  /// A part is read upsampled or resized (x_upsample): depth_plane() writes its rows into `buf`.
  bool resized() const { return !modes_.empty(); }
  const Tensor& part(size_t i) const { return *parts_[i]; }
  /// Channel c is read as stored (plane() gives it), not made where it is read.
  bool in_place(int64_t c) const { return !made(part_of(c)); }
  /// Channel c of batch item n: its first element (a part read as stored).
  const uint8_t* plane(int64_t n, int64_t c) const;
  /// Rows [iy0, iy1) of depth plane iz (the spatial axes padded in front to three) of channel c
  /// of batch item n, row iy at the pointer returned + (iy - iy0) * the row's bytes: a part read
  /// as stored gives its own memory; an upsampled one writes them into `buf`, depth_plane_bytes()
  /// long, and gives buf; a transposed one gives the calling thread's rows of every channel of
  /// the part, made for the last (n, depth plane pair, rows) it asked for (a call per channel
  /// reuses them).
  const uint8_t* depth_plane(int64_t n, int64_t c, int64_t iz, int64_t iy0, int64_t iy1,
                             uint8_t* buf) const;
  /// Bytes of one depth plane (H, W) of a channel as X reads it: depth_plane()'s `buf`.
  int64_t depth_plane_bytes() const { return plane_bytes_ / dims3_[0]; }
  /// Bytes of one row (W) of a channel as X reads it.
  int64_t row_bytes() const {
    return dims3_[2] * static_cast<int64_t>(dtype_size(parts_[0]->dtype()));
  }
  /// X's channels in one new tensor (upsampled and transposed parts made whole).
  Tensor joined() const;

 private:
  size_t part_of(int64_t c) const;
  /// Part p is made where it is read (upsampled or transposed), not read as stored.
  bool made(size_t p) const {
    return static_cast<int64_t>(p) == transposed_.part ||
           (!modes_.empty() && modes_[p] != Upsample::none);
  }
  const uint8_t* transposed_plane(int64_t n, int64_t m, int64_t iz, int64_t iy0, int64_t iy1) const;
  std::vector<const Tensor*> parts_;
  std::vector<int64_t> first_;  // first channel of each part, then the channel count
  int64_t from_ = 0;            // the first channel of part 0 that X takes
  int64_t plane_bytes_ = 0;     // of a channel's (D, H, W) volume as X reads it
  int64_t dims3_[3] = {1, 1, 1};  // X's spatial axes as read, padded in front to three
  int64_t axes_ = 0;              // spatial axes of X (the last axes_ of the three)
  std::vector<Upsample> modes_;   // per part, or empty where none is upsampled
  const ResizeKernels* resize_ = nullptr;
  // Per part interpolated along the width by tables (the linear modes but half-pixel's, whose
  // row kernel has its weights built in): each output column's two input columns and weights.
  struct WidthTable {
    std::vector<int32_t> x0, x1;
    std::vector<float> w0, w1;
  };
  std::vector<WidthTable> width_;
  TransposedPart transposed_;
  ConvWindow up_window_{};  // the transposed part's ConvTranspose
  struct PlaneCaches;       // each thread's last planes of the transposed part
  std::shared_ptr<PlaneCaches> caches_;
};

/// A convolution's residual: Y's shape, or Y's M channels from channel `from` of a tensor with
/// more (an output of a channel Split, read in place from the Split's input).
class ConvResidual {
 public:
  ConvResidual() = default;
  ConvResidual(const Tensor* r);  // NOLINT(google-explicit-constructor): Y's shape, or none
  ConvResidual(const Tensor& r, int64_t from, int64_t m);
  explicit operator bool() const { return base_ != nullptr; }
  /// The residual's element beside Y's element `at` (an index into Y, of batch item n).
  const uint8_t* at(int64_t n, int64_t at) const { return base_ + (at + n * skip_) * es_; }

 private:
  const uint8_t* base_ = nullptr;  // channel `from` of batch item 0
  int64_t skip_ = 0;               // elements a batch item holds beyond Y's
  int64_t es_ = 0;
};

struct ConvEpilogue {
  Activation act = Activation::none;
  float alpha = 0.01f;
  std::vector<float> slopes;  // leaky_relu: a slope per output channel (ConvGemm only), or empty
  bool residual_after_act = false;  // y = act(conv(x)) + residual (ConvGemm only)
};

/// A 1x1 convolution after a ConvGemm's or ConvWinograd's epilogue (a FusedConv's head,
/// backends/ref/ops/fused.h): `channels` output channels mixed from the convolution's M in fp32,
/// then softmax over them where `softmax`. The M channels are never stored where the direct path
/// or Winograd's form runs the layer.
struct ConvHead {
  int64_t channels = 0;  // 0: no head
  std::vector<float> w;  // channels x M
  std::vector<float> b;  // channels values, or empty
  bool softmax = false;
};

/// Owned, 64-byte aligned bytes for packed panels.
/// With a ScratchCache, the bytes come from it and go back to it (per-call scratch); without,
/// they are the buffer's own.
class PanelBuffer {
 public:
  PanelBuffer() = default;
  explicit PanelBuffer(size_t bytes, ScratchCache* cache = nullptr);
  /// The buffer's own bytes for packed weights, written whole once: from 64 KiB up a mapping of
  /// its own made with every page present (map_pages), rather than a page fault at a time as the
  /// packing first writes each page.
  static PanelBuffer packed(size_t bytes);
  uint8_t* data() const { return data_.get(); }
  size_t size() const { return bytes_; }

 private:
  struct Free {
    Free() : cache(nullptr), capacity(0) {}
    Free(ScratchCache* c, size_t n) : cache(c), capacity(n) {}
    ScratchCache* cache;
    size_t capacity;  // a cache block's, or without a cache a mapping's (0: from operator new)
    void operator()(uint8_t* p) const;
  };

  void poison();  // Debug builds: every byte 0xff until written

  std::unique_ptr<uint8_t, Free> data_;
  size_t bytes_ = 0;
};

/// a / b rounded up, for a >= 0 and b > 0.
inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

/// Zeroes bytes [p, q) of a padded plane that ends at `end`, which copies fill around next. Runs of
/// 16 bytes or less (pads of one or two elements) are one 16-byte store, which may run on into
/// the data the copies write next but never past the plane (another thread's): with pads of one
/// element the memset calls were most of the zeroing.
inline void zero_run(uint8_t* p, uint8_t* q, const uint8_t* end) {
  static constexpr uint8_t kZeros[16] = {};
  if (q <= p) return;
  if (q - p <= 16 && end - p >= 16)
    std::memcpy(p, kZeros, 16);
  else
    std::memset(p, 0, static_cast<size_t>(q - p));
}

/// Output planes a thread's own depth range should hold at least (the owned rings and slabs of
/// ConvGemm::run_direct and ConvTransposeDirect::run). Rings of their own against one shared
/// ring, two threads on the Intel Xeon, `voxrt bench`, three alternations: unet3d_monai 19.9 /
/// 19.5 / 19.3 -> 18.0 / 17.8 / 17.6 ms, nnunet3d 100.3 / 99.4 / 101.3 -> 96.9 / 96.8 / 98.5,
/// unet3d_resize 70.7 / 69.3 / 69.4 -> 68.0 / 67.3 / 68.1; conv_bench, 3->3 head at 96^3
/// 145-152 -> 196-200 GFLOP/s. The value 4 itself was not tuned against others (a guess that
/// keeps a range's two-plane halo a small share of its copies).
inline constexpr int64_t kMinOwnedPlanes = 4;

/// Buffers of `bytes` whose bytes from `zeros_from` on are zeros (what strips read past the last
/// plane). `shared()` (called by one thread, outside the parallel work): one the threads fill
/// and read together, from the run's scratch. A Lease: one a thread fills and reads alone, from
/// that thread's own scratch (RunContext::own_scratch), so that layer after layer its rings lie
/// on lines its own core wrote. Taken from a cache all
/// threads share, a thread's ring lay half the time on lines the other core wrote for another
/// layer (the slots' offsets follow each layer's size), which costs where the cores sit apart:
/// Zen 5 VM, vCPUs a cache line's 430-470 ns round trip apart, unet3d_monai on two threads,
/// eight alternations, 14.06-14.50 -> 13.33-14.22 ms; on one die (93-140 ns) level
/// (docs/PERFORMANCE.md, "each thread's own rings"). Before fecad97, `BufferSlots`.
class RingBuffers {
 public:
  RingBuffers(size_t bytes, size_t zeros_from, const RunContext& ctx)
      : bytes_(bytes), zeros_from_(std::min(zeros_from, bytes)), ctx_(ctx) {}
  uint8_t* shared() {
    if (!shared_.data()) shared_ = make(ctx_.scratch);
    return shared_.data();
  }

  class Lease {
   public:
    Lease(RingBuffers& s, const RangeCursor& c) : buf_(s.make(s.ctx_.own_scratch(c.thread()))) {}
    uint8_t* data() const { return buf_.data(); }

   private:
    PanelBuffer buf_;
  };

 private:
  PanelBuffer make(ScratchCache* cache) const {
    PanelBuffer b(bytes_, cache);
    std::memset(b.data() + zeros_from_, 0, bytes_ - zeros_from_);
    return b;
  }
  size_t bytes_, zeros_from_;
  const RunContext& ctx_;
  PanelBuffer shared_;
};

/// A layer's packed A panels (weights) in its row's panel layout. Rows of fp16 storage whose
/// panel elements take four bytes, fp32 (fp32 arithmetic with F16C: AVX2 and AVX-512 without
/// AVX512-FP16) or fp16 pairs (AVX512-FP16, each value twice for a 32-bit broadcast), keep them
/// as fp16 between runs, which the weights of an fp16 model are, and the drivers widen them into
/// scratch as they go (a block of output channels at a time where the layer is large): an fp16
/// model's weights then take half the bytes of fp32 ones on every CPU.
class APanels {
 public:
  APanels() = default;
  /// `bytes` of panels in `g`'s layout. `fp16_values`: the values packed are fp16 weights (or
  /// zeros), so fp16 storage may keep them narrowed; otherwise they are kept as the row takes
  /// them.
  APanels(const GemmKernel& g, size_t bytes, bool fp16_values = true);
  /// Writes bytes [offset, offset + bytes) of the layout: `pack(dst)` writes them in the row's
  /// layout at dst (pack_a), here or into a staging copy narrowed to fp16.
  template <class Pack>
  void fill(size_t offset, size_t bytes, Pack pack) {
    if (!narrow_) {
      pack(kept_.data() + offset);
      return;
    }
    std::vector<float> staging(bytes / sizeof(float));
    pack(reinterpret_cast<uint8_t*>(staging.data()));
    narrow(offset, staging);
  }
  /// Bytes held between calls.
  size_t size() const { return kept_.size(); }
  /// Whether the panels are kept as fp16 and must be widened for the kernels.
  bool narrow() const { return narrow_; }
  /// The kept panels: the row's layout where !narrow().
  const uint8_t* kept() const { return kept_.data(); }
  /// Bytes [offset, offset + bytes) of the layout, widened to the row's elements at dst (narrow()
  /// only).
  void widen(size_t offset, size_t bytes, uint8_t* dst) const;
  /// Bytes [offset, offset + bytes) of the layout for the kernels: the kept ones, or widened into
  /// `widened` (on ctx's pool when `parallel`, else by the calling thread).
  const uint8_t* range(size_t offset, size_t bytes, uint8_t* widened, const RunContext& ctx,
                       bool parallel) const;
  /// The panels in the row's layout, for one call.
  class Open {
   public:
    const uint8_t* data() const { return data_; }

   private:
    friend class APanels;
    const uint8_t* data_ = nullptr;
    PanelBuffer widened_;  // scratch of the call, where the kept panels are fp16
  };
  /// The panels for one call: the kept ones, or all of them widened into scratch by the pool.
  Open open(const RunContext& ctx) const;
  /// Widened panels take at most about this many bytes at a time where the driver can choose
  /// (512 KiB; one MR block at least).
  static size_t widen_budget();
  /// Sets widen_budget() and returns the previous one: tests make it small, so that small
  /// layers take the blocked widening large ones take.
  static size_t set_widen_budget(size_t bytes);
  /// Where range() widens up to `bytes` of panels: a scratch block from RunContext::panels in
  /// whole widen_budget()s, so that the layers' blocks share a few sizes the cache reuses instead
  /// of piling up a block per layer (pages past what a layer writes are never touched); an empty
  /// buffer where the panels are kept in the row's layout.
  PanelBuffer scratch(size_t bytes, const RunContext& ctx) const;
  /// How many blocks of `block_bytes` a driver takes at a time, at most `all`: all of them where
  /// the panels are kept in the row's layout, else as many as widen_budget() holds (one at least).
  int64_t blocks_at_once(int64_t block_bytes, int64_t all) const;

 private:
  void narrow(size_t offset, const std::vector<float>& values);

  const GemmKernel* g_ = nullptr;
  bool narrow_ = false;  // kept as fp16, widened by open()
  size_t bytes_ = 0;     // in the row's layout
  PanelBuffer kept_;
};

/// Elements [begin, begin + count) of a float32 or float16 weight tensor, widened to float32
/// into `out`. Packing reads weights through it a block at a time: whole float copies of a layer's
/// weights were the peak of a Session's load (a 256->256 3x3x3 conv holds 1.8 M weights).
void weights_to_f32(const Tensor& w, int64_t begin, int64_t count, float* out);
std::vector<float> weights_to_f32(const Tensor& w);

/// A Conv node's weights packed for one gemm kernel. W is (M, C / group, kernel...) of the
/// kernel's storage dtype, bias (M) or null.
class ConvGemm {
 public:
  ConvGemm(const GemmKernel& g, const Tensor& w, const Tensor* bias, int64_t group,
           ConvEpilogue epilogue, ConvHead head = {});
  /// y = act(conv(x) + bias + residual), or with a head y = head(that). x, residual and y have
  /// the storage dtype and the shapes the reference op inferred for `win`; residual may be null.
  /// With fp16 storage, y may be fp32 (a Cast after the convolution, fused: the fp32 sums are
  /// never rounded to fp16).
  void run(const RunContext& ctx, const ConvWindow& win, const ConvInput& x,
           const ConvResidual& residual, Tensor& y) const;
  const GemmKernel& kernel() const { return g_; }
  /// Bytes of the packed weights and bias.
  size_t packed_bytes() const {
    return a_.size() + (bias_.size() + head_.w.size() + head_.b.size()) * sizeof(float);
  }
  /// The row's name, and its siblings' tiles where the direct path may take one by output width:
  /// "f32_gemm_6x64__avx512+6x48".
  std::string kernel_names() const;
  /// Sets the direct path's shared slab budget per thread (2 MiB; conv_direct.cpp) and returns
  /// the previous one: tests make it small, so that small layers cycle their slabs through the
  /// ring of planes as large ones do.
  static int64_t set_slab_budget(int64_t bytes_per_thread);
  /// Sets the bytes of a group's panels past which a 2D layer's bands go one block of output
  /// channels at a time, in wide bands (1 MiB; conv_direct.cpp, kWideA), and returns the
  /// previous value: tests make it 0, so that small layers take that order as wide ones do.
  static int64_t set_wide_panels_above(int64_t bytes);

 private:
  // B rows read in place from a zero-padded copy of the input (conv_direct.cpp); returns false,
  // doing nothing, where most lanes would idle (short output rows with strides). Then each
  // spatial tile's im2col panel is packed (conv_gemm.cpp).
  // With `head`, y holds the head's channels: the tiles of all M channels of a strip are mixed
  // into them.
  bool run_direct(const RunContext& ctx, const ConvWindow& win, const ConvInput& x,
                  const ConvResidual& residual, Tensor& y, bool head) const;
  // Rows [0, M) of fp32 `tile`, `in_stride` apart, lanes [0, n), through the head into fp32
  // `out` (head_.channels rows `out_stride` apart), softmax applied.
  void head_tile(const float* tile, int64_t in_stride, int64_t n, float* out,
                 int64_t out_stride) const;
  // The head applied to the M fp32 channels of `mid` (the convolution's output), into y.
  void run_head(const RunContext& ctx, const Tensor& mid, Tensor& y) const;
  // 1x1 kernels, unit strides, no padding (pointwise()): col is the input; tiles of it are
  // packed with long sequential reads.
  static bool pointwise(const ConvWindow& win);
  void run_pointwise(const RunContext& ctx, const ConvWindow& win, const Tensor& x,
                     const ConvResidual& residual, Tensor& y) const;
  void run_packed(const RunContext& ctx, const ConvWindow& win, const ConvInput& x,
                  const ConvResidual& residual, Tensor& y) const;
  // The epilogue of output rows from m0: fp32 stores where Y is fp32 and the storage fp16.
  GemmParams params(int64_t m0, const uint8_t* residual, const Tensor& y) const;
  // Channels of a group in packs of the kernel's k_pack (the last one zero-padded): the gemm's
  // steps are (channel pack, tap) panel elements...
  int64_t packed_channels() const { return (cg_ + g_.k_pack - 1) / g_.k_pack; }
  // ...except with one input channel per group (a first layer), where packing channels would
  // leave half of every element zero: then an element holds two taps along the width, (kx, kx
  // + 1) of one (kz, ky), the width padded with a zero tap to even.
  int64_t width_elements() const { return tap_pairs_ ? (kernel_[2] + 1) / 2 : kernel_[2]; }
  // Panel elements per output position.
  int64_t elements() const {
    return tap_pairs_ ? kernel_[0] * kernel_[1] * width_elements() : packed_channels() * kvol_;
  }

  const GemmKernel& g_;
  std::vector<const GemmKernel*> rows_;  // g_ and its siblings: the direct path picks by width
  int64_t m_, group_, cg_, kvol_;
  int64_t kernel_[3];       // depth, height, width; 1 for the axes a 1D or 2D kernel lacks
  bool tap_pairs_ = false;  // elements pair width taps rather than channels (see elements())
  ConvEpilogue epilogue_;
  ConvHead head_;
  // With a head: its fp32 mix (into fp32 rows) and the softmax over its channels, at g_'s ISA.
  const EltwiseKernels* mix_f32_ = nullptr;
  const SoftmaxKernels* softmax_f32_ = nullptr;
  APanels a_;  // per group: ceil((M / group) / MR) micro-panels of MR x elements()
  size_t a_group_bytes_ = 0;
  std::vector<float> bias_;  // M values; empty when the node has no bias
};

/// A ConvTranspose node's weights packed for one gemm kernel. W is (C, M / group, kernel...).
/// Each input position scatters W^T x[:, p] through the kernel; where the kernel equals the
/// stride (no dilation or padding) the taps never overlap and land straight in the output,
/// otherwise they are summed into an fp32 copy of the output first.
class ConvTransposeGemm {
 public:
  /// `isa` picks the kernels that add overlapping taps' fp32 sums and convert them to fp16.
  ConvTransposeGemm(const GemmKernel& g, Isa isa, const Tensor& w, const Tensor* bias,
                    int64_t group, ConvEpilogue e = {});
  /// `win`: in/out/kernel/stride/dilation and pad (output = input * stride + tap * dilation - pad).
  void run(const RunContext& ctx, const ConvWindow& win, const Tensor& x, Tensor& y) const;
  /// Of a ConvTranspose with kernel and stride 2 along the height and width (and the depth where
  /// win.kernel[0] is 2; 1 in 2D), no padding, one group: the output planes [kd * iz, kd * iz +
  /// kd) of batch item n (kd = win.kernel[0]), their rows [oy0, oy1), every output channel, the
  /// products of input plane iz, on the calling thread: plane t's channel m row oy at `dst` +
  /// ((t * M + m) * (oy1 - oy0) + oy - oy0) * out[2] elements of X's dtype. A convolution
  /// reading the ConvTranspose's output (x_transposed) makes its planes so, each thread through
  /// its own PlanesScratch, kept from call to call.
  struct PlanesScratch {
    PanelBuffer panel, tile, widened;
    int64_t widened_chunk = -1;  // the chunk of fp16-kept panels `widened` holds
  };
  void planes(const RunContext& ctx, const ConvWindow& win, const Tensor& x, int64_t n, int64_t iz,
              int64_t oy0, int64_t oy1, uint8_t* dst, PlanesScratch& s) const;
  int64_t out_channels() const { return mg_ * group_; }
  int64_t in_channels() const { return c_; }
  const GemmKernel& kernel() const { return g_; }
  /// Bytes of the packed weights and bias.
  size_t packed_bytes() const {
    return a_.size() + (bias_rows_.size() + bias_.size()) * sizeof(float);
  }

 private:
  // Widens fp16-kept panels a chunk at a time, as its work items need them.
  void run_disjoint(const RunContext& ctx, const ConvWindow& win, const Tensor& x, Tensor& y) const;
  // `a`: the packed panels, open for the call.
  void run_overlapping(const RunContext& ctx, const ConvWindow& win, const Tensor& x, Tensor& y,
                       const uint8_t* a) const;

  const GemmKernel& g_;
  const CastKernels& cast_;
  const EltwiseKernels& f32_;
  ConvEpilogue e_;  // the activation after bias (a fused ConvTranspose)
  int64_t c_, mg_, group_, kvol_;
  int64_t chunk_;  // output channels per packed chunk: a chunk's rows are (channel, tap) pairs
  APanels a_;      // per group and chunk: micro-panels of MR rows x (C / group) steps
  size_t a_chunk_bytes_ = 0;
  std::vector<float> bias_rows_;  // per group and chunk row: the bias of its output channel
  std::vector<float> bias_;       // M values, zeros when absent
};

/// A ConvTranspose with overlapping taps in its gather (sub-pixel) form. Along an axis with
/// stride s, kernel k and start pad p, the outputs o = s * j + r of phase r take the taps kt =
/// (r + p) mod s, + s, ... below k, tap kt reading input j + (r + p - kt) / s: each phase is a
/// stride-1 convolution of X with those taps. All phases read one zero-padded copy of the input
/// (as the direct convolution pads it, channel pairs for bf16 rows); a strip computes each width
/// phase's tile of output channels and interleaves them into Y's rows. Every output is written
/// once, where the scatter form (ConvTransposeGemm) sums kernel-volume products per input
/// position in an fp32 block first.
class ConvTransposeDirect {
 public:
  /// Whether a ConvTranspose of window `attrs` (kernel, stride, dilation, start pad) and `group`
  /// runs here: one group, no dilation, every phase with at least one tap (kernel >= stride),
  /// and taps that overlap (kernel equal to stride without padding is ConvTransposeGemm's
  /// disjoint case).
  static bool applies(const ConvWindow& attrs, int64_t group);
  /// `g`: the row for M output channels; W is (C, M, kernel...), `attrs` its window.
  ConvTransposeDirect(const GemmKernel& g, const Tensor& w, const Tensor* bias,
                      const ConvWindow& attrs, ConvEpilogue e);
  /// X's parts (a fused Concat) are read in place.
  void run(const RunContext& ctx, const ConvWindow& win, const ConvInput& x, Tensor& y) const;
  std::string kernel_names() const { return std::string(g_.name) + " gather"; }
  /// Bytes of the packed weights (a panel per phase) and bias.
  size_t packed_bytes() const {
    size_t n = bias_.size() * sizeof(float);
    n += a_.size();
    return n;
  }

 private:
  // One output phase along an axis: its tap class, tap count, and the offset of its first
  // tap's input from j (input j + lo + u for tap u).
  struct Phase {
    int64_t cls, taps, lo;
  };
  const GemmKernel& g_;
  int64_t c_, m_;
  int64_t kernel_[3], stride_[3], pad_[3];
  std::vector<Phase> phases_[3];
  int64_t wlo_ = 0;  // the lowest width offset of any phase
  // Per block of MR output channels, every (depth, height, width) phase's micro-panel in turn,
  // row-major: rows m, steps (channel pack, tap d, tap h, tap w). A run whose panels are kept
  // as fp16 widens a few blocks at a time (APanels::widen_budget()), each one range of a_.
  APanels a_;
  size_t a_block_bytes_ = 0;      // one block of MR channels, every phase
  std::vector<size_t> a_at_;      // where each phase's micro-panel starts within a block
  std::vector<int64_t> a_steps_;  // panel elements of each
  std::vector<float> bias_;       // M values, zeros without a bias
  ConvEpilogue e_;
};

}  // namespace voxrt::cpu
