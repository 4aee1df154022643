#include <algorithm>

#include "passes/passes.h"

namespace voxrt {

namespace {

// True when every value of `from` survives a trip through `to` unchanged.
bool widening_is_exact(DType from, DType to) {
  auto rank_float = [](DType t) {
    switch (t) {
      case DType::f16: return 1;
      case DType::f32: return 2;
      case DType::f64: return 3;
      default: return 0;
    }
  };
  if (from == to) return true;
  if (from == DType::bf16) return to == DType::f32 || to == DType::f64;
  if (rank_float(from) && rank_float(to)) return rank_float(from) < rank_float(to);
  auto int_bits = [](DType t) {
    switch (t) {
      case DType::i8: return 8;
      case DType::i16: return 16;
      case DType::i32: return 32;
      case DType::i64: return 64;
      default: return 0;
    }
  };
  return int_bits(from) && int_bits(to) && int_bits(from) < int_bits(to);
}

}  // namespace

// Cast(a -> b) followed by Cast(b -> a) is the identity when a -> b loses nothing.
void cancel_cast_pairs(ir::Graph& g) {
  auto consumers = g.consumers();
  auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& second = g.nodes[k];
    if (second.op_type != "Cast" || second.inputs.empty() || second.inputs[0] < 0) continue;
    int mid = second.inputs[0];
    int p = producers[static_cast<size_t>(mid)];
    if (p < 0 || g.nodes[static_cast<size_t>(p)].op_type != "Cast") continue;
    const ir::Node& first = g.nodes[static_cast<size_t>(p)];
    if (first.inputs.empty() || first.inputs[0] < 0) continue;
    int src = first.inputs[0];
    int out = second.outputs[0];
    const auto& ts = g.values[static_cast<size_t>(src)].dtype;
    const auto& tm = g.values[static_cast<size_t>(mid)].dtype;
    const auto& to = g.values[static_cast<size_t>(out)].dtype;
    if (!ts || !tm || !to || *ts != *to || !widening_is_exact(*ts, *tm)) continue;
    bool out_is_graph_output = std::count(g.outputs.begin(), g.outputs.end(), out) > 0;
    if (out_is_graph_output) continue;
    replace_uses(g, out, src);
    drop[k] = 1;
  }
  erase_nodes(g, drop);
  g.remove_dead();
}

}  // namespace voxrt
