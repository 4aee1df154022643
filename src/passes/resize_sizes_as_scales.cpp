// Resizes given output sizes computed from shapes (F.interpolate(size=skip.shape[2:]) exports
// Shape, Gather, Slice, Concat and Cast into Resize's sizes) whose sizes are a whole multiple of
// the input along every axis whatever the graph inputs' unknown dims: such a Resize gets those
// multiples as constant scales, so the passes after it (fuse-resize-into-conv) see an upsampling
// by 2 where there is one.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>

#include "backends/ref/op.h"
#include "backends/ref/tensor_math.h"
#include "passes/passes.h"

namespace voxrt {

namespace {

// A Resize's sizes are folded from at most this many elements (a rank's worth, in practice).
constexpr int64_t kMaxProbeFoldedElements = 64;

// Every value's shape with the graph inputs' unknown dims bound to probe values (one per symbol,
// `base` + 2 k for the k-th; a dim with neither value nor symbol its own), and the values of the
// small shape-only chains folded from them (fold_shape_only, as runtime/plan.cpp folds them for
// real shapes).
// Nodes whose shapes cannot be inferred leave their outputs unknown.
struct Probe {
  std::vector<std::optional<Shape>> shapes;
  std::map<int, Tensor> folded;
};

Probe probe(const ir::Graph& g, const std::vector<std::unique_ptr<Op>>& ops, int64_t base) {
  Probe p;
  p.shapes.resize(g.values.size());
  std::map<std::string, int64_t> symbols;
  int64_t next = base;
  for (int v : g.inputs) {
    const ir::Value& val = g.values[static_cast<size_t>(v)];
    if (!val.dims) continue;
    Shape s;
    for (const ir::Dim& d : *val.dims) {
      if (d.known()) {
        s.push_back(d.value);
      } else if (d.symbol.empty()) {
        s.push_back(next);
        next += 2;
      } else {
        auto [it, fresh] = symbols.emplace(d.symbol, next);
        if (fresh) next += 2;
        s.push_back(it->second);
      }
    }
    p.shapes[static_cast<size_t>(v)] = s;
  }
  for (const auto& [v, t] : g.constants) p.shapes[static_cast<size_t>(v)] = t.shape();
  auto value_of = [&](int v) { return known_value(g, p.folded, v); };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    if (!ops[k]) continue;
    std::vector<ValueMeta> in(n.inputs.size());
    bool known = true;
    for (size_t i = 0; i < n.inputs.size() && known; ++i) {
      const int v = n.inputs[i];
      if (v < 0) continue;
      const auto& s = p.shapes[static_cast<size_t>(v)];
      const auto& dtype = g.values[static_cast<size_t>(v)].dtype;
      known = s.has_value() && dtype.has_value();
      if (known) in[i] = ValueMeta{true, *dtype, *s, value_of(v)};
    }
    if (!known) continue;
    try {
      const std::vector<Shape> out = ops[k]->infer_shapes(in);
      const std::vector<DType> types = ops[k]->infer_types(in);
      if (out.size() < n.outputs.size() || types.size() < out.size()) continue;
      for (size_t o = 0; o < n.outputs.size(); ++o)
        if (n.outputs[o] >= 0) p.shapes[static_cast<size_t>(n.outputs[o])] = out[o];
      if (auto res = fold_shape_only(*ops[k], n, in, out, types, kMaxProbeFoldedElements))
        for (size_t o = 0; o < n.outputs.size(); ++o)
          if (n.outputs[o] >= 0) p.folded[n.outputs[o]] = std::move((*res)[o]);
    } catch (const std::exception&) {
      // Not inferable with these shapes: its outputs stay unknown.
    }
  }
  return p;
}

// The whole multiples sizes / X's shape of Resize `n` under probe `p`, or nullopt.
std::optional<std::vector<int64_t>> multiples(const ir::Node& n, const Probe& p) {
  const auto& x = p.shapes[static_cast<size_t>(n.inputs[0])];
  const auto it = p.folded.find(n.inputs[3]);
  if (!x || it == p.folded.end() || it->second.dtype() != DType::i64 ||
      it->second.numel() != static_cast<int64_t>(x->size()))
    return std::nullopt;
  std::vector<int64_t> r;
  for (size_t i = 0; i < x->size(); ++i) {
    const int64_t in = (*x)[i], out = static_cast<int64_t>(ref::load(it->second, i));
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
  std::vector<std::unique_ptr<Op>> ops(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    try {
      ops[k] = OpRegistry::instance().create(g.nodes[k], g);
    } catch (const std::exception&) {
      // A node the reference cannot build: its outputs stay unknown.
    }
  }
  const Probe a = probe(g, ops, 1009), b = probe(g, ops, 1301);
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
