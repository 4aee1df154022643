#include <algorithm>

#include "backends/ref/op.h"
#include "backends/ref/ops/fused.h"
#include "passes/passes.h"

namespace voxrt {

namespace {

// Whether every value of int-list attribute `name` of `a` is `v` (an absent one holds `v` by
// default), for a list of `rank` values.
bool all_of_attr(const ir::Attributes& a, const char* name, size_t rank, int64_t v) {
  if (!a.has(name)) return true;
  const std::vector<int64_t> x = a.get_ints(name);
  return x.size() == rank && std::all_of(x.begin(), x.end(), [v](int64_t e) { return e == v; });
}

// Whether `t` is a ConvTranspose that the convolution after it can compute where it reads X
// (backends/ref/ops/fused.h, x_transposed): kernel 2 and stride 2 along every spatial axis, no
// padding, output padding or dilation, one group, constant weights (and bias) of its input's dtype.
bool fusable_conv_transpose(const ir::Graph& g, const ir::Node& t) {
  if (t.op_type != "ConvTranspose" || !t.domain.empty() || !t.has_input(0) || !t.has_input(1) ||
      t.outputs.size() != 1 || t.num_inputs() > 3)
    return false;
  // 3D only. In 2D a thread's bands are a few rows, whose up rows are made again for the next
  // band's reach, and a wide layer's bands are filled by both threads: nnU-Net's 2d network at
  // 512^2 on two threads ran 1.5-2.5% longer fused (activations 99 -> 83 MiB, its peak RSS the
  // load's either way), unet2d level (peak RSS 15.6 -> 15.2 MiB).
  const Tensor* w = g.constant(t.inputs[1]);
  if (!w || w->rank() != 5 || w->dim(0) < 1 || w->dim(1) < 1) return false;
  const size_t rank = static_cast<size_t>(w->rank() - 2);
  for (size_t d = 0; d < rank; ++d)
    if (w->dim(static_cast<int64_t>(2 + d)) != 2) return false;
  const ir::Attributes& a = t.attrs;
  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  if ((auto_pad != "NOTSET" && auto_pad != "VALID") || a.has("output_shape") ||
      a.get_int("group", 1) != 1 || !a.has("strides") || !all_of_attr(a, "strides", rank, 2) ||
      !all_of_attr(a, "pads", 2 * rank, 0) || !all_of_attr(a, "dilations", rank, 1) ||
      !all_of_attr(a, "output_padding", rank, 0) || !all_of_attr(a, "kernel_shape", rank, 2))
    return false;
  const auto& in_dt = g.values[static_cast<size_t>(t.inputs[0])].dtype;
  const auto& out_dt = g.values[static_cast<size_t>(t.outputs[0])].dtype;
  if (!in_dt || !out_dt || *in_dt != *out_dt || w->dtype() != *in_dt) return false;
  if (t.has_input(2)) {
    const Tensor* b = g.constant(t.inputs[2]);
    if (!b || b->dtype() != *in_dt || b->rank() != 1 || b->dim(0) != w->dim(1)) return false;
  }
  return true;
}

}  // namespace

// A 3D ConvTranspose of kernel 2 and stride 2 (a UNet decoder's up-convolution: nnU-Net's, and
// nn.ConvTranspose3d(c, c / 2, 2, stride=2) in most hand-written UNets) whose one consumer is a
// convolution's X or a part of it (the skip's Concat fused before, fuse_concat_conv.cpp) is
// computed by that convolution where it reads X (x_transposed): its drivers make the rows of each
// depth plane of the up-convolution's output (a band of them at a time, each thread its own)
// from one plane of its input where they copy X's rows into their padded planes, so that output,
// 8 times the positions of its input (over half the channels, in most UNets), is never written,
// nor read back.
void fuse_conv_transpose_into_conv(ir::Graph& g) {
  const auto consumers = g.consumers();
  const auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& conv = g.nodes[k];
    const bool plain = conv.op_type == "Conv" && conv.domain.empty();
    const bool fused = conv.op_type == "FusedConv" && conv.domain == kInternalDomain;
    if ((!plain && !fused) || !conv.has_input(0) || !conv.has_input(1) ||
        conv.attrs.has(kFusedXFrom) || conv.attrs.has(kFusedXTransposed))
      continue;
    const int64_t parts = fused ? conv.attrs.get_int("x_parts", 1) : 1;
    const bool head = fused && conv.attrs.get_int(kFusedHead, 0) != 0;
    if (parts < 1 || conv.num_inputs() > 3 + parts + (head ? 2 : 0) ||
        (parts > 1 && conv.num_inputs() < 3 + parts))
      continue;
    const std::vector<Upsample> modes = upsample_modes(conv.attrs, parts);
    for (int64_t p = 0; p < parts; ++p) {
      const size_t slot = p == 0 ? 0 : static_cast<size_t>(3 + p);
      const int v = conv.inputs[slot];
      if (v < 0 || producers[static_cast<size_t>(v)] < 0 ||
          modes[static_cast<size_t>(p)] != Upsample::none)
        continue;
      if (sole_consumer(g, consumers, v) != static_cast<int>(k) ||
          std::count(conv.inputs.begin(), conv.inputs.end(), v) != 1)
        continue;
      const size_t ti = static_cast<size_t>(producers[static_cast<size_t>(v)]);
      const ir::Node& t = g.nodes[ti];
      if (drop[ti] || !fusable_conv_transpose(g, t)) continue;
      const Tensor* w = g.constant(t.inputs[1]);
      const Tensor* conv_w = g.constant(conv.inputs[1]);
      if (!conv_w || conv_w->rank() != w->rank()) continue;
      // X, W, B, the residual slot, the other parts, the head's two inputs: then the
      // ConvTranspose's weights and bias.
      const size_t before = static_cast<size_t>(3 + parts + (head ? 2 : 0));
      conv.inputs.resize(std::max(conv.inputs.size(), before), -1);
      conv.inputs[slot] = t.inputs[0];
      conv.inputs.push_back(t.inputs[1]);
      conv.inputs.push_back(t.has_input(2) ? t.inputs[2] : -1);
      if (plain) {
        conv.domain = kInternalDomain;
        conv.op_type = "FusedConv";
        conv.attrs.set_string("activation", "");
      }
      conv.attrs.set_int(kFusedXTransposed, p);
      drop[ti] = 1;
      break;  // one transposed part a convolution
    }
  }
  erase_nodes(g, drop);
  g.remove_dead();
}

}  // namespace voxrt
