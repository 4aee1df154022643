#include "runtime/batch_split.h"

#include <algorithm>
#include <set>
#include <string>

#include "backends/ref/op.h"

namespace voxrt {

namespace {

// Ops that compute each batch item from that item alone, whatever their attributes but those
// checked below: convolutions, normalizations over channels or groups and space (inference
// BatchNormalization among them), pooling, Resize, elementwise ops.
const std::set<std::string>& per_item_ops() {
  static const std::set<std::string> ops = {"Conv",
                                            "ConvTranspose",
                                            "voxrt.FusedConv",
                                            "voxrt.FusedConvTranspose",
                                            "BatchNormalization",
                                            "InstanceNormalization",
                                            "GroupNormalization",
                                            "voxrt.FusedBatchNorm",
                                            "voxrt.FusedInstanceNorm",
                                            "voxrt.FusedGroupNorm",
                                            "MaxPool",
                                            "AveragePool",
                                            "GlobalAveragePool",
                                            "GlobalMaxPool",
                                            "Resize",
                                            "Upsample",
                                            "Concat",
                                            "Split",
                                            "Softmax",
                                            "LogSoftmax",
                                            "Relu",
                                            "LeakyRelu",
                                            "PRelu",
                                            "Sigmoid",
                                            "Tanh",
                                            "Elu",
                                            "Selu",
                                            "HardSigmoid",
                                            "Softplus",
                                            "Clip",
                                            "Cast",
                                            "Identity",
                                            "Dropout",
                                            "Sqrt",
                                            "Exp",
                                            "Log",
                                            "Abs",
                                            "Neg",
                                            "Reciprocal",
                                            "Erf",
                                            "Floor",
                                            "Ceil",
                                            "Round",
                                            "Add",
                                            "Sub",
                                            "Mul",
                                            "Div",
                                            "Pow",
                                            "Max",
                                            "Min",
                                            "Sum",
                                            "Mean"};
  return ops;
}

// Ops whose `axis` must not be the batch axis: along it they join, cut or mix batch items.
bool axis_op(const std::string& op) {
  return op == "Concat" || op == "Split" || op == "Softmax" || op == "LogSoftmax";
}

// Whether input i of `node` is a parameter (weights, scales, sizes, bounds) rather than an
// activation: it must then be a constant or folded while planning, the same for every item.
bool parameter(const ir::Node& node, size_t i) {
  const std::string& op = node.op_type;
  if (i == 0) return false;
  if (op == "Conv" || op == "ConvTranspose" || op == "FusedConv" || op == "FusedConvTranspose")
    return i <= 2;
  const bool norm = op == "BatchNormalization" || op == "InstanceNormalization" ||
                    op == "GroupNormalization" || op == "FusedBatchNorm" ||
                    op == "FusedInstanceNorm" || op == "FusedGroupNorm";
  if (norm)  // scale, bias and statistics; not a fused norm's residual, its last input
    return !(node.attrs.get_int("residual", 0) != 0 && i + 1 == node.inputs.size());
  return op == "Resize" || op == "Upsample" || op == "Clip" || op == "Split" || op == "PRelu";
}

}  // namespace

int64_t separable_batch(const ir::Graph& g, const Plan& p) {
  if (g.inputs.empty() || g.outputs.empty()) return 0;
  const Shape& first = p.shapes[static_cast<size_t>(g.inputs[0])];
  if (first.empty() || first[0] < 2) return 0;
  const int64_t n = first[0];
  // A value that carries the batch: n items along its first axis.
  auto carries = [&](int v) {
    const Shape& s = p.shapes[static_cast<size_t>(v)];
    return !s.empty() && s[0] == n;
  };
  // Float inputs whose first axis the model leaves free (a fixed one refuses batch 1), none of
  // them values the plan was made for (Resize scales given as an input).
  for (int v : g.inputs) {
    const ir::Value& val = g.values[static_cast<size_t>(v)];
    if (!carries(v) || !val.dtype || (*val.dtype != DType::f32 && *val.dtype != DType::f16) ||
        (val.dims && (val.dims->empty() || (*val.dims)[0].known())) || p.folded.count(v))
      return 0;
  }
  std::vector<char> made(g.values.size(), 0);
  for (int k : p.steps) {
    const ir::Node& node = g.nodes[static_cast<size_t>(k)];
    const std::string op = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
    if (!per_item_ops().count(op)) return 0;
    // One output only (MaxPool's indices count across items; training BatchNormalization's
    // statistics and Dropout's mask are not per item either).
    for (size_t o = 1; o < node.outputs.size(); ++o)
      if (node.outputs[o] >= 0 && node.op_type != "Split") return 0;
    if (node.attrs.get_int("training_mode", 0) != 0) return 0;
    int rank = 0;
    for (int o : node.outputs) {
      if (o < 0) continue;
      if (!carries(o)) return 0;
      rank = static_cast<int>(p.shapes[static_cast<size_t>(o)].size());
      made[static_cast<size_t>(o)] = 1;
    }
    if (axis_op(node.op_type)) {
      int64_t axis = node.attrs.get_int("axis", node.op_type == "Concat" || node.op_type == "Split"
                                                    ? 0
                                                    : (node.opset < 13 ? 1 : -1));
      if (axis < 0) axis += rank;
      if (axis == 0) return 0;
    }
    const bool elementwise = op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
                             op == "Pow" || op == "Max" || op == "Min" || op == "Sum" ||
                             op == "Mean" || op == "PRelu";
    // Resize to constant sizes would give one item the whole batch's first axis.
    if (node.op_type == "Resize" && node.has_input(3) && g.is_constant(node.inputs[3])) return 0;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int v = node.inputs[i];
      if (v < 0) continue;
      const Shape& s = p.shapes[static_cast<size_t>(v)];
      const bool fixed = g.is_constant(v) || p.folded.count(v) > 0;
      if (parameter(node, i) && !fixed) return 0;
      if (fixed) {
        // Weights, scales, sizes: the same for every item, except a constant operand of an
        // elementwise op that has a row per item.
        if (elementwise && static_cast<int>(s.size()) == rank && !s.empty() && s[0] != 1) return 0;
        continue;
      }
      // Activations: the items' own, of the output's rank (a lower rank would broadcast its
      // first axis against another one).
      if (!carries(v) || static_cast<int>(s.size()) != rank) return 0;
    }
  }
  for (int v : g.outputs)
    if (!made[static_cast<size_t>(v)]) return 0;
  return n;
}

}  // namespace voxrt
