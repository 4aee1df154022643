// The one exception type voxrt throws.
//
//   try { voxrt::Session s("model.onnx"); }
//   catch (const voxrt::Error& e) { std::cerr << e.what() << "\n"; }
//
// Messages name the model, node or tensor and state what was expected against what was given.
#pragma once

#include <stdexcept>
#include <string>

namespace voxrt {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace voxrt
