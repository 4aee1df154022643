#include "passes/passes.h"

#include <algorithm>

namespace voxrt {

const std::vector<Pass>& portable_passes() {
  static const std::vector<Pass> passes = {
      {"fold-constants", fold_constants},
      {"resize-sizes-as-scales", resize_sizes_as_scales},
      {"remove-identity", remove_identity},
      {"cancel-cast-pairs", cancel_cast_pairs},
      {"fuse-cast-islands", fuse_cast_islands},
      {"fold-softmax-transposes", fold_softmax_transposes},
      {"fold-batchnorm", fold_batchnorm_into_conv},
      {"prelu-as-leaky-relu", prelu_as_leaky_relu},
      {"fuse-conv-epilogue", fuse_conv_epilogue},
      {"fuse-group-norm", fuse_group_norm},
      {"fuse-norm-activation", fuse_norm_activation},
      {"fuse-concat-into-conv", fuse_concat_into_conv},
      {"fuse-conv-head", fuse_conv_head},
      {"fuse-sibling-convs", fuse_sibling_convs},
      {"fuse-resize-into-conv", fuse_resize_into_conv},
      {"fuse-conv-transpose-into-conv", fuse_conv_transpose_into_conv},
      {"read-split-in-place", read_split_in_place},
      {"fuse-output-cast", fuse_output_cast},
  };
  return passes;
}

void run_passes(ir::Graph& g, const std::string& stop_after) {
  const auto& passes = portable_passes();
  if (!stop_after.empty() && std::none_of(passes.begin(), passes.end(),
                                          [&](const Pass& p) { return stop_after == p.name; })) {
    std::string names;
    for (const Pass& p : passes) names += std::string(names.empty() ? "" : ", ") + p.name;
    throw Error("--stop-after '" + stop_after + "' names no pass; passes are: " + names);
  }
  for (const Pass& p : passes) {
    p.run(g);
    if (stop_after == p.name) break;
  }
}

int sole_consumer(const ir::Graph& g, const std::vector<std::vector<int>>& consumers, int v) {
  if (std::count(g.outputs.begin(), g.outputs.end(), v) > 0) return -1;
  const auto& c = consumers[static_cast<size_t>(v)];
  return c.size() == 1 ? c[0] : -1;
}

int residual_operand(const ir::Graph& g, const ir::Node& add, int v) {
  if (add.op_type != "Add" || !add.domain.empty() || add.inputs.size() != 2) return -1;
  const int other = add.inputs[0] == v ? add.inputs[1] : add.inputs[0];
  if (other < 0 || other == v || g.is_constant(other) ||
      g.values[static_cast<size_t>(other)].dtype != g.values[static_cast<size_t>(v)].dtype)
    return -1;
  return other;
}

EpilogueChain epilogue_chain(const ir::Graph& g, int out, bool take_residual,
                             const std::function<int(int)>& free_consumer) {
  EpilogueChain e;
  e.out = out;
  e.next = free_consumer(out);
  auto take = [&](int node) {
    e.absorbed.push_back(static_cast<size_t>(node));
    e.out = g.nodes[static_cast<size_t>(node)].outputs[0];
    e.next = free_consumer(e.out);
  };
  if (take_residual && e.next >= 0) {
    const int other = residual_operand(g, g.nodes[static_cast<size_t>(e.next)], e.out);
    if (other >= 0) {
      e.residual = other;
      take(e.next);
    }
  }
  if (e.next >= 0) {
    const ir::Node& act = g.nodes[static_cast<size_t>(e.next)];
    if (act.domain.empty() && (act.op_type == "Relu" || act.op_type == "LeakyRelu") &&
        act.outputs.size() == 1) {
      e.activation = act.op_type;
      e.alpha = act.attrs.get_float("alpha", 0.01f);
      take(e.next);
    }
  }
  return e;
}

bool take_residual_after_activation(const ir::Graph& g, EpilogueChain& e,
                                    const std::function<bool(int, int)>& refuse) {
  if (e.residual >= 0 || e.activation.empty() || e.next < 0) return false;
  const int other = residual_operand(g, g.nodes[static_cast<size_t>(e.next)], e.out);
  if (other < 0 || refuse(other, e.next)) return false;
  e.residual = other;
  e.absorbed.push_back(static_cast<size_t>(e.next));
  e.out = g.nodes[static_cast<size_t>(e.next)].outputs[0];
  return true;
}

void set_activation_attrs(ir::Node& n, const EpilogueChain& e) {
  n.attrs.set_string("activation", e.activation);
  n.attrs.set_float("alpha", e.alpha);
}

void erase_nodes(ir::Graph& g, const std::vector<char>& drop) {
  std::vector<ir::Node> kept;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (!drop[k]) kept.push_back(std::move(g.nodes[k]));
  g.nodes = std::move(kept);
}

void replace_uses(ir::Graph& g, int from, int to) {
  for (ir::Node& n : g.nodes)
    for (int& i : n.inputs)
      if (i == from) i = to;
  for (int& o : g.outputs) {
    if (o != from) continue;
    // Keep the graph output's name: the producer of `to` now writes `from` directly.
    for (ir::Node& n : g.nodes) {
      for (int& out : n.outputs)
        if (out == to) out = from;
      for (int& i : n.inputs)
        if (i == to) i = from;
    }
  }
}

}  // namespace voxrt
