// Element types voxrt tensors can hold.
//
//   voxrt::DType t = voxrt::DType::f16;
//   size_t bytes = voxrt::dtype_size(t) * count;
//   std::string_view n = voxrt::dtype_name(t);   // "float16"
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace voxrt {

enum class DType : uint8_t {
  f32,
  f16,
  bf16,
  f64,
  i8,
  i16,
  i32,
  i64,
  u8,
  u16,
  u32,
  u64,
  boolean,
};

/// Bytes per element.
size_t dtype_size(DType t);
/// ONNX spelling: "float", "float16", "bfloat16", "double", "int64", "bool", ...
std::string_view dtype_name(DType t);
bool is_float(DType t);

}  // namespace voxrt
