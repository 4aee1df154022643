// A dense, row-major tensor: dtype, shape and bytes, either owned or borrowed from the caller.
//
//   voxrt::Tensor a = voxrt::Tensor::zeros(voxrt::DType::f32, {1, 1, 32, 32, 32});
//   float* p = a.data<float>();
//   std::vector<float> mine(8);
//   voxrt::Tensor view = voxrt::Tensor::view(voxrt::DType::f32, {2, 4}, mine.data());  // no copy
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "voxrt/dtype.h"

namespace voxrt {

using Shape = std::vector<int64_t>;

/// Number of elements of a shape; throws voxrt::Error on negative dims or int64 overflow.
int64_t shape_numel(const Shape& shape);
/// "1x3x96x96x96"
std::string shape_str(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;

  /// Owned storage, zero-filled.
  static Tensor zeros(DType dtype, Shape shape);
  /// Owned storage, left uninitialized.
  static Tensor empty(DType dtype, Shape shape);
  /// Borrows `data`, which must hold numel * dtype_size bytes and outlive the tensor and its
  /// copies.
  static Tensor view(DType dtype, Shape shape, void* data);
  /// Shares `storage`, which must hold numel * dtype_size bytes; it is released (its deleter runs)
  /// when the last tensor using it goes. Throws voxrt::Error when `storage` is null and the
  /// shape has elements.
  static Tensor adopt(DType dtype, Shape shape, std::shared_ptr<uint8_t[]> storage);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool defined() const { return data_ != nullptr || (numel_ == 0 && !shape_.empty()); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <class T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }

  /// Same bytes, new shape of equal element count (shares or borrows storage).
  Tensor reshaped(Shape shape) const;
  /// Deep copy into owned storage.
  Tensor clone() const;

 private:
  DType dtype_ = DType::f32;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<uint8_t[]> owner_;
  void* data_ = nullptr;
};

}  // namespace voxrt
