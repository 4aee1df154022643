// voxrt.FusedConv: y = activation(conv(x) + residual), inputs X, W, B, residual (optional);
// with residual_after_activation = 1, y = activation(conv(x)) + residual (MONAI's residual units);
// with x_parts = k > 1, X is the channel concatenation of input 0 and inputs 4 .. 2 + k (a
// Concat fused into the convolution, which reads the parts in place).
// With the int attribute `to` = 1 (ONNX's FLOAT, as Cast's `to`), Y is float32: the Cast to
// float32 after the convolution fused, its result stored without rounding to X's dtype between
// them (an fp16 model that keeps fp32 outputs); the residual keeps X's dtype.
// With the int attribute `head` = 1, a 1x1 convolution (stride 1, no padding, one group) follows
// that result in the same node, its weights (Mh, M, 1...) and bias (or none) the two inputs after
// X's parts (inputs 3 + x_parts and 4 + x_parts): Y has Mh channels, and the M channels before the
// head are never stored (a UNet's output layer taken by the last convolution). With `head_softmax`
// = 1, Y is softmax over its channels after the head. A fused Cast (`to`) applies to Y.
// With the float-list attribute `slopes` (one per output channel, no `activation`, no head), the
// activation is a LeakyRelu with each channel's own slope (1: none, 0: Relu): sibling
// convolutions of one input computed as one (passes/fuse_sibling_convs.cpp), each keeping its
// activation.
// With the int attribute `x_from` (x_parts = 1 only), X is the C = W.dim(1) * group channels of
// input 0 from channel x_from on (0 included); with `residual_from`, the residual is the M
// channels of input 3 from that channel on: the outputs of a channel Split read in place from the
// Split's input (passes/read_split_in_place.cpp), which their batch-2 layout would otherwise need
// copied out. voxrt.FusedConvTranspose: y = activation(conv_transpose(x)), inputs X, W, B; x_parts
// as FusedConv's (the residual slot between B and the other parts left empty).
// With the int-list attribute `x_upsample` (FusedConv only; one value per part of X, no x_from),
// a part with a nonzero value is read upsampled by 2 along each of its spatial axes, or with a
// `_sized` value resized to the spatial size of the parts read as stored: a Resize fused into the
// convolution after it (passes/fuse_resize_conv.cpp), whose output is never stored (Upsample
// below).
// With the int attribute `x_transposed` = p (FusedConv only; no x_from, the part not upsampled),
// part p of X is the output of a transposed convolution of kernel 2 and stride 2 along every
// spatial axis (no padding, one group) of the tensor given as that part, its weights (C, Mt, 2...)
// and bias (Mt, or none) the last two inputs (after the head's, if any): a ConvTranspose fused
// into the convolution after it (passes/fuse_conv_transpose_conv.cpp), whose output is never
// stored.
#pragma once

#include "ir/graph.h"

