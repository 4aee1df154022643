#include "runtime/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

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
  spans_ = std::make_unique<Span[]>(static_cast<size_t>(std::max(threads, 1)));
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

namespace {

constexpr uint64_t pack_span(uint64_t front, uint64_t back) {
  return front | back << 32;
}
constexpr int64_t span_front(uint64_t v) {
  return static_cast<int64_t>(v & 0xffffffffu);
}
constexpr int64_t span_back(uint64_t v) {
  return static_cast<int64_t>(v >> 32);
}

}  // namespace

int64_t RangeCursor::next() {
  if (!pool_) return next_ < end_ ? next_++ : -1;
  if (first_ >= 0) return std::exchange(first_, -1);
  return pool_->take(self_);
}

void ThreadPool::run_cursor(const std::function<void(RangeCursor&)>& fn, int self) {
  const int64_t first = take(self);
  if (first < 0) return;
  RangeCursor cursor(this, self, first);
  fn(cursor);
}

int64_t ThreadPool::take(int self) {
  std::atomic<uint64_t>& own = spans_[static_cast<size_t>(self)].v;
  for (;;) {
    uint64_t v = own.load(std::memory_order_acquire);
    while (span_front(v) < span_back(v))
      if (own.compare_exchange_weak(v, pack_span(span_front(v) + 1, span_back(v)),
                                    std::memory_order_acq_rel))
        return span_front(v);
    if (!steal(self)) return -1;
  }
}

bool ThreadPool::steal(int self) {
  // A span holds items not yet given out, and each item is given out once, so a non-empty
  // span's value seen again holds the same items: a compare-exchange on it takes exactly those.
  for (;;) {
    int victim = -1;
    uint64_t seen = 0;
    int64_t most = 0;
    for (int r = 0; r < size(); ++r) {
      if (r == self) continue;
      const uint64_t v = spans_[static_cast<size_t>(r)].v.load(std::memory_order_acquire);
      if (span_back(v) - span_front(v) > most) {
        most = span_back(v) - span_front(v);
        victim = r;
        seen = v;
      }
    }
    if (victim < 0) return false;
    // The back half, rounded up (a single item left included).
    const int64_t mid = span_front(seen) + most / 2;
    if (!spans_[static_cast<size_t>(victim)].v.compare_exchange_weak(
            seen, pack_span(static_cast<uint64_t>(span_front(seen)), static_cast<uint64_t>(mid)),
            std::memory_order_acq_rel))
      continue;
    // Our own span is empty, and no thread takes from an empty span: a plain store.
    spans_[static_cast<size_t>(self)].v.store(
        pack_span(static_cast<uint64_t>(mid), static_cast<uint64_t>(span_back(seen))),
        std::memory_order_release);
    return true;
  }
}

namespace {
thread_local int tls_thread = 0;  // current_thread(): set by worker_loop on the pool's workers
}  // namespace

int ThreadPool::current_thread() {
  return tls_thread;
}

void ThreadPool::worker_loop(int index) {
  tls_thread = index;
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* fn;
    const std::function<void(RangeCursor&)>* range_fn;
    int64_t n, chunk;
    spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
    {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ++active_;
      fn = fn_;
      range_fn = range_fn_;
      n = n_;
      chunk = chunk_;
    }
    // The job's owner waits for active_ to drop to zero, so fn stays valid while we run it.
    if (range_fn) {
      if (const int64_t us = worker_delay_us_.load(); us > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(us));
      run_cursor(*range_fn, index);
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

void ThreadPool::run_job(const std::function<void(int64_t, int64_t)>* fn,
                         const std::function<void(RangeCursor&)>* range_fn, int64_t n,
                         int64_t chunk) {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (range_fn)
      for (int r = 0; r < size(); ++r)
        spans_[static_cast<size_t>(r)].v.store(pack_span(
            static_cast<uint64_t>(n * r / size()), static_cast<uint64_t>(n * (r + 1) / size())));
    fn_ = fn;
    range_fn_ = range_fn;
    n_ = n;
    chunk_ = chunk;
    next_.store(0);
    ++generation_;
  }
  wake_.notify_all();
  if (range_fn) {
    run_cursor(*range_fn, 0);
  } else {
    drain(*fn, n, chunk);
  }
  // Done when every chunk is claimed (next_ counts claims), or every item of a parallel_ranges
  // job given out (the caller's take gave -1 only once every span was empty), and no worker
  // is inside: workers that woke late find no work left and leave.
  auto done = [&] { return (range_fn || next_.load() >= n) && active_.load() == 0; };
  spin_until(done);
  std::unique_lock<std::mutex> lock(m_);
  done_.wait(lock, done);
  fn_ = nullptr;
  range_fn_ = nullptr;
  n_ = 0;
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
  run_job(&fn, nullptr, n, chunk);
}

void ThreadPool::parallel_ranges(int64_t n, const std::function<void(RangeCursor&)>& fn) {
  if (n <= 0) return;
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  // Spans hold 32-bit item indices.
  if (workers_.empty() || !busy.owns_lock() || n > int64_t{0xffffffff}) {
    RangeCursor all(n);
    fn(all);
    return;
  }
  run_job(nullptr, &fn, n, 1);
}

}  // namespace voxrt
