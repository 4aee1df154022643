// Scratch memory a Session's ops reuse from run to run: blocks a conv driver takes for the
// duration of one call (padded input slabs, packed panels, sums) go back here instead of to the
// allocator. Blocks are mappings of their own (runtime/pages.h) and were freed to the system
// after each call before this cache, so each run faulted its scratch in again: on two threads
// the faults contend, and the first ten or so runs of a process ran 20-40% slower (MONAI UNet
// fp16: 29-37 ms instead of 25).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace voxrt {

class ThreadPool;
struct RunContext;

class ScratchCache {
 public:
  /// `max_free`: free blocks kept; a call takes about two blocks a thread at once. `populate`:
  /// new blocks are mapped with every page present (map_pages), for blocks written whole.
  explicit ScratchCache(size_t max_free = 8, bool populate = false)
      : max_free_(max_free), populate_(populate) {}
  ~ScratchCache();
  ScratchCache(const ScratchCache&) = delete;
  ScratchCache& operator=(const ScratchCache&) = delete;

  struct Block {
    uint8_t* data = nullptr;
    size_t capacity = 0;
  };
  /// A page-aligned block of at least `bytes`: the smallest free one that fits, else a new
  /// one, which replaces the largest free block (too small for this take).
  Block take(size_t bytes);
  /// Keeps `b` for a later take; beyond `max_free` free blocks the smallest is freed, so what
  /// the cache holds stays near the scratch one run has in use at once.
  void give_back(Block b);
  /// A block of at least `bytes` for a scope: taken on construction, given back on destruction
  /// (also when the scope throws).
  class Lease {
   public:
    Lease(ScratchCache& cache, size_t bytes) : cache_(cache), block_(cache.take(bytes)) {}
    ~Lease() { cache_.give_back(block_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    uint8_t* data() const { return block_.data; }

   private:
    ScratchCache& cache_;
    Block block_;
  };
  /// Returns a block taken from a cache to the system: for a block that outlives its cache.
  static void release(const Block& b);
  /// Bytes held in free blocks.
  size_t free_bytes() const;
  /// The most bytes the cache's blocks, taken and free, have held at once.
  size_t peak_bytes() const;

 private:
  size_t max_free_;
  bool populate_ = false;
  mutable std::mutex m_;
  std::vector<Block> free_;
  size_t held_ = 0, peak_ = 0;  // capacities of the blocks alive, and their high-water mark
};

/// The scratch caches a RunContext hands the ops for a pool of `threads`: per-call scratch,
/// panels widened a layer at a time, and each thread's own cache (RunContext::own_scratch). A
/// Session keeps one between runs; the kernel benchmarks hold one too, so that their ops take
/// and reuse scratch as in a Session rather than mapping it afresh each call.
class RunScratch {
 public:
  explicit RunScratch(int threads);
  ~RunScratch();
  RunScratch(const RunScratch&) = delete;
  RunScratch& operator=(const RunScratch&) = delete;

  /// The context for runs on `pool` (of at most the `threads` this was made for; null: the
  /// calling thread alone).
  RunContext context(ThreadPool* pool) const;
  /// The most bytes the caches have held at once, all together.
  size_t peak_bytes() const;

 private:
  int threads_;
  std::unique_ptr<ScratchCache> scratch_;  // the ops' per-call scratch, sized by the threads
  std::unique_ptr<ScratchCache> panels_;   // weights widened one layer at a time
  std::unique_ptr<ScratchCache[]> own_;    // one per pool thread
};

}  // namespace voxrt
