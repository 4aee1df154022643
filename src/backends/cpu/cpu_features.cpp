#include "backends/cpu/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "voxrt/error.h"

namespace voxrt::cpu {

namespace {

uint64_t read_xcr0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// Linux hands out AMX tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM, feature 18).
bool request_amx_permission() {
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const bool amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "AuthenticAMD"
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const unsigned base_family = (a >> 8) & 0xf;
  const unsigned family = base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family;
  bool osxsave = c & (1u << 27);
  f.fma = c & (1u << 12);
  f.f16c = c & (1u << 29);
  bool avx = c & (1u << 28);
  uint64_t xcr0 = osxsave ? read_xcr0() : 0;
  f.os_avx = avx && (xcr0 & 0x6) == 0x6;
  f.os_avx512 = f.os_avx && (xcr0 & 0xe0) == 0xe0;
  bool os_tiles = (xcr0 & 0x60000) == 0x60000;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = b & (1u << 5);
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512fp16 = d & (1u << 23);
    f.amx_bf16 = d & (1u << 22);
    f.amx_tile = d & (1u << 24);
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx512bf16 = a & (1u << 5);
  f.avx512_split = amd && family == 0x19 && f.avx512f;
  f.bf16_dot_pays = f.avx512bf16 && !f.avx512fp16;
  f.os_amx = os_tiles && f.amx_tile && request_amx_permission();
  if (f.os_avx && f.avx2 && f.fma && f.f16c) f.detected = Isa::avx2;
  if (f.detected == Isa::avx2 && f.os_avx512 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq)
    f.detected = Isa::avx512;
  if (f.detected == Isa::avx512 && f.avx512bf16) f.detected = Isa::avx512bf16;
  // Every CPU with AVX512-FP16 (Sapphire Rapids on) also has AVX512-BF16.
  if (f.detected == Isa::avx512bf16 && f.avx512fp16) f.detected = Isa::avx512fp16;
  if (f.detected == Isa::avx512fp16 && f.amx_bf16 && f.os_amx) f.detected = Isa::amx;
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

Isa parse_isa(const std::string& name) {
  for (Isa i : {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512bf16, Isa::avx512fp16, Isa::amx})
    if (name == isa_name(i)) return i;
  throw Error("VOXRT_MAX_ISA '" + name +
              "' is not one of scalar, avx2, avx512, avx512bf16, avx512fp16, amx");
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512bf16: return "avx512bf16";
    case Isa::avx512fp16: return "avx512fp16";
    case Isa::amx: return "amx";
  }
  return "?";
}

namespace {

// -1: as VOXRT_EMULATE_AVX512FP16 says; 0, 1: asked against or for (set_emulate_avx512fp16).
std::atomic<int> emulate_request{-1};

}  // namespace

bool avx512fp16_emulation_asked() {
  const int r = emulate_request.load(std::memory_order_relaxed);
  if (r >= 0) return r == 1;
  static const bool env = [] {
    const char* e = std::getenv("VOXRT_EMULATE_AVX512FP16");
    return e && *e && std::string(e) != "0";
  }();
  return env;
}

bool avx512fp16_emulated() {
  // The stand-ins are AVX-512F code, and at this level fp32 models with bf16 products take the
  // AVX512-BF16 rows: the emulation needs both.
  return cpu_features().detected == Isa::avx512bf16 && !cpu_features().avx512fp16 &&
         avx512fp16_emulation_asked();
}

std::optional<bool> set_emulate_avx512fp16(std::optional<bool> on) {
  const int r = emulate_request.exchange(on ? (*on ? 1 : 0) : -1);
  return r < 0 ? std::nullopt : std::optional<bool>(r == 1);
}

Isa usable_isa() {
  return avx512fp16_emulated() ? Isa::avx512fp16 : cpu_features().detected;
}

Isa max_isa() {
  const Isa usable = usable_isa();
  const char* cap = std::getenv("VOXRT_MAX_ISA");
  if (!cap || !*cap) return usable;
  Isa c = parse_isa(cap);
  return c < usable ? c : usable;
}

}  // namespace voxrt::cpu
