// Resize (opset 10+) and Upsample on f32 and f16: nearest (every nearest_mode) and linear, with
// half_pixel, pytorch_half_pixel, align_corners or asymmetric coordinates, over 1 to 3 spatial
// axes (N and C at scale 1). Cubic, antialias, exclude_outside, axes, aspect-ratio policies and
// tf_* coordinates are declined at load; shapes outside the fast path run the reference.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "backends/cpu/cpu_op.h"
#include "backends/cpu/driver_util.h"
#include "backends/cpu/kernels/resize/resize.h"
#include "backends/ref/tensor_math.h"

namespace voxrt::cpu {
namespace {

enum class Coord { half_pixel, pytorch_half_pixel, align_corners, asymmetric };
// `legacy`: Upsample's and Resize-10's rule, floor when upsampling and ceil when downsampling.
enum class Nearest { round_prefer_floor, round_prefer_ceil, floor, ceil, legacy };

struct ResizeConfig {
  bool linear = false;
  Coord coord = Coord::half_pixel;
  Nearest nearest = Nearest::round_prefer_floor;
  std::optional<std::vector<float>> scales_attr;
  int scales_input = -1, sizes_input = -1;
};

// One output index along an axis: up to two input indices and weights (w1 = 0 when one).
struct AxisTable {
  std::vector<int32_t> i0, i1;
  std::vector<float> w0, w1;
};

class ResizeCpuOp : public CpuOp {
 public:
  ResizeCpuOp(std::unique_ptr<Op> ref, ResizeConfig c, const ResizeKernels* k)
      : CpuOp(std::move(ref)), c_(std::move(c)), k_(k) {}

  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    size_t rank = static_cast<size_t>(x.rank());
    std::vector<double> scale, length;
    if (rank < 3 || rank > 5 || !geometry(in, y.shape(), scale, length)) return ref_->compute(in, out);
    if (y.numel() == 0) return;
    for (size_t d = 0; d < 2; ++d)
      if (scale[d] != 1.0 || y.dim(static_cast<int64_t>(d)) != x.dim(static_cast<int64_t>(d)))
        return ref_->compute(in, out);
    // Spatial axes padded in front to three: (D, H, W).
    int64_t in3[3] = {1, 1, 1}, out3[3] = {1, 1, 1};
    AxisTable t[3];
    for (size_t a = 0; a < 3; ++a) {
      size_t pad = 5 - rank;
      if (a < pad) {
        t[a] = table(1, 1, 1.0, 1.0);
        continue;
      }
      size_t d = a - pad + 2;
      in3[a] = x.dim(static_cast<int64_t>(d));
      out3[a] = y.dim(static_cast<int64_t>(d));
      if (in3[a] >= (int64_t{1} << 31)) return ref_->compute(in, out);
      t[a] = table(in3[a], out3[a], scale[d], length[d]);
    }
    if (c_.linear)
      run_linear(ctx, x, y, t, in3, out3);
    else
      run_nearest(ctx, x, y, t, in3, out3);
  }

  std::string kernel_name() const override {
    return c_.linear ? kernel_label(k_->name, "linear") : "resize_nearest";
  }

 private:
  // Per-axis scale and unrounded output length, as the reference computes them; false when the
  // inputs do not give them (the reference then reports the error).
  bool geometry(const std::vector<const Tensor*>& in, const Shape& y, std::vector<double>& scale,
                std::vector<double>& length) const {
    auto input = [&](int i) -> const Tensor* {
      return i >= 0 && static_cast<size_t>(i) < in.size() ? in[static_cast<size_t>(i)] : nullptr;
    };
    const Shape& x = in[0]->shape();
    std::vector<double> s;
    if (c_.scales_attr)
      s.assign(c_.scales_attr->begin(), c_.scales_attr->end());
    else if (const Tensor* st = input(c_.scales_input); st && st->numel() > 0)
      s = ref::to_f64(*st);
    scale.assign(x.size(), 1.0);
    length.assign(x.size(), 0.0);
    if (!s.empty()) {
      if (s.size() != x.size()) return false;
      for (size_t d = 0; d < x.size(); ++d) {
        scale[d] = s[d];
        length[d] = static_cast<double>(x[d]) * s[d];
      }
      return true;
    }
    const Tensor* sizes = input(c_.sizes_input);
    if (!sizes || sizes->numel() != static_cast<int64_t>(x.size())) return false;
    for (size_t d = 0; d < x.size(); ++d) {
      length[d] = static_cast<double>(y[d]);
      scale[d] = x[d] == 0 ? 1.0 : static_cast<double>(y[d]) / static_cast<double>(x[d]);
    }
    return true;
  }

