// Reading and writing NumPy .npy files (little-endian float32, float16, float64, int64, int32,
// uint8; C order).
#pragma once

#include <string>

#include "voxrt/tensor.h"

namespace voxrt::cli {

Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& t);

}  // namespace voxrt::cli
