#include <algorithm>

#include "backends/ref/op.h"
#include "backends/ref/ops/fused.h"
#include "passes/passes.h"

namespace voxrt {

namespace {

// Whether `head` is a 1x1 convolution of M input channels: constant weights (Mh, M, 1...) and
// bias, unit strides and dilations, no padding, one group.
bool is_head(const ir::Graph& g, const ir::Node& head, int64_t m, int64_t rank) {
  if (head.op_type != "Conv" || !head.domain.empty() || head.outputs.size() != 1 ||
      !head.has_input(1) || head.attrs.get_int("group", 1) != 1)
    return false;
  const Tensor* w = g.constant(head.inputs[1]);
  if (!w || w->rank() != rank || w->dim(1) != m) return false;
  for (int64_t d = 2; d < rank; ++d)
    if (w->dim(d) != 1) return false;
  if (head.has_input(2) && !g.constant(head.inputs[2])) return false;
  const std::string pad = head.attrs.get_string("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID") return false;
  auto all = [](const std::vector<int64_t>& v, int64_t x) {
    return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
  };
  return all(head.attrs.get_ints("strides", {}), 1) &&
         all(head.attrs.get_ints("dilations", {}), 1) && all(head.attrs.get_ints("pads", {}), 0);
}

}  // namespace

// Conv (or FusedConv) -> 1x1 Conv [-> Softmax over channels], a UNet's output layer after its
// last convolution, becomes one voxrt.FusedConv with a head (backends/ref/ops/fused.h): the
// convolution mixes its tile's channels into the head's while they are in registers and cache,
// and the M channels before the head are never written nor read back. Runs after Concats joined
// their convolutions (the head's inputs follow X's parts) and before output Casts fuse.
void fuse_conv_head(ir::Graph& g) {
  const auto consumers = g.consumers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    // A head already taken is no producer: its output now comes from the node that took it.
    if (drop[k]) continue;
    ir::Node& conv = g.nodes[k];
    const bool plain = conv.op_type == "Conv" && conv.domain.empty();
    const bool fused = conv.op_type == "FusedConv" && conv.domain == kInternalDomain;
    if ((!plain && !fused) || conv.outputs.size() != 1 || !conv.has_input(1) ||
        conv.attrs.get_int("group", 1) != 1 || conv.attrs.has(kFusedHead) ||
        conv.attrs.has(kFusedCastTo))
      continue;
    const Tensor* w = g.constant(conv.inputs[1]);
    if (!w || w->rank() < 3 || w->dim(0) > kMaxFusedHeadChannels) continue;
    const int hk = sole_consumer(g, consumers, conv.outputs[0]);
    if (hk < 0 || drop[static_cast<size_t>(hk)]) continue;
    const ir::Node& head = g.nodes[static_cast<size_t>(hk)];
    if (head.inputs[0] != conv.outputs[0] || !is_head(g, head, w->dim(0), w->rank())) continue;
    const auto dtype = g.values[static_cast<size_t>(conv.outputs[0])].dtype;
    if (g.values[static_cast<size_t>(head.outputs[0])].dtype != dtype) continue;
    // A Softmax over the head's channels (opset 13's single axis) joins it.
    int out = head.outputs[0], sk = sole_consumer(g, consumers, out);
    bool softmax = false;
    if (sk >= 0 && !drop[static_cast<size_t>(sk)]) {
      const ir::Node& sm = g.nodes[static_cast<size_t>(sk)];
      int64_t axis = sm.attrs.get_int("axis", -1);
      if (axis < 0) axis += w->rank();
      softmax = sm.op_type == "Softmax" && sm.domain.empty() && sm.opset >= 13 && axis == 1 &&
                sm.outputs.size() == 1 &&
                g.values[static_cast<size_t>(sm.outputs[0])].dtype == dtype;
      if (softmax) {
        out = sm.outputs[0];
        drop[static_cast<size_t>(sk)] = 1;
      }
    }
    if (plain) {
      conv.domain = kInternalDomain;
      conv.op_type = "FusedConv";
    }
    const int hw = head.inputs[1], hb = head.has_input(2) ? head.inputs[2] : -1;
    conv.inputs.resize(static_cast<size_t>(fused_head_input(conv)), -1);
    conv.inputs.push_back(hw);
    conv.inputs.push_back(hb);
    conv.attrs.set_int(kFusedHead, 1);
    if (softmax) conv.attrs.set_int(kFusedHeadSoftmax, 1);
    conv.outputs[0] = out;
    drop[static_cast<size_t>(hk)] = 1;
  }
  erase_nodes(g, drop);
  g.remove_dead();
}

}  // namespace voxrt
