#include <algorithm>

#include "passes/passes.h"

namespace voxrt {

namespace {

std::vector<int64_t> perm_of(const ir::Node& t, size_t rank) {
  std::vector<int64_t> p = t.attrs.get_ints("perm");
  if (p.empty())
    for (size_t d = rank; d-- > 0;) p.push_back(static_cast<int64_t>(d));
  return p;
}

}  // namespace

// Transpose(P) -> Softmax(axis s) -> Transpose(Q) with Q undoing P is a Softmax over axis P[s]
// of the untransposed input: torch exports softmax over channels this way at opset < 13
// (perm 0,4,2,3,1 on both sides). Both transposes disappear; the Softmax takes opset 13's
// single-axis meaning.
void fold_softmax_transposes(ir::Graph& g) {
  auto consumers = g.consumers();
  auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  auto sole = [&](int v) {
    const auto& c = consumers[static_cast<size_t>(v)];
    return c.size() == 1 && !std::count(g.outputs.begin(), g.outputs.end(), v) ? c[0] : -1;
  };
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& sm = g.nodes[k];
    if (sm.op_type != "Softmax" || !sm.domain.empty() || sm.inputs.size() != 1 || sm.outputs.size() != 1)
      continue;
    int p = producers[static_cast<size_t>(sm.inputs[0])];
    int c = sole(sm.outputs[0]);
    if (p < 0 || c < 0 || sole(sm.inputs[0]) != static_cast<int>(k)) continue;
    const ir::Node& t1 = g.nodes[static_cast<size_t>(p)];
    const ir::Node& t2 = g.nodes[static_cast<size_t>(c)];
    if (t1.op_type != "Transpose" || t2.op_type != "Transpose" || !t1.domain.empty() ||
        !t2.domain.empty() || t1.inputs.empty() || t1.inputs[0] < 0 || drop[static_cast<size_t>(p)])
      continue;
    // The rank, for a perm left out (reversal): from the other perm or the input's dims.
    const auto& dims = g.values[static_cast<size_t>(t1.inputs[0])].dims;
    size_t rank = t1.attrs.has("perm")   ? t1.attrs.get_ints("perm").size()
                  : t2.attrs.has("perm") ? t2.attrs.get_ints("perm").size()
                  : dims                 ? dims->size()
                                         : 0;
    if (rank == 0) continue;
    std::vector<int64_t> pp = perm_of(t1, rank), qq = perm_of(t2, rank);
    if (pp.size() != rank || qq.size() != rank) continue;
    bool inverse = true;
    for (size_t d = 0; d < rank && inverse; ++d)
      inverse = qq[d] >= 0 && static_cast<size_t>(qq[d]) < rank &&
                pp[static_cast<size_t>(qq[d])] == static_cast<int64_t>(d);
    if (!inverse) continue;
    bool legacy = sm.opset < 13;
    int64_t axis = sm.attrs.get_int("axis", legacy ? 1 : -1);
    if (axis < 0) axis += static_cast<int64_t>(rank);
    if (axis < 0 || axis >= static_cast<int64_t>(rank)) continue;
    // Before opset 13 Softmax normalizes over every axis from `axis` on: one axis only if last.
    if (legacy && axis != static_cast<int64_t>(rank) - 1) continue;
    sm.attrs.set_int("axis", pp[static_cast<size_t>(axis)]);
    sm.opset = std::max(sm.opset, 13);
    sm.inputs[0] = t1.inputs[0];
    sm.outputs[0] = t2.outputs[0];
    drop[static_cast<size_t>(p)] = drop[static_cast<size_t>(c)] = 1;
  }
  erase_nodes(g, drop);
  g.remove_dead();
}

}  // namespace voxrt
