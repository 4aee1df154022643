#include <algorithm>
#include <optional>

#include "backends/ref/op.h"
#include "backends/ref/ops/fused.h"
#include "backends/ref/tensor_math.h"
#include "passes/passes.h"
#include "passes/shape_probe.h"

namespace voxrt {

namespace {

// How `n` upsamples, if it is a Resize (or Upsample) by 2 along every spatial axis of a rank 3 to
// 5 input whose result the convolutions can make row by row (Upsample in
// backends/ref/ops/fused.h); none otherwise.
Upsample upsample_of(const ir::Graph& g, const ir::Node& n) {
  const bool resize = n.op_type == "Resize", upsample = n.op_type == "Upsample";
  if ((!resize && !upsample) || !n.domain.empty() || !n.has_input(0) || n.outputs.size() != 1)
    return Upsample::none;
  const ir::Attributes& a = n.attrs;
  const std::string mode = a.get_string("mode", "nearest");
  std::vector<double> scales;
  bool nearest = mode == "nearest";
  Upsample linear = Upsample::none;
  if (upsample || n.opset < 11) {
    // Upsample and Resize-10: asymmetric coordinates, nearest by floor when upsampling.
    if (mode == "linear" || (upsample && mode == "bilinear")) linear = Upsample::linear_asymmetric;
    if (upsample && n.opset < 9)
      for (float s : a.get_floats("scales")) scales.push_back(s);
    else if (const Tensor* s = n.has_input(1) ? g.constant(n.inputs[1]) : nullptr)
      scales = ref::to_f64(*s);
  } else {
    const std::string coord = a.get_string("coordinate_transformation_mode", "half_pixel");
    const std::string rounding = a.get_string("nearest_mode", "round_prefer_floor");
    const bool half = coord == "half_pixel" || coord == "pytorch_half_pixel";
    // By 2, half-pixel coordinates round to i / 2 either way, asymmetric ones floor (or round
    // down) to it.
    nearest =
        nearest &&
        ((half && (rounding == "round_prefer_floor" || rounding == "round_prefer_ceil")) ||
         (coord == "asymmetric" && (rounding == "floor" || rounding == "round_prefer_floor")));
    if (mode == "linear")
      linear = half                       ? Upsample::linear
               : coord == "align_corners" ? Upsample::linear_align_corners
               : coord == "asymmetric"    ? Upsample::linear_asymmetric
                                          : Upsample::none;
    if (a.get_int("exclude_outside", 0) != 0 || a.get_int("antialias", 0) != 0 || a.has("axes") ||
        a.get_string("keep_aspect_ratio_policy", "stretch") != "stretch")
      return Upsample::none;
    if (const Tensor* s = n.has_input(2) ? g.constant(n.inputs[2]) : nullptr)
      scales = ref::to_f64(*s);
  }
  if ((!nearest && linear == Upsample::none) || scales.size() < 3 || scales.size() > 5 ||
      scales[0] != 1.0 || scales[1] != 1.0)
    return Upsample::none;
  for (size_t d = 2; d < scales.size(); ++d)
    if (scales[d] != 2.0) return Upsample::none;
  return linear != Upsample::none ? linear : Upsample::nearest;
}

// How `n` resizes where it is a Resize given sizes not known at load (computed from shapes): its
// `_sized` mode where the convolution's drivers make its rows at any size (nearest by floor with
// asymmetric coordinates, torch's `nearest`; linear with half-pixel, corner-aligned or asymmetric
// coordinates), none otherwise.
Upsample sized_upsample_of(const ir::Graph& g, const ir::Node& n) {
  if (n.op_type != "Resize" || !n.domain.empty() || n.opset < 11 || !n.has_input(0) ||
      !n.has_input(3) || g.is_constant(n.inputs[3]) || n.outputs.size() != 1)
    return Upsample::none;
  const ir::Attributes& a = n.attrs;
  if (a.get_int("exclude_outside", 0) != 0 || a.get_int("antialias", 0) != 0 || a.has("axes") ||
      a.get_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    return Upsample::none;
  if (n.has_input(2)) {  // scales too: only an empty tensor, which opsets 11 and 12 ask for
    const Tensor* s = g.constant(n.inputs[2]);
    if (!s || s->numel() != 0) return Upsample::none;
  }
  const std::string mode = a.get_string("mode", "nearest");
  const std::string coord = a.get_string("coordinate_transformation_mode", "half_pixel");
  if (mode == "nearest")
    return coord == "asymmetric" && a.get_string("nearest_mode", "round_prefer_floor") == "floor"
               ? Upsample::nearest_sized
               : Upsample::none;
  if (mode != "linear") return Upsample::none;
  return coord == "half_pixel"      ? Upsample::linear_sized
         : coord == "align_corners" ? Upsample::linear_align_corners_sized
         : coord == "asymmetric"    ? Upsample::linear_asymmetric_sized
                                    : Upsample::none;
}

// Whether the sizes of Resize `n` are, in both probes, its input's first two dims and then the
// spatial dims of value `like` (F.interpolate(x, size=like.shape[2:])).
bool sizes_follow(const std::pair<ShapeProbe, ShapeProbe>& probes, const ir::Node& n, int like) {
  for (const ShapeProbe* p : {&probes.first, &probes.second}) {
    const auto sizes = p->int_values(n.inputs[3]);
    const auto& x = p->shapes[static_cast<size_t>(n.inputs[0])];
    const auto& to = p->shapes[static_cast<size_t>(like)];
    if (!sizes || !x || !to || sizes->size() != x->size() || to->size() != x->size() ||
        x->size() < 3)
      return false;
    for (size_t d = 0; d < x->size(); ++d)
      if ((*sizes)[d] != (d < 2 ? (*x)[d] : (*to)[d])) return false;
  }
  return true;
}

}  // namespace

// A Resize (or Upsample) by 2 along every spatial axis, nearest (reading i / 2) or linear (with
// half-pixel, corner-aligned or asymmetric coordinates), whose one consumer is a convolution's X or
// a part of it (a Concat fused before, fuse_concat_conv.cpp) is read by the convolution through
// x_upsample: its drivers make the upsampled rows where they copy X's rows into their padded
// planes, so the upsampled tensor, 4 (2D) or 8 (3D) times the Resize's input, is never written, nor
// read back. A UNet decoder that upsamples with nn.Upsample(scale_factor=2) or
// F.interpolate(scale_factor=2) has one such Resize a level; so has one with F.interpolate(size=
// skip.shape[2:]) where the model's spatial dims are known (resize-sizes-as-scales gave it scales).
// Where they are not, such a Resize (nearest by floor with asymmetric coordinates, or linear)
// whose sizes the shape probes show to be the first two dims of its input and then the spatial
// dims of a part of the same X read as stored (the skip) goes in as a part resized to that
// part's size (the `_sized` modes): twice its input at even sizes, whatever it is at odd ones.
void fuse_resize_into_conv(ir::Graph& g) {
  const auto consumers = g.consumers();
  const auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  // Resizes given sizes from shapes are taken where the probes show them resizing to the size of
  // another part of X: probed once, before this pass rewrites anything.
  std::optional<std::pair<ShapeProbe, ShapeProbe>> probes;
  if (std::any_of(g.nodes.begin(), g.nodes.end(),
                  [&](const ir::Node& n) { return sized_upsample_of(g, n) != Upsample::none; }))
    probes = probe_shapes(g);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& conv = g.nodes[k];
    const bool plain = conv.op_type == "Conv" && conv.domain.empty();
    const bool fused = conv.op_type == "FusedConv" && conv.domain == kInternalDomain;
    if ((!plain && !fused) || !conv.has_input(0) || !conv.has_input(1) ||
        conv.attrs.has(kFusedXFrom) || conv.attrs.has(kFusedXUpsample))
      continue;
    const int64_t parts = fused ? conv.attrs.get_int("x_parts", 1) : 1;
    if (parts < 1 || conv.num_inputs() < (parts > 1 ? 3 + parts : 1)) continue;
    std::vector<int64_t> modes(static_cast<size_t>(parts), 0);
    bool any = false;
    std::vector<std::pair<int64_t, size_t>> sized_parts;  // (part, its Resize) to probe
    for (int64_t p = 0; p < parts; ++p) {
      const size_t slot = p == 0 ? 0 : static_cast<size_t>(3 + p);
      const int v = conv.inputs[slot];
      if (v < 0 || producers[static_cast<size_t>(v)] < 0) continue;
      if (std::count(g.outputs.begin(), g.outputs.end(), v) > 0) continue;
      const auto& users = consumers[static_cast<size_t>(v)];
      if (users.size() != 1 || users[0] != static_cast<int>(k) ||
          std::count(conv.inputs.begin(), conv.inputs.end(), v) != 1)
        continue;
      const size_t ri = static_cast<size_t>(producers[static_cast<size_t>(v)]);
      const ir::Node& resize = g.nodes[ri];
      if (drop[ri]) continue;
      const auto& in_dt = g.values[static_cast<size_t>(resize.inputs[0])].dtype;
      const auto& out_dt = g.values[static_cast<size_t>(v)].dtype;
      if (!in_dt || !out_dt || *in_dt != *out_dt) continue;
      const Upsample u = upsample_of(g, resize);
      if (u == Upsample::none) {
        if (probes && parts > 1 && sized_upsample_of(g, resize) != Upsample::none)
          sized_parts.emplace_back(p, ri);
        continue;
      }
      conv.inputs[slot] = resize.inputs[0];
      modes[static_cast<size_t>(p)] = static_cast<int64_t>(u);
      drop[ri] = 1;
      any = true;
    }
    // A Resize to the size of a part read as stored: the first such part is what it resizes to.
    auto part_slot = [](int64_t p) { return p == 0 ? size_t{0} : static_cast<size_t>(3 + p); };
    int64_t stored = -1;
    for (int64_t p = 0; p < parts && stored < 0; ++p)
      if (modes[static_cast<size_t>(p)] == 0 &&
          std::none_of(sized_parts.begin(), sized_parts.end(),
                       [p](const auto& e) { return e.first == p; }))
        stored = p;
    for (const auto& [p, ri] : sized_parts) {
      const ir::Node& resize = g.nodes[ri];
      if (stored < 0 || !sizes_follow(*probes, resize, conv.inputs[part_slot(stored)])) continue;
      conv.inputs[part_slot(p)] = resize.inputs[0];
      modes[static_cast<size_t>(p)] = static_cast<int64_t>(sized_upsample_of(g, resize));
      drop[ri] = 1;
      any = true;
    }
    if (!any) continue;
    if (plain) {
      conv.domain = kInternalDomain;
      conv.op_type = "FusedConv";
      conv.attrs.set_string("activation", "");
    }
    conv.attrs.set_ints(kFusedXUpsample, modes);
  }
  erase_nodes(g, drop);
  g.remove_dead();
}

}  // namespace voxrt
