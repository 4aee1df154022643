#include <algorithm>
#include <set>
#include <string>

#include "backends/ref/tensor_math.h"
#include "passes/passes.h"

namespace voxrt {

namespace {

// The constant int64 values of v, or empty.
std::vector<int64_t> constant_ints(const ir::Graph& g, int v) {
  const Tensor* t = v >= 0 ? g.constant(v) : nullptr;
  if (!t || t->dtype() != DType::i64) return {};
  return std::vector<int64_t>(t->data<int64_t>(), t->data<int64_t>() + t->numel());
}

// Whether v is a float constant whose every element equals `value`.
bool constant_all(const ir::Graph& g, int v, double value) {
  const Tensor* t = v >= 0 ? g.constant(v) : nullptr;
  if (!t || !is_float(t->dtype())) return false;
  for (int64_t i = 0; i < t->numel(); ++i)
    if (ref::load(*t, i) != value) return false;
  return true;
}

// A float constant of shape [C, 1, ..., 1] (rank `rank`, C > 1): one value per channel of a
// tensor of rank `rank` + 1, broadcast along every axis but the channel one.
const Tensor* per_channel(const ir::Graph& g, int v, size_t rank) {
  const Tensor* t = v >= 0 ? g.constant(v) : nullptr;
  if (!t || !is_float(t->dtype()) || static_cast<size_t>(t->rank()) != rank || t->dim(0) < 2)
    return nullptr;
  for (int64_t d = 1; d < t->rank(); ++d)
    if (t->dim(d) != 1) return nullptr;
  return t;
}

// Each value's rank where the model declares it or it follows from its producer: ops that keep
// their first input's rank (convolutions, pooling, normalizations, activations, Resize, Pad) or
// broadcast theirs (binary elementwise, Concat); -1 where unknown. torch writes no value_info for
// intermediate values, so their declared dims are mostly missing.
std::vector<int> value_ranks(const ir::Graph& g, const std::vector<int>& producers) {
  static const std::set<std::string> keep = {"Conv",
                                             "ConvTranspose",
                                             "FusedConv",
                                             "FusedConvTranspose",
                                             "MaxPool",
                                             "AveragePool",
                                             "Relu",
                                             "LeakyRelu",
                                             "Sigmoid",
                                             "Tanh",
                                             "Clip",
                                             "Cast",
                                             "Identity",
                                             "Dropout",
                                             "BatchNormalization",
                                             "InstanceNormalization",
                                             "GroupNormalization",
                                             "FusedBatchNorm",
                                             "FusedInstanceNorm",
                                             "FusedGroupNorm",
                                             "Softmax",
                                             "Resize",
                                             "Upsample",
                                             "Pad"};
  static const std::set<std::string> broadcast = {"Add", "Sub", "Mul",   "Div",
                                                  "Min", "Max", "Concat"};
  std::vector<int> rank(g.values.size(), -1);
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].dims) rank[v] = static_cast<int>(g.values[v].dims->size());
  for (const auto& [v, t] : g.constants) rank[static_cast<size_t>(v)] = static_cast<int>(t.rank());
  for (const ir::Node& n : g.nodes) {
    if (n.outputs.empty() || n.outputs[0] < 0 || rank[static_cast<size_t>(n.outputs[0])] >= 0 ||
        n.inputs.empty())
      continue;
    int r = -1;
    if (n.op_type == "Shape") {
      r = 1;
    } else if (n.op_type == "Reshape" && n.inputs.size() == 2 && n.inputs[1] >= 0) {
      // To a constant shape, or to the shape of another value (Reshape(y, Shape(x))).
      const int target = n.inputs[1];
      const Tensor* t = g.constant(target);
      const int p = producers[static_cast<size_t>(target)];
      const ir::Node* from = p >= 0 ? &g.nodes[static_cast<size_t>(p)] : nullptr;
      if (t && t->rank() == 1)
        r = static_cast<int>(t->numel());
      else if (from && from->op_type == "Shape" && !from->attrs.has("start") &&
               !from->attrs.has("end") && !from->inputs.empty() && from->inputs[0] >= 0)
        r = rank[static_cast<size_t>(from->inputs[0])];
    } else if (keep.count(n.op_type) && n.inputs[0] >= 0) {
      r = rank[static_cast<size_t>(n.inputs[0])];
    } else if (broadcast.count(n.op_type)) {
      for (int in : n.inputs) {
        const int ri = in >= 0 ? rank[static_cast<size_t>(in)] : -1;
        if (ri < 0) {
          r = -1;
          break;
        }
        r = std::max(r, ri);
      }
    }
    rank[static_cast<size_t>(n.outputs[0])] = r;
  }
  return rank;
}

}  // namespace

