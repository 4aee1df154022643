#include "runtime/output_cache.h"

#include <algorithm>

#include "runtime/pages.h"
#include "voxrt/error.h"

namespace voxrt {

namespace {

constexpr size_t kGranule = size_t{64} << 10;  // capacities rounded up, so near sizes share

}  // namespace

OutputCache::~OutputCache() {
  for (const Block& b : free_) unmap_pages(b.data, b.capacity);
}

Tensor OutputCache::tensor(DType dtype, Shape shape) {
  const int64_t numel = shape_numel(shape);
  const size_t elem = dtype_size(dtype);
  if (numel > 0 && static_cast<size_t>(numel) > (SIZE_MAX - kGranule) / elem)
    throw Error("tensor of shape " + shape_str(shape) + " is too large to allocate");
  const size_t bytes = std::max<size_t>(static_cast<size_t>(numel) * elem, 1);
  const size_t capacity = (bytes + kGranule - 1) / kGranule * kGranule;
  Block b;
  {
    std::lock_guard<std::mutex> lock(m_);
    // The smallest free block that fits, unless it is more than twice the size asked for.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->capacity >= capacity && it->capacity <= 2 * capacity &&
          (best == free_.end() || it->capacity < best->capacity))
        best = it;
    if (best != free_.end()) {
      b = *best;
      free_.erase(best);
    }
  }
  if (!b.data) b = {map_pages(capacity), capacity};
  std::weak_ptr<OutputCache> home = weak_from_this();
  std::shared_ptr<uint8_t[]> storage(b.data, [home, b](uint8_t*) {
    if (std::shared_ptr<OutputCache> cache = home.lock())
      cache->give_back(b);
    else
      unmap_pages(b.data, b.capacity);
  });
  return Tensor::adopt(dtype, std::move(shape), std::move(storage));
}

void OutputCache::give_back(Block b) {
  Block drop;
  {
    std::lock_guard<std::mutex> lock(m_);
    free_.push_back(b);
    if (free_.size() > max_free_) {
      auto smallest =
          std::min_element(free_.begin(), free_.end(),
                           [](const Block& x, const Block& y) { return x.capacity < y.capacity; });
      drop = *smallest;
      free_.erase(smallest);
    }
  }
  if (drop.data) unmap_pages(drop.data, drop.capacity);
}

size_t OutputCache::free_bytes() const {
  std::lock_guard<std::mutex> lock(m_);
  size_t n = 0;
  for (const Block& b : free_) n += b.capacity;
  return n;
}

}  // namespace voxrt
