// Makes the CPU drivers stream every output past the caches for a scope (driver_util.h's
// streams_output threshold at 0 bytes), as they do outputs over 8 MiB, then puts the threshold
// back: tests run the streamed stores on small shapes.
#pragma once

#include <cstdint>

#include "backends/cpu/driver_util.h"

namespace voxrt::test {

class StreamEverything {
 public:
  StreamEverything() : previous_(cpu::set_stream_above(0)) {}
  ~StreamEverything() { cpu::set_stream_above(previous_); }
  StreamEverything(const StreamEverything&) = delete;
  StreamEverything& operator=(const StreamEverything&) = delete;

 private:
  int64_t previous_;
};

}  // namespace voxrt::test
