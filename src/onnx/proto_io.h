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
/// A file's bytes: mapped read-only where the system allows it (a regular, non-empty file), else
/// read into memory. Loading a model from a mapping neither zeroes a buffer nor copies the file
/// into it (nnU-Net's 2d network, 185 MB: those were 26% of `voxrt info`'s 3.9 s). The file must
/// not shrink while it is mapped. Move-only; release() gives the bytes back before destruction.
class FileBytes {
 public:
  FileBytes() = default;
  ~FileBytes() { release(); }
  FileBytes(FileBytes&& o) noexcept { *this = std::move(o); }
  FileBytes& operator=(FileBytes&& o) noexcept;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;

  const void* data() const { return map_ ? map_ : read_.data(); }
  size_t size() const { return map_ ? size_ : read_.size(); }
  void release();

 private:
  friend FileBytes read_file(const std::string& path);
  void* map_ = nullptr;
  size_t size_ = 0;   // of the mapping
  std::string read_;  // where the file was read instead
};
/// A whole file's bytes; throws voxrt::Error if it cannot read them.
FileBytes read_file(const std::string& path);

/// DType for an ONNX TensorProto.DataType, or throws naming `where`.
DType dtype_from_onnx(int32_t data_type, const std::string& where);
int32_t dtype_to_onnx(DType t);

/// Decodes a TensorProto (raw or typed fields, or external data inside `model_dir`). Throws if
/// the declared shape does not match the data held, the element count overflows, or an external
/// location is absolute or escapes `model_dir`.
Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& model_dir,
                         const std::string& where);
/// The same, taking `p`'s raw_data (when it holds the values) as the tensor's storage instead
/// of copying it: `p` is left without them.
Tensor tensor_from_proto(onnx::TensorProto&& p, const std::string& model_dir,
                         const std::string& where);
/// Encodes a tensor as raw_data.
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto& p);

}  // namespace voxrt::onnx_io
