// Conv, ConvTranspose and their voxrt.Fused* forms on the gemm kernels (backends/cpu/conv/): a
// Conv in Winograd's form where ConvWinograd applies (SessionOptions::winograd), else direct.
// Declined, so the reference runs them: dtypes other than f32 and f16 (or mixed, but for a
// FusedConv's fp32 output from fp16 storage), weights or bias that are not constants, more than
// three spatial axes, and ConvTranspose with output_shape or SAME padding.
#include "backends/cpu/conv/conv_gemm.h"
#include "backends/cpu/conv/conv_winograd.h"
#include "backends/cpu/cpu_op.h"
#include "backends/ref/ops/fused.h"

namespace voxrt::cpu {

namespace {

std::vector<int64_t> spatial(const Shape& s) {
  return std::vector<int64_t>(s.begin() + 2, s.end());
}

// What every lowering here needs: the kernel row for the node's dtype, constant W and bias.
struct Accepted {
  const GemmKernel* kernel = nullptr;
  const Tensor* w = nullptr;
  const Tensor* bias = nullptr;
  int64_t group = 1;
};

bool accept(const LowerContext& ctx, Accepted& a) {
  const ir::Node& node = ctx.node;
  DType t = ctx.input_dtype(0);
  // A FusedConv with an fp32 output from fp16 storage (its Cast fused) stores fp32 sums.
  const bool f32_out = node.op_type == "FusedConv" && t == DType::f16 && !node.outputs.empty() &&
                       node.outputs[0] >= 0 && ctx.output_dtype(0) == DType::f32;
  if ((t != DType::f32 && t != DType::f16) || !node.has_input(1) || ctx.input_dtype(1) != t ||
      node.outputs.empty() || node.outputs[0] < 0 || (ctx.output_dtype(0) != t && !f32_out))
    return false;
  a.w = ctx.constant_input(1);
  if (!a.w || a.w->dtype() != t || a.w->rank() < 3 || a.w->rank() > 5) return false;
  for (int64_t d = 0; d < a.w->rank(); ++d)
    if (a.w->dim(d) < 1) return false;
  if (node.has_input(2)) {
    a.bias = ctx.constant_input(2);
    if (!a.bias || a.bias->dtype() != t || a.bias->rank() != 1) return false;
  }
  a.group = node.attrs.get_int("group", 1);
  if (a.group < 1) return false;
  // Conv: the tile whose rows fit the output channels of a group best. ConvTranspose packs
  // whole micro-panels of (channel, tap) rows whatever the tile. Both take bf16 products where
  // the session allows them.
  bool conv = node.op_type == "Conv" || node.op_type == "FusedConv";
  bool bf16 = ctx.fpmath == FpMath::bf16;
  // One input channel a group: bf16 pairs width taps, which only the direct path reads, and only
  // at width stride 1, or 2 without dilation (a MONAI UNet's first layer); at other strides the
  // im2col path with half-empty pairs took three times as long as fp32 products.
  std::vector<int64_t> strides = node.attrs.get_ints("strides", {});
  std::vector<int64_t> dilations = node.attrs.get_ints("dilations", {});
  const int64_t width_stride = strides.empty() ? 1 : strides.back();
  const bool width_dilated = !dilations.empty() && dilations.back() != 1;
  if (conv && a.w->dim(1) == 1 && width_stride > 1 && (width_stride != 2 || width_dilated))
    bf16 = false;
  a.kernel = find_gemm_kernel(ctx.isa, t, conv ? a.w->dim(0) / a.group : 0, bf16);
  return a.kernel != nullptr;
}

// The row a convolution of these attributes runs on in Winograd's form, or null where that form
// does not apply: the row the direct form would take, or where that row's products are faster
// than fp32's (bf16 pairs, fp16 arithmetic) and fp16 storage's F(4, 3) applies on the
// fp32-arithmetic row where ConvWinograd::pays_over_fast says so, that row: its eighth of
// the products (in 3D) beats products at twice the rate. nnU-Net 3d's fp16 model at 128^3 with
// bf16 products on Zen 4 (`voxrt bench --precision model+bf16`, one thread, two alternations):
// 4816 / 4985 -> 3471 / 3530 ms, peak RSS 378.0 -> 392.1 MiB; the fixtures at 96^3 1-11% faster
// (unet3d_monai level) for about 5 MiB of F(4, 3)'s weights and scratch more (22.0 -> 27.7 MiB
// for unet3d_monai). AVX512-FP16's multiply-adds, at twice fp32's rate as bf16 pairs are here,
// take a rule of their own, measured on a CPU with them (pays_over_fast). Failing that, fp16
// products take F(2, 3) themselves (ConvWinograd::fp16_products, from 64 x 64 pairs): on the
// Intel Xeon with AVX512-FP16, fp16 models of one layer, one thread, direct / F(2, 3) ms, 128 ->
// 128 at 32^3 99.3 / 65.9, 256 -> 256 at 16^3 47.6 / 28.9, 320 -> 320 at 8^3 12.1 / 8.3, 64 ->
// 64 at 24^3 10.7 / 10.1, at 12^3 level (1.49); 32 -> 32 at 96^3 158 / 202 and 16 -> 32 76 /
// 126 (so not below 64 x 64); the layer's error against fp32 2.2-2.6e-3 (direct 1.0e-3), nnU-Net
// 3d's output at 128^3 4.18e-3 against 4.08e-3, its fp16 model 3046 / 3093 -> 2719 / 2726 ms and
// peak RSS 407 -> 466 MiB (fp32 4480-4518 ms, 879 MiB). bf16 pairs take no F(2, 3): with bf16
// products allowed, taking the fp32 rows' F(2, 3) instead where it beats them (64 x 64 channel
// pairs and more) made nnU-Net's fp16 model at 128^3 on two threads 2-4% faster (1466-1502 ->
// 1428-1449 ms, Zen 5) for 41 MiB more weights, and was not kept. `wide`: ConvWinograd::f43's;
// `y`: the expected output shape, null where not known.
const GemmKernel* winograd_row(Isa isa, DType t, FpMath fpmath, const std::vector<int64_t>& kernel,
                               const std::vector<int64_t>& strides,
                               const std::vector<int64_t>& dilations, int64_t group, int64_t m,
                               int64_t c, bool wide, const Shape* y) {
  if (group < 1) return nullptr;
  const GemmKernel* row = find_gemm_kernel(isa, t, m / group, fpmath == FpMath::bf16);
  if (!row) return nullptr;
  if (ConvWinograd::f32_products(*row))
    return ConvWinograd::applies(kernel, strides, dilations, group, m, c, *row, wide) ? row
                                                                                      : nullptr;
  // The best row of fp32 products: below AVX512-FP16, without bf16 pairs.
  const GemmKernel* f32 = find_gemm_kernel(std::min(isa, Isa::avx512bf16), t, m / group, false);
  if (f32 && ConvWinograd::f43(t, kernel.size(), m, c, wide) &&
      ConvWinograd::pays_over_fast(kernel.size(), m, c, !bf16_dot(*row), y) &&
      ConvWinograd::applies(kernel, strides, dilations, group, m, c, *f32, wide))
    return f32;
  // Else F(2, 3) on fp16 products where it pays (bf16 pairs: never).
  return ConvWinograd::applies(kernel, strides, dilations, group, m, c, *row, wide) &&
                 ConvWinograd::fp16_f23_pays(kernel.size(), m, c, y)
             ? row
             : nullptr;
}

// A fused node's activation and residual order, as the gemm epilogue applies them.
ConvEpilogue epilogue(const ir::Node& node) {
  const ActParams a = fused_activation(node.attrs);
  ConvEpilogue e;
  e.act = a.act;
  e.alpha = a.alpha;
  e.slopes = FusedEpilogue::from_attrs(node.attrs).slopes;
  e.residual_after_act = node.attrs.get_int(kResidualAfterActivation, 0) != 0;
  return e;
}

// A FusedConv's windows of its inputs (kFusedXFrom, kFusedResidualFrom): first channels, or -1
// where the input is whole.
struct Windows {
  int64_t x_from = -1, x_channels = 0;
  int64_t residual_from = -1, residual_channels = 0;
};

// Parts of X read upsampled (x_upsample): each part's mode, empty where none is, and the resize
// kernels that make their rows.
struct Upsampled {
  std::vector<Upsample> modes;
  const ResizeKernels* kernels = nullptr;
};

class GemmConvOp : public CpuOp {
 public:
  GemmConvOp(std::unique_ptr<Op> ref, ref::WindowAttrs attrs, std::vector<int64_t> kernel,
             bool residual, int64_t parts, int head_input, Windows windows, Upsampled upsampled,
             std::unique_ptr<ConvGemm> conv, int64_t transposed,
             std::unique_ptr<ConvTransposeGemm> up)
      : CpuOp(std::move(ref)),
        attrs_(std::move(attrs)),
        kernel_(std::move(kernel)),
        residual_(residual),
        parts_(parts),
        head_input_(head_input),
        windows_(windows),
        upsampled_(std::move(upsampled)),
        conv_(std::move(conv)),
        transposed_(transposed),
        up_(std::move(up)) {}

  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    if (x.rank() != static_cast<int64_t>(kernel_.size()) + 2)
      fail("input X has shape " + shape_str(x.shape()) + ", expected rank " +
           std::to_string(kernel_.size() + 2));
    // X's parts (a fused Concat): input 0, then the inputs after the residual slot; its spatial
    // shape as the convolution reads them (upsampled or resized parts included).
    std::vector<const Tensor*> parts = {&x};
    parts.insert(parts.end(), in.begin() + 4, in.begin() + 3 + parts_);
    const bool up = !upsampled_.modes.empty() || transposed_ >= 0;
    const std::vector<int64_t> x_spatial =
        up ? ConvInput::spatial_as_read(parts, upsampled_.modes, transposed_) : spatial(x.shape());
    ref::Geometry g = ref::resolve_window(where, attrs_, x_spatial, kernel_);
    // An output of a Split read in place: the residual's M channels from residual_from on.
    const ConvResidual residual =
        !residual_ ? ConvResidual()
        : windows_.residual_from < 0
            ? ConvResidual(in[3])
            : ConvResidual(*in[3], windows_.residual_from, windows_.residual_channels);
    auto run = [&](const ConvInput& input) {
      if (winograd_)
        winograd_->run(ctx, conv_window(g), input, residual, out[0]);
      else
        conv_->run(ctx, conv_window(g), input, residual, out[0]);
    };
    if (windows_.x_from >= 0)  // likewise X's C channels from x_from on
      run(ConvInput(x, windows_.x_from, windows_.x_channels));
    else if (parts_ == 1 && !up)
      run(x);
    else
      run(ConvInput(std::move(parts), upsampled_.modes, upsampled_.kernels,
                    TransposedPart{transposed_, up_.get(), ctx}));
  }
  std::string kernel_name() const override {
    return (winograd_ ? winograd_->kernel_names() : conv_->kernel_names()) +
           (up_ ? std::string(" +up ") + up_->kernel().name : "");
  }
  int64_t packed_bytes() const override {
    return static_cast<int64_t>((winograd_ ? winograd_->packed_bytes() : conv_->packed_bytes()) +
                                (up_ ? up_->packed_bytes() : 0));
  }
  std::vector<int> packed_inputs() const override {  // W and B, a head's, a transposed part's
    std::vector<int> v = {1, 2};
    if (head_input_ >= 0) v.insert(v.end(), {head_input_, head_input_ + 1});
    if (up_) v.insert(v.end(), {up_input_, up_input_ + 1});
    return v;
  }
  void set_up_input(int i) { up_input_ = i; }
  /// Runs the convolution in Winograd's form instead of `conv`'s.
  void set_winograd(std::unique_ptr<ConvWinograd> w) { winograd_ = std::move(w); }

