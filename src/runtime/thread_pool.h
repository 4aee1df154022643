// A fixed set of worker threads owned by a Session. parallel_for splits an index range across
// them and the calling thread, and returns when every index is done. Workers spin briefly for the
// next job before they sleep, and the caller spins briefly for the last chunk before it sleeps:
// a model run is a chain of parallel_for calls a few hundred microseconds long, and waking a
// sleeping thread costs tens of microseconds each time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace voxrt {

class ThreadPool {
 public:
  /// `threads` counts the caller: 1 means no workers, all work inline.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  /// Calls fn(begin, end) on disjoint chunks covering [0, n), at most `max_chunk` indices each
  /// (0: about four chunks per thread). If another parallel_for holds the pool (concurrent
  /// Session runs), the work runs on the calling thread alone.
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                    int64_t max_chunk = 0);
  /// Calls fn(begin, end) on each of size() ranges [t * n / size(), (t + 1) * n / size()) that
  /// is not empty, thread t (0: the caller) taking the t-th range first, so successive calls
  /// over the same rows keep each row on one core. A thread done with its own range takes any
  /// range not yet begun, so a thread the system has not scheduled delays the job only if it
  /// had begun its range.
  void parallel_ranges(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop(int index);
  void drain(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int64_t chunk);
  // Publishes a job to the workers, takes part in it, and returns when it is done.
  void run_job(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int64_t chunk,
               bool ranges);
  // Runs range `own` of a parallel_ranges job if unclaimed, then every other unclaimed one.
  void drain_ranges(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int own);

  std::vector<std::thread> workers_;
  std::mutex busy_;  // held by the parallel_for in flight
  std::mutex m_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 1;
  bool ranges_ = false;  // the job is parallel_ranges'
  std::unique_ptr<std::atomic<bool>[]> claimed_;  // per range of such a job: begun
  std::atomic<int64_t> next_{0};
  std::atomic<int> active_{0};        // changed under m_; read by the spinning caller
  std::atomic<uint64_t> generation_{0};  // changed under m_; read by spinning workers
  bool stop_ = false;
};

}  // namespace voxrt
