// What the CPU can run, read once from CPUID and XCR0 (and Linux's AMX permission), capped by
// the VOXRT_MAX_ISA environment variable (scalar | avx2 | avx512 | avx512bf16 | avx512fp16 |
// amx) so every
// lower path can be exercised on a high-end machine.
#pragma once

#include <optional>
#include <string>

namespace voxrt::cpu {

/// Instruction-set levels, each including the ones before it.
enum class Isa {
  scalar,      // plain C++
  avx2,        // AVX2 + FMA + F16C
  avx512,      // AVX-512 F/BW/VL/DQ (fp16 via conversion)
  avx512bf16,  // AVX512-BF16 dot products (Cooper Lake, Zen 4)
  avx512fp16,  // AVX512-FP16 arithmetic
  amx,         // AMX-BF16 tiles
};

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512bf16 = false, avx512fp16 = false;
  bool amx_bf16 = false, amx_tile = false;
  bool os_avx = false, os_avx512 = false, os_amx = false;  // XCR0 and Linux permission
  /// AMD family 19h (Zen 4, the first AMD cores with AVX-512): each 512-bit operation issues as two
  /// 256-bit halves, so a 512-bit fused multiply-add does no more a cycle than an AVX2 one (fp32
  /// peak 110-117 GFLOP/s a core against Zen 5's 223). Tunes choices that weigh multiply-adds
  /// against memory traffic (ConvWinograd::narrow_fma).
  bool avx512_split = false;
  /// Whether bf16 dot products (`vdpbf16ps`) outrun fp32 multiply-adds: on Zen 4 and Zen 5 1.83x
  /// (peak_bench), on Intel's cores with AVX512-FP16 (Sapphire Rapids on) half as fast (an Intel
  /// Xeon, 2026-12-07: bf16_dot_avx512bf16 114.6 GFLOP/s against fp32_fma_avx512's 228.3;
  /// unet3d_bn at 96^3 with `--precision fp32+bf16` 208-220 ms against 143-150), where AMX
  /// tiles are the road to bf16. FpMath::bf16 takes effect only where they pay (Session).
  bool bf16_dot_pays = false;
  /// Highest level the hardware and OS allow.
  Isa detected = Isa::scalar;
};

/// Detected once per process.
const CpuFeatures& cpu_features();
/// Whether the AVX512-FP16 level runs on software stand-ins of its gemm rows (GemmKernel::emulated:
/// fp16 fused multiply-adds computed in double and rounded to fp16, about a tenth of fp32's
/// speed): asked for with VOXRT_EMULATE_AVX512FP16=1 (read once a process;
/// set_emulate_avx512fp16 overrides it), on a CPU with AVX512-BF16 but without AVX512-FP16. Then
/// the fp16-arithmetic path, drivers and all, runs and can be tested or its error measured
/// (`voxrt profile --compare`) where the instructions are missing.
bool avx512fp16_emulated();
/// Whether the emulation is asked for (VOXRT_EMULATE_AVX512FP16, or set_emulate_avx512fp16),
/// whether or not this CPU can give it.
bool avx512fp16_emulation_asked();
/// Asks for the emulation (true), against it (false), or as VOXRT_EMULATE_AVX512FP16 says
/// (nullopt), for tests; returns the previous request.
std::optional<bool> set_emulate_avx512fp16(std::optional<bool> on);
/// The highest level kernels can run at: detected, or avx512fp16 where it is emulated.
Isa usable_isa();
/// The level kernels may use: usable_isa(), capped by VOXRT_MAX_ISA. Throws voxrt::Error on an
/// unknown VOXRT_MAX_ISA value.
Isa max_isa();
/// Isa from "scalar", "avx2", ...; throws voxrt::Error on other text.
Isa parse_isa(const std::string& name);
const char* isa_name(Isa isa);

}  // namespace voxrt::cpu
