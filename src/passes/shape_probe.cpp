#include "passes/shape_probe.h"

#include <memory>

#include "backends/ref/op.h"
#include "backends/ref/tensor_math.h"

namespace voxrt {

namespace {

// Values are folded from at most this many elements (a shape's worth, in practice).
constexpr int64_t kMaxProbeFoldedElements = 64;

// One probe: the k-th unknown dim bound to `base` + 2 k; nodes whose shapes cannot be inferred
// (their reference op not built, or refusing these shapes) leave their outputs unknown.
ShapeProbe probe(const ir::Graph& g, const std::vector<std::unique_ptr<Op>>& ops, int64_t base) {
  ShapeProbe p;
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

}  // namespace

std::optional<std::vector<int64_t>> ShapeProbe::int_values(int v) const {
  const auto it = folded.find(v);
  if (it == folded.end() || (it->second.dtype() != DType::i64 && it->second.dtype() != DType::i32))
    return std::nullopt;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < it->second.numel(); ++i)
    out.push_back(static_cast<int64_t>(ref::load(it->second, i)));
  return out;
}

std::pair<ShapeProbe, ShapeProbe> probe_shapes(const ir::Graph& g) {
  std::vector<std::unique_ptr<Op>> ops(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    try {
      ops[k] = OpRegistry::instance().create(g.nodes[k], g);
    } catch (const std::exception&) {
      // A node the reference cannot build: its outputs stay unknown.
    }
  }
  return {probe(g, ops, 1009), probe(g, ops, 1301)};
}

}  // namespace voxrt
