// ConvInput and ConvResidual: where a convolution's X and residual are read, parts, windows and
// upsampled parts included (conv_gemm.h).
#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>

#include "backends/cpu/conv/conv_gemm.h"

namespace voxrt::cpu {

ConvInput::ConvInput(const Tensor& x) : ConvInput(std::vector<const Tensor*>{&x}) {}

ConvInput::ConvInput(const Tensor& x, int64_t from, int64_t channels) : ConvInput(x) {
  if (from < 0 || channels < 0 || from + channels > x.dim(1))
    throw Error("ConvInput: channels [" + std::to_string(from) + ", " +
                std::to_string(from + channels) + ") of a tensor of shape " + shape_str(x.shape()));
  from_ = from;
  first_.back() = channels;
}

ConvInput::ConvInput(std::vector<const Tensor*> parts)
    : ConvInput(std::move(parts), std::vector<Upsample>{}, nullptr) {}

// Each thread's planes of the transposed part, made for one (batch item, input plane, rows) at a
// time: the convolution's drivers ask for a plane's channels one after another, then for the
// next plane, which the same products made (kernel 2 along the depth).
struct ConvInput::PlaneCaches {
  struct Planes {
    std::thread::id owner;
    int64_t n = -1, iz = -1, oy0 = 0, oy1 = 0;
    PanelBuffer buf;
    ConvTransposeGemm::PlanesScratch scratch;
  };
  std::mutex mutex;
  std::vector<std::unique_ptr<Planes>> threads;
  Planes& mine() {
    const std::thread::id self = std::this_thread::get_id();
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& p : threads)
      if (p->owner == self) return *p;
    threads.push_back(std::make_unique<Planes>());
    threads.back()->owner = self;
    return *threads.back();
  }
};

ConvInput::ConvInput(std::vector<const Tensor*> parts, std::vector<Upsample> modes,
                     const ResizeKernels* k, TransposedPart transposed)
    : parts_(std::move(parts)), resize_(k), transposed_(transposed) {
  if (transposed_.part >= static_cast<int64_t>(parts_.size()) ||
      (transposed_.part >= 0 && !transposed_.up))
    throw Error("ConvInput: transposed part " + std::to_string(transposed_.part) + " of " +
                std::to_string(parts_.size()) + (transposed_.up ? "" : ", no convolution"));
  first_.push_back(0);
  for (size_t p = 0; p < parts_.size(); ++p)
    first_.push_back(first_.back() + (static_cast<int64_t>(p) == transposed_.part
                                          ? transposed_.up->out_channels()
                                          : parts_[p]->dim(1)));
  const Tensor& x = *parts_[0];
  axes_ = std::clamp<int64_t>(x.rank() - 2, 0, 3);
  const bool any =
      std::any_of(modes.begin(), modes.end(), [](Upsample u) { return u != Upsample::none; });
  if (any && (modes.size() != parts_.size() || !k))
    throw Error("ConvInput: " + std::to_string(modes.size()) + " upsampling modes for " +
                std::to_string(parts_.size()) + " parts" + (k ? "" : ", no resize kernels"));
  if (!any) modes.clear();
  if (any && transposed_.part >= 0 &&
      modes[static_cast<size_t>(transposed_.part)] != Upsample::none)
    throw Error("ConvInput: part " + std::to_string(transposed_.part) +
                " both upsampled and transposed");
  const std::vector<int64_t> as_read = spatial_as_read(parts_, modes, transposed_.part);
  for (int64_t a = 0; a < axes_; ++a) dims3_[3 - axes_ + a] = as_read[static_cast<size_t>(a)];
  plane_bytes_ = static_cast<int64_t>(dtype_size(x.dtype())) * dims3_[0] * dims3_[1] * dims3_[2];
  if (transposed_.part >= 0) {
    // Its ConvTranspose: kernel and stride 2 along X's axes, the part's input at half X's size.
    const Tensor& t = *parts_[static_cast<size_t>(transposed_.part)];
    bool fits = t.rank() == x.rank() && axes_ >= 1 && t.dim(1) == transposed_.up->in_channels();
    for (int d = 0; d < 3; ++d) {
      const bool axis = d >= 3 - axes_;
      const int64_t in = axis ? t.dim(2 + d - (3 - axes_)) : 1;
      up_window_.in[d] = in;
      up_window_.out[d] = dims3_[d];
      up_window_.kernel[d] = up_window_.stride[d] = axis ? 2 : 1;
      up_window_.dilation[d] = 1;
      up_window_.pad[d] = 0;
      fits = fits && dims3_[d] == in * up_window_.stride[d];
    }
    if (!fits)
      throw Error("ConvInput: part " + std::to_string(transposed_.part) + " of shape " +
                  shape_str(t.shape()) + ", transposed from " +
                  std::to_string(transposed_.up->in_channels()) +
                  " channels by 2, does not make X's spatial size");
    caches_ = std::make_shared<PlaneCaches>();
    transposed_.ctx.pool = nullptr;  // the planes are made on the thread that reads them
  }
  if (!any) return;
  modes_ = std::move(modes);
  width_.resize(parts_.size());
  for (size_t p = 0; p < parts_.size(); ++p) {
    const Upsample u = modes_[p];
    if (u == Upsample::none) continue;
    const int64_t len = parts_[p]->dim(parts_[p]->rank() - 1), out_len = dims3_[2];
    if (len >= (int64_t{1} << 30)) throw Error("ConvInput: a row of " + std::to_string(len));
    for (int64_t a = 0; a < axes_; ++a)
      if (parts_[p]->dim(2 + a) == 0 && dims3_[3 - axes_ + a] > 0)
        throw Error("ConvInput: part " + std::to_string(p) + " of shape " +
                    shape_str(parts_[p]->shape()) + " has no values to resize");
    if (!sized(u) && out_len != 2 * len)
      throw Error("ConvInput: part " + std::to_string(p) + " of width " + std::to_string(len) +
                  " upsampled by 2 for X of width " + std::to_string(out_len));
    // The half-pixel and nearest rows doubled have kernels of their own; other rows go through
    // each output column's two input columns and weights.
    const Upsample m = interpolation(u);
    if ((m == Upsample::linear || m == Upsample::nearest) && out_len == 2 * len) continue;
    WidthTable& t = width_[p];
    for (int64_t o = 0; o < out_len; ++o) {
      const UpsampleTaps tap = resize_taps(u, o, len, out_len);
      t.x0.push_back(static_cast<int32_t>(tap.i0));
      t.x1.push_back(static_cast<int32_t>(tap.i1));
      t.w0.push_back(static_cast<float>(tap.w0));
      t.w1.push_back(static_cast<float>(tap.w1));
    }
  }
}

