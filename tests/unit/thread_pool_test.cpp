#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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

// parallel_ranges calls fn once per thread with the t-th of size() even ranges, thread t the
// same thread every call (the caller's range the first), with dealt-out jobs in between; ranges
// that would be empty are not called.
TEST(ThreadPool, RangesStayOnTheirThreads) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 5, 64}) {
      std::vector<std::thread::id> owner(static_cast<size_t>(threads));
      for (int rep = 0; rep < 50; ++rep) {
        std::mutex m;
        std::vector<std::pair<int64_t, int64_t>> calls;
        std::vector<std::thread::id> ids;
        pool.parallel_ranges(n, [&](int64_t b, int64_t e) {
          std::lock_guard<std::mutex> lock(m);
          calls.emplace_back(b, e);
          ids.push_back(std::this_thread::get_id());
        });
        std::vector<int> hits(static_cast<size_t>(n), 0);
        for (size_t c = 0; c < calls.size(); ++c) {
          auto [b, e] = calls[c];
          ASSERT_LT(b, e);
          // Which range this is: b = t * n / threads, e = (t + 1) * n / threads.
          int t = 0;
          while (t < threads && (t * n / threads != b || (t + 1) * n / threads != e)) ++t;
          ASSERT_LT(t, threads) << "n " << n << ": [" << b << ", " << e << ") is no thread's";
          if (rep == 0)
            owner[static_cast<size_t>(t)] = ids[c];
          else if (owner[static_cast<size_t>(t)] != std::thread::id())
            EXPECT_EQ(ids[c], owner[static_cast<size_t>(t)]) << "range " << t << " moved";
          if (t == 0) EXPECT_EQ(ids[c], std::this_thread::get_id());
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        }
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << n << " " << i;
        pool.parallel_for(
            7, [](int64_t, int64_t) {}, 1);
      }
    }
  }
}

// Concurrent callers mixing both kinds of job each get all their work done.
TEST(ThreadPool, ConcurrentRangesAndChunksFinish) {
  ThreadPool pool(3);
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

}  // namespace
}  // namespace voxrt
