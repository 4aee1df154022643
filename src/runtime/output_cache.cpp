#include "runtime/output_cache.h"

#include <cstdint>

#include "voxrt/error.h"

namespace voxrt {

Tensor OutputCache::tensor(DType dtype, Shape shape) {
  const int64_t numel = shape_numel(shape);
  const size_t elem = dtype_size(dtype);
  if (numel > 0 && static_cast<size_t>(numel) > (SIZE_MAX >> 1) / elem)
    throw Error("tensor of shape " + shape_str(shape) + " is too large to allocate");
  const ScratchCache::Block b = blocks_.take(static_cast<size_t>(numel) * elem);
  std::weak_ptr<OutputCache> home = weak_from_this();
  std::shared_ptr<uint8_t[]> storage(b.data, [home, b](uint8_t*) {
    if (std::shared_ptr<OutputCache> cache = home.lock())
      cache->blocks_.give_back(b);
    else
      ScratchCache::release(b);
  });
  return Tensor::adopt(dtype, std::move(shape), std::move(storage));
}

}  // namespace voxrt
