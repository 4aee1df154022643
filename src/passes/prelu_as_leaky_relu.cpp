#include <optional>

#include "backends/ref/tensor_math.h"
#include "passes/passes.h"

namespace voxrt {

// PRelu whose slope is one constant value is LeakyRelu with that alpha: y = x for x >= 0 and
// slope * x below, for any slope (the kernels multiply under a mask, never take max(x, a x)).
// MONAI's networks use nn.PReLU() with its single learned slope, which torch exports as a
// [1, 1, 1, 1] initializer; as LeakyRelu it fuses into the convolution or normalization before
// it. Slopes with one value per channel stay PRelu.
void prelu_as_leaky_relu(ir::Graph& g) {
  for (ir::Node& n : g.nodes) {
    if (n.op_type != "PRelu" || !n.domain.empty() || n.inputs.size() != 2 || n.inputs[0] < 0 ||
        n.inputs[1] < 0 || n.outputs.size() != 1)
      continue;
    const Tensor* slope = g.constant(n.inputs[1]);
    std::optional<DType> x = g.values[static_cast<size_t>(n.inputs[0])].dtype;
    // Float data only (PRelu takes integers from opset 16), and a slope of the data's type, so
    // the rewrite changes no arithmetic.
    if (!slope || slope->numel() != 1 || !x || !is_float(*x) || slope->dtype() != *x) continue;
    const float alpha = static_cast<float>(ref::load(*slope, 0));
    n.op_type = "LeakyRelu";
    n.attrs.items.clear();
    n.attrs.set_float("alpha", alpha);
    n.inputs.resize(1);
  }
  g.remove_dead();
}

}  // namespace voxrt
