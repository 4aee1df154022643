#include <algorithm>

#include "passes/passes.h"

namespace voxrt {

namespace {
bool is_graph_io(const ir::Graph& g, int v) {
  return std::count(g.inputs.begin(), g.inputs.end(), v) ||
         std::count(g.outputs.begin(), g.outputs.end(), v) || g.is_constant(v);
}
}  // namespace

// Identity and inference-mode Dropout pass their input through. Dropout is dropped only when its
// mask output is unused and its training_mode input is absent or a constant false.
void remove_identity(ir::Graph& g) {
  auto consumers = g.consumers();
  std::vector<ir::Node> kept;
  for (ir::Node& n : g.nodes) {
    bool passthrough = n.op_type == "Identity";
    if (n.op_type == "Dropout") {
      bool mask_used = n.outputs.size() > 1 && n.outputs[1] >= 0 &&
                       (!consumers[static_cast<size_t>(n.outputs[1])].empty() ||
                        std::count(g.outputs.begin(), g.outputs.end(), n.outputs[1]));
      bool training = false;
      if (n.has_input(2)) {
        const Tensor* t = g.constant(n.inputs[2]);
        training = !t || (t->numel() > 0 && t->data<uint8_t>()[0] != 0);
      }
      passthrough = !mask_used && !training;
    }
    if (!passthrough || n.inputs.empty() || n.inputs[0] < 0 || n.outputs[0] < 0) {
      kept.push_back(std::move(n));
      continue;
    }
    int in = n.inputs[0], out = n.outputs[0];
    // An output that is a graph output must keep its name; removing would need a producer to
    // rename, which graph inputs and constants do not have.
    if (std::count(g.outputs.begin(), g.outputs.end(), out) && is_graph_io(g, in)) {
      kept.push_back(std::move(n));
      continue;
    }
    if (std::count(g.outputs.begin(), g.outputs.end(), out)) {
      for (ir::Node& k : kept)
        for (int& o : k.outputs)
          if (o == in) o = out;
      for (ir::Node& k : kept)
        for (int& i : k.inputs)
          if (i == in) i = out;
      for (ir::Node& m : g.nodes)
        for (int& i : m.inputs)
          if (i == in) i = out;
    } else {
      for (ir::Node& m : g.nodes)
        for (int& i : m.inputs)
          if (i == out) i = in;
    }
  }
  g.nodes = std::move(kept);
}

}  // namespace voxrt
