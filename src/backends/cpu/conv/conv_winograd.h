// 3x3x3 and 3x3 convolutions of stride 1 in Winograd's F(2, 3) form (fp16 storage's up to
// kF43MaxPairs in 2D and kF43MaxPairs3d in 3D in F(4, 3)): a block of NR output tiles (2x2x2
// positions in 3D, 2x2 in 2D; 4x4x4 and 4x4 in F(4, 3)) at a time, its input tiles transformed into
// the B panels of 64 (16; 216 and 36) gemms, one per transform position, whose A panels are the
// transformed weights (packed once here), and the products transformed back into Y's rows with
// the convolution's epilogue (and a fused head's mix; backends/cpu/kernels/winograd/). A 3D layer
// takes 64 products per input and output channel pair and tile of eight positions where the direct
// form takes 216 (in F(4, 3) 216 per tile of 64 for 1728); a 2D one in F(4, 3) 36 per tile of 16
// for 144.
//
//   if (ConvWinograd::applies(kernel, strides, dilations, group, m, c, g))
//     conv = std::make_unique<ConvWinograd>(g, isa, w, &b, epilogue);
//   conv->run(ctx, conv_window(geometry), x, residual, y);
#pragma once

#include <string>
#include <vector>

#include "backends/cpu/conv/conv_gemm.h"
#include "backends/cpu/kernels/winograd/winograd.h"

