#include <algorithm>

#include "backends/ref/op.h"
#include "backends/ref/ops/fused.h"
#include "backends/ref/ops/fused_norm.h"
#include "passes/passes.h"

namespace voxrt {

// BatchNormalization (one left unfolded), InstanceNormalization or GroupNormalization followed
// by Relu or LeakyRelu becomes one voxrt.Fused*Norm, so the activation is applied as the
// normalized values are written instead of in a second pass through memory; so does a
// normalization followed by Add(other activation) [-> Relu | LeakyRelu] (a residual block's end:
// nnU-Net's ResEnc adds its skip between the second norm and the activation), the residual a
// last input, or by Relu | LeakyRelu -> Add(other activation) (MONAI's residual units), the
// residual added after the activation.
void fuse_norm_activation(ir::Graph& g) {
  auto consumers = g.consumers();
  std::vector<char> drop(g.nodes.size(), 0);
  // `consumers` predates this loop's rewrites: an Add another norm took is gone.
  auto free_consumer = [&](int v) {
    const int c = sole_consumer(g, consumers, v);
    return c >= 0 && !drop[static_cast<size_t>(c)] ? c : -1;
  };
  for (ir::Node& norm : g.nodes) {
    std::string fused = norm.domain.empty() ? fused_norm_op_type(norm.op_type) : "";
    if (fused.empty() || norm.outputs.empty() || norm.outputs[0] < 0) continue;
    // Training outputs (BatchNormalization's running statistics) stay unfused.
    if (std::any_of(norm.outputs.begin() + 1, norm.outputs.end(), [](int o) { return o >= 0; }))
      continue;
    EpilogueChain e = epilogue_chain(g, norm.outputs[0], true, free_consumer);
    // norm -> activation -> Add(other activation): the residual after the activation (MONAI's
    // residual units).
    const bool residual_after =
        take_residual_after_activation(g, e, [](int, int) { return false; });
    if (e.absorbed.empty()) continue;
    set_activation_attrs(norm, e);
    if (e.residual >= 0) {
      norm.attrs.set_int(kNormResidual, 1);
      norm.inputs.push_back(e.residual);
    }
    if (residual_after) norm.attrs.set_int(kResidualAfterActivation, 1);
    norm.domain = kInternalDomain;
    norm.op_type = fused;
    norm.outputs.resize(1);
    norm.outputs[0] = e.out;
    for (size_t d : e.absorbed) drop[d] = 1;
  }
  erase_nodes(g, drop);
  // A residual produced after the norm would now be read before it is written.
  g.topo_sort();
  g.remove_dead();
}

}  // namespace voxrt
