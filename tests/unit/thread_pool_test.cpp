#include "runtime/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace voxrt {
namespace {

// Counts the calling thread as begun and waits until `threads` have: false after 5 s without.
bool all_begin(std::atomic<int>& begun, int threads) {
  begun++;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (begun.load() < threads)
    if (std::chrono::steady_clock::now() > until) return false;
  return true;
}

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

// parallel_ranges' cursors give out every item once, and fn runs only on threads with one. With a
// trivial fn the caller often finishes its own range before a worker wakes and takes the
// worker's, which must neither skip nor repeat one.
TEST(ThreadPool, RangesCoverEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 5, 64, 1000}) {
      for (int rep = 0; rep < 200; ++rep) {
        std::mutex m;
        std::vector<std::vector<int64_t>> calls;
        pool.parallel_ranges(n, [&](RangeCursor& items) {
          std::vector<int64_t> got;
          for (int64_t i; (i = items.next()) >= 0;) got.push_back(i);
          std::lock_guard<std::mutex> lock(m);
          calls.push_back(got);
        });
        ASSERT_LE(calls.size(), static_cast<size_t>(threads));
        std::vector<int> hits(static_cast<size_t>(n), 0);
        for (const auto& got : calls) {
          // fn runs only where there is an item: per-thread buffers are fewer where items are.
          ASSERT_FALSE(got.empty()) << "fn called on a thread with no item, n " << n;
          for (int64_t i : got) {
            ASSERT_GE(i, 0);
            ASSERT_LT(i, n);
            hits[static_cast<size_t>(i)]++;
          }
        }
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << n << " " << i;
        if (rep % 2)
          pool.parallel_for(
              7, [](int64_t, int64_t) {}, 1);
      }
    }
  }
}

// Where every thread comes for its first item, thread t gets the first of range t, the caller
// range 0's, the same thread every call. Each waits inside fn after its first item until all
// have begun, so none can take another's: each must begin its own (a pool dealing items out in
// arrival order fails).
TEST(ThreadPool, RangesStayOnTheirThreads) {
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    std::vector<std::thread::id> owner(static_cast<size_t>(threads));
    for (int rep = 0; rep < 30; ++rep) {
      std::atomic<int> begun{0};
      std::atomic<bool> timed_out{false};
      std::vector<std::thread::id> ids(static_cast<size_t>(threads));
      pool.parallel_ranges(threads, [&](RangeCursor& items) {
        const int64_t first = items.next();
        if (first < 0) return;
        ids[static_cast<size_t>(first)] = std::this_thread::get_id();
        if (!all_begin(begun, threads)) {
          timed_out = true;
          return;
        }
        EXPECT_EQ(items.next(), -1);
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

// ThreadPool::current_thread() names the thread running a job as its cursor does: 0 on the
// caller and on threads outside any pool, 1.. on the workers, every thread of a job its own.
TEST(ThreadPool, CurrentThreadMatchesTheCursor) {
  EXPECT_EQ(ThreadPool::current_thread(), 0);
  std::thread outside([] { EXPECT_EQ(ThreadPool::current_thread(), 0); });
  outside.join();
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    // One item a thread, each waiting for the others to begin theirs, so every thread runs one.
    std::atomic<int> begun{0};
    std::atomic<bool> timed_out{false};
    std::vector<int> named(static_cast<size_t>(threads), -1);
    pool.parallel_ranges(threads, [&](RangeCursor& items) {
      const int64_t first = items.next();
      if (first < 0) return;
      EXPECT_EQ(ThreadPool::current_thread(), items.thread());
      named[static_cast<size_t>(first)] = ThreadPool::current_thread();
      if (!all_begin(begun, threads)) {
        timed_out = true;
        return;
      }
    });
    ASSERT_FALSE(timed_out) << "a range waited for one that never began";
    std::sort(named.begin(), named.end());
    for (int t = 0; t < threads; ++t) EXPECT_EQ(named[static_cast<size_t>(t)], t);
    EXPECT_EQ(ThreadPool::current_thread(), 0) << "the caller after its jobs";
  }
}

// A slow thread's range is taken over from its back: the caller runs its ten items slowly, and the
// worker, done with its own range in no time, takes range 0's back half, in order, then halves of
// what is left. Then a worker that starts late (the test seam) leaves the caller to run most of
// its range.
TEST(ThreadPool, RangesTakeOverASlowThreadsItems) {
  ThreadPool pool(2);
  const auto caller = std::this_thread::get_id();
  std::mutex m;
  std::vector<int64_t> worker_items;
  std::atomic<bool> worker_began{false};
  pool.parallel_ranges(20, [&](RangeCursor& items) {
    const bool mine = std::this_thread::get_id() == caller;
    if (!mine) worker_began = true;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (int64_t i; (i = items.next()) >= 0;) {
      if (!mine) {
        std::lock_guard<std::mutex> lock(m);
        worker_items.push_back(i);
        continue;
      }
      while (!worker_began.load() && std::chrono::steady_clock::now() < until) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  ASSERT_TRUE(worker_began.load()) << "the worker never came";
  std::vector<int64_t> taken;
  for (int64_t i : worker_items)
    if (i < 10) taken.push_back(i);
  ASSERT_FALSE(taken.empty()) << "the worker took nothing of the caller's slow range";
  // Its first run is the back half of what the caller had left, in order.
  size_t run = 1;
  while (run < taken.size() && taken[run] == taken[run - 1] + 1) ++run;
  EXPECT_EQ(taken[run - 1], 9) << "taken from the back";

  pool.delay_workers_for_tests(std::chrono::milliseconds(50));
  std::atomic<int64_t> by_caller{0};
  std::vector<std::atomic<int>> hits(1000);
  pool.parallel_ranges(1000, [&](RangeCursor& items) {
    for (int64_t i; (i = items.next()) >= 0;) {
      hits[static_cast<size_t>(i)]++;
      if (std::this_thread::get_id() == caller) by_caller++;
    }
  });
  for (const auto& h : hits) ASSERT_EQ(h.load(), 1);
  EXPECT_GT(by_caller.load(), 500) << "the caller took none of the late worker's range";
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
            pool.parallel_ranges(100, [&](RangeCursor& items) {
              for (int64_t i; (i = items.next()) >= 0;) add(i, i + 1);
            });
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