namespace voxrt::cpu {

class ConvWinograd {
 public:
  /// Whether a convolution runs here: kernel 3 along its two or three spatial axes, strides and
  /// dilations 1, one group, M output and C input channels as below, and a row `g` of fp32
  /// panels (fp32 products: not bf16 pairs) or of fp16 products (fp16_products) with a winograd
  /// kernel of its storage at its ISA. `kernel`, `strides` and `dilations` are the node's (spatial
  /// axes); `wide`: 3D's F(4, 3) up to kF43MaxPairs3dWide (f43).
  static bool applies(const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                      const std::vector<int64_t>& dilations, int64_t group, int64_t m, int64_t c,
                      const GemmKernel& g, bool wide = false);
  /// M and C at least kMinChannels and M x C from min_pairs to kMaxPairs. The transforms' share
  /// of the work grows as the channels shrink, and where the row's multiply-adds are few a cycle
  /// (narrow_fma) the products they save weigh more. On the Zen 5 VM (512-bit multiply-adds at
  /// full rate), one thread, 3D layers at 48^3 and 96^3 (`voxrt bench` on one-node models,
  /// SessionOptions::winograd off and on), 16 -> 16 took 9.0 / 62.6 ms against the direct form's
  /// 8.3 / 69.2, 16 -> 32 13.6 / 107.1 against 16.3 / 129.6, 32 -> 32 21.9 / 162.6 against 29.9 /
  /// 248.4, 48 -> 48 41.0 / 302.5 against 67.3 / 544.6. In 2D, with 16 products for 36 rather
  /// than 64 for 216, 32 -> 32 took 1.49 / 37.5 ms at 128^2 / 512^2 against 1.92 / 35.3, 48 -> 48
  /// 3.51 / 63.7 against 3.89 / 61.9, 128 -> 128 17.7 / 236 against 28.3 / 490. On the Zen 4 VM
  /// (half the rate: narrow), alternated three times, 16 -> 16 took 14.7-17.2 / 95-130 ms against
  /// 16.2-19.7 / 129-174, 8 -> 16 9.5-10.2 against 8.3-9.1 at 48^3; 2D at 256^2 / 512^2, 32 -> 32
  /// 13.0-13.6 / 50-55 against 14.8-15.4 / 58-64, 48 -> 48 25.5-25.9 / 88-117 against 31.9-34.5 /
  /// 120-168, 16 -> 16 5.2-5.8 against 3.6-4.5; on its AVX2 rows 16 -> 16 at 48^3 10.9-13.3
  /// against 15.9-17.1, 32 -> 32 in 2D level (14.3-19.8 against 14.3-15.1).
  static constexpr int64_t kMinChannels = 16;
  /// Whether g's products are fp16 multiply-adds (AVX512-FP16's rows, f16_pair A and fp16 B
  /// panels): such a row takes F(2, 3) only, its B panels (the transformed input) rounded to fp16
  /// and its A panels (the transformed weights) kept in fp16, from kMinPairsFp16Products pairs.
  static bool fp16_products(const GemmKernel& g);
  /// Whether g's products are fp32 multiply-adds on fp32 panels (not bf16 pairs nor fp16
  /// arithmetic): the rows every form applies to.
  static bool f32_products(const GemmKernel& g);
  static constexpr int64_t kMinPairsFp16Products = 64 * 64;
  /// Whether F(2, 3) on fp16 products pays for its transformed weights (64 / 27 of the weights'
  /// bytes in 3D) on a layer of M x C pairs whose output `y` is expected (null: not known): from
  /// 24^3 positions an item in 3D (32^2 in 2D) at 64 x 64 pairs, always past them. On the Intel
  /// Xeon, direct / F(2, 3), ms: 64 -> 64 at 12^3 1.49 / 1.49 (unet3d_monai's peak RSS 0.54 ->
  /// 0.61 of fp32 with it), 24^3 10.7 / 10.1; 320 -> 320 at 8^3 12.1 / 8.3.
  static bool fp16_f23_pays(size_t dims, int64_t m, int64_t c, const Shape* y);
  /// M and C at least this in 3D's F(4, 3) (fp16 storage), from 8 x 8 pairs on rows of
  /// narrow_fma: its products are 1/8 of the direct form's, so that small layers gain too. On Zen
  /// 4, fp16 models of one layer at 96^3 (12 -> 12 at 48^3), one thread, direct / F(4, 3) ms,
  /// three alternations: AVX-512 12 -> 6 40.4-41.9 / 28.2-30.2, 6 -> 12 42.9-44.2 / 25.0-32.4,
  /// 6 -> 6 21.3-22.1 / 18.2-21.3 (not taken: level on AVX2, 21.9-31.7 / 21.7-31.8); AVX2 12 -> 6
  /// 55.1-64.3 / 42.2-49.0, 6 -> 12 52.6-55.7 / 38.3-42.2; two: AVX-512 18 -> 6 54.4-57.0 /
  /// 36.7-37.6, 12 -> 12 8.7-10.1 / 4.1-5.4, AVX2 8 -> 8 30.8-44.9 / 23.3-33.0.
  static constexpr int64_t kF43MinChannels3d = 6;
  /// M and C at least this in 2D's F(4, 3), from 8 x 16 pairs on rows of narrow_fma (a 2D UNet's
  /// top level: 8 -> 16, its decoder's 24 -> 8). On Zen 4, fp16 models of one layer at 256^2, one
  /// thread, 20 runs, three alternations, direct / F(4, 3) ms: AVX-512 24 -> 8 2.23-2.34 /
  /// 1.42-1.43, 16 -> 8 1.47-1.51 / 1.02-1.04, 8 -> 16 1.49-1.52 / 1.07-1.12, 8 -> 8 0.77-1.04 /
  /// 0.64; AVX2 24 -> 8 2.36-3.60 / 1.75-3.06, 16 -> 8 1.59-1.63 / 1.32-1.39, 8 -> 16 1.61-1.65 /
  /// 1.52-1.58, 8 -> 8 0.84-0.86 / 0.89-0.91 (so 8 x 8 stays direct); at 512^2 on AVX-512, 10
  /// runs, 24 -> 8 9.80-11.78 / 8.46-8.53, 32 -> 8 13.39-14.04 / 10.60-11.12, 16 -> 8 6.34-6.55
  /// / 4.52-6.17, 8 -> 24 9.02-9.24 / 8.35-8.40, 8 -> 16 5.98-6.19 / 5.78-6.22.
  static constexpr int64_t kF43MinChannels2d = 8;
  /// The least M x C pairs for a layer of `dims` (2 or 3) spatial axes: 16 x 32 in 3D and 64 x 64
  /// in 2D, or 16 x 16 and 32 x 32 for rows of narrow_fma; in F(4, 3) (`f43`), 32 x 32, or for
  /// rows of narrow_fma 8 x 16 in 2D and 8 x 8 in 3D (above). F(4, 3) on Zen 4 (narrow), fp16
  /// models of one layer at 512^2, one thread, against the direct form: 16 -> 16 10.9-12.0 ms
  /// against 14.2-14.4, 16 -> 32 15.5-20.4 against 29.2-30.2, 24 -> 24 18.1-19.9 against
  /// 30.3-31.3; its 32 x 32 on wide rows is not measured (their direct form is twice as fast, and
  /// F(2, 3) in 2D gains from 64 x 64 there).
  static int64_t min_pairs(size_t dims, bool narrow, bool f43 = false);
  /// Whether an M x C layer of fp16 storage takes F(4, 3) on fp32 arithmetic where the direct
  /// form's row has faster products (conv_lowering.cpp, winograd_row). Over bf16 pairs: from 16 x
  /// 16 pairs in 3D, 64 x 64 in 2D. On Zen 4 (bf16 dot products at twice the fp32 rate, as
  /// AVX512-FP16's multiply-adds are on Intel), fp16 models of one layer, one thread, two runs,
  /// F(4, 3) / direct with bf16 products, ms: 3D at 96^3 8 -> 8 20.1-25.7 / 15.4-18.7, 12 ->
  /// 6 20.5-21.5 / 17.6-18.0, 16 -> 16 42.8-63.8 / 63.3-69.7, 16 -> 32 80.5-91.2 / 122.4-132.5, 32
  /// -> 32 121.9-153.4 / 231.4-235.6; 2D 16 -> 16 at 512^2 11.0-11.1 / 6.4-6.5, 32 -> 32 24.9-32.2
  /// / 25.3-29.1, 64 -> 64 at 256^2 17.1-19.3 / 22.8-25.6, 128 -> 128 at 128^2 14.4-16.6 / 22.0,
  /// 256 -> 256 at 64^2 16.4-18.1 / 21.6-21.7. (64 -> 64 at 48^3, F(2, 3) past F(4, 3)'s pairs:
  /// 92.4-123.0 / 109.5-119.1.)
  ///
  /// Over AVX512-FP16's multiply-adds (`fp16_arith`), measured on an Intel Xeon with them (fp16
  /// models of one layer, `bench/export_conv_layer.py`, one thread, F(4, 3) / direct fp16
  /// arithmetic on the 8x96 row, ms, 2026-12-08): 3D 32 -> 32 at 48^3 20.0 / 19.1, 64^3 46.0 /
  /// 44.8, 96^3 164 / 145; 32 -> 64 at 20^3 3.02 / 3.06, 24^3 4.48 / 5.04, 32^3 9.27 / 11.88,
  /// 48^3 31.0 / 40.2; 64 -> 64 at 48^3 53.9 / 78.1, 64^3 127 / 183; 2D 64 -> 64 at 256^2 10.4 /
  /// 15.1, 64^2 0.71 / 0.84, 32^2 0.23 / 0.29, 128 -> 128 at 32^2 0.81 / 1.06, 256 -> 256 at 32^2
  /// 3.52 / 3.60 (on the 8x64 row before it, 32 -> 32 at 12^3 0.64 / 0.40, 32 -> 64 0.93 / 0.74,
  /// 64 -> 64 1.51 / 1.44; 2D 256 -> 256 at 16^2 2.03 / 1.16). So F(4, 3) from 32 x 64 pairs in
  /// 3D and 64 x 64 in 2D, and where the output's size `y` is known (SessionOptions::input_shapes;
  /// null: not) from 24^3 positions an item in 3D and 32^2 in 2D. The fixtures' fp16 models at
  /// 96^3 then run 1-3% faster, peak RSS 7% lower (their 32 x 32 layers at 24^3 and 12^3 direct).
  static bool pays_over_fast(size_t dims, int64_t m, int64_t c, bool fp16_arith, const Shape* y);
  /// The most M x C pairs: 512 x 1024. The deepest layers of a UNet (256 to 1024 channels) hold
  /// most of its weights, and their transformed weights take 64 / 27 (2D 16 / 9) as many bytes.
  /// Lifted from 256 x 256 (Zen 4, one thread: 3D at 128^3, 320 -> 320 at 8^3 40.4 -> 15.9 ms,
  /// 640 -> 320 82.1 -> 31.3, 512 -> 256 at 16^3 319 -> 112, 320 -> 320 at 4^3 level at 7.9;
  /// nnU-Net 3d 5556-5949 -> 5420-5543 ms for 91 MiB more weights, 150 -> 240; 2D at 512^2, 512
  /// -> 512 at 32^2 44.7 -> 26.7, 1024 -> 512 98.9 -> 54.9, at 16^2 12.8 -> 10.2, at 8^2 4.4 ->
  /// 4.7, at 4^2 1.6 -> 5.2; nnU-Net 2d 1053-1081 -> 937-983 ms, weights 183 -> 277 MiB).
  static constexpr int64_t kMaxPairs = 512 * 1024;
  /// Whether fp16 storage keeps a layer's transformed weights in fp16 (widened a chunk of output
  /// channels at a time as the gemms take them) rather than fp32: past fp16_kept_from() pairs in
  /// F(2, 3), past a quarter of it in 2D's F(4, 3) (`f43`, whose 36 positions take 2.25 times F(2,
  /// 3)'s 16), never in 3D's (`depth`: its transforms magnify the rounding of fp16 weights past
  /// fp16's bound, nnU-Net's fp16 model at 64^3 at 1.95e-2 and argmax 99.07%): the deep layers,
  /// whose weights are most of a model's and whose few blocks widen them seldom. Kept in fp32 the
  /// transformed weights take 4.7 (2D 3.6, F(4, 3) 8 and 16) times the bytes of the direct form's
  /// fp16 ones: nnU-Net 3d's fp16 model at 128^3 peaked at 646.5 MiB against fp32's 1.04 GiB
  /// (0.61), 518.5 with those layers direct; nnU-Net 2d's at 512^2 at 256.1 MiB against 459.4
  /// (0.56) with F(4, 3)'s kept fp32 up to 256 x 256 pairs, 245.0 (0.53) from 128 x 128. Below it
  /// they stay fp32: rounded to fp16 everywhere they cost accuracy the direct form does not lose
  /// (nnU-Net's fp16 model at 64^3 against its fp32 model: relative L2 1.80e-3, argmax 99.907%,
  /// against 1.38e-3 and 99.926%; nnU-Net 2d's at 256^2 in F(4, 3), fp16 from 64 x 64 pairs:
  /// 2.46e-3 and 99.933%, from 128 x 128 1.77e-3 and 99.962%, from 256 x 256 1.52e-3 and
  /// 99.968%), and the 32- and 64-channel layers' many blocks would widen them often.
  static bool keeps_fp16(DType storage, int64_t m, int64_t c, bool f43 = false,
                         bool depth = false) {
    if (f43 && depth) return false;
    return storage == DType::f16 && m * c > (f43 ? fp16_kept_from() / 4 : fp16_kept_from());
  }
  /// 256 x 256 pairs; set_fp16_kept_from changes it (tests) and returns the previous value.
  static int64_t fp16_kept_from();
  static int64_t set_fp16_kept_from(int64_t pairs);
  /// Whether a layer takes F(4, 3) (winograd.h, WinogradKernels::f43) rather than F(2, 3): fp16
  /// storage, where that form's rounding hides under fp16's, up to kF43MaxPairs in 2D and
  /// kF43MaxPairs3d in 3D. On Zen 4, one thread, fp16 models of one layer (fp16 inputs and
  /// outputs) in F(2, 3) / F(4, 3), ms: 32 -> 32 at 512^2 46.9-56.3 / 30.2-30.8, 64 -> 64 at 256^2
  /// 28.3-34.0 / 17.0-19.7, 128 -> 128 at 128^2 25.2-27.7 / 15.9-17.5, 256 -> 256 at 64^2
  /// 23.1-25.7 / 17.8-19.7 (the fp32 models 55.1, 37.0, 27.4, 27.3); 3D 16 -> 16 at 96^3
  /// 78.4-84.8 / 44.9-57.2, 16 -> 32 132.6-146.0 / 77.0-88.0, 32 -> 32 225.2-232.8 / 127.0-137.6
  /// (fp32 294.5), 64 -> 64 at 48^3 105.2-116.5 / 64.8-80.5 (fp32 121.0), 128 -> 128 at 24^3
  /// 47.3-57.0 / 29.4-35.0; nnU-Net 2d's fp16 model at 512^2 843-906 -> 686-777 ms (fp32 867-950).
  /// `wide`: in 3D up to kF43MaxPairs3dWide, not kF43MaxPairs3d.
  static bool f43(DType storage, size_t dims, int64_t m, int64_t c, bool wide = false) {
    return storage == DType::f16 && m * c <= (dims == 2 ? kF43MaxPairs
                                              : wide    ? kF43MaxPairs3dWide
                                                        : kF43MaxPairs3d);
  }
  /// The most pairs in F(4, 3) in 2D: 256 x 256. Past it (nnU-Net 2d's 512-channel layers) F(2, 3)
  /// with fp16-kept weights: F(4, 3)'s kept in fp16 took 135 MiB more of nnU-Net 2d's fp16 model
  /// (380.6 MiB, 0.83 of fp32's peak) for no time measured (718-739 ms against 748-791, one
  /// thread).
  static constexpr int64_t kF43MaxPairs = 256 * 256;
  /// The most pairs in F(4, 3) in 3D: 32 x 64. Its 216 positions' transformed weights, kept fp32,
  /// take 864 bytes a pair (F(2, 3)'s 256), and its B panels and products 216 x (C + min(M, 32)) x
  /// NR floats of scratch a thread (kChannelChunk halved). nnU-Net 3d's fp16 model at 128^3, one
  /// thread: 4954-5668 ms in F(2, 3), 4466 up to 32 x 64 pairs, 3795-4222 up to 64 x 64 (fp32
  /// 5071-5394), peak RSS 568.0, 570.4 and 575.2 MiB; unet3d_monai's (96^3) 26.5 MiB, 31.0 and 34.5
  /// (its 64-channel layers at 12^3 gain 0.1 ms each for 3.5 MB of weights each). Half the chunk
  /// again moved nothing measurable (32 -> 32 at 96^3 143-180 ms against 147-165, unet3d_bn's peak
  /// 49.2 -> 48.9 MiB).
  static constexpr int64_t kF43MaxPairs3d = 32 * 64;
  /// The most pairs in F(4, 3) in 3D where the layer's expected output (SessionOptions::
  /// input_shapes) takes at least kWideOutputOverWeights times its transformed weights' bytes
  /// (f43's `wide`, conv_lowering.cpp): 64 x 128. Up to it the 64-channel layers of nnU-Net 3d
  /// (at 64^3 in a 128^3 patch) gain; unet3d_monai's, at 12^3 in its 96^3 input, would only take
  /// memory. nnU-Net 3d's fp16 model at 128^3, one thread, `--runs 3 --warmup 1`, two
  /// alternations, with the cap moved for every layer: 32 x 64 3576-4207 ms, peak RSS 486.6-486.9
  /// MiB; 64 x 64 3383-3579, 491.5; 64 x 128 3154-3624, 493.0; 128 x 128 3268-3745, 512.1; two
  /// threads, 32 x 64 / 64 x 128, 1971-1989 / 1872-1948 ms. unet3d_monai's fp16 model at 96^3 with
  /// 64 x 64 or 64 x 128 for every layer: 33.5 MiB against 29.9 (fp32 41.5), time level.
  static constexpr int64_t kF43MaxPairs3dWide = 64 * 128;
  static constexpr int64_t kWideOutputOverWeights = 2;
  /// Whether a 3D layer of M x C pairs and storage `t` takes F(4, 3) up to kF43MaxPairs3dWide
  /// (f43's `wide`): its expected output `y` (all of its M channels: a head's output counts as the
  /// M channels before it) takes at least kWideOutputOverWeights times the transformed weights'
  /// bytes, kept fp32 (216 positions a pair).
  static bool wide_pays(const Shape& y, int64_t m, int64_t c, DType t) {
    if (y.size() != 5 || y[1] <= 0) return false;
    const int64_t out_bytes = shape_numel(y) / y[1] * m * static_cast<int64_t>(dtype_size(t));
    return out_bytes >= kWideOutputOverWeights * m * c * 216 * static_cast<int64_t>(sizeof(float));
  }
  /// Whether row g's multiply-adds are few a cycle against its loads, stores and shuffles: rows
  /// below AVX-512, and AVX-512 rows on a CPU that splits 512-bit operations in two
  /// (CpuFeatures::avx512_split: Zen 4).
  static bool narrow_fma(const GemmKernel& g);
  /// W is (M, C, 3, 3[, 3]) of g's storage dtype, bias (M) or null; `head` a 1x1 convolution
  /// after the epilogue (M at most kMaxFusedHeadChannels, all made before the head mixes them),
  /// or none.
  /// `wide`: 3D's F(4, 3) up to kF43MaxPairs3dWide (f43).
  ConvWinograd(const GemmKernel& g, Isa isa, const Tensor& w, const Tensor* bias, ConvEpilogue e,
               ConvHead head = {}, bool wide = false);
  /// y = act(conv(x) + bias + residual) (the residual after the activation where the epilogue
  /// says so), or with a head y = head(that): y of the storage dtype, or fp32 (a fused output
  /// Cast of fp16 storage). X's parts made where they are read (upsampled, or a transposed
  /// convolution's output) are made into rows of the thread's: in 3D whole depth planes, each
  /// made once as the thread's tiles go down the depth; X made whole first where the threads'
  /// rows would take more bytes. A head mixes each block's M channels, made in fp32 rows of the
  /// thread's, into Y's channels (the M channels are never stored in Y).
  void run(const RunContext& ctx, const ConvWindow& win, const ConvInput& x,
           const ConvResidual& residual, Tensor& y) const;
  std::string kernel_names() const {
    return std::string(g_.name) + " " + form().name +
           (head_.channels > 0 ? (head_.softmax ? " +head+softmax" : " +head") : "");
  }
  /// Bytes of the packed weights and bias, and the head's.
  size_t packed_bytes() const {
    return u_.size() + (bias_.size() + head_.w.size() + head_.b.size()) * sizeof(float);
  }

 private:
  const WinogradForm& form() const { return f43_ ? k_.f43 : k_.f23; }

  const GemmKernel& g_;
  const WinogradKernels& k_;
  int64_t m_, c_;
  bool depth_;               // 3D: 64 transform positions, tiles of 2x2x2; else 2D
  bool f43_;                 // 2D in F(4, 3): 36 positions, tiles of 4x4; else 16, tiles of 2x2
  int64_t tile_;             // output positions along a tile's height and width: 2 or 4
  int64_t positions_;        // 64, 16 or 36
  APanels u_;                // per position: the M x C transformed weights, packed for g_
                             // (fp32, or fp16 where keeps_fp16)
  size_t u_bytes_ = 0;       // one position's
  std::vector<float> bias_;  // M values, zeros without a bias
  ConvEpilogue e_;
  ConvHead head_;
  // With a head: its fp32 mix and the softmax over its channels, at the row's ISA.
  const EltwiseKernels* mix_f32_ = nullptr;
  const SoftmaxKernels* softmax_f32_ = nullptr;
};

}  // namespace voxrt::cpu