std::vector<int64_t> ConvInput::spatial_as_read(const std::vector<const Tensor*>& parts,
                                                const std::vector<Upsample>& modes,
                                                int64_t transposed) {
  // The first part read as stored; where none is, part 0's doubled.
  size_t stored = parts.size();
  for (size_t p = 0; p < parts.size() && stored == parts.size(); ++p)
    if ((modes.empty() || modes[p] == Upsample::none) && static_cast<int64_t>(p) != transposed)
      stored = p;
  const bool doubled = stored == parts.size();
  const Tensor& t = *parts[doubled ? 0 : stored];
  std::vector<int64_t> out;
  for (int64_t d = 2; d < t.rank(); ++d) out.push_back(t.dim(d) * (doubled ? 2 : 1));
  return out;
}

size_t ConvInput::part_of(int64_t c) const {
  size_t p = 0;
  while (c >= first_[p + 1]) ++p;
  return p;
}

const uint8_t* ConvInput::plane(int64_t n, int64_t c) const {
  const size_t p = part_of(c);
  if (made(p))
    throw Error("ConvInput: part " + std::to_string(p) +
                " is read upsampled or transposed: no plane in memory");
  const Tensor& t = *parts_[p];
  return static_cast<const uint8_t*>(t.raw()) +
         (n * t.dim(1) + (p == 0 ? from_ : 0) + c - first_[p]) * plane_bytes_;
}

const uint8_t* ConvInput::depth_plane(int64_t n, int64_t c, int64_t iz, int64_t iy0, int64_t iy1,
                                      uint8_t* buf) const {
  const size_t p = part_of(c);
  if (!made(p)) return plane(n, c) + iz * depth_plane_bytes() + iy0 * row_bytes();
  if (static_cast<int64_t>(p) == transposed_.part)
    return transposed_plane(n, c - first_[p], iz, iy0, iy1);
  const Tensor& t = *parts_[p];
  const size_t es = dtype_size(t.dtype());
  // The stored part's axes (padded in front to three); an axis X does not have stays 1.
  int64_t low[3] = {1, 1, 1};
  for (int64_t a = 0; a < axes_; ++a) low[3 - axes_ + a] = t.dim(2 + a);
  const uint8_t* base = static_cast<const uint8_t*>(t.raw()) + (n * t.dim(1) + c - first_[p]) *
                                                                   low[0] * low[1] * low[2] *
                                                                   static_cast<int64_t>(es);
  const Upsample mode = modes_[p];
  // An upsampled axis's taps for output o (upsample_taps); a padded axis reads its one index.
  struct Taps {
    int64_t i[2];
    float w[2];
    int count;
  };
  auto taps = [&](int axis, int64_t o) {
    if (axis < 3 - axes_) return Taps{{0, 0}, {1.0f, 0.0f}, 1};
    const UpsampleTaps u = resize_taps(mode, o, low[axis], dims3_[axis]);
    return Taps{
        {u.i0, u.i1}, {static_cast<float>(u.w0), static_cast<float>(u.w1)}, u.w1 == 0 ? 1 : 2};
  };
  // Rows blended into fp32 before the width's tables interpolate them: a row of the calling
  // thread's, kept between calls (a call per channel and depth plane).
  const WidthTable* table = width_.empty() || width_[p].x0.empty() ? nullptr : &width_[p];
  thread_local std::vector<float> blended;
  if (table && blended.size() < static_cast<size_t>(low[2]))
    blended.resize(static_cast<size_t>(low[2]));
  const Taps tz = taps(0, iz);
  for (int64_t iy = iy0; iy < iy1; ++iy) {
    const Taps ty = taps(1, iy);
    const void* rows[4];
    float w[4];
    int nrows = 0;
    for (int a = 0; a < tz.count; ++a)
      for (int b = 0; b < ty.count; ++b) {
        rows[nrows] = base + (tz.i[a] * low[1] + ty.i[b]) * low[2] * static_cast<int64_t>(es);
        w[nrows++] = tz.w[a] * ty.w[b];
      }
    uint8_t* dst = buf + (iy - iy0) * row_bytes();
    if (table) {
      resize_->blend_rows(rows, w, nrows, blended.data(), low[2]);
      resize_->lerp(blended.data(), table->x0.data(), table->x1.data(), table->w0.data(),
                    table->w1.data(), dst, dims3_[2], false);
    } else if (interpolation(mode) == Upsample::linear) {
      resize_->blend_lerp_x2(rows, w, nrows, dst, low[2], false);
    } else if (es == 4) {
      const float* r = static_cast<const float*>(rows[0]);
      interleave(r, r, low[2], reinterpret_cast<float*>(dst));
    } else {
      const uint16_t* r = static_cast<const uint16_t*>(rows[0]);
      interleave(r, r, low[2], reinterpret_cast<uint16_t*>(dst));
    }
  }
  return buf;
}

