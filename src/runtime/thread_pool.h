// A fixed set of worker threads owned by a Session. parallel_for splits an index range across
// them and the calling thread, and returns when every index is done. Workers spin briefly for the
// next job before they sleep, and the caller spins briefly for the last chunk before it sleeps:
// a model run is a chain of parallel_for calls a few hundred microseconds long, and waking a
// sleeping thread costs tens of microseconds each time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace voxrt {

class ThreadPool;

/// The items one thread runs in a ThreadPool::parallel_ranges job, in the order next() gives
/// them: its own range front to back, then runs taken off the back of the others' ranges. Without
/// a pool (the calling thread alone): every item of [0, n) in order.
class RangeCursor {
 public:
  explicit RangeCursor(int64_t n) : end_(n) {}
  /// The next item, or -1 when every item of the job has been given out.
  int64_t next();
  /// The thread running this cursor: 0 the caller, 1.. the pool's workers.
  int thread() const { return self_; }

 private:
  friend class ThreadPool;
  RangeCursor(ThreadPool* pool, int self, int64_t first)
      : pool_(pool), self_(self), first_(first) {}
  ThreadPool* pool_ = nullptr;
  int self_ = 0;
  int64_t first_ = -1;          // with a pool: the item taken before fn was called, not yet given
  int64_t next_ = 0, end_ = 0;  // without a pool
};

class ThreadPool {
 public:
  /// `threads` counts the caller: 1 means no workers, all work inline.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  /// The calling thread as RangeCursor::thread() numbers it: 1.. on a pool's worker, 0 on any
  /// other thread (a job's caller), for code a job runs without its cursor at hand.
  static int current_thread();

  /// Calls fn(begin, end) on disjoint chunks covering [0, n), at most `max_chunk` indices each
  /// (0: about four chunks per thread). If another parallel_for holds the pool (concurrent
  /// Session runs), the work runs on the calling thread alone.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                    int64_t max_chunk = 0);
  /// Calls fn(cursor) on each thread that gets an item (the calling thread and the workers that
  /// join the job; so per-thread resources, such as one of min(threads, n) buffers, are taken
  /// only where there is work), the cursors giving out items [0, n) once each: thread t (0: the
  /// caller) first runs the t-th of size() ranges [t * n / size(), (t + 1) * n / size()) front to
  /// back, so successive calls over the same rows keep each row on one core. A thread done with its
  /// own takes the back half (rounded up: a last item too) of what is left of the range with the
  /// most left, and runs it front to back as its own, itself open to such taking: when one core
  /// runs slower than the other (a shared host's neighbours) or the system has not scheduled a
  /// thread, the others take over its work, not only the ranges not yet begun. If another job holds
  /// the pool, or n does not fit 32 bits, fn runs on the calling thread alone over every item in
  /// order.
  void parallel_ranges(int64_t n, const std::function<void(RangeCursor&)>& fn);

  /// Test seam: workers wait this long before they take their first item of each
  /// parallel_ranges job, so the others take most of their ranges.
  void delay_workers_for_tests(std::chrono::microseconds delay) {
    worker_delay_us_ = delay.count();
  }

 private:
  void worker_loop(int index);
  void drain(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int64_t chunk);
  // Publishes a job (fn for parallel_for, range_fn for parallel_ranges) to the workers, takes
  // part in it, and returns when it is done.
  void run_job(const std::function<void(int64_t, int64_t)>* fn,
               const std::function<void(RangeCursor&)>* range_fn, int64_t n, int64_t chunk);
  friend class RangeCursor;
  // The next item for thread `self` of a parallel_ranges job: from its own span, else from the
  // back half of another's; -1 when every span is empty.
  int64_t take(int self);
  // Runs fn on thread `self` if it gets an item.
  void run_cursor(const std::function<void(RangeCursor&)>& fn, int self);
  // Moves the back half of the fullest other span to thread self's; false if all are empty.
  bool steal(int self);

  std::vector<std::thread> workers_;
  std::mutex busy_;  // held by the parallel_for in flight
  std::mutex m_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  const std::function<void(RangeCursor&)>* range_fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  // Per thread, in a parallel_ranges job: the items [front, back) it has yet to begin, front
  // in the low 32 bits and back in the high; each on a line of its own, so a thread taking
  // from its own span does not pull a line another thread writes.
  struct alignas(64) Span {
    std::atomic<uint64_t> v{0};
  };
  std::unique_ptr<Span[]> spans_;
  std::atomic<int64_t> worker_delay_us_{0};
  std::atomic<int64_t> next_{0};
  std::atomic<int> active_{0};        // changed under m_; read by the spinning caller
  std::atomic<uint64_t> generation_{0};  // changed under m_; read by spinning workers
  bool stop_ = false;
};

}  // namespace voxrt