namespace voxrt {

/// FusedConv's int attribute: add the residual after the activation instead of before it.
inline constexpr const char* kResidualAfterActivation = "residual_after_activation";
/// FusedConv's int attribute: Y's dtype as ONNX codes it (1: float32), the Cast after it fused.
inline constexpr const char* kFusedCastTo = "to";
/// FusedConv's int attributes: a 1x1 convolution after it (its weights and bias the last two
/// inputs), and a softmax over channels after that.
inline constexpr const char* kFusedHead = "head";
inline constexpr const char* kFusedHeadSoftmax = "head_softmax";
/// The most output channels a convolution taking a head may have (fuse_conv_head): the CPU
/// backend makes all of them for a tile or block of positions, in fp32, before it mixes them.
inline constexpr int64_t kMaxFusedHeadChannels = 32;
/// FusedConv's float-list attribute: each output channel's LeakyRelu slope.
inline constexpr const char* kFusedSlopes = "slopes";
/// FusedConv's int attributes: the first channel of input 0 that X takes, and of input 3 that the
/// residual takes (the inputs then have more channels than the convolution reads).
inline constexpr const char* kFusedXFrom = "x_from";
inline constexpr const char* kFusedResidualFrom = "residual_from";
/// FusedConv's int-list attribute: how each part of X is upsampled (Upsample's values).
inline constexpr const char* kFusedXUpsample = "x_upsample";

/// FusedConv's int attribute: the part of X that is a transposed convolution's input (its
/// weights and bias the node's last two inputs).
inline constexpr const char* kFusedXTransposed = "x_transposed";

/// A part of X upsampled by 2 along every spatial axis, as ONNX Resize computes it, the axes one
/// after another (upsample_taps):
/// - nearest: output i reads input i / 2 (nearest with asymmetric coordinates and floor, or with
///   half-pixel coordinates and either rounding: torch's `nearest` at any opset);
/// - linear: half-pixel centres, output 2i reads (i - 1, 1/4) and (i, 3/4), output 2i + 1 reads
///   (i, 3/4) and (i + 1, 1/4), indices clamped to the axis (torch's trilinear and bilinear with
///   align_corners=False);
/// - linear_align_corners: output o at input o (L - 1) / (2L - 1), interpolated between its two
///   neighbours (torch's with align_corners=True);
/// - linear_asymmetric: output o at input o / 2 (Upsample's and Resize-10's linear mode).
/// The `_sized` modes interpolate the same way to the spatial size of X's parts read as stored
/// (a part whose mode is none), whatever it is: a Resize given sizes from the skip's shape
/// (F.interpolate(size=skip.shape[2:]) with spatial dims the model leaves unknown), where nearest
/// reads input floor(o L / S) along an axis of L inputs and S outputs (asymmetric coordinates,
/// floor), linear has half-pixel coordinates (o + 1/2) L / S - 1/2, corner-aligned o (L - 1) /
/// (S - 1) or asymmetric o L / S, its two neighbours' indices clamped to the axis.
enum class Upsample : int64_t {
  none = 0,
  nearest = 1,
  linear = 2,
  linear_align_corners = 3,
  linear_asymmetric = 4,
  nearest_sized = 5,
  linear_sized = 6,
  linear_align_corners_sized = 7,
  linear_asymmetric_sized = 8
};
/// Whether `u` resizes to the size of the parts read as stored rather than by 2.
inline bool sized(Upsample u) {
  return u >= Upsample::nearest_sized;
}
/// The interpolation of `u`: its by-2 mode.
inline Upsample interpolation(Upsample u) {
  return sized(u) ? static_cast<Upsample>(static_cast<int64_t>(u) - 4) : u;
}

/// Output o's two taps along an axis of `len` inputs resized to `out_len` in `mode` (not none;
/// upsample_taps: to 2 len): input i0 with weight w0 and i1 with w1, indices within [0, len),
/// w0 + w1 = 1 (nearest: w1 = 0).
struct UpsampleTaps {
  int64_t i0, i1;
  double w0, w1;
};
UpsampleTaps resize_taps(Upsample mode, int64_t o, int64_t len, int64_t out_len);
inline UpsampleTaps upsample_taps(Upsample mode, int64_t o, int64_t len) {
  return resize_taps(mode, o, len, 2 * len);
}

/// The modes of x_upsample, one per part of X (all none where the attribute is absent); throws
/// naming the node where its length or a value does not fit.
std::vector<Upsample> upsample_modes(const ir::Attributes& a, int64_t parts);

/// t (rank 3 to 5) resized along its spatial axes to `spatial` (their sizes) in `mode`, computed
/// in double and stored in t's dtype: the reference for x_upsample; upsample2 doubles them.
Tensor resize_to(const Tensor& t, Upsample mode, const Shape& spatial);
Tensor upsample2(const Tensor& t, Upsample mode);

/// Where a FusedConv's head weights are among its inputs (the bias follows): after X's parts.
inline int fused_head_input(const ir::Node& fused) {
  return 3 + static_cast<int>(fused.attrs.get_int("x_parts", 1));
}

/// Where a FusedConv's transposed part's weights are among its inputs (its bias next), or -1
/// without one (kFusedXTransposed): after X's parts and the head's two inputs.
inline int fused_transposed_input(const ir::Node& fused) {
  if (!fused.attrs.has(kFusedXTransposed)) return -1;
  return fused_head_input(fused) + (fused.attrs.get_int(kFusedHead, 0) != 0 ? 2 : 0);
}

struct FusedEpilogue {
  enum class Kind { none, relu, leaky_relu };
  Kind kind = Kind::none;
  float alpha = 0.01f;
  std::vector<float> slopes;  // leaky_relu: output channel c's slope (kFusedSlopes), else empty

  static FusedEpilogue from_attrs(const ir::Attributes& a);
  /// The activation of v in output channel `channel`.
  double apply(double v, int64_t channel) const {
    switch (kind) {
      case Kind::relu: return v > 0 ? v : 0;
      case Kind::leaky_relu:
        return v >= 0 ? v : (slopes.empty() ? alpha : slopes[static_cast<size_t>(channel)]) * v;
      case Kind::none: break;
    }
    return v;
  }
};

/// A window attribute (kFusedXFrom, kFusedResidualFrom) of a fused node: its first channel, or -1
/// where it is absent (the input read whole). Throws naming the node where it is negative.
int64_t window_from(const ir::Attributes& a, const char* name);

/// Channels [from, from + count) of t (rank 2 or more), as a tensor of their own: what x_from and
/// residual_from read, in the reference ops.
Tensor channel_window(const Tensor& t, int64_t from, int64_t count);

/// The plain Conv (ConvTranspose) node inside a voxrt.FusedConv (FusedConvTranspose) node: its
/// first three inputs and the convolution's attributes.
ir::Node fused_conv_inner_node(const ir::Node& fused);

}  // namespace voxrt
