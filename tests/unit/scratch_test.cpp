// The Session's scratch cache: blocks come back to later takes, best fit first, aligned, a block
// too small is replaced, and the cache keeps only a few free blocks.
#include "runtime/scratch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "backends/ref/op.h"
#include "runtime/output_cache.h"
#include "runtime/pages.h"
#include "runtime/thread_pool.h"
#include "voxrt/error.h"

// Under AddressSanitizer map_pages takes its blocks from the heap (runtime/pages.cpp).
#if defined(__SANITIZE_ADDRESS__)
#define VOXRT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VOXRT_TEST_ASAN 1
#endif
#endif

namespace voxrt::test {
namespace {

TEST(ScratchCache, ReusesTheSmallestFreeBlockThatFits) {
  ScratchCache c;
  ScratchCache::Block big = c.take(3 << 20), small = c.take(100 << 10);
  EXPECT_GE(big.capacity, size_t{3} << 20);
  EXPECT_GE(small.capacity, size_t{100} << 10);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data) % 4096, 0u);  // a mapping of its own
  std::memset(big.data, 1, big.capacity);  // the whole capacity is usable (ASan checks)
  uint8_t* big_data = big.data;
  uint8_t* small_data = small.data;
  c.give_back(big);
  c.give_back(small);
  EXPECT_EQ(c.free_bytes(), big.capacity + small.capacity);
  // 90 KiB fits both: the small one is taken; 1 MiB only fits the big one.
  ScratchCache::Block a = c.take(90 << 10);
  EXPECT_EQ(a.data, small_data);
  ScratchCache::Block b = c.take(1 << 20);
  EXPECT_EQ(b.data, big_data);
  EXPECT_EQ(c.free_bytes(), 0u);
  // Nothing free fits: a new block.
  ScratchCache::Block d = c.take(5 << 20);
  EXPECT_NE(d.data, big_data);
  for (ScratchCache::Block x : {a, b, d}) c.give_back(x);
}

// map_pages: zeroed, page-aligned, writable over its whole size, returned by unmap_pages; with
// populate, on Linux, every page is resident before anything touches it; from kHugePageBytes up,
// where huge pages are asked for, the mapping starts on a 2 MiB boundary.
TEST(Pages, MapsZeroedPageAlignedMemory) {
#if defined(__linux__) && !defined(VOXRT_TEST_ASAN)
  // The ctest run under VOXRT_HUGEPAGES=1 (HugePages.Mappings) must take the huge path.
  const char* env = std::getenv("VOXRT_HUGEPAGES");
  if (env && std::string(env) == "1") {
    EXPECT_TRUE(huge_pages_enabled());
  }
#endif
  for (bool populate : {false, true})
    for (size_t bytes : {size_t{1}, size_t{4096}, size_t{100} << 10, kHugePageBytes - 4096,
                         kHugePageBytes, size_t{3} << 20, (size_t{5} << 20) + 1}) {
      uint8_t* p = map_pages(bytes, populate);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
      if (bytes >= kHugePageBytes && huge_pages_enabled()) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u) << bytes;
      }
#if defined(__linux__) && !defined(VOXRT_TEST_ASAN)
      if (populate) {
        std::vector<unsigned char> resident((bytes + 4095) / 4096);
        ASSERT_EQ(mincore(p, bytes, resident.data()), 0);
        EXPECT_TRUE(std::all_of(resident.begin(), resident.end(), [](unsigned char r) {
          return (r & 1) != 0;
        })) << bytes;
      }
#endif
      EXPECT_TRUE(std::all_of(p, p + bytes, [](uint8_t v) { return v == 0; })) << bytes;
      std::memset(p, 7, bytes);
      unmap_pages(p, bytes);
    }
}

// A cache made to populate hands out blocks like any other.
TEST(ScratchCache, PopulatedBlocksAreZeroedAndReused) {
  ScratchCache cache(2, /*populate=*/true);
  ScratchCache::Block a = cache.take(200 << 10);
  ASSERT_NE(a.data, nullptr);
  EXPECT_GE(a.capacity, size_t{200} << 10);
  EXPECT_TRUE(std::all_of(a.data, a.data + a.capacity, [](uint8_t v) { return v == 0; }));
  std::memset(a.data, 1, a.capacity);
  cache.give_back(a);
  ScratchCache::Block b = cache.take(100 << 10);
  EXPECT_EQ(b.data, a.data);
  cache.give_back(b);
}

// RunScratch: a context per pool with each cache in place, its peak the sum of the caches'; a
// pool larger than it was made for is refused by name.
TEST(RunScratch, ContextsAndPeakOverItsCaches) {
  RunScratch scratch(2);
  ThreadPool two(2), three(3);
  const RunContext ctx = scratch.context(&two);
  EXPECT_EQ(ctx.pool, &two);
  ASSERT_NE(ctx.scratch, nullptr);
  ASSERT_NE(ctx.panels, nullptr);
  ASSERT_NE(ctx.own, nullptr);
  EXPECT_EQ(ctx.own_count, 2);
  EXPECT_EQ(scratch.context(nullptr).own_count, 1);
  EXPECT_EQ(scratch.peak_bytes(), 0u);
  ctx.scratch->give_back(ctx.scratch->take(100 << 10));
  ctx.own_scratch(1)->give_back(ctx.own_scratch(1)->take(300 << 10));
  EXPECT_EQ(scratch.peak_bytes(), ctx.scratch->peak_bytes() + ctx.own[1].peak_bytes());
  EXPECT_GE(scratch.peak_bytes(), size_t{400} << 10);
  try {
    (void)scratch.context(&three);
    ADD_FAILURE() << "a pool of three threads was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("made for 2 threads, not 3"), std::string::npos)
        << e.what();
  }
}

