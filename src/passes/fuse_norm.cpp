#include <algorithm>

#include "backends/ref/op.h"
#include "backends/ref/ops/fused_norm.h"
#include "passes/passes.h"

namespace voxrt {

// BatchNormalization (one left unfolded), InstanceNormalization or GroupNormalization followed
// by Relu or LeakyRelu becomes one voxrt.Fused*Norm, so the activation is applied as the
// normalized values are written instead of in a second pass through memory.
void fuse_norm_activation(ir::Graph& g) {
  auto consumers = g.consumers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (ir::Node& norm : g.nodes) {
    std::string fused = norm.domain.empty() ? fused_norm_op_type(norm.op_type) : "";
    if (fused.empty() || norm.outputs.empty() || norm.outputs[0] < 0) continue;
    // Training outputs (BatchNormalization's running statistics) stay unfused.
    if (std::any_of(norm.outputs.begin() + 1, norm.outputs.end(), [](int o) { return o >= 0; }))
      continue;
    int out = norm.outputs[0];
    if (std::count(g.outputs.begin(), g.outputs.end(), out)) continue;
    const auto& users = consumers[static_cast<size_t>(out)];
    if (users.size() != 1) continue;
    const ir::Node& act = g.nodes[static_cast<size_t>(users[0])];
    if (!act.domain.empty() || (act.op_type != "Relu" && act.op_type != "LeakyRelu") ||
        act.outputs.size() != 1)
      continue;
    ir::Attribute a;
    a.kind = ir::Attribute::Kind::s;
    a.s = act.op_type;
    ir::Attribute alpha;
    alpha.kind = ir::Attribute::Kind::f;
    alpha.f = act.attrs.get_float("alpha", 0.01f);
    norm.attrs.items["activation"] = a;
    norm.attrs.items["alpha"] = alpha;
    norm.domain = kInternalDomain;
    norm.op_type = fused;
    norm.outputs.resize(1);
    norm.outputs[0] = act.outputs[0];
    drop[static_cast<size_t>(users[0])] = 1;
  }
  erase_nodes(g, drop);
  g.remove_dead();
}

}  // namespace voxrt
