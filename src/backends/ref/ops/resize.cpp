// Resize (opsets 10..21) and the older Upsample (7..9): separable nearest, N-linear and N-cubic
// interpolation with ONNX's coordinate transformations, computed in double.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "backends/ref/op.h"
#include "backends/ref/ops/arity.h"
#include "backends/ref/tensor_math.h"

namespace voxrt {
namespace {

constexpr std::initializer_list<DType> kAllTypes = {
    DType::f32, DType::f16, DType::bf16, DType::f64, DType::i8,  DType::i16,    DType::i32,
    DType::i64, DType::u8,  DType::u16,  DType::u32, DType::u64, DType::boolean};
constexpr std::initializer_list<DType> kFloatTypes = {DType::f32, DType::f16, DType::bf16,
                                                      DType::f64};

enum class Mode { nearest, linear, cubic };
enum class Coord {
  half_pixel,
  half_pixel_symmetric,
  pytorch_half_pixel,
  align_corners,
  asymmetric,
  tf_half_pixel_for_nn,
  tf_crop_and_resize
};
// `legacy` is Upsample's and Resize-10's rule: floor when upsampling, ceil when downsampling.
enum class Nearest { round_prefer_floor, round_prefer_ceil, floor, ceil, legacy };
enum class Aspect { stretch, not_larger, not_smaller };

struct ResizeConfig {
  Mode mode = Mode::nearest;
  Coord coord = Coord::half_pixel;
  Nearest nearest = Nearest::round_prefer_floor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  bool antialias = false;
  Aspect aspect = Aspect::stretch;
  std::optional<std::vector<int64_t>> axes;
  std::optional<std::vector<float>> scales_attr;  // Upsample before opset 9
  int roi_input = -1, scales_input = -1, sizes_input = -1;
};

// Per axis of the data: output size, scale, the output length the coordinate formulas use (not
// rounded) and the region of interest.
struct Geometry {
  Shape out;
  std::vector<double> scale, length, roi_start, roi_end;
};

struct Tap {
  int64_t index;
  double weight;
};

// For each output coordinate along one axis, taps[begin[i] .. begin[i + 1]) are the input
// coordinates it reads and their weights; outside[i] marks a tf_crop_and_resize extrapolation.
struct AxisTaps {
  std::vector<size_t> begin;
  std::vector<Tap> taps;
  std::vector<char> outside;
};

std::string list_str(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v[i]);
    s += (i ? ", " : "") + std::string(buf);
  }
  return s + "]";
}

