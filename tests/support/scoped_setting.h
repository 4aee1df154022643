// Sets one of the engine's process-wide tuning values for a scope, then puts the previous one
// back: `Set` stores a value and returns the one it replaced (ConvGemm::set_slab_budget,
// APanels::set_widen_budget, cpu::set_stream_above). Tests use it to reach, on small shapes,
// the paths large layers take (slabs in bands, panels widened block by block, streamed stores).
//
//   const ScopedSetting<int64_t, &cpu::set_stream_above> streamed(0);  // stream every output
#pragma once

namespace voxrt::test {

template <class T, T (*Set)(T)>
class ScopedSetting {
 public:
  explicit ScopedSetting(T value) : previous_(Set(value)) {}
  ~ScopedSetting() { Set(previous_); }
  ScopedSetting(const ScopedSetting&) = delete;
  ScopedSetting& operator=(const ScopedSetting&) = delete;

 private:
  T previous_;
};

}  // namespace voxrt::test