  double coordinate(double i, double s, double len, double in) const {
    switch (c_.coord) {
      case Coord::half_pixel: return (i + 0.5) / s - 0.5;
      case Coord::pytorch_half_pixel: return len > 1 ? (i + 0.5) / s - 0.5 : 0.0;
      case Coord::align_corners: return len == 1 ? 0.0 : i * (in - 1) / (len - 1);
      case Coord::asymmetric: return i / s;
    }
    return 0;
  }

  int64_t nearest_index(double v, double s) const {
    double f = std::floor(v);
    switch (c_.nearest) {
      case Nearest::round_prefer_floor: return static_cast<int64_t>(v - f <= 0.5 ? f : f + 1);
      case Nearest::round_prefer_ceil: return static_cast<int64_t>(v - f < 0.5 ? f : f + 1);
      case Nearest::floor: return static_cast<int64_t>(f);
      case Nearest::ceil: return static_cast<int64_t>(std::ceil(v));
      case Nearest::legacy: return static_cast<int64_t>(s < 1 ? std::ceil(v) : f);
    }
    return 0;
  }

  AxisTable table(int64_t in, int64_t out, double s, double len) const {
    AxisTable t;
    auto clamp = [in](int64_t i) { return static_cast<int32_t>(std::clamp<int64_t>(i, 0, in - 1)); };
    for (int64_t o = 0; o < out; ++o) {
      double v = std::clamp(coordinate(static_cast<double>(o), s, len, static_cast<double>(in)), -1e15, 1e15);
      if (!c_.linear) {
        t.i0.push_back(clamp(nearest_index(v, s)));
        continue;
      }
      double base = std::ceil(v) - 1, ratio = v - base;
      int64_t b = static_cast<int64_t>(base);
      // Zero-weight taps are dropped, as the reference does.
      if (ratio == 1.0) {
        t.i0.push_back(clamp(b + 1));
        t.w0.push_back(1.0f);
        t.i1.push_back(clamp(b + 1));
        t.w1.push_back(0.0f);
      } else {
        t.i0.push_back(clamp(b));
        t.w0.push_back(static_cast<float>(1 - ratio));
        t.i1.push_back(clamp(b + 1));
        t.w1.push_back(static_cast<float>(ratio));
      }
    }
    return t;
  }

  // The half-pixel 2x pattern: out 2i reads (i - 1, 1/4), (i, 3/4); out 2i + 1 reads (i, 3/4),
  // (i + 1, 1/4), indices clamped.
  static bool is_x2(const AxisTable& t, int64_t in) {
    if (static_cast<int64_t>(t.i0.size()) != 2 * in) return false;
    for (int64_t i = 0; i < in; ++i) {
      size_t e = static_cast<size_t>(2 * i), o = e + 1;
      if (t.i0[e] != std::max<int64_t>(i - 1, 0) || t.i1[e] != i || t.w0[e] != 0.25f ||
          t.w1[e] != 0.75f || t.i0[o] != i || t.i1[o] != std::min(i + 1, in - 1) ||
          t.w0[o] != 0.75f || t.w1[o] != 0.25f)
        return false;
    }
    return true;
  }

  // Both modes' work: items (batch item, output D index, band of output rows, channel) in one
  // range a thread, range t first on thread t (split_ranges, SpatialItem), so each core writes the
  // items and depths, or in a shallow output (2D) the band of rows, that the convolution after it
  // reads on that core (its own depth ranges and row bands), for every channel, and reads the rows
  // of the layer before it that core wrote. A thread makes its scratch once (`state()`), then
  // item(scratch, od, plane, r0, r1) for output rows [r0, r1) of each item; with `stream`, it
  // fences its streamed stores after.
  template <class State, class Item>
  static void for_items(const RunContext& ctx, const Tensor& x, const int64_t* out3, bool stream,
                        State&& state, Item&& item) {
    const int64_t bands = row_bands(ctx.pool, out3[0], out3[1]), channels = x.dim(1);
    split_ranges(ctx.pool, out3[0] * bands * x.dim(0) * channels, [&](RangeCursor& items) {
      auto scratch = state();
      for (int64_t u; (u = items.next()) >= 0;) {
        const SpatialItem it(u, channels, out3[0], bands);
        item(scratch, it.depth, it.n * channels + it.channel, out3[1] * it.band / bands,
             out3[1] * (it.band + 1) / bands);
      }
      // Streamed stores are weakly ordered: visible before this thread reports its items done.
      if (stream) _mm_sfence();
    });
  }