double cubic_kernel(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

class ResizeOp : public Op {
 public:
  explicit ResizeOp(ResizeConfig c) : c_(std::move(c)) {}

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    require_dtype(in[0].dtype, kAllTypes, "input 'X'");
    if (has(in, c_.roi_input))
      require_dtype(in[static_cast<size_t>(c_.roi_input)].dtype, kFloatTypes, "input 'roi'");
    if (has(in, c_.scales_input))
      require_dtype(in[static_cast<size_t>(c_.scales_input)].dtype, kFloatTypes, "input 'scales'");
    if (has(in, c_.sizes_input))
      require_dtype(in[static_cast<size_t>(c_.sizes_input)].dtype, {DType::i64}, "input 'sizes'");
    return {in[0].dtype};
  }

  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    auto value = [&](int i, const char* role) -> const Tensor* {
      return has(in, i) ? &need_value(in[static_cast<size_t>(i)], role) : nullptr;
    };
    const Tensor* scales = value(c_.scales_input, "input 'scales'");
    const Tensor* sizes = value(c_.sizes_input, "input 'sizes'");
    // The region of interest changes the output size only when scales give it.
    const Tensor* roi = nullptr;
    if (c_.coord == Coord::tf_crop_and_resize && scales && scales->numel() > 0)
      roi = value(c_.roi_input, "input 'roi'");
    return {geometry(in[0].shape, roi, scales, sizes).out};
  }

  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    auto input = [&](int i) -> const Tensor* {
      return i >= 0 && static_cast<size_t>(i) < in.size() ? in[static_cast<size_t>(i)] : nullptr;
    };
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    Geometry g =
        geometry(x.shape(), input(c_.roi_input), input(c_.scales_input), input(c_.sizes_input));
    if (y.numel() == 0) return;
    std::vector<AxisTaps> axes;
    for (size_t d = 0; d < g.out.size(); ++d) axes.push_back(taps_for_axis(g, x.shape()[d], d));
    if (c_.mode == Mode::nearest)
      run_nearest(x, y, axes);
    else
      run_weighted(x, y, axes);
  }

 private:
  static bool has(const std::vector<ValueMeta>& in, int i) {
    return i >= 0 && static_cast<size_t>(i) < in.size() && in[static_cast<size_t>(i)].present;
  }

  std::vector<int64_t> resized_axes(int64_t rank) const {
    std::vector<int64_t> axes;
    if (!c_.axes) {
      for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
      return axes;
    }
    std::vector<char> seen(static_cast<size_t>(rank), 0);
    for (int64_t a : *c_.axes) {
      if (!ref::normalize_axis(a, rank) || seen[static_cast<size_t>(a)]++)
        fail("attribute 'axes' is out of range or repeated for input of rank " +
             std::to_string(rank));
      axes.push_back(a);
    }
    return axes;
  }

  Geometry geometry(const Shape& x, const Tensor* roi, const Tensor* scales_t,
                    const Tensor* sizes_t) const {
    size_t r = x.size();
    std::vector<int64_t> axes = resized_axes(static_cast<int64_t>(r));
    size_t n = axes.size();
    std::vector<double> scales;
    if (c_.scales_attr)
      scales.assign(c_.scales_attr->begin(), c_.scales_attr->end());
    else if (scales_t && scales_t->numel() > 0)
      scales = ref::to_f64(*scales_t);
    std::vector<int64_t> sizes;
    if (sizes_t && sizes_t->numel() > 0) {
      if (!scales.empty()) fail("only one of 'scales' and 'sizes' may be given");
      sizes = ref::to_i64(*sizes_t);
    }
    if (scales.empty() && sizes.empty()) fail("one of 'scales' and 'sizes' must be given");
    size_t given = scales.empty() ? sizes.size() : scales.size();
    if (given != n)
      fail(std::string(scales.empty() ? "sizes" : "scales") + " has " + std::to_string(given) +
           " entries, expected " + std::to_string(n) + " (one per resized axis of input " +
           shape_str(x) + ")");

    Geometry g{x, std::vector<double>(r, 1.0), std::vector<double>(r), std::vector<double>(r, 0.0),
               std::vector<double>(r, 1.0)};
    for (size_t d = 0; d < r; ++d) g.length[d] = static_cast<double>(x[d]);
    if (roi && roi->numel() > 0) {
      std::vector<double> v = ref::to_f64(*roi);
      if (v.size() != 2 * n)
        fail("roi has " + std::to_string(v.size()) + " entries, expected " + std::to_string(2 * n));
      for (size_t i = 0; i < n; ++i) {
        g.roi_start[static_cast<size_t>(axes[i])] = v[i];
        g.roi_end[static_cast<size_t>(axes[i])] = v[n + i];
      }
    }

    if (!scales.empty()) {
      for (size_t i = 0; i < n; ++i) {
        size_t d = static_cast<size_t>(axes[i]);
        double s = scales[i];
        if (!(s > 0) || !std::isfinite(s)) fail("scales " + list_str(scales) + " must be > 0");
        double crop = c_.coord == Coord::tf_crop_and_resize ? g.roi_end[d] - g.roi_start[d] : 1.0;
        double len = static_cast<double>(x[d]) * s * crop;
        if (!(len < 4e18)) fail("scales " + list_str(scales) + " give too large an output");
        g.scale[d] = s;
        g.length[d] = len;
        g.out[d] = static_cast<int64_t>(std::floor(len));
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        size_t d = static_cast<size_t>(axes[i]);
        if (sizes[i] < 0) fail("sizes must not be negative");
        if (x[d] == 0 && sizes[i] != 0)
          fail("cannot resize axis " + std::to_string(d) + " of size 0 to " +
               std::to_string(sizes[i]));
        g.out[d] = sizes[i];
        g.length[d] = static_cast<double>(sizes[i]);
        g.scale[d] = x[d] == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(x[d]);
      }
      if (c_.aspect != Aspect::stretch) {
        double s = c_.aspect == Aspect::not_larger ? INFINITY : 0;
        for (int64_t a : axes)
          s = c_.aspect == Aspect::not_larger ? std::min(s, g.scale[static_cast<size_t>(a)])
                                              : std::max(s, g.scale[static_cast<size_t>(a)]);
        for (int64_t a : axes) {
          size_t d = static_cast<size_t>(a);
          g.scale[d] = s;
          g.length[d] = s * static_cast<double>(x[d]);
          if (!(g.length[d] < 4e18)) fail("sizes give too large an output");
          g.out[d] = static_cast<int64_t>(g.length[d] + 0.5);
        }
      }
    }
    shape_numel(g.out);
    return g;
  }

  double original_coordinate(const Geometry& g, int64_t in_len, size_t d, int64_t i) const {
    double s = g.scale[d], len = g.length[d], xi = static_cast<double>(i);
    double in = static_cast<double>(in_len);
    switch (c_.coord) {
      case Coord::half_pixel: return (xi + 0.5) / s - 0.5;
      case Coord::half_pixel_symmetric: {
        double adjustment = static_cast<double>(g.out[d]) / len;
        return in / 2 * (1 - adjustment) + (xi + 0.5) / s - 0.5;
      }
      case Coord::pytorch_half_pixel: return len > 1 ? (xi + 0.5) / s - 0.5 : 0.0;
      case Coord::align_corners: return len == 1 ? 0.0 : xi * (in - 1) / (len - 1);
      case Coord::asymmetric: return xi / s;
      case Coord::tf_half_pixel_for_nn: return (xi + 0.5) / s;
      case Coord::tf_crop_and_resize: {
        double a = g.roi_start[d], b = g.roi_end[d];
        return len > 1 ? a * (in - 1) + xi * (b - a) * (in - 1) / (len - 1)
                       : 0.5 * (a + b) * (in - 1);
      }
    }
    return 0;
  }

  int64_t nearest_index(double v, double scale) const {
    switch (c_.nearest) {
      case Nearest::round_prefer_floor: {
        double f = std::floor(v);
        return static_cast<int64_t>(v - f <= 0.5 ? f : f + 1);
      }
      case Nearest::round_prefer_ceil: {
        double f = std::floor(v);
        return static_cast<int64_t>(v - f < 0.5 ? f : f + 1);
      }
      case Nearest::floor: return static_cast<int64_t>(std::floor(v));
      case Nearest::ceil: return static_cast<int64_t>(std::ceil(v));
      case Nearest::legacy: return static_cast<int64_t>(scale < 1 ? std::ceil(v) : std::floor(v));
    }
    return 0;
  }

  // Input coordinates and weights of one output coordinate, before clamping to the input:
  // the point sits at base + ratio with ratio in (0, 1].
  void weights(double v, double scale, std::vector<Tap>& t) const {
    double base = std::ceil(v) - 1;
    double ratio = v - base;
    int64_t b = static_cast<int64_t>(base);
    t.clear();
    if (c_.mode == Mode::linear && !c_.antialias) {
      t.push_back({b, 1 - ratio});
      t.push_back({b + 1, ratio});
      return;
    }
    if (c_.mode == Mode::cubic && !c_.antialias) {
      for (int64_t k = -1; k <= 2; ++k)
        t.push_back({b + k, cubic_kernel(static_cast<double>(k) - ratio, c_.cubic_a)});
      return;
    }
    // Antialiasing stretches the kernel by 1 / scale when downsampling.
    double s = std::min(scale, 1.0);
    double support = c_.mode == Mode::linear ? 1.0 : 2.0;
    int64_t first = static_cast<int64_t>(std::floor(-support / s)) + 1;
    double sum = 0;
    for (int64_t k = first; k < 2 - first; ++k) {
      double at = (static_cast<double>(k) - ratio) * s;
      double w = c_.mode == Mode::linear ? std::clamp(1 - std::abs(at), 0.0, 1.0)
                                         : cubic_kernel(at, c_.cubic_a);
      t.push_back({b + k, w});
      sum += w;
    }
    for (Tap& tap : t) tap.weight /= sum;
  }

  AxisTaps taps_for_axis(const Geometry& g, int64_t in_len, size_t d) const {
    AxisTaps a;
    int64_t out_len = g.out[d];
    std::vector<Tap> t;
    for (int64_t i = 0; i < out_len; ++i) {
      a.begin.push_back(a.taps.size());
      double v = original_coordinate(g, in_len, d, i);
      bool outside =
          c_.coord == Coord::tf_crop_and_resize && (v < 0 || v > static_cast<double>(in_len - 1));
      a.outside.push_back(outside);
      if (!std::isfinite(v)) fail("the coordinate transformation gives a non-finite coordinate");
      v = std::clamp(v, -1e15, 1e15);
      if (c_.mode == Mode::nearest) {
        a.taps.push_back({std::clamp<int64_t>(nearest_index(v, g.scale[d]), 0, in_len - 1), 1.0});
        continue;
      }
      weights(v, g.scale[d], t);
      if (c_.exclude_outside) {
        double sum = 0;
        for (Tap& tap : t) {
          if (tap.index < 0 || tap.index >= in_len) tap.weight = 0;
          sum += tap.weight;
        }
        if (sum != 0)
          for (Tap& tap : t) tap.weight /= sum;
      }
      size_t kept = a.taps.size();
      for (const Tap& tap : t)
        if (tap.weight != 0)
          a.taps.push_back({std::clamp<int64_t>(tap.index, 0, in_len - 1), tap.weight});
      if (a.taps.size() == kept) a.taps.push_back({0, 0.0});
    }
    a.begin.push_back(a.taps.size());
    return a;
  }

  void run_nearest(const Tensor& x, Tensor& y, const std::vector<AxisTaps>& axes) const {
    size_t rank = axes.size(), es = dtype_size(x.dtype());
    std::vector<int64_t> stride = ref::strides_of(x.shape());
    std::vector<int64_t> idx(rank, 0);
    Tensor fill = Tensor::zeros(y.dtype(), {1});
    ref::store(fill, 0, c_.extrapolation);
    const auto* src = static_cast<const uint8_t*>(x.raw());
    auto* dst = static_cast<uint8_t*>(y.raw());
    for (int64_t i = 0; i < y.numel(); ++i) {
      int64_t off = 0;
      bool outside = false;
      for (size_t d = 0; d < rank; ++d) {
        size_t k = static_cast<size_t>(idx[d]);
        outside = outside || axes[d].outside[k];
        off += axes[d].taps[axes[d].begin[k]].index * stride[d];
      }
      const uint8_t* from =
          outside ? static_cast<const uint8_t*>(fill.raw()) : src + static_cast<size_t>(off) * es;
      std::memcpy(dst + static_cast<size_t>(i) * es, from, es);
      for (size_t d = rank; d-- > 0;) {
        if (++idx[d] < y.shape()[d]) break;
        idx[d] = 0;
      }
    }
  }

  void run_weighted(const Tensor& x, Tensor& y, const std::vector<AxisTaps>& axes) const {
    size_t rank = axes.size();
    std::vector<int64_t> stride = ref::strides_of(x.shape());
    std::vector<int64_t> idx(rank, 0);
    std::vector<size_t> cur(rank), lo(rank), hi(rank);
    for (int64_t i = 0; i < y.numel(); ++i) {
      bool outside = false;
      for (size_t d = 0; d < rank; ++d) {
        size_t k = static_cast<size_t>(idx[d]);
        outside = outside || axes[d].outside[k];
        cur[d] = lo[d] = axes[d].begin[k];
        hi[d] = axes[d].begin[k + 1];
      }
      double acc = 0;
      if (outside) {
        acc = c_.extrapolation;
      } else {
        for (;;) {
          double w = 1;
          int64_t off = 0;
          for (size_t d = 0; d < rank; ++d) {
            const Tap& t = axes[d].taps[cur[d]];
            w *= t.weight;
            off += t.index * stride[d];
          }
          acc += w * ref::load(x, off);
          size_t d = rank;
          while (d > 0 && ++cur[d - 1] == hi[d - 1]) {
            cur[d - 1] = lo[d - 1];
            --d;
          }
          if (d == 0) break;
        }
      }
      ref::store(y, i, acc);
      for (size_t d = rank; d-- > 0;) {
        if (++idx[d] < y.shape()[d]) break;
        idx[d] = 0;
      }
    }
  }

  ResizeConfig c_;
};

