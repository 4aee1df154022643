#include <algorithm>

#include "backends/ref/op.h"
#include "backends/ref/ops/fused.h"
#include "backends/ref/ops/fused_norm.h"
#include "passes/passes.h"

namespace voxrt {

// Conv [-> Add(other activation)] [-> Relu | LeakyRelu] becomes one voxrt.FusedConv, so the
// convolution's epilogue adds the residual and applies the activation while the tile is hot;
// so does Conv -> Relu | LeakyRelu -> Add(other activation) (MONAI's residual units), with the
// residual added after the activation. ConvTranspose -> Relu | LeakyRelu (MONAI's up path)
// becomes a voxrt.FusedConvTranspose.
void fuse_conv_epilogue(ir::Graph& g) {
  auto consumers = g.consumers();
  std::vector<char> drop(g.nodes.size(), 0);
  // Whether v is a plain Conv's output that only `add` reads and an activation follows the Add:
  // that Conv takes the Add and the activation, so a residual after the activation should not.
  // Without an activation after it the convolution with one before it takes the Add, and the
  // plain one stays free to join a sibling (fuse-sibling-convs: MONAI's residual convolution
  // and its unit's first convolution read the same input).
  const std::vector<int> producers = g.producers();
  auto conv_takes = [&](int v, int add) {
    const int producer = producers[static_cast<size_t>(v)];
    if (producer < 0 || g.nodes[static_cast<size_t>(producer)].op_type != "Conv" ||
        !g.nodes[static_cast<size_t>(producer)].domain.empty() ||
        sole_consumer(g, consumers, v) != add)
      return false;
    const int after = sole_consumer(g, consumers, g.nodes[static_cast<size_t>(add)].outputs[0]);
    if (after < 0) return false;
    const ir::Node& act = g.nodes[static_cast<size_t>(after)];
    return act.domain.empty() && (act.op_type == "Relu" || act.op_type == "LeakyRelu");
  };
  // Whether v is Conv -> Relu | LeakyRelu's output, or a normalization's (fuse-norm-activation
  // takes it), each read only by the next: that node takes an Add after the activation.
  auto activated_conv = [&](int v) {
    const int act = producers[static_cast<size_t>(v)];
    if (act < 0 || sole_consumer(g, consumers, v) < 0) return false;
    const ir::Node& a = g.nodes[static_cast<size_t>(act)];
    if (!a.domain.empty() || (a.op_type != "Relu" && a.op_type != "LeakyRelu") ||
        a.inputs.empty() || a.inputs[0] < 0)
      return false;
    const int c = producers[static_cast<size_t>(a.inputs[0])];
    if (c < 0 || sole_consumer(g, consumers, a.inputs[0]) != act) return false;
    const ir::Node& p = g.nodes[static_cast<size_t>(c)];
    if (!p.domain.empty()) return false;
    if (p.op_type == "Conv") return true;
    // A normalization whose other outputs (training statistics) nothing reads.
    return !fused_norm_op_type(p.op_type).empty() &&
           std::all_of(p.outputs.begin() + 1, p.outputs.end(), [](int o) { return o < 0; });
  };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& conv = g.nodes[k];
    const bool transposed = conv.op_type == "ConvTranspose";
    if ((conv.op_type != "Conv" && !transposed) || !conv.domain.empty() || conv.outputs.size() != 1)
      continue;
    // `consumers` predates this loop's rewrites: an Add another conv took is gone.
    auto free_consumer = [&](int v) {
      const int c = sole_consumer(g, consumers, v);
      return c >= 0 && !drop[static_cast<size_t>(c)] ? c : -1;
    };
    EpilogueChain e = epilogue_chain(g, conv.outputs[0], !transposed, free_consumer);
    // An Add with no activation after it whose other operand is Conv -> activation (or a
    // normalization's): that node takes the Add after its activation, and this one stays plain
    // (MONAI's residual convolution, which torch exports before its unit's second convolution).
    if (e.residual >= 0 && e.activation.empty() && activated_conv(e.residual))
      e = epilogue_chain(g, conv.outputs[0], false, free_consumer);
    const bool residual_after = !transposed && take_residual_after_activation(g, e, conv_takes);
    if (e.absorbed.empty()) continue;
    conv.domain = kInternalDomain;
    conv.op_type = transposed ? "FusedConvTranspose" : "FusedConv";
    conv.inputs.resize(std::max<size_t>(conv.inputs.size(), 3), -1);
    if (e.residual >= 0) conv.inputs.push_back(e.residual);
    set_activation_attrs(conv, e);
    if (residual_after) conv.attrs.set_int(kResidualAfterActivation, 1);
    conv.outputs[0] = e.out;
    for (size_t d : e.absorbed) drop[d] = 1;
  }
  erase_nodes(g, drop);
  // A residual produced after the conv would now be read before it is written.
  g.topo_sort();
  g.remove_dead();
}

// An fp16 model that keeps fp32 outputs ends in Conv -> Cast(to float32): the convolution then
// stores its fp32 sums straight into the Cast's output (a FusedConv with `to`), and neither the
// fp16 tensor nor the pass that widens it remain (a residual, fp16, is added to the fp32 sums).
// A ConvTranspose keeps its Cast.
void fuse_output_cast(ir::Graph& g) {
  auto consumers = g.consumers();
  auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& cast = g.nodes[k];
    if (cast.op_type != "Cast" || !cast.domain.empty() || cast.inputs.size() != 1 ||
        cast.inputs[0] < 0 || cast.outputs.size() != 1 || cast.attrs.get_int("to", 0) != 1)
      continue;
    const int v = cast.inputs[0];
    const int p = producers[static_cast<size_t>(v)];
    if (p < 0 || sole_consumer(g, consumers, v) != static_cast<int>(k) ||
        g.values[static_cast<size_t>(v)].dtype != DType::f16)
      continue;
    ir::Node& conv = g.nodes[static_cast<size_t>(p)];
    const bool plain = conv.op_type == "Conv" && conv.domain.empty();
    const bool fused = conv.op_type == "FusedConv" && conv.domain == kInternalDomain;
    if ((!plain && !fused) || conv.outputs.size() != 1) continue;
    if (plain) {
      conv.domain = kInternalDomain;
      conv.op_type = "FusedConv";
    }
    conv.attrs.set_int(kFusedCastTo, 1);
    conv.outputs[0] = cast.outputs[0];
    drop[k] = 1;
  }
  erase_nodes(g, drop);
  g.remove_dead();
}

}  // namespace voxrt
