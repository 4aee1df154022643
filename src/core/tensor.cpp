#include "voxrt/tensor.h"

#include <cstring>

#include "voxrt/error.h"

namespace voxrt {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("shape " + shape_str(shape) + " has a negative dimension");
    if (d != 0 && n > INT64_MAX / d)
      throw Error("shape " + shape_str(shape) + " has more elements than int64 can count");
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  size_t bytes = static_cast<size_t>(t.numel_) * dtype_size(dtype);
  if (t.numel_ > 0 && bytes / dtype_size(dtype) != static_cast<size_t>(t.numel_))
    throw Error("tensor of shape " + shape_str(t.shape_) + " is too large to allocate");
  // One spare element keeps data_ non-null for empty tensors.
  t.owner_ = std::shared_ptr<uint8_t[]>(new uint8_t[bytes + 8]);
  t.data_ = t.owner_.get();
  return t;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t = empty(dtype, std::move(shape));
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::adopt(DType dtype, Shape shape, std::shared_ptr<uint8_t[]> storage) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  if (!storage && t.numel_ > 0)
    throw Error("Tensor::adopt: no storage for a tensor of shape " + shape_str(t.shape_));
  t.owner_ = std::move(storage);
  t.data_ = t.owner_.get();
  return t;
}

Tensor Tensor::view(DType dtype, Shape shape, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.numel_ = shape_numel(shape);
  t.shape_ = std::move(shape);
  t.data_ = data;
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  int64_t n = shape_numel(shape);
  if (n != numel_)
    throw Error("cannot reshape " + shape_str(shape_) + " to " + shape_str(shape) +
                ": element counts differ");
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(dtype_, shape_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

}  // namespace voxrt