Mode parse_mode(const OpContext& c, bool allow_cubic) {
  std::string m = c.node.attrs.get_string("mode", "nearest");
  if (m == "nearest") return Mode::nearest;
  if (m == "linear" || (m == "bilinear" && c.node.op_type == "Upsample")) return Mode::linear;
  if (m == "cubic" && allow_cubic) return Mode::cubic;
  c.fail("mode '" + m + "' is not supported (expected nearest, linear" +
         (allow_cubic ? ", cubic)" : ")"));
}

std::unique_ptr<Op> make_resize(const OpContext& c) {
  ref::check_arity(c, c.opset < 11 ? 2 : 1, c.opset < 11 ? 2 : 4, 1);
  const ir::Attributes& a = c.node.attrs;
  ResizeConfig cfg;
  cfg.mode = parse_mode(c, c.opset >= 11);
  if (c.opset < 11) {
    cfg.coord = Coord::asymmetric;
    cfg.nearest = Nearest::legacy;
    cfg.scales_input = 1;
    return std::make_unique<ResizeOp>(cfg);
  }
  cfg.roi_input = 1;
  cfg.scales_input = 2;
  cfg.sizes_input = 3;
  std::string coord = a.get_string("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel")
    cfg.coord = Coord::half_pixel;
  else if (coord == "half_pixel_symmetric" && c.opset >= 19)
    cfg.coord = Coord::half_pixel_symmetric;
  else if (coord == "pytorch_half_pixel")
    cfg.coord = Coord::pytorch_half_pixel;
  else if (coord == "align_corners")
    cfg.coord = Coord::align_corners;
  else if (coord == "asymmetric")
    cfg.coord = Coord::asymmetric;
  else if (coord == "tf_half_pixel_for_nn" && c.opset < 13)
    cfg.coord = Coord::tf_half_pixel_for_nn;
  else if (coord == "tf_crop_and_resize")
    cfg.coord = Coord::tf_crop_and_resize;
  else
    c.fail("coordinate_transformation_mode '" + coord + "' is not supported at opset " +
           std::to_string(c.opset));
  std::string nearest = a.get_string("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor")
    cfg.nearest = Nearest::round_prefer_floor;
  else if (nearest == "round_prefer_ceil")
    cfg.nearest = Nearest::round_prefer_ceil;
  else if (nearest == "floor")
    cfg.nearest = Nearest::floor;
  else if (nearest == "ceil")
    cfg.nearest = Nearest::ceil;
  else
    c.fail("nearest_mode '" + nearest + "' is not supported");
  cfg.cubic_a = a.get_float("cubic_coeff_a", -0.75f);
  cfg.exclude_outside = a.get_int("exclude_outside", 0) != 0;
  cfg.extrapolation = a.get_float("extrapolation_value", 0.0f);
  if (c.opset >= 18) {
    cfg.antialias = a.get_int("antialias", 0) != 0;
    if (a.has("axes")) cfg.axes = a.get_ints("axes");
    std::string policy = a.get_string("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch")
      cfg.aspect = Aspect::stretch;
    else if (policy == "not_larger")
      cfg.aspect = Aspect::not_larger;
    else if (policy == "not_smaller")
      cfg.aspect = Aspect::not_smaller;
    else
      c.fail("keep_aspect_ratio_policy '" + policy + "' is not supported");
  }
  return std::make_unique<ResizeOp>(cfg);
}

std::unique_ptr<Op> make_upsample(const OpContext& c) {
  ref::check_arity(c, c.opset < 9 ? 1 : 2, c.opset < 9 ? 1 : 2, 1);
  ResizeConfig cfg;
  cfg.mode = parse_mode(c, false);
  cfg.coord = Coord::asymmetric;
  cfg.nearest = Nearest::legacy;
  if (c.opset >= 9) {
    cfg.scales_input = 1;
  } else {
    if (!c.node.attrs.has("scales")) c.fail("attribute 'scales' is required");
    cfg.scales_attr = c.node.attrs.get_floats("scales");
  }
  return std::make_unique<ResizeOp>(cfg);
}

}  // namespace

void register_resize_ops(OpRegistry& r) {
  r.add("Resize", 10, 21, make_resize);
  r.add("Upsample", 7, 9, make_upsample);
}

}  // namespace voxrt
