#include <algorithm>
#include <set>

#include "core/half.h"
#include "passes/passes.h"

namespace voxrt {

namespace {

bool is_cast_to(const ir::Graph& g, const ir::Node& n, DType from, DType to) {
  if (n.op_type != "Cast" || !n.domain.empty() || n.inputs.size() != 1 || n.inputs[0] < 0 ||
      n.outputs.size() != 1)
    return false;
  const auto& in = g.values[static_cast<size_t>(n.inputs[0])].dtype;
  const auto& out = g.values[static_cast<size_t>(n.outputs[0])].dtype;
  return in && out && *in == from && *out == to;
}

// Which inputs of an island op carry data (the rest, Resize's roi / scales / sizes, stay f32).
bool is_data_input(const ir::Node& n, size_t i) {
  if (n.op_type == "Resize" || n.op_type == "Upsample") return i == 0;
  return true;
}

Tensor to_f16(const Tensor& t) {
  Tensor h = Tensor::empty(DType::f16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i)
    h.data<uint16_t>()[i] = float_to_half(t.data<float>()[i]);
  return h;
}

}  // namespace

// onnxconverter_common keeps Resize, Upsample, Min and Max of fp16 models in fp32 between
// Casts: x:f16 -> Cast(f32) -> Op -> Cast(f16). These ops computed on the fp16 values in fp32
// and rounded once to fp16 give exactly what the island gives (interpolation weights and
// comparisons see the same inputs, and rounding to fp16 commutes with min and max), so the op
// runs on the fp16 tensors directly and both Casts, two passes through memory, disappear.
void fuse_cast_islands(ir::Graph& g) {
  static const std::set<std::string> kOps = {"Resize", "Upsample", "Min", "Max"};
  auto consumers = g.consumers();
  auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& op = g.nodes[k];
    if (!op.domain.empty() || !kOps.count(op.op_type) || op.outputs.size() != 1 || op.outputs[0] < 0)
      continue;
    int out = op.outputs[0];
    const auto& out_type = g.values[static_cast<size_t>(out)].dtype;
    if (!out_type || *out_type != DType::f32 || std::count(g.outputs.begin(), g.outputs.end(), out))
      continue;
    // Every data input comes from a Cast f16 -> f32 (or, for Min / Max, is an f32 constant).
    std::vector<int> new_inputs = op.inputs;
    bool ok = true;
    for (size_t i = 0; i < op.inputs.size() && ok; ++i) {
      int v = op.inputs[i];
      if (v < 0 || !is_data_input(op, i)) continue;
      int p = producers[static_cast<size_t>(v)];
      if (p >= 0 && is_cast_to(g, g.nodes[static_cast<size_t>(p)], DType::f16, DType::f32))
        new_inputs[i] = g.nodes[static_cast<size_t>(p)].inputs[0];
      else
        ok = (op.op_type == "Min" || op.op_type == "Max") && g.is_constant(v) &&
             g.constant(v)->dtype() == DType::f32;
    }
    // Every consumer of the output is a Cast f32 -> f16.
    const auto& users = consumers[static_cast<size_t>(out)];
    ok = ok && !users.empty();
    for (int u : users) ok = ok && is_cast_to(g, g.nodes[static_cast<size_t>(u)], DType::f32, DType::f16);
    if (!ok) continue;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      int v = op.inputs[i];
      if (v < 0 || !is_data_input(op, i) || new_inputs[i] != v) continue;
      int h = g.add_value(g.values[static_cast<size_t>(v)].name + "_f16");
      g.values[static_cast<size_t>(h)].dtype = DType::f16;
      g.values[static_cast<size_t>(h)].dims = g.values[static_cast<size_t>(v)].dims;
      g.constants[h] = to_f16(*g.constant(v));
      new_inputs[i] = h;
    }
    op.inputs = new_inputs;
    int keep = g.nodes[static_cast<size_t>(users[0])].outputs[0];
    op.outputs[0] = keep;
    for (int u : users) {
      drop[static_cast<size_t>(u)] = 1;
      int other = g.nodes[static_cast<size_t>(u)].outputs[0];
      if (other != keep) replace_uses(g, other, keep);
    }
  }
  erase_nodes(g, drop);
  g.remove_dead();
}

}  // namespace voxrt
