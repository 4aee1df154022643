#include <algorithm>

#include "backends/ref/op.h"
#include "passes/passes.h"

namespace voxrt {

// Concat along channels whose one consumer is a Conv's (ConvTranspose's) X becomes the parts of a
// voxrt.FusedConv's (FusedConvTranspose's) X (attribute x_parts, parts after the residual slot,
// which a FusedConvTranspose leaves empty): the convolutions' drivers copy or pack their input
// anyway and read each channel from its part, so the concatenated tensor is never written, at any
// batch size (runtime/arena makes producers write into a batch-1 Concat's slices; this serves the
// Concats of UNet decoders at every batch: a Conv after them in most UNets, MONAI's
// up-convolutions in its UNet).
void fuse_concat_into_conv(ir::Graph& g) {
  const auto consumers = g.consumers();
  const auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& conv = g.nodes[k];
    const bool transposed = conv.op_type == "ConvTranspose" || conv.op_type == "FusedConvTranspose";
    const bool plain =
        (conv.op_type == "Conv" || conv.op_type == "ConvTranspose") && conv.domain.empty();
    const bool fused = (conv.op_type == "FusedConv" || conv.op_type == "FusedConvTranspose") &&
                       conv.domain == kInternalDomain;
    if ((!plain && !fused) || conv.inputs.empty() || conv.attrs.get_int("x_parts", 1) != 1 ||
        !conv.has_input(1))
      continue;
    const int x = conv.inputs[0];
    if (x < 0 || producers[static_cast<size_t>(x)] < 0) continue;
    if (std::count(g.outputs.begin(), g.outputs.end(), x) > 0) continue;
    const auto& users = consumers[static_cast<size_t>(x)];
    if (users.size() != 1 || users[0] != static_cast<int>(k)) continue;
    const size_t ci = static_cast<size_t>(producers[static_cast<size_t>(x)]);
    const ir::Node& cat = g.nodes[ci];
    if (cat.op_type != "Concat" || !cat.domain.empty() || cat.outputs.size() != 1 ||
        cat.inputs.size() < 2 || drop[ci])
      continue;
    // The channel axis: 1, or -rank + 1 with the rank W gives.
    const Tensor* w = g.constant(conv.inputs[1]);
    int64_t axis = cat.attrs.get_int("axis", 1);
    if (axis < 0 && w) axis += w->rank();
    if (axis != 1) continue;
    const auto& dt = g.values[static_cast<size_t>(x)].dtype;
    if (std::any_of(cat.inputs.begin(), cat.inputs.end(),
                    [&](int v) { return v < 0 || g.values[static_cast<size_t>(v)].dtype != dt; }))
      continue;

    std::vector<int> parts = cat.inputs;
    if (plain) {
      conv.domain = kInternalDomain;
      conv.op_type = transposed ? "FusedConvTranspose" : "FusedConv";
      conv.attrs.set_string("activation", "");
    }
    conv.inputs.resize(std::max<size_t>(conv.inputs.size(), 4), -1);
    conv.inputs[0] = parts[0];
    conv.inputs.insert(conv.inputs.end(), parts.begin() + 1, parts.end());
    conv.attrs.set_int("x_parts", static_cast<int64_t>(parts.size()));
    drop[ci] = 1;
  }
  erase_nodes(g, drop);
  g.remove_dead();
}

}  // namespace voxrt
