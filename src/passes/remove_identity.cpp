#include <algorithm>

#include "passes/passes.h"

namespace voxrt {

namespace {
bool is_graph_io(const ir::Graph& g, int v) {
  return std::count(g.inputs.begin(), g.inputs.end(), v) ||
         std::count(g.outputs.begin(), g.outputs.end(), v) || g.is_constant(v);
}
}  // namespace

// Identity, inference-mode Dropout, Pad by zero on every side and Cast to the type its input
// has already pass their input through. (Converting an fp16 model whose Resize islands keep
// float32 turns the islands' Casts into float16 -> float16 ones.)
// Dropout is dropped only when its mask output is unused and its training_mode input is absent
// or a constant false. (torch exports AvgPool with count_include_pad, its default, as a Pad
// before the AveragePool, of zeros when the pool has no padding.)
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
    if (n.op_type == "Pad" && n.domain.empty()) {
      std::vector<int64_t> pads = n.attrs.get_ints("pads", {});
      if (n.has_input(1)) {
        const Tensor* t = g.constant(n.inputs[1]);
        pads.clear();
        if (t && t->dtype() == DType::i64)
          pads.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
      }
      passthrough =
          !pads.empty() && std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; });
    }
    if (n.op_type == "Cast" && n.domain.empty() && n.inputs.size() == 1 && n.inputs[0] >= 0 &&
        n.outputs.size() == 1 && n.outputs[0] >= 0) {
      const auto& from = g.values[static_cast<size_t>(n.inputs[0])].dtype;
      const auto& to = g.values[static_cast<size_t>(n.outputs[0])].dtype;
      passthrough = from && to && *from == *to;
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
