// The avx512fp16_emulated. test runs (tests/CMakeLists.txt) set VOXRT_EMULATE_AVX512FP16=1, so
// that a CPU with AVX512-BF16 but not AVX512-FP16 runs the fp16-arithmetic path on its gemm rows'
// software stand-ins (cpu::avx512fp16_emulated). Where the CPU cannot emulate it (or has it, and
// the plain runs already cover it) those runs would repeat the plain ones: they skip instead.
#pragma once

#include <gtest/gtest.h>

#include "backends/cpu/cpu_features.h"
#include "support/scoped_setting.h"

namespace voxrt::test {

// AVX512-FP16 asked to be emulated (true), or not (false), for a scope.
using EmulateAvx512Fp16 = ScopedSetting<std::optional<bool>, &cpu::set_emulate_avx512fp16>;

}  // namespace voxrt::test

#define VOXRT_SKIP_UNLESS_EMULATION_RUNS()                                              \
  do {                                                                                  \
    if (voxrt::cpu::avx512fp16_emulation_asked() && !voxrt::cpu::avx512fp16_emulated()) \
      GTEST_SKIP() << "AVX512-FP16 is not emulated on this CPU ("                       \
                   << voxrt::cpu::isa_name(voxrt::cpu::cpu_features().detected) << ")"; \
  } while (0)
