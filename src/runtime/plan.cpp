#include "runtime/plan.h"

#include <algorithm>

#include "runtime/batch_split.h"

namespace voxrt {

namespace {

constexpr int64_t kMaxFoldedElements = int64_t{1} << 20;

void bind_input(const ir::Graph& g, int v, const Shape& shape,
                std::map<std::string, int64_t>& symbols) {
  const ir::Value& val = g.values[static_cast<size_t>(v)];
  if (!val.dims) return;
  const auto& dims = *val.dims;
  std::string expected;
  for (size_t i = 0; i < dims.size(); ++i)
    expected +=
        (i ? "x" : "") + (dims[i].known() ? std::to_string(dims[i].value)
                                          : (dims[i].symbol.empty() ? "?" : dims[i].symbol));
  auto mismatch = [&](const std::string& why) {
    throw Error(g.where_value(v) + ": input of shape " + shape_str(shape) + " does not fit " +
                expected + " (" + why + ")");
  };
  if (dims.size() != shape.size())
    mismatch("rank " + std::to_string(shape.size()) + ", expected " + std::to_string(dims.size()));
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].known() && dims[i].value != shape[i])
      mismatch("dimension " + std::to_string(i) + " must be " + std::to_string(dims[i].value));
    if (!dims[i].symbol.empty()) {
      auto [it, fresh] = symbols.emplace(dims[i].symbol, shape[i]);
      if (!fresh && it->second != shape[i])
        mismatch("'" + dims[i].symbol + "' is bound to " + std::to_string(it->second) +
                 " by another input");
    }
  }
}

}  // namespace

std::vector<char> shape_deciding_inputs(const ir::Graph& g) {
  std::vector<char> out(g.inputs.size(), 0);
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    int v = g.inputs[i];
    const auto& dt = g.values[static_cast<size_t>(v)].dtype;
    if (dt == DType::i64 || dt == DType::i32) out[i] = 1;
    for (const ir::Node& n : g.nodes)
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (n.inputs[k] == v && ((k >= 1 && (n.op_type == "Resize" || n.op_type == "Upsample")) ||
                                 n.op_type == "Range"))
          out[i] = 1;
  }
  return out;
}

Plan make_plan(const CompiledModel& m, const std::vector<Shape>& input_shapes,
               const std::vector<const Tensor*>& input_values, int64_t threads) {
  const ir::Graph& g = m.graph;
  Plan p;
  size_t nv = g.values.size();
  p.shapes.resize(nv);
  p.known.assign(nv, 0);
  p.last_use.assign(nv, -1);
  if (input_shapes.size() != g.inputs.size())
    throw Error("model '" + g.model_name + "': expected " + std::to_string(g.inputs.size()) +
                " inputs, got " + std::to_string(input_shapes.size()));
  std::map<std::string, int64_t> symbols;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    int v = g.inputs[i];
    shape_numel(input_shapes[i]);
    bind_input(g, v, input_shapes[i], symbols);
    p.shapes[static_cast<size_t>(v)] = input_shapes[i];
    p.known[static_cast<size_t>(v)] = 1;
    if (i < input_values.size() && input_values[i]) p.folded[v] = input_values[i]->clone();
  }
  for (const auto& [v, t] : g.constants) {
    p.shapes[static_cast<size_t>(v)] = t.shape();
    p.known[static_cast<size_t>(v)] = 1;
  }
  // A constant a lowered op packed keeps its shape but no bytes (release_packed_constants in
  // compile.cpp): not a value to compute with, so a node reading one is never folded here, even
  // where its other inputs fold from a small integer input's values; its kernel runs it.
  auto value_of = [&](int v) { return known_value(g, p.folded, v); };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    const Op& op = *m.ops[k];
    std::vector<ValueMeta> in(n.inputs.size());
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      int v = n.inputs[i];
      if (v < 0) continue;
      if (!p.known[static_cast<size_t>(v)])
        throw Error(g.where(n) + ": the shape of input '" + g.values[static_cast<size_t>(v)].name +
                    "' is unknown");
      in[i] = ValueMeta{true, *g.values[static_cast<size_t>(v)].dtype,
                        p.shapes[static_cast<size_t>(v)], value_of(v)};
    }
    std::vector<Shape> out = op.infer_shapes(in);
    if (out.size() < n.outputs.size())
      throw Error(g.where(n) + ": produced " + std::to_string(out.size()) +
                  " outputs, the node names " + std::to_string(n.outputs.size()));
    std::vector<DType> types = op.infer_types(in);
    for (size_t o = 0; o < n.outputs.size(); ++o) {
      if (n.outputs[o] < 0) continue;
      int64_t numel = shape_numel(out[o]);
      if (numel > kMaxTensorBytes / static_cast<int64_t>(dtype_size(types[o])))
        throw Error(g.where(n) + ": output '" + g.values[static_cast<size_t>(n.outputs[o])].name +
                    "' of shape " + shape_str(out[o]) + " would need more than " +
                    std::to_string(kMaxTensorBytes >> 30) + " GiB");
      p.shapes[static_cast<size_t>(n.outputs[o])] = out[o];
      p.known[static_cast<size_t>(n.outputs[o])] = 1;
    }
    const bool is_output = std::any_of(n.outputs.begin(), n.outputs.end(), [&](int o) {
      return std::count(g.outputs.begin(), g.outputs.end(), o) > 0;
    });
    // Depends on shapes only: computed now, once per signature.
    if (!is_output) {
      if (auto res = fold_shape_only(op, n, in, out, types, kMaxFoldedElements)) {
        for (size_t o = 0; o < n.outputs.size(); ++o)
          if (n.outputs[o] >= 0) p.folded[n.outputs[o]] = std::move((*res)[o]);
        continue;
      }
    }
    int step = static_cast<int>(p.steps.size());
    p.steps.push_back(static_cast<int>(k));
    for (int v : n.inputs)
      if (v >= 0) p.last_use[static_cast<size_t>(v)] = step;
    p.macs += op.macs(in, out);
  }
  for (int v : g.outputs)
    if (!p.known[static_cast<size_t>(v)])
      throw Error(g.where_value(v) + ": graph output is never produced");

  std::vector<char> overwrite(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size() && k < m.ops.size(); ++k)
    overwrite[k] = m.ops[k] && m.ops[k]->may_overwrite_input();
  plan_arena(g, p, overwrite, threads);
  p.batch_items = separable_batch(g, p);
  return p;
}

}  // namespace voxrt