// Tensors from the output cache: a dropped tensor's block serves the next tensor of its size;
// blocks in use are distinct; a tensor may outlive the cache.
TEST(OutputCache, RecyclesDroppedTensorsAndOutlivesTheCache) {
  auto cache = std::make_shared<OutputCache>(2);
  const Shape shape = {3, 64, 1000};
  void *first = nullptr, *second = nullptr;
  {
    Tensor a = cache->tensor(DType::f32, shape);
    first = a.raw();
    EXPECT_EQ(a.nbytes(), size_t{3 * 64 * 1000 * 4});
    std::memset(a.raw(), 1, a.nbytes());
    Tensor b = cache->tensor(DType::f32, shape);
    second = b.raw();
    EXPECT_NE(second, first);
    EXPECT_EQ(cache->free_bytes(), 0u);
  }
  EXPECT_GE(cache->free_bytes(), size_t{2 * 3 * 64 * 1000 * 4});
  Tensor again = cache->tensor(DType::f32, shape);
  EXPECT_TRUE(again.raw() == first || again.raw() == second);
  Tensor kept = cache->tensor(DType::f32, shape);
  cache.reset();
  std::memset(kept.raw(), 2, kept.nbytes());  // still valid (ASan checks); freed with `kept`
  EXPECT_EQ(static_cast<uint8_t*>(kept.raw())[kept.nbytes() - 1], 2);
}

// A lease gives its block back when its scope ends, also by an exception.
TEST(ScratchCache, LeaseGivesTheBlockBackWhenItsScopeEnds) {
  ScratchCache c;
  uint8_t* seen = nullptr;
  try {
    const ScratchCache::Lease l(c, 100 << 10);
    seen = l.data();
    std::memset(l.data(), 3, 100 << 10);
    EXPECT_EQ(c.free_bytes(), 0u);
    throw std::runtime_error("a run that fails");
  } catch (const std::runtime_error&) {
  }
  EXPECT_GE(c.free_bytes(), size_t{100} << 10);
  const ScratchCache::Lease again(c, 90 << 10);
  EXPECT_EQ(again.data(), seen);
}

// A take nothing free fits replaces the largest free block, so blocks of growing sizes taken one
// after another (a run's convolutions) leave one block, not all of them.
TEST(ScratchCache, ABlockTooSmallIsReplaced) {
  ScratchCache c;
  ScratchCache::Block small = c.take(64 << 10), mid = c.take(1 << 20);
  c.give_back(small);
  c.give_back(mid);
  ScratchCache::Block big = c.take(2 << 20);  // replaces mid, keeps small
  EXPECT_EQ(c.free_bytes(), small.capacity);
  c.give_back(big);
  EXPECT_EQ(c.free_bytes(), small.capacity + big.capacity);
  ScratchCache::Block again = c.take(1 << 20);  // the big block serves it now
  EXPECT_EQ(again.data, big.data);
  c.give_back(again);
}

// The high-water mark counts blocks taken and free, and a replaced block leaves it.
TEST(ScratchCache, PeakCountsEveryBlockAlive) {
  ScratchCache c;
  EXPECT_EQ(c.peak_bytes(), 0u);
  ScratchCache::Block a = c.take(1 << 20), b = c.take(2 << 20);
  const size_t both = a.capacity + b.capacity;
  EXPECT_EQ(c.peak_bytes(), both);
  c.give_back(a);
  c.give_back(b);
  EXPECT_EQ(c.peak_bytes(), both);          // free blocks are still held
  ScratchCache::Block d = c.take(3 << 20);  // replaces b: a and d are alive
  EXPECT_EQ(c.peak_bytes(), std::max(both, a.capacity + d.capacity));
  c.give_back(d);
  ScratchCache::Block e = c.take(8 << 20);  // replaces d: a and e
  EXPECT_EQ(c.peak_bytes(), a.capacity + e.capacity);
  c.give_back(e);
}

TEST(ScratchCache, KeepsAFewFreeBlocksDroppingTheSmallest) {
  ScratchCache c;
  std::vector<ScratchCache::Block> blocks;
  for (int i = 1; i <= 20; ++i) blocks.push_back(c.take(static_cast<size_t>(i) << 16));
  size_t largest8 = 0;
  for (int i = 13; i <= 20; ++i) largest8 += blocks[static_cast<size_t>(i - 1)].capacity;
  for (const ScratchCache::Block& b : blocks) c.give_back(b);
  EXPECT_EQ(c.free_bytes(), largest8);
}

TEST(ScratchCache, ThreadsTakeAndGiveBackConcurrently) {
  ScratchCache c;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&c, t] {
      for (int i = 0; i < 200; ++i) {
        ScratchCache::Block b = c.take(static_cast<size_t>((i % 7 + 1) * (t + 1)) << 12);
        std::memset(b.data, t, b.capacity);
        c.give_back(b);
      }
    });
  for (std::thread& t : ts) t.join();
  EXPECT_GT(c.free_bytes(), 0u);
}

}  // namespace
}  // namespace voxrt::test
