#include "backends/ref/op.h"
#include "passes/passes.h"

namespace voxrt {

namespace {
constexpr int64_t kMaxFoldedElements = int64_t{1} << 26;
}

// Computes at load every node whose inputs are all constants (Constant nodes included), so the
// run path never repeats work that does not depend on the graph's inputs.
void fold_constants(ir::Graph& g) {
  const OpRegistry& reg = OpRegistry::instance();
  std::vector<ir::Node> kept;
  for (ir::Node& n : g.nodes) {
    bool all_const = true;
    for (int i : n.inputs) all_const = all_const && (i < 0 || g.is_constant(i));
    bool is_output = false;
    for (int o : n.outputs)
      for (int go : g.outputs) is_output = is_output || o == go;
    if (!all_const || is_output) {
      kept.push_back(std::move(n));
      continue;
    }
    std::unique_ptr<Op> op = reg.create(n, g);
    std::vector<ValueMeta> meta(n.inputs.size());
    std::vector<const Tensor*> in(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] < 0) continue;
      in[i] = g.constant(n.inputs[i]);
      meta[i] = ValueMeta{true, in[i]->dtype(), in[i]->shape(), in[i]};
    }
    std::vector<DType> types = op->infer_types(meta);
    std::vector<Shape> shapes = op->infer_shapes(meta);
    bool small = true;
    for (const Shape& s : shapes) small = small && shape_numel(s) <= kMaxFoldedElements;
    if (!small) {
      kept.push_back(std::move(n));
      continue;
    }
    std::vector<Tensor> out;
    for (size_t o = 0; o < shapes.size(); ++o) out.push_back(Tensor::empty(types[o], shapes[o]));
    op->compute(in, out);
    for (size_t o = 0; o < n.outputs.size() && o < out.size(); ++o)
      if (n.outputs[o] >= 0) g.constants[n.outputs[o]] = std::move(out[o]);
  }
  g.nodes = std::move(kept);
  g.remove_dead();
}

}  // namespace voxrt