  void run_linear(const RunContext& ctx, const Tensor& x, Tensor& y, const AxisTable* t,
                  const int64_t* in3, const int64_t* out3) const {
    size_t es = dtype_size(x.dtype());
    bool x2 = is_x2(t[2], in3[2]);
    int64_t in_plane = in3[0] * in3[1] * in3[2], out_plane = out3[0] * out3[1] * out3[2];
    const char* xp = static_cast<const char*>(x.raw());
    char* yp = static_cast<char*>(y.raw());
    // An item's output rows run along H in order (for_items). Each output row blends up to 2 x 2
    // input rows (D taps x H taps) with weights w_d * w_h. The 2x half-pixel row (a UNet's
    // upsample) is interpolated along W from the blend in registers (blend_lerp_x2). Before, the
    // blend went through an fp32 row whose loads waited on its last, masked store: Zen 5,
    // `resize_bench`, 24 x 24^3 -> 48^3 1.40 -> 0.85-0.89 ms on one thread (fp16 on AVX2 3.7 ->
    // 0.9), 16 x 128^2 -> 256^2 0.17-0.18 -> 0.13. Other rows go through that fp32 row and are
    // interpolated one row later, so the loads find the stores done.
    // Large outputs streamed (streams_output). Zen 5, `voxrt profile`, unet3d_resize fp32,
    // three alternations at two threads and two at one: the 12 x 96^3 upsample (42 MB) 2.70-2.87
    // -> 1.57-1.65 ms on two threads, 3.54-3.89 -> 2.96-3.13 on one; the 24 x 48^3 one (10.6 MB)
    // 0.95-1.02 -> 0.80-0.87 and 1.33-1.36 -> 1.10-1.13; the convolutions reading them unchanged.
    const bool stream = streams_output(y.nbytes());
    // A range's scratch for the other rows (none for 2x ones): two fp32 rows, each starting on a
    // 64-byte line.
    const size_t padded = static_cast<size_t>((in3[2] + 15) / 16 * 16);
    const int64_t row_bytes = in3[2] * static_cast<int64_t>(es);
    auto rows_buffer = [&] { return std::vector<float>(x2 ? 0 : 2 * padded + 16); };
    auto item = [&](std::vector<float>& tmp_buf, int64_t od64, int64_t plane, int64_t r0,
                    int64_t r1) {
      const size_t od = static_cast<size_t>(od64);
      const char* dsrc[2];
      float dw[2];
      int nd = 0;
      for (int a = 0; a < 2; ++a) {
        float w = a ? t[0].w1[od] : t[0].w0[od];
        if (w == 0) continue;
        int64_t id = a ? t[0].i1[od] : t[0].i0[od];
        dsrc[nd] = xp + (plane * in_plane + id * in3[1] * in3[2]) * static_cast<int64_t>(es);
        dw[nd++] = w;
      }
      // The input rows output row oh blends and their weights; returns how many.
      auto taps = [&](size_t oh, const void** src, float* w) {
        int n = 0;
        float wh0 = t[1].w0[oh], wh1 = t[1].w1[oh];
        int64_t h0 = t[1].i0[oh] * row_bytes, h1 = t[1].i1[oh] * row_bytes;
        for (int a = 0; a < nd; ++a) {
          src[n] = dsrc[a] + h0;
          w[n++] = dw[a] * wh0;
          if (wh1 != 0) {
            src[n] = dsrc[a] + h1;
            w[n++] = dw[a] * wh1;
          }
        }
        return n;
      };
      const void* src[4];
      float w[4];
      char* dst =
          yp + (plane * out_plane + (od64 * out3[1] + r0) * out3[2]) * static_cast<int64_t>(es);
      const size_t first = static_cast<size_t>(r0), end = static_cast<size_t>(r1);
      if (x2) {
        for (size_t oh = first; oh < end; ++oh, dst += out3[2] * static_cast<int64_t>(es))
          k_->blend_lerp_x2(src, w, taps(oh, src, w), dst, in3[2], stream);
        return;
      }
      float* tmp_base =
          tmp_buf.data() + (16 - reinterpret_cast<uintptr_t>(tmp_buf.data()) / 4 % 16) % 16;
      auto blend = [&](size_t oh, float* row) {
        k_->blend_rows(src, w, taps(oh, src, w), row, in3[2]);
      };
      blend(first, tmp_base + (first & 1) * padded);
      for (size_t oh = first; oh < end; ++oh) {
        if (oh + 1 < end) blend(oh + 1, tmp_base + ((oh + 1) & 1) * padded);
        const float* row = tmp_base + (oh & 1) * padded;
        k_->lerp(row, t[2].i0.data(), t[2].i1.data(), t[2].w0.data(), t[2].w1.data(), dst, out3[2],
                 stream);
        dst += out3[2] * static_cast<int64_t>(es);
      }
    };
    for_items(ctx, x, out3, stream, rows_buffer, item);
  }

  // `dup2`: each source element twice (n even), streamed or not.
  template <class E>
  static void gather_row(const E* src, const int32_t* idx, E* dst, int64_t n, bool dup2,
                         bool stream) {
    if (dup2 && stream)
      interleave_stream(src, src, n / 2, dst);
    else if (dup2)
      interleave(src, src, n / 2, dst);
    else
      for (int64_t i = 0; i < n; ++i) dst[i] = src[idx[i]];
  }

