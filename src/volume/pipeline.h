// Three queues of slot numbers between the cutting thread, the network thread and the blending
// thread. One failure stops all three: every pop then returns nothing.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>

namespace voxrt::volume {

class Pipeline {
 public:
  enum Stage { free_slots, cut, computed, stages };

  void push(Stage s, int slot) {
    {
      std::lock_guard<std::mutex> lock(m_);
      q_[s].push_back(slot);
    }
    cv_.notify_all();
  }
  /// No more pushes to stage s; pops drain what is queued, then return nothing.
  void close(Stage s) {
    {
      std::lock_guard<std::mutex> lock(m_);
      closed_[s] = true;
    }
    cv_.notify_all();
  }
  std::optional<int> pop(Stage s) {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return failed_ || !q_[s].empty() || closed_[s]; });
    if (failed_ || q_[s].empty()) return std::nullopt;
    int v = q_[s].front();
    q_[s].pop_front();
    return v;
  }
  /// Records the first error and wakes every waiting thread.
  void fail(std::exception_ptr e) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!error_) error_ = e;
      failed_ = true;
    }
    cv_.notify_all();
  }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<int> q_[stages];
  bool closed_[stages] = {};
  bool failed_ = false;
  std::exception_ptr error_;
};

}  // namespace voxrt::volume