 private:
  ref::WindowAttrs attrs_;
  std::vector<int64_t> kernel_;
  bool residual_;
  int64_t parts_;   // of X: see backends/ref/ops/fused.h
  int head_input_;  // the head's weights (its bias next), or -1 without a head
  Windows windows_;
  Upsampled upsampled_;
  std::unique_ptr<ConvGemm> conv_;  // null where winograd_ runs the convolution
  std::unique_ptr<ConvWinograd> winograd_;
  int64_t transposed_;  // the part of X a ConvTranspose's input (x_transposed), or -1
  std::unique_ptr<ConvTransposeGemm> up_;  // that ConvTranspose
  int up_input_ = -1;                      // its weights (its bias next)
};

std::unique_ptr<Op> lower_conv(const LowerContext& ctx, std::unique_ptr<Op>& ref, bool fused) {
  Accepted a;
  if (!accept(ctx, a)) return nullptr;
  const ir::Node& node = ctx.node;
  int64_t m = a.w->dim(0);
  if (m % a.group != 0 || (a.bias && a.bias->dim(0) != m)) return nullptr;
  bool residual = fused && node.has_input(3);
  if (residual && ctx.input_dtype(3) != a.w->dtype()) return nullptr;
  const int64_t parts = fused ? node.attrs.get_int("x_parts", 1) : 1;
  for (int i = 4; i < 3 + parts; ++i)
    if (!node.has_input(i) || ctx.input_dtype(i) != a.w->dtype()) return nullptr;
  // Parts read upsampled (x_upsample): their rows made by the resize kernels of X's dtype.
  Upsampled upsampled;
  if (fused && node.attrs.has(kFusedXUpsample)) {
    upsampled.modes = upsample_modes(node.attrs, parts);
    upsampled.kernels = resize_kernels(a.w->dtype(), ctx.isa);
    if (!upsampled.kernels) return nullptr;
  }
  ConvHead head;
  if (fused && node.attrs.get_int(kFusedHead, 0) != 0) {
    // Constant weights (Mh, M, 1...) and bias of X's dtype, one group.
    const int hi = fused_head_input(node);
    const Tensor* hw = ctx.constant_input(hi);
    const Tensor* hb = node.has_input(hi + 1) ? ctx.constant_input(hi + 1) : nullptr;
    if (!hw || hw->dtype() != a.w->dtype() || hw->rank() != a.w->rank() || hw->dim(1) != m ||
        a.group != 1 || (node.has_input(hi + 1) && (!hb || hb->dtype() != a.w->dtype())))
      return nullptr;
    head.channels = hw->dim(0);
    if (hw->numel() != head.channels * m || (hb && hb->numel() != head.channels)) return nullptr;
    head.w = weights_to_f32(*hw);
    if (hb) head.b = weights_to_f32(*hb);
    head.softmax = node.attrs.get_int(kFusedHeadSoftmax, 0) != 0;
  }
  // A part of X made by a ConvTranspose of kernel and stride 2 (x_transposed): constant weights
  // (C, Mt, 2...) and bias of X's dtype, on the rows a ConvTranspose of them would take.
  const int64_t transposed = fused ? node.attrs.get_int(kFusedXTransposed, -1) : -1;
  const int up_input = transposed >= 0 ? fused_transposed_input(node) : -1;
  if (node.num_inputs() > 3 + parts + (head.channels > 0 ? 2 : 0) + (transposed >= 0 ? 2 : 0))
    return nullptr;
  std::unique_ptr<ConvTransposeGemm> up;
  if (transposed >= 0) {
    const Tensor* tw = ctx.constant_input(up_input);
    const Tensor* tb = node.has_input(up_input + 1) ? ctx.constant_input(up_input + 1) : nullptr;
    if (transposed >= parts || !tw || tw->dtype() != a.w->dtype() || tw->rank() != a.w->rank() ||
        (node.has_input(up_input + 1) &&
         (!tb || tb->dtype() != a.w->dtype() || tb->rank() != 1 || tb->dim(0) != tw->dim(1))))
      return nullptr;
    for (int64_t d = 0; d < tw->rank(); ++d)
      if (d >= 2 ? tw->dim(d) != 2 : tw->dim(d) < 1) return nullptr;
    const GemmKernel* k = find_gemm_kernel(ctx.isa, a.w->dtype(), 0, ctx.fpmath == FpMath::bf16);
    if (!k || k->mr % 2 != 0) return nullptr;
    up = std::make_unique<ConvTransposeGemm>(*k, ctx.isa, *tw, tb, 1);
  }
  Windows windows;
  if (fused) {
    windows.x_from = window_from(node.attrs, kFusedXFrom);
    windows.x_channels = a.w->dim(1) * a.group;
    windows.residual_from = window_from(node.attrs, kFusedResidualFrom);
    windows.residual_channels = m;
  }
  if ((windows.x_from >= 0 && (parts != 1 || transposed >= 0)) ||
      (windows.residual_from >= 0 && !residual))
    return nullptr;
  ConvEpilogue e = fused ? epilogue(node) : ConvEpilogue{};
  OpContext oc{node, ctx.graph, node.opset, ref->where};
  ref::WindowAttrs attrs = ref::parse_window(oc);
  const int head_input = head.channels > 0 ? fused_head_input(node) : -1;
  // Winograd's form where it applies (with a head of up to kMaxFusedHeadChannels before it, and an
  // fp32 output of fp16 storage, a fused Cast, too).
  const DType yt = ctx.output_dtype(0);
  const bool winograd_fits = (head.channels == 0 || m <= kMaxFusedHeadChannels) &&
                             (yt == a.w->dtype() || yt == DType::f32) && ctx.winograd;
  // fp16 storage's 3D layers past kF43MaxPairs3d take F(4, 3) too where their expected output
  // (SessionOptions::input_shapes) outweighs its transformed weights (216 fp32 values a pair).
  const bool wide = ctx.output_shape && a.w->rank() == 5 &&
                    ConvWinograd::wide_pays(*ctx.output_shape, m, a.w->dim(1), a.w->dtype());
  const GemmKernel* row =
      winograd_fits
          ? winograd_row(ctx.isa, a.w->dtype(), ctx.fpmath, spatial(a.w->shape()), attrs.strides,
                         attrs.dilations, a.group, m, a.w->dim(1), wide, ctx.output_shape)
          : nullptr;
  std::unique_ptr<ConvWinograd> wino =
      row ? std::make_unique<ConvWinograd>(*row, ctx.isa, *a.w, a.bias, e, std::move(head), wide)
          : nullptr;
  auto conv =
      row ? nullptr
          : std::make_unique<ConvGemm>(*a.kernel, *a.w, a.bias, a.group, e, std::move(head));
  auto op = std::make_unique<GemmConvOp>(std::move(ref), std::move(attrs), spatial(a.w->shape()),
                                         residual, parts, head_input, windows, std::move(upsampled),
                                         std::move(conv), transposed, std::move(up));
  op->set_up_input(up_input);
  if (wino) op->set_winograd(std::move(wino));
  return op;
}

class GemmConvTransposeOp : public CpuOp {
 public:
  GemmConvTransposeOp(std::unique_ptr<Op> ref, ConvWindow attrs, int64_t parts,
                      std::unique_ptr<ConvTransposeGemm> scatter,
                      std::unique_ptr<ConvTransposeDirect> gather)
      : CpuOp(std::move(ref)),
        attrs_(attrs),
        parts_(parts),
        scatter_(std::move(scatter)),
        gather_(std::move(gather)) {}

  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    size_t rank = static_cast<size_t>(x.rank()) - 2;
    if (x.rank() != y.rank() || rank < 1 || rank > 3)
      fail("input X has shape " + shape_str(x.shape()) + ", expected rank " +
           std::to_string(y.rank()));
    ConvWindow w = attrs_;
    for (size_t d = 0; d < 3; ++d) {
      bool lead = d + rank < 3;
      w.in[d] = lead ? 1 : x.dim(static_cast<int64_t>(d + rank - 1));
      w.out[d] = lead ? 1 : y.dim(static_cast<int64_t>(d + rank - 1));
    }
    // X's parts (a fused Concat): input 0, then the inputs after the empty residual slot. The
    // gather form reads them in place; the scatter form (groups, dilation) from a joined copy.
    std::vector<const Tensor*> parts = {&x};
    if (parts_ > 1) parts.insert(parts.end(), in.begin() + 4, in.begin() + 3 + parts_);
    const ConvInput input(std::move(parts));
    if (gather_)
      gather_->run(ctx, w, input, y);
    else if (input.single())
      scatter_->run(ctx, w, x, y);
    else
      scatter_->run(ctx, w, input.joined(), y);
  }
  std::string kernel_name() const override {
    return gather_ ? gather_->kernel_names() : scatter_->kernel().name;
  }
  std::vector<int> packed_inputs() const override { return {1, 2}; }  // W and B
  int64_t packed_bytes() const override {
    return static_cast<int64_t>(gather_ ? gather_->packed_bytes() : scatter_->packed_bytes());
  }

