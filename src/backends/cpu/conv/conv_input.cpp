// ConvInput and ConvResidual: where a convolution's X and residual are read, parts, windows and
// upsampled parts included (conv_gemm.h).
#include <algorithm>
#include <cstring>

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

ConvInput::ConvInput(std::vector<const Tensor*> parts, std::vector<Upsample> modes,
                     const ResizeKernels* k)
    : parts_(std::move(parts)), resize_(k) {
  first_.push_back(0);
  for (const Tensor* t : parts_) first_.push_back(first_.back() + t->dim(1));
  const Tensor& x = *parts_[0];
  axes_ = std::clamp<int64_t>(x.rank() - 2, 0, 3);
  const bool any =
      std::any_of(modes.begin(), modes.end(), [](Upsample u) { return u != Upsample::none; });
  if (any && (modes.size() != parts_.size() || !k))
    throw Error("ConvInput: " + std::to_string(modes.size()) + " upsampling modes for " +
                std::to_string(parts_.size()) + " parts" + (k ? "" : ", no resize kernels"));
  if (!any) modes.clear();
  const std::vector<int64_t> as_read = spatial_as_read(parts_, modes);
  for (int64_t a = 0; a < axes_; ++a) dims3_[3 - axes_ + a] = as_read[static_cast<size_t>(a)];
  plane_bytes_ = static_cast<int64_t>(dtype_size(x.dtype())) * dims3_[0] * dims3_[1] * dims3_[2];
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
                                                const std::vector<Upsample>& modes) {
  const auto stored = std::find(modes.begin(), modes.end(), Upsample::none);
  // Modes empty (none upsampled) or a part read as stored: that part's (part 0 where empty).
  const Tensor& t =
      *parts[stored == modes.end() && !modes.empty() ? 0
                                                     : static_cast<size_t>(stored - modes.begin())];
  const bool doubled = !modes.empty() && stored == modes.end();
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
  if (upsampled() && modes_[p] != Upsample::none)
    throw Error("ConvInput: part " + std::to_string(p) + " is read upsampled: no plane in memory");
  const Tensor& t = *parts_[p];
  return static_cast<const uint8_t*>(t.raw()) +
         (n * t.dim(1) + (p == 0 ? from_ : 0) + c - first_[p]) * plane_bytes_;
}

const uint8_t* ConvInput::depth_plane(int64_t n, int64_t c, int64_t iz, int64_t iy0, int64_t iy1,
                                      uint8_t* buf) const {
  const size_t p = part_of(c);
  if (!upsampled() || modes_[p] == Upsample::none) return plane(n, c) + iz * depth_plane_bytes();
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
  const int64_t row_bytes = dims3_[2] * static_cast<int64_t>(es);
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
    uint8_t* dst = buf + iy * row_bytes;
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

Tensor ConvInput::joined() const {
  Shape shape = parts_[0]->shape();
  shape[1] = channels();
  for (int64_t a = 0; a < axes_; ++a) shape[static_cast<size_t>(2 + a)] = dims3_[3 - axes_ + a];
  Tensor out = Tensor::empty(parts_[0]->dtype(), shape);
  uint8_t* o = static_cast<uint8_t*>(out.raw());
  const int64_t depth_bytes = depth_plane_bytes();
  for (int64_t n = 0; n < batch(); ++n)
    for (int64_t c = 0; c < channels(); ++c)
      for (int64_t iz = 0; iz < dims3_[0]; ++iz, o += depth_bytes) {
        const uint8_t* src = depth_plane(n, c, iz, 0, dims3_[1], o);
        if (src != o) std::memcpy(o, src, static_cast<size_t>(depth_bytes));
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