const uint8_t* ConvInput::transposed_plane(int64_t n, int64_t m, int64_t iz, int64_t iy0,
                                           int64_t iy1) const {
  const Tensor& t = *parts_[static_cast<size_t>(transposed_.part)];
  const int64_t kd = up_window_.kernel[0], src = iz / kd;
  PlaneCaches::Planes& c = caches_->mine();
  if (c.n != n || c.iz != src || c.oy0 != iy0 || c.oy1 != iy1) {
    // Buffers from the thread's own scratch cache, which keeps them from run to run: the shared
    // caches' few free blocks, which the drivers' own buffers fill, had a block unmapped and
    // mapped again each run (TLB shootdowns: unet2d's fp16 model on two threads 2.85 -> 3.2 ms).
    RunContext own = transposed_.ctx;
    own.scratch = own.panels = transposed_.ctx.own_scratch(ThreadPool::current_thread());
    // The band's rows only: in 2D the plane is the whole output.
    const size_t bytes =
        static_cast<size_t>(kd * transposed_.up->out_channels() * (iy1 - iy0) * row_bytes());
    if (c.buf.size() < bytes) c.buf = PanelBuffer(bytes, own.scratch);
    c.n = -1;  // until made
    transposed_.up->planes(own, up_window_, t, n, src, iy0, iy1, c.buf.data(), c.scratch);
    c.n = n;
    c.iz = src;
    c.oy0 = iy0;
    c.oy1 = iy1;
  }
  return c.buf.data() +
         ((iz % kd) * transposed_.up->out_channels() + m) * (iy1 - iy0) * row_bytes();
}

Tensor ConvInput::joined() const {
  Shape shape = parts_[0]->shape();
  shape[1] = channels();
  for (int64_t a = 0; a < axes_; ++a) shape[static_cast<size_t>(2 + a)] = dims3_[3 - axes_ + a];
  Tensor out = Tensor::empty(parts_[0]->dtype(), shape);
  uint8_t* o = static_cast<uint8_t*>(out.raw());
  const int64_t depth_bytes = depth_plane_bytes();
  // Depth planes outside, channels inside: a transposed part makes a plane's channels at once.
  for (int64_t n = 0; n < batch(); ++n)
    for (int64_t iz = 0; iz < dims3_[0]; ++iz)
      for (int64_t c = 0; c < channels(); ++c) {
        uint8_t* dst = o + ((n * channels() + c) * dims3_[0] + iz) * depth_bytes;
        const uint8_t* src = depth_plane(n, c, iz, 0, dims3_[1], dst);
        if (src != dst) std::memcpy(dst, src, static_cast<size_t>(depth_bytes));
      }
  return out;
}

ConvResidual::ConvResidual(const Tensor* r)
    : base_(r ? static_cast<const uint8_t*>(r->raw()) : nullptr),
      es_(r ? static_cast<int64_t>(dtype_size(r->dtype())) : 0) {}

ConvResidual::ConvResidual(const Tensor& r, int64_t from, int64_t m) : ConvResidual(&r) {
  if (r.rank() < 2 || from < 0 || m < 0 || from + m > r.dim(1))
    throw Error("ConvResidual: channels [" + std::to_string(from) + ", " +
                std::to_string(from + m) + ") of a tensor of shape " + shape_str(r.shape()));
  const int64_t plane = r.dim(0) * r.dim(1) == 0 ? 0 : r.numel() / (r.dim(0) * r.dim(1));
  base_ += from * plane * es_;
  skip_ = (r.dim(1) - m) * plane;
}

}  // namespace voxrt::cpu
