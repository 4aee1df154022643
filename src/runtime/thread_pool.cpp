#include "runtime/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace voxrt {

namespace {

// How long a thread spins for what it waits on before it sleeps: longer than the usual gap
// between two jobs of a run. Two threads' halves of a layer differ by 100-250 us now and then
// (unet3d_monai on Zen 5: the same layers, either core, run after run), so at 100 us the
// faster thread often slept, and the next job waited for the futex wake: timed inside the pool,
// a worker started its range 16 us after the job on average (444 us at worst), 0.8 us with
// 1 ms. `voxrt bench`, two threads, eight alternations in a slow hour: unet3d_monai 17.8-18.4
// -> 17.6-18.1 ms, unet2d 4.52-4.69 -> 4.46-4.54; within noise in a fast one.
constexpr auto kSpin = std::chrono::microseconds(1000);

// Spins until done() or kSpin has passed; returns done().
template <class Done>
bool spin_until(Done done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      _mm_pause();
    }
    if (std::chrono::steady_clock::now() >= until) return done();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  claimed_ = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(std::max(threads, 1)));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::drain(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int64_t chunk) {
  for (;;) {
    int64_t begin = next_.fetch_add(chunk);
    if (begin >= n) return;
    fn(begin, std::min(n, begin + chunk));
  }
}

void ThreadPool::drain_ranges(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int own) {
  const int t = size();
  for (int k = 0; k < t; ++k) {
    const int r = (own + k) % t;
    if (claimed_[static_cast<size_t>(r)].exchange(true, std::memory_order_acq_rel)) continue;
    const int64_t b = n * r / t, e = n * (r + 1) / t;
    if (e > b) fn(b, e);
    next_.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* fn;
    int64_t n, chunk;
    bool ranges;
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ++active_;
      fn = fn_;
      n = n_;
      chunk = chunk_;
      ranges = ranges_;
    }
    // The job's owner waits for active_ to drop to zero, so fn stays valid while we run it.
    if (fn && ranges) {
      drain_ranges(*fn, n, index);
    } else if (fn) {
      drain(*fn, n, chunk);
    }
    {
      std::lock_guard<std::mutex> lock(m_);
      --active_;
    }
    done_.notify_one();
  }
}

void ThreadPool::run_job(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int64_t chunk,
                         bool ranges) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (ranges)
      for (int r = 0; r < size(); ++r) claimed_[static_cast<size_t>(r)].store(false);
    fn_ = &fn;
    n_ = n;
    chunk_ = chunk;
    ranges_ = ranges;
    next_.store(0);
    ++generation_;
  }
  wake_.notify_all();
  if (ranges)
    drain_ranges(fn, n, 0);
  else
    drain(fn, n, chunk);
  // Done when every chunk is claimed (next_ counts claims) or every range run (next_ counts
  // ranges done) and no worker is inside: workers that woke late find no work left and leave.
  auto done = [&] {
    return (ranges ? next_.load() == size() : next_.load() >= n) && active_.load() == 0;
  };
  spin_until(done);
  std::unique_lock<std::mutex> lock(m_);
  done_.wait(lock, done);
  fn_ = nullptr;
  n_ = 0;
  ranges_ = false;
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                              int64_t max_chunk) {
  if (n <= 0) return;
  int64_t chunk =
      max_chunk > 0 ? max_chunk : std::max<int64_t>(1, (n + size() * 4 - 1) / (size() * 4));
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (workers_.empty() || n <= chunk || !busy.owns_lock()) {
    for (int64_t b = 0; b < n; b += chunk) fn(b, std::min(n, b + chunk));
    return;
  }
  run_job(fn, n, chunk, false);
}

void ThreadPool::parallel_ranges(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (workers_.empty() || !busy.owns_lock()) {
    fn(0, n);
    return;
  }
  run_job(fn, n, 1, true);
}

}  // namespace voxrt
