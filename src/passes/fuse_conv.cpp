#include <algorithm>

#include "backends/ref/op.h"
#include "passes/passes.h"

namespace voxrt {

namespace {

bool is_graph_output(const ir::Graph& g, int v) {
  return std::count(g.outputs.begin(), g.outputs.end(), v) > 0;
}

// The single consumer of v, or -1 when v has several, none, or is a graph output.
int sole_consumer(const ir::Graph& g, const std::vector<std::vector<int>>& consumers, int v) {
  if (is_graph_output(g, v)) return -1;
  const auto& c = consumers[static_cast<size_t>(v)];
  return c.size() == 1 ? c[0] : -1;
}

}  // namespace

// Conv [-> Add(other activation)] [-> Relu | LeakyRelu] becomes one voxrt.FusedConv, so the
// convolution's epilogue adds the residual and applies the activation while the tile is hot;
// ConvTranspose -> Relu | LeakyRelu (MONAI's up path) becomes a voxrt.FusedConvTranspose.
void fuse_conv_epilogue(ir::Graph& g) {
  auto consumers = g.consumers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& conv = g.nodes[k];
    const bool transposed = conv.op_type == "ConvTranspose";
    if ((conv.op_type != "Conv" && !transposed) || !conv.domain.empty() || conv.outputs.size() != 1)
      continue;
    int out = conv.outputs[0];
    int residual = -1;
    std::vector<size_t> absorbed;
    int next = sole_consumer(g, consumers, out);
    if (!transposed && next >= 0 && g.nodes[static_cast<size_t>(next)].op_type == "Add") {
      const ir::Node& add = g.nodes[static_cast<size_t>(next)];
      int other =
          add.inputs.size() == 2 ? (add.inputs[0] == out ? add.inputs[1] : add.inputs[0]) : -1;
      // Only a same-shaped activation (not a broadcast constant) is a residual; the fused op
      // checks the shapes match when it plans.
      if (other >= 0 && other != out && !g.is_constant(other) &&
          g.values[static_cast<size_t>(other)].dtype == g.values[static_cast<size_t>(out)].dtype &&
          static_cast<size_t>(next) > k) {
        residual = other;
        absorbed.push_back(static_cast<size_t>(next));
        out = add.outputs[0];
        next = sole_consumer(g, consumers, out);
      }
    }
    std::string activation;
    float alpha = 0.01f;
    if (next >= 0) {
      const ir::Node& act = g.nodes[static_cast<size_t>(next)];
      if (act.op_type == "Relu" || act.op_type == "LeakyRelu") {
        activation = act.op_type;
        alpha = act.attrs.get_float("alpha", 0.01f);
        absorbed.push_back(static_cast<size_t>(next));
        out = act.outputs[0];
      }
    }
    if (absorbed.empty()) continue;
    conv.domain = kInternalDomain;
    conv.op_type = transposed ? "FusedConvTranspose" : "FusedConv";
    conv.inputs.resize(std::max<size_t>(conv.inputs.size(), 3), -1);
    if (residual >= 0) conv.inputs.push_back(residual);
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::s;
    a.s = activation;
    conv.attrs.items["activation"] = a;
    ir::Attribute al;
    al.kind = ir::Attribute::Kind::f;
    al.f = alpha;
    conv.attrs.items["alpha"] = al;
    conv.outputs[0] = out;
    for (size_t d : absorbed) drop[d] = 1;
  }
  erase_nodes(g, drop);
  // A residual produced after the conv would now be read before it is written.
  g.topo_sort();
  g.remove_dead();
}

}  // namespace voxrt