  void run_nearest(const RunContext& ctx, const Tensor& x, Tensor& y, const AxisTable* t,
                   const int64_t* in3, const int64_t* out3) const {
    size_t es = dtype_size(x.dtype());
    bool dup2 = out3[2] == 2 * in3[2];
    for (int64_t i = 0; dup2 && i < out3[2]; ++i) dup2 = t[2].i0[static_cast<size_t>(i)] == i / 2;
    int64_t in_plane = in3[0] * in3[1] * in3[2], out_plane = out3[0] * out3[1] * out3[2];
    // Rows doubled along the width are all stores: large outputs streamed (streams_output).
    // unet3d_resize with its upsamples made nearest, `voxrt profile`, three alternations: the
    // 12 x 96^3 one 1.70-1.82 -> 1.23-1.46 ms on two threads, 1.98-2.24 -> 2.27-2.61 on one with
    // its reader 29.0-30.1 -> 28.8-29.5 (even); the 24 x 48^3 one 0.50-0.55 -> 0.33-0.37 and
    // 0.66-0.84 -> 0.60-0.68. (`resize_bench`, writing one 56 MB output over and over, lost:
    // 2.0-2.3 -> 2.4-2.5 ms. Part of it stays in cache from one iteration to the next.)
    const bool stream = dup2 && streams_output(y.nbytes());
    auto item = [&](int, int64_t od, int64_t plane, int64_t r0, int64_t r1) {
      const int64_t id = t[0].i0[static_cast<size_t>(od)];
      for (int64_t oh = r0; oh < r1; ++oh) {
        int64_t ih = t[1].i0[static_cast<size_t>(oh)];
        int64_t src = plane * in_plane + (id * in3[1] + ih) * in3[2];
        int64_t dst = plane * out_plane + (od * out3[1] + oh) * out3[2];
        if (es == 2)
          gather_row(x.data<uint16_t>() + src, t[2].i0.data(), y.data<uint16_t>() + dst, out3[2],
                     dup2, stream);
        else
          gather_row(x.data<uint32_t>() + src, t[2].i0.data(), y.data<uint32_t>() + dst, out3[2],
                     dup2, stream);
      }
    };
    for_items(
        ctx, x, out3, stream, [] { return 0; }, item);
  }

  ResizeConfig c_;
  const ResizeKernels* k_;
};

std::unique_ptr<Op> lower_resize(const LowerContext& ctx, std::unique_ptr<Op>& ref) {
  const ir::Node& n = ctx.node;
  const ir::Attributes& a = n.attrs;
  if (!n.has_input(0) || !is_f32_or_f16(ctx.input_dtype(0))) return nullptr;
  ResizeConfig c;
  std::string mode = a.get_string("mode", "nearest");
  bool upsample = n.op_type == "Upsample";
  if (mode == "linear" || (upsample && mode == "bilinear"))
    c.linear = true;
  else if (mode != "nearest")
    return nullptr;
  if (upsample || n.opset < 11) {
    c.coord = Coord::asymmetric;
    c.nearest = Nearest::legacy;
    if (upsample && n.opset < 9)
      c.scales_attr = a.get_floats("scales");
    else
      c.scales_input = 1;
  } else {
    c.scales_input = 2;
    c.sizes_input = 3;
    std::string coord = a.get_string("coordinate_transformation_mode", "half_pixel");
    if (coord == "half_pixel") c.coord = Coord::half_pixel;
    else if (coord == "pytorch_half_pixel") c.coord = Coord::pytorch_half_pixel;
    else if (coord == "align_corners") c.coord = Coord::align_corners;
    else if (coord == "asymmetric") c.coord = Coord::asymmetric;
    else return nullptr;
    std::string nearest = a.get_string("nearest_mode", "round_prefer_floor");
    if (nearest == "round_prefer_floor") c.nearest = Nearest::round_prefer_floor;
    else if (nearest == "round_prefer_ceil") c.nearest = Nearest::round_prefer_ceil;
    else if (nearest == "floor") c.nearest = Nearest::floor;
    else if (nearest == "ceil") c.nearest = Nearest::ceil;
    else return nullptr;
    if (a.get_int("exclude_outside", 0) != 0 || a.get_int("antialias", 0) != 0 || a.has("axes") ||
        a.get_string("keep_aspect_ratio_policy", "stretch") != "stretch")
      return nullptr;
  }
  return std::make_unique<ResizeCpuOp>(std::move(ref), std::move(c),
                                       resize_kernels(ctx.input_dtype(0), ctx.isa));
}

}  // namespace

void register_resize_lowerings(CpuRegistry& r) {
  r.add("Resize", lower_resize);
  r.add("Upsample", lower_resize);
}

}  // namespace voxrt::cpu
