#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
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

// parallel_ranges calls fn once on each non-empty range [t * n / size(), (t + 1) * n / size()):
// with a trivial fn the caller often finishes its own range before a worker wakes and takes the
// worker's too (a range not yet begun), which must neither skip nor repeat one.
TEST(ThreadPool, RangesCoverEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 5, 64}) {
      for (int rep = 0; rep < 200; ++rep) {
        std::mutex m;
        std::vector<std::pair<int64_t, int64_t>> calls;
        pool.parallel_ranges(n, [&](int64_t b, int64_t e) {
          std::lock_guard<std::mutex> lock(m);
          calls.emplace_back(b, e);
        });
        std::vector<int> hits(static_cast<size_t>(n), 0);
        for (auto [b, e] : calls) {
          ASSERT_LT(b, e);
          int t = 0;
          while (t < threads && (t * n / threads != b || (t + 1) * n / threads != e)) ++t;
          ASSERT_LT(t, threads) << "n " << n << ": [" << b << ", " << e << ") is no range";
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        }
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << n << " " << i;
        if (rep % 2)
          pool.parallel_for(
              7, [](int64_t, int64_t) {}, 1);
      }
    }
  }
}

// Where every thread comes for its range, range t runs on the same thread every call, range 0 on
// the caller. Each range waits inside fn until all have begun, so no thread can finish its own
// and take another's: each must run its own (a pool dealing ranges out in arrival order fails).
TEST(ThreadPool, RangesStayOnTheirThreads) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    std::vector<std::thread::id> owner(static_cast<size_t>(threads));
    for (int rep = 0; rep < 30; ++rep) {
      std::atomic<int> begun{0};
      std::atomic<bool> timed_out{false};
      std::vector<std::thread::id> ids(static_cast<size_t>(threads));
      pool.parallel_ranges(threads, [&](int64_t b, int64_t e) {
        ASSERT_EQ(e, b + 1);
        ids[static_cast<size_t>(b)] = std::this_thread::get_id();
        begun++;
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (begun.load() < threads)
          if (std::chrono::steady_clock::now() > until) {
            timed_out = true;
            return;
          }
      });
      ASSERT_FALSE(timed_out) << "a range waited for one that never began";
      EXPECT_EQ(ids[0], std::this_thread::get_id());
      for (int t = 0; t < threads; ++t) {
        if (rep == 0) owner[static_cast<size_t>(t)] = ids[static_cast<size_t>(t)];
        EXPECT_EQ(ids[static_cast<size_t>(t)], owner[static_cast<size_t>(t)]) << "range " << t;
        for (int u = 0; u < t; ++u)
          EXPECT_NE(ids[static_cast<size_t>(t)], ids[static_cast<size_t>(u)]);
      }
      pool.parallel_for(
          9, [](int64_t, int64_t) {}, 1);
    }
  }
}

// Concurrent callers (Session runs from several threads), with both kinds of job, each get all
// their work done.
TEST(ThreadPool, ConcurrentCallersEachFinish) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    std::vector<int64_t> sums(4, 0);
    std::vector<std::thread> callers;
    for (int c = 0; c < 4; ++c)
      callers.emplace_back([&, c] {
        for (int rep = 0; rep < 200; ++rep) {
          std::atomic<int64_t> sum{0};
          auto add = [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) sum += i;
          };
          if ((rep + c) % 2)
            pool.parallel_ranges(100, add);
          else
            pool.parallel_for(100, add);
          sums[static_cast<size_t>(c)] += sum.load();
        }
      });
    for (auto& t : callers) t.join();
    for (int64_t s : sums) EXPECT_EQ(s, 200 * 4950);
  }
}

}  // namespace
}  // namespace voxrt
