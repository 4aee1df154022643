#include <algorithm>
#include <cmath>

#include "backends/ref/tensor_math.h"
#include "passes/passes.h"

namespace voxrt {

// Conv or ConvTranspose (constant weights) followed by inference BatchNormalization (constant
// statistics) becomes one Conv or ConvTranspose: W' = W * s, B' = (B - mean) * s + beta with
// s = gamma / sqrt(var + eps) per output channel, in double. torch's exporter folds eval-mode
// BatchNorm into a Conv itself but not into a ConvTranspose (MONAI's up path).
void fold_batchnorm_into_conv(ir::Graph& g) {
  auto consumers = g.consumers();
  auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& bn = g.nodes[k];
    if (bn.op_type != "BatchNormalization" || bn.inputs.size() != 5 || bn.inputs[0] < 0) continue;
    if (std::count_if(bn.outputs.begin() + 1, bn.outputs.end(), [](int o) { return o >= 0; }))
      continue;
    if (bn.attrs.get_int("training_mode", 0) != 0) continue;
    int x = bn.inputs[0];
    int p = producers[static_cast<size_t>(x)];
    if (p < 0 || consumers[static_cast<size_t>(x)].size() != 1) continue;
    if (std::count(g.outputs.begin(), g.outputs.end(), x)) continue;
    ir::Node& conv = g.nodes[static_cast<size_t>(p)];
    bool transposed = conv.op_type == "ConvTranspose";
    if ((conv.op_type != "Conv" && !transposed) || !conv.domain.empty() || conv.inputs.size() < 2 ||
        !g.is_constant(conv.inputs[1]))
      continue;
    if (conv.has_input(2) && !g.is_constant(conv.inputs[2])) continue;
    const Tensor* w = g.constant(conv.inputs[1]);
    if (w->rank() < 2) continue;
    // Conv's W is [M, C / group, k...]; ConvTranspose's is [C, M / group, k...], output channel
    // (c / (C / group)) * (M / group) + j for W[c, j].
    int64_t group = std::max<int64_t>(1, conv.attrs.get_int("group", 1));
    if (transposed && w->dim(0) % group != 0) continue;
    int64_t cout = transposed ? w->dim(1) * group : w->dim(0);
    int64_t per = w->numel() / std::max<int64_t>(w->dim(0), 1) / (transposed ? w->dim(1) : 1);
    auto out_channel = [&](int64_t block) {  // block: W's elements in runs of `per`
      if (!transposed) return block;
      int64_t c = block / w->dim(1), j = block % w->dim(1);
      return c / (w->dim(0) / group) * w->dim(1) + j;
    };
    bool params_ok = true;
    for (int i = 1; i < 5; ++i) {
      const Tensor* t = g.constant(bn.inputs[static_cast<size_t>(i)]);
      params_ok = params_ok && t && t->numel() == cout && is_float(t->dtype());
    }
    if (!params_ok || !is_float(w->dtype())) continue;
    double eps = bn.attrs.get_float("epsilon", 1e-5f);
    auto gamma = ref::to_f64(*g.constant(bn.inputs[1]));
    auto beta = ref::to_f64(*g.constant(bn.inputs[2]));
    auto mean = ref::to_f64(*g.constant(bn.inputs[3]));
    auto var = ref::to_f64(*g.constant(bn.inputs[4]));

    Tensor nw = w->clone();
    std::vector<double> scale(static_cast<size_t>(cout));
    Tensor nb = Tensor::empty(w->dtype(), {cout});
    for (int64_t c = 0; c < cout; ++c) {
      size_t cc = static_cast<size_t>(c);
      scale[cc] = gamma[cc] / std::sqrt(var[cc] + eps);
      double b = conv.has_input(2) ? ref::load(*g.constant(conv.inputs[2]), c) : 0.0;
      ref::store(nb, c, (b - mean[cc]) * scale[cc] + beta[cc]);
    }
    for (int64_t block = 0; block * per < w->numel(); ++block) {
      double s = scale[static_cast<size_t>(out_channel(block))];
      for (int64_t i = block * per; i < (block + 1) * per; ++i)
        ref::store(nw, i, ref::load(*w, i) * s);
    }
    int wv = g.add_value(conv.name + "_bn_folded_W");
    int bv = g.add_value(conv.name + "_bn_folded_B");
    g.values[static_cast<size_t>(wv)].dtype = nw.dtype();
    g.values[static_cast<size_t>(bv)].dtype = nb.dtype();
    g.constants[wv] = std::move(nw);
    g.constants[bv] = std::move(nb);
    conv.inputs.resize(3);
    conv.inputs[1] = wv;
    conv.inputs[2] = bv;
    conv.outputs[0] = bn.outputs[0];
    drop[k] = 1;
  }
  erase_nodes(g, drop);
  g.remove_dead();
}

}  // namespace voxrt