 private:
  ConvWindow attrs_;  // kernel, stride, dilation, pad; in and out set per run
  int64_t parts_;     // of X: see backends/ref/ops/fused.h
  // One of the two: overlapping taps in the gather form where it applies, else the scatter form.
  std::unique_ptr<ConvTransposeGemm> scatter_;
  std::unique_ptr<ConvTransposeDirect> gather_;
};

// The output size comes from the reference's inference; what the scatter needs besides is the
// start padding, which with explicit pads (or VALID) is pads[d]. output_shape and SAME_* derive it
// from the output size and are left to the reference.
std::unique_ptr<Op> lower_conv_transpose(const LowerContext& ctx, std::unique_ptr<Op>& ref,
                                         bool fused) {
  Accepted a;
  if (!accept(ctx, a)) return nullptr;
  const ir::Node& node = ctx.node;
  const int64_t parts = fused ? node.attrs.get_int("x_parts", 1) : 1;
  if (fused && (node.has_input(3) || node.num_inputs() > (parts > 1 ? 3 + parts : 3)))
    return nullptr;
  for (int i = 4; i < 3 + parts; ++i)
    if (!node.has_input(i) || ctx.input_dtype(i) != a.w->dtype()) return nullptr;
  if (a.w->dim(0) % a.group != 0 || (a.bias && a.bias->dim(0) != a.w->dim(1) * a.group))
    return nullptr;
  std::string auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
  if ((auto_pad != "NOTSET" && auto_pad != "VALID") || node.attrs.has("output_shape"))
    return nullptr;
  size_t rank = static_cast<size_t>(a.w->rank()) - 2;
  std::vector<int64_t> kernel = spatial(a.w->shape());
  std::vector<int64_t> strides = node.attrs.get_ints("strides", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> dilations = node.attrs.get_ints("dilations", std::vector<int64_t>(rank, 1));
  std::vector<int64_t> pads = node.attrs.get_ints("pads", std::vector<int64_t>(2 * rank, 0));
  if (auto_pad == "VALID") pads.assign(2 * rank, 0);
  if (strides.size() != rank || dilations.size() != rank || pads.size() != 2 * rank) return nullptr;
  ConvWindow w{};
  for (size_t d = 0; d < 3; ++d) {
    bool lead = d + rank < 3;
    size_t s = d + rank - 3;
    w.kernel[d] = lead ? 1 : kernel[s];
    w.stride[d] = lead ? 1 : strides[s];
    w.dilation[d] = lead ? 1 : dilations[s];
    w.pad[d] = lead ? 0 : pads[s];
    if (w.stride[d] < 1 || w.dilation[d] < 1 || w.pad[d] < 0) return nullptr;
  }
  const ConvEpilogue e = fused ? epilogue(node) : ConvEpilogue{};
  if (ConvTransposeDirect::applies(w, a.group)) {
    // Convolutions to M channels: the row whose MR fits M, as a Conv would take.
    const GemmKernel* g =
        find_gemm_kernel(ctx.isa, a.w->dtype(), a.w->dim(1), ctx.fpmath == FpMath::bf16);
    return std::make_unique<GemmConvTransposeOp>(
        std::move(ref), w, parts, nullptr,
        std::make_unique<ConvTransposeDirect>(*g, *a.w, a.bias, w, e));
  }
  auto conv = std::make_unique<ConvTransposeGemm>(*a.kernel, ctx.isa, *a.w, a.bias, a.group, e);
  return std::make_unique<GemmConvTransposeOp>(std::move(ref), w, parts, std::move(conv), nullptr);
}

}  // namespace

void register_conv_lowerings(CpuRegistry& r) {
  r.add("Conv",
        [](const LowerContext& c, std::unique_ptr<Op>& ref) { return lower_conv(c, ref, false); });
  r.add(std::string(kInternalDomain) + ".FusedConv",
        [](const LowerContext& c, std::unique_ptr<Op>& ref) { return lower_conv(c, ref, true); });
  r.add("ConvTranspose", [](const LowerContext& c, std::unique_ptr<Op>& ref) {
    return lower_conv_transpose(c, ref, false);
  });
  r.add(std::string(kInternalDomain) + ".FusedConvTranspose",
        [](const LowerContext& c, std::unique_ptr<Op>& ref) {
          return lower_conv_transpose(c, ref, true);
        });
}

}  // namespace voxrt::cpu
