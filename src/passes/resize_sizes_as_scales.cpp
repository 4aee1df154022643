// Resizes given output sizes computed from shapes (F.interpolate(size=skip.shape[2:]) exports
// Shape, Gather, Slice, Concat and Cast into Resize's sizes) whose sizes are a whole multiple of
// the input along every axis whatever the graph inputs' unknown dims: such a Resize gets those
// multiples as constant scales, so the passes after it (fuse-resize-into-conv) see an upsampling
// by 2 where there is one, and the Resize kernel a fixed factor.
#include <algorithm>
#include <optional>

#include "passes/passes.h"
#include "passes/shape_probe.h"

namespace voxrt {

namespace {

// The whole multiples sizes / X's shape of Resize `n` under probe `p`, or nullopt.
std::optional<std::vector<int64_t>> multiples(const ir::Node& n, const ShapeProbe& p) {
  const auto& x = p.shapes[static_cast<size_t>(n.inputs[0])];
  const auto sizes = p.int_values(n.inputs[3]);
  if (!x || !sizes || sizes->size() != x->size()) return std::nullopt;
  std::vector<int64_t> r;
  for (size_t i = 0; i < x->size(); ++i) {
    const int64_t in = (*x)[i], out = (*sizes)[i];
    if (in <= 0 || out <= 0 || out % in != 0) return std::nullopt;
    r.push_back(out / in);
  }
  return r;
}

}  // namespace

// Probes the graph's shapes twice, the inputs' unknown dims bound to different values each time:
// a Resize (opset 11 on, no `axes`, stretching) whose sizes are not constant but come out the
// same whole multiples of its input in both probes takes them as constant scales (float32, as
// ONNX requires) in place of the sizes. An upsampling whose factor depends on the input's size
// (sizes from an odd skip, or from a dim the model leaves unknown) differs between the probes or
// is no whole multiple, and keeps its sizes. Where a Resize's scales give the same output sizes
// as its sizes, ONNX's coordinate transforms are the same too (both use output / input).
void resize_sizes_as_scales(ir::Graph& g) {
  std::vector<size_t> candidates;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    if (n.op_type == "Resize" && n.domain.empty() && n.opset >= 11 && n.has_input(0) &&
        n.has_input(3) && !g.is_constant(n.inputs[3]) && !n.attrs.has("axes") &&
        n.attrs.get_string("keep_aspect_ratio_policy", "stretch") == "stretch" &&
        (n.opset >= 13 || n.has_input(1)))
      candidates.push_back(k);
  }
  if (candidates.empty()) return;
  const auto [a, b] = probe_shapes(g);
  bool changed = false;
  for (size_t k : candidates) {
    ir::Node& n = g.nodes[k];
    const auto ra = multiples(n, a), rb = multiples(n, b);
    if (!ra || !rb || *ra != *rb) continue;
    std::vector<float> scales(ra->begin(), ra->end());
    Tensor t = Tensor::empty(DType::f32, {static_cast<int64_t>(scales.size())});
    std::copy(scales.begin(), scales.end(), static_cast<float*>(t.raw()));
    // Named after the sizes, a value of its own (a name add_value has not seen).
    const int v = g.add_value(g.values[static_cast<size_t>(n.inputs[3])].name + "_as_scales");
    g.values[static_cast<size_t>(v)].dtype = DType::f32;
    g.values[static_cast<size_t>(v)].dims = std::vector<ir::Dim>{ir::Dim{t.dim(0), ""}};
    g.constants[v] = std::move(t);
    n.inputs[2] = v;
    n.inputs.resize(3);
    changed = true;
  }
  if (changed) g.remove_dead();
}

}  // namespace voxrt
