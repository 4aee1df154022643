#include <algorithm>

#include "backends/ref/op.h"
#include "backends/ref/ops/fused.h"
#include "backends/ref/ops/fused_norm.h"
#include "passes/passes.h"

namespace voxrt {

namespace {

// The channel sizes a Split gives its outputs: its `split` input (opset 13 on) or attribute,
// constant; empty where they are not given so.
std::vector<int64_t> split_sizes(const ir::Graph& g, const ir::Node& sp) {
  if (sp.has_input(1)) {
    const Tensor* t = g.constant(sp.inputs[1]);
    if (!t || t->dtype() != DType::i64 || t->rank() != 1) return {};
    const int64_t* v = static_cast<const int64_t*>(t->raw());
    return std::vector<int64_t>(v, v + t->numel());
  }
  return sp.attrs.get_ints("split", {});
}

// How a FusedBatchNorm or FusedInstanceNorm `c` reads value v: as X (input 0) or as its residual
// (the last input), each of `channels` channels (scale's), and at no other input.
bool norm_reads_window(const ir::Graph& g, const ir::Node& c, int v, int64_t channels) {
  const Tensor* scale = c.has_input(1) ? g.constant(c.inputs[1]) : nullptr;
  if (!scale || scale->numel() != channels) return false;
  const bool residual = c.attrs.get_int(kNormResidual, 0) != 0;
  bool any = false;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i] != v) continue;
    any = true;
    const bool x = i == 0 && !c.attrs.has(kFusedXFrom);
    const bool r = residual && i + 1 == c.inputs.size() && !c.attrs.has(kFusedResidualFrom);
    if (!x && !r) return false;
  }
  return any;
}

// How node `c` reads value v: as X (input 0) of a Conv or one-part FusedConv whose weights take
// `channels` channels, or as the residual (input 3) of a FusedConv of `channels` output channels,
// or as a fused normalization's X or residual (norm_reads_window), and at no other input; false
// otherwise (or where that input already reads a window).
bool reads_window(const ir::Graph& g, const ir::Node& c, int v, int64_t channels) {
  if (c.domain == kInternalDomain &&
      (c.op_type == "FusedInstanceNorm" || c.op_type == "FusedBatchNorm"))
    return norm_reads_window(g, c, v, channels);
  const bool plain = c.op_type == "Conv" && c.domain.empty();
  const bool fused = c.op_type == "FusedConv" && c.domain == kInternalDomain;
  if ((!plain && !fused) || !c.has_input(1)) return false;
  const Tensor* w = g.constant(c.inputs[1]);
  if (!w || w->rank() < 3) return false;
  bool any = false;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.inputs[i] != v) continue;
    any = true;
    if (i == 0) {
      if (c.attrs.get_int("x_parts", 1) != 1 || c.attrs.has(kFusedXFrom) ||
          c.attrs.has(kFusedXUpsample) || c.attrs.has(kFusedXTransposed) ||
          w->dim(1) * c.attrs.get_int("group", 1) != channels)
        return false;
    } else if (i == 3 && fused) {
      if (c.attrs.has(kFusedResidualFrom) || w->dim(0) != channels) return false;
    } else {
      return false;
    }
  }
  return any;
}

}  // namespace

// A Split along channels whose outputs are each read only as the X of convolutions (or of fused
// batch or instance normalizations) or as the residual of fused ones goes: those inputs read the
// Split's input from the output's first channel (x_from and residual_from,
// backends/ref/ops/fused.h and fused_norm.h). At batch 1 the arena
// already made the outputs slices of the input; at batch 2 and more, where each batch item's
// channels of one output are apart, the Split copied them out. fuse-sibling-convs ends its joint
// convolutions in such Splits: a MONAI residual unit's first convolution and its residual one,
// read as X and as the residual by the unit's second convolution (with InstanceNorm, the first
// one's output by its norm, the residual one's by the second norm).
void read_split_in_place(ir::Graph& g) {
  const auto consumers = g.consumers();
  const auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& sp = g.nodes[k];
    if (sp.op_type != "Split" || !sp.domain.empty() || sp.inputs.empty() || sp.inputs[0] < 0 ||
        sp.attrs.get_int("axis", 0) != 1 || producers[static_cast<size_t>(sp.inputs[0])] < 0)
      continue;
    const std::vector<int64_t> sizes = split_sizes(g, sp);
    if (sizes.size() != sp.outputs.size()) continue;
    // The sizes must cover the input's channels, which its producer says (a convolution's
    // constant weights, as fuse-sibling-convs makes them): where they would not, the Split stays
    // and refuses the model when it is planned.
    const ir::Node& from_node =
        g.nodes[static_cast<size_t>(producers[static_cast<size_t>(sp.inputs[0])])];
    const bool conv = (from_node.op_type == "Conv" && from_node.domain.empty()) ||
                      (from_node.op_type == "FusedConv" && from_node.domain == kInternalDomain &&
                       !from_node.attrs.has(kFusedHead));
    const Tensor* w = conv && from_node.has_input(1) ? g.constant(from_node.inputs[1]) : nullptr;
    if (!w || w->rank() < 1) continue;
    int64_t total = 0;  // summed only while it stays within the channels (sizes may be anything)
    bool fits = true;
    for (int64_t v : sizes) {
      fits = fits && v >= 0 && v <= w->dim(0) - total;
      if (fits) total += v;
    }
    if (!fits || total != w->dim(0)) continue;
    bool ok = true;
    for (size_t o = 0; ok && o < sp.outputs.size(); ++o) {
      const int v = sp.outputs[o];
      ok = v >= 0 && std::count(g.outputs.begin(), g.outputs.end(), v) == 0;
      for (size_t j = 0; ok && j < consumers[static_cast<size_t>(v)].size(); ++j)
        ok = reads_window(g, g.nodes[static_cast<size_t>(consumers[static_cast<size_t>(v)][j])], v,
                          sizes[o]);
    }
    if (!ok) continue;
    int64_t from = 0;
    for (size_t o = 0; o < sp.outputs.size(); ++o) {
      const int v = sp.outputs[o];
      for (int ci : consumers[static_cast<size_t>(v)]) {
        ir::Node& c = g.nodes[static_cast<size_t>(ci)];
        if (c.op_type == "Conv") {
          c.domain = kInternalDomain;
          c.op_type = "FusedConv";
          c.attrs.set_string("activation", "");
        }
        for (size_t i = 0; i < c.inputs.size(); ++i) {
          if (c.inputs[i] != v) continue;
          c.inputs[i] = sp.inputs[0];
          c.attrs.set_int(i == 0 ? kFusedXFrom : kFusedResidualFrom, from);
        }
      }
      from += sizes[o];
    }
    drop[k] = 1;
  }
  erase_nodes(g, drop);
  g.remove_dead();
}

}  // namespace voxrt
