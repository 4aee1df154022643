#include "runtime/scratch.h"

#include <algorithm>
#include <string>

#include "backends/ref/op.h"
#include "runtime/pages.h"
#include "runtime/thread_pool.h"

namespace voxrt {

namespace {

constexpr size_t kGranule = size_t{64} << 10;  // capacities rounded up, so near sizes share

}  // namespace

void ScratchCache::release(const Block& b) {
  unmap_pages(b.data, b.capacity);
}

size_t ScratchCache::peak_bytes() const {
  std::lock_guard<std::mutex> lock(m_);
  return peak_;
}

ScratchCache::~ScratchCache() {
  for (Block& b : free_) release(b);
}

ScratchCache::Block ScratchCache::take(size_t bytes) {
  const size_t capacity = (std::max<size_t>(bytes, 1) + kGranule - 1) / kGranule * kGranule;
  Block drop;
  {
    std::lock_guard<std::mutex> lock(m_);
    auto best = free_.end(), largest = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->capacity >= bytes && (best == free_.end() || it->capacity < best->capacity))
        best = it;
      if (largest == free_.end() || it->capacity > largest->capacity) largest = it;
    }
    if (best != free_.end()) {
      Block b = *best;
      free_.erase(best);
      return b;
    }
    // Nothing free fits: the new block replaces the largest free one, which it can serve from
    // now on. Kept, such blocks piled up: MONAI's UNet held 15 MiB of scratch in fp32 where one
    // call needs at most 8.
    if (largest != free_.end()) {
      drop = *largest;
      held_ -= largest->capacity;
      free_.erase(largest);
    }
    held_ += capacity;
    peak_ = std::max(peak_, held_);
  }
  if (drop.data) release(drop);
  return {map_pages(capacity, populate_), capacity};
}

void ScratchCache::give_back(Block b) {
  if (!b.data) return;
  Block drop;
  {
    std::lock_guard<std::mutex> lock(m_);
    free_.push_back(b);
    if (free_.size() > max_free_) {
      auto smallest =
          std::min_element(free_.begin(), free_.end(),
                           [](const Block& x, const Block& y) { return x.capacity < y.capacity; });
      drop = *smallest;
      held_ -= smallest->capacity;
      free_.erase(smallest);
    }
  }
  if (drop.data) release(drop);
}

size_t ScratchCache::free_bytes() const {
  std::lock_guard<std::mutex> lock(m_);
  size_t n = 0;
  for (const Block& b : free_) n += b.capacity;
  return n;
}

// Here rather than in backends/ref/op.h, which sees ScratchCache only declared.
ScratchCache* RunContext::own_scratch(int thread) const {
  return thread >= 0 && thread < own_count ? own + thread : scratch;
}

RunScratch::RunScratch(int threads)
    : threads_(threads),
      scratch_(std::make_unique<ScratchCache>(2 * static_cast<size_t>(threads) + 6)),
      panels_(std::make_unique<ScratchCache>(static_cast<size_t>(threads) + 1)),
      own_(std::make_unique<ScratchCache[]>(static_cast<size_t>(threads))) {}

RunScratch::~RunScratch() = default;

RunContext RunScratch::context(ThreadPool* pool) const {
  const int threads = pool ? pool->size() : 1;
  if (threads > threads_)
    throw Error("RunScratch: made for " + std::to_string(threads_) + " threads, not " +
                std::to_string(threads));
  return RunContext{pool, scratch_.get(), panels_.get(), own_.get(), threads};
}

size_t RunScratch::peak_bytes() const {
  size_t bytes = scratch_->peak_bytes() + panels_->peak_bytes();
  for (int t = 0; t < threads_; ++t) bytes += own_[static_cast<size_t>(t)].peak_bytes();
  return bytes;
}

}  // namespace voxrt
