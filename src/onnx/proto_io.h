// Reading and writing ONNX protobuf: bytes to ModelProto, TensorProto to voxrt::Tensor and back.
// The only place besides the importer and exporter that sees protobuf types.
#pragma once

#include <onnx/onnx.pb.h>

#include <string>

#include "voxrt/tensor.h"

namespace voxrt::onnx_io {

/// Parses a serialized ModelProto; throws voxrt::Error naming `model_name` if the bytes are not
/// one.
onnx::ModelProto parse_model(const void* bytes, size_t size, const std::string& model_name);
/// Reads a whole file into memory; throws voxrt::Error if it cannot.
std::string read_file(const std::string& path);

/// DType for an ONNX TensorProto.DataType, or throws naming `where`.
DType dtype_from_onnx(int32_t data_type, const std::string& where);
int32_t dtype_to_onnx(DType t);

/// Decodes a TensorProto (raw or typed fields, or external data inside `model_dir`). Throws if
/// the declared shape does not match the data held, the element count overflows, or an external
/// location is absolute or escapes `model_dir`.
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& model_dir,
                         const std::string& where);
/// Encodes a tensor as raw_data.
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& p);

}  // namespace voxrt::onnx_io