// torch.onnx.export writes nn.GroupNorm (below opset 18, and by default above) as
//   Reshape(x, [0, G, -1]) -> InstanceNormalization(scale 1, bias 0) -> Reshape(., Shape(x))
//   -> Mul(., gamma[C,1,..]) -> Add(., beta[C,1,..]),
// five passes through memory. This becomes one GroupNormalization node with the opset-21
// meaning (per-channel scale and bias), which fuse-norm-activation then joins with its ReLU.
void fuse_group_norm(ir::Graph& g) {
  const auto consumers = g.consumers();
  const auto producers = g.producers();
  const std::vector<int> ranks = value_ranks(g, producers);
  auto sole_user = [&](int v) {
    if (v < 0 || std::count(g.outputs.begin(), g.outputs.end(), v)) return -1;
    const auto& c = consumers[static_cast<size_t>(v)];
    return c.size() == 1 ? c[0] : -1;
  };
  auto node_of = [&](int v) -> ir::Node* {
    int p = v >= 0 ? producers[static_cast<size_t>(v)] : -1;
    return p >= 0 ? &g.nodes[static_cast<size_t>(p)] : nullptr;
  };
  auto default_op = [](const ir::Node* n, const char* op) {
    return n && n->domain.empty() && n->op_type == op;
  };
  std::vector<char> drop(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& in_norm = g.nodes[k];
    if (!default_op(&in_norm, "InstanceNormalization") || in_norm.inputs.size() != 3 ||
        in_norm.outputs.size() != 1)
      continue;
    // Reshape(x, [0, G, -1]) before it, unit affine.
    const int r1_index =
        in_norm.inputs[0] >= 0 ? producers[static_cast<size_t>(in_norm.inputs[0])] : -1;
    ir::Node* r1 = node_of(in_norm.inputs[0]);
    if (!default_op(r1, "Reshape") || r1->inputs.size() != 2 ||
        sole_user(r1->outputs[0]) != static_cast<int>(k))
      continue;
    const std::vector<int64_t> target = constant_ints(g, r1->inputs[1]);
    if (target.size() != 3 || target[0] != 0 || target[1] < 1 || target[2] != -1) continue;
    const int64_t groups = target[1];
    const int x = r1->inputs[0];
    if (!constant_all(g, in_norm.inputs[1], 1.0) || !constant_all(g, in_norm.inputs[2], 0.0))
      continue;
    // Reshape(., Shape(x)) after it.
    const int r2_index = sole_user(in_norm.outputs[0]);
    if (r2_index < 0) continue;
    ir::Node& r2 = g.nodes[static_cast<size_t>(r2_index)];
    if (!default_op(&r2, "Reshape") || r2.inputs.size() != 2 || r2.inputs[0] != in_norm.outputs[0])
      continue;
    const ir::Node* shape = node_of(r2.inputs[1]);
    if (!default_op(shape, "Shape") || shape->inputs.empty() || shape->inputs[0] != x ||
        shape->attrs.has("start") || shape->attrs.has("end"))
      continue;
    // Mul by gamma, then Add beta, both [C, 1, ..., 1].
    const int mul_index = sole_user(r2.outputs[0]);
    if (mul_index < 0) continue;
    ir::Node& mul = g.nodes[static_cast<size_t>(mul_index)];
    if (!default_op(&mul, "Mul") || mul.inputs.size() != 2) continue;
    const int gamma_v = mul.inputs[0] == r2.outputs[0] ? mul.inputs[1] : mul.inputs[0];
    const int add_index = sole_user(mul.outputs[0]);
    if (add_index < 0) continue;
    ir::Node& add = g.nodes[static_cast<size_t>(add_index)];
    if (!default_op(&add, "Add") || add.inputs.size() != 2) continue;
    const int beta_v = add.inputs[0] == mul.outputs[0] ? add.inputs[1] : add.inputs[0];
    // gamma and beta broadcast along every axis but the channel one only if x has one more.
    const int x_rank = ranks[static_cast<size_t>(x)];
    if (x_rank < 3) continue;
    const Tensor* gamma = per_channel(g, gamma_v, static_cast<size_t>(x_rank - 1));
    const Tensor* beta = per_channel(g, beta_v, static_cast<size_t>(x_rank - 1));
    if (!gamma || !beta || beta->dim(0) != gamma->dim(0) || gamma->dim(0) % groups != 0 ||
        gamma->dtype() != beta->dtype())
      continue;

    const int64_t channels = gamma->dim(0);
    const int scale_v = g.add_value(in_norm.name + "_group_scale");
    const int bias_v = g.add_value(in_norm.name + "_group_bias");
    g.values[static_cast<size_t>(scale_v)].dtype = gamma->dtype();
    g.values[static_cast<size_t>(bias_v)].dtype = beta->dtype();
    g.constants[scale_v] = gamma->clone().reshaped({channels});
    g.constants[bias_v] = beta->clone().reshaped({channels});
    // The InstanceNormalization node becomes the GroupNormalization.
    in_norm.op_type = "GroupNormalization";
    in_norm.opset = 21;
    in_norm.inputs = {x, scale_v, bias_v};
    in_norm.attrs.set_int("num_groups", groups);
    in_norm.outputs[0] = add.outputs[0];
    drop[static_cast<size_t>(r1_index)] = 1;
    drop[static_cast<size_t>(r2_index)] = 1;
    drop[static_cast<size_t>(mul_index)] = 1;
    drop[static_cast<size_t>(add_index)] = 1;
  }
  erase_nodes(g, drop);
  g.remove_dead();
}

}  // namespace voxrt
