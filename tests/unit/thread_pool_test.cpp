#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace voxrt {
namespace {

// Every index is visited exactly once, for any size and chunking, on one thread or several.
TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 7, 64, 1001}) {
      for (int64_t chunk : {0, 1, 5}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.parallel_for(
            n, [&](int64_t b, int64_t e) {
              for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
            },
            chunk);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << n << " " << i;
      }
    }
  }
}

// Concurrent callers (Session runs from several threads) each get all their work done.
TEST(ThreadPool, ConcurrentCallersEachFinish) {
  ThreadPool pool(2);
  std::vector<int64_t> sums(4, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int rep = 0; rep < 200; ++rep) {
        std::atomic<int64_t> sum{0};
        pool.parallel_for(100, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) sum += i;
        });
        sums[static_cast<size_t>(c)] += sum.load();
      }
    });
  for (auto& t : callers) t.join();
  for (int64_t s : sums) EXPECT_EQ(s, 200 * 4950);
}

}  // namespace
}  // namespace voxrt
