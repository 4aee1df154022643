// Activations the elementwise, normalization and pooling kernels can apply to what they write.
#pragma once

#include <limits>

namespace voxrt::cpu {

enum class Act { none, relu, leaky_relu, sigmoid, tanh, clip };

struct ActParams {
  Act act = Act::none;
  float alpha = 0.01f;  // LeakyRelu's slope
  float lo = -std::numeric_limits<float>::infinity();  // Clip's bounds
  float hi = std::numeric_limits<float>::infinity();
};

/// "relu", "lrelu", ...: a kernel name fragment ("" for none).
inline const char* act_name(Act a) {
  switch (a) {
    case Act::none: return "";
    case Act::relu: return "relu";
    case Act::leaky_relu: return "lrelu";
    case Act::sigmoid: return "sigmoid";
    case Act::tanh: return "tanh";
    case Act::clip: return "clip";
  }
  return "";
}

}  // namespace voxrt::cpu
