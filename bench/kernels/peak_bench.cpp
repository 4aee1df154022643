// The single-core ceilings the kernel benchmarks are judged against: FMA throughput in fp32
// (AVX2, AVX-512), fp16 (AVX512-FP16), bf16 (AVX512-BF16 dot products, AMX tiles) and streaming
// memory bandwidth, and how long a cache line takes to go from one core to another and back (what
// every piece of data one thread writes and another reads costs). Paths the CPU (or the OS) lacks
// are reported as skipped, not measured.
//
//   build-bench/bench/peak_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>
#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_features.h"

namespace {

using voxrt::cpu::cpu_features;

// Each FMA depends on the previous one in its chain only, so chains = latency x ports keeps
// every FMA port busy; 12 chains cover Intel's 4-cycle latency x 2 ports and AMD's 4 x 2 with
// room to spare. The accumulator update acc = acc * a + b converges instead of overflowing, so
// no denormal or infinity slows a lane.
constexpr int kIters = 1 << 16;
constexpr int kChains = 12;

// The chains start from different values so that the compiler cannot merge them into one.
__attribute__((target("avx2,fma"))) float fma_loop_avx2(int iters) {
  __m256 a = _mm256_set1_ps(0.5f), b = _mm256_set1_ps(0.25f), c[kChains];
  for (int k = 0; k < kChains; ++k) c[k] = _mm256_set1_ps(1.0f + k);
  for (int i = 0; i < iters; ++i)
#pragma GCC unroll 16
    for (int k = 0; k < kChains; ++k) c[k] = _mm256_fmadd_ps(c[k], a, b);
  for (int k = 1; k < kChains; ++k) c[0] = _mm256_add_ps(c[0], c[k]);
  return _mm256_cvtss_f32(c[0]);
}

__attribute__((target("avx512f"))) float fma_loop_avx512(int iters) {
  __m512 a = _mm512_set1_ps(0.5f), b = _mm512_set1_ps(0.25f), c[kChains];
  for (int k = 0; k < kChains; ++k) c[k] = _mm512_set1_ps(1.0f + k);
  for (int i = 0; i < iters; ++i)
#pragma GCC unroll 16
    for (int k = 0; k < kChains; ++k) c[k] = _mm512_fmadd_ps(c[k], a, b);
  for (int k = 1; k < kChains; ++k) c[0] = _mm512_add_ps(c[0], c[k]);
  float out[16];
  _mm512_storeu_ps(out, c[0]);
  return out[0];
}

__attribute__((target("avx512fp16,avx512vl"))) float fma_loop_avx512fp16(int iters) {
  __m512h a = _mm512_set1_ph(0.5f), b = _mm512_set1_ph(0.25f), c[kChains];
  for (int k = 0; k < kChains; ++k) c[k] = _mm512_set1_ph(static_cast<_Float16>(1.0f + k));
  for (int i = 0; i < iters; ++i)
#pragma GCC unroll 16
    for (int k = 0; k < kChains; ++k) c[k] = _mm512_fmadd_ph(c[k], a, b);
  for (int k = 1; k < kChains; ++k) c[0] = _mm512_add_ph(c[0], c[k]);
  _Float16 out[32];
  _mm512_storeu_ph(out, c[0]);
  return static_cast<float>(out[0]);
}

// vdpbf16ps: 16 fp32 lanes, each adding two bf16 products. The bf16 inputs are zero, so the
// accumulators stay put.
__attribute__((target("avx512f,avx512bf16"))) float dpbf16_loop_avx512(int iters) {
  __m512bh z = (__m512bh)_mm512_setzero_si512();
  __m512 c[kChains];
  for (int k = 0; k < kChains; ++k) c[k] = _mm512_set1_ps(1.0f + k);
  for (int i = 0; i < iters; ++i)
#pragma GCC unroll 16
    for (int k = 0; k < kChains; ++k) c[k] = _mm512_dpbf16_ps(c[k], z, z);
  for (int k = 1; k < kChains; ++k) c[0] = _mm512_add_ps(c[0], c[k]);
  float out[16];
  _mm512_storeu_ps(out, c[0]);
  return out[0];
}

// Layout of the 64-byte AMX tile configuration (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles 0-3 accumulate a 32x32 fp32 block from two 16x32 bf16 A tiles (4, 5) and two B tiles
// (6, 7): four independent tdpbf16ps per iteration, each 16 x 16 x 32 multiply-adds.
__attribute__((target("amx-tile,amx-bf16"))) void amx_loop(int iters, const uint16_t* ab, float* c) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
  _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
  _tile_loadd(4, ab, 64); _tile_loadd(5, ab, 64); _tile_loadd(6, ab, 64); _tile_loadd(7, ab, 64);
  for (int i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, 64);
  _tile_stored(1, c, 64);
  _tile_stored(2, c, 64);
  _tile_stored(3, c, 64);
  _tile_release();
}

// Each returns why the path cannot run here, or nullptr when it can.
const char* missing_avx2() {
  const auto& f = cpu_features();
  return f.os_avx && f.avx2 && f.fma ? nullptr : "no AVX2+FMA on this CPU";
}

const char* missing_avx512() {
  const auto& f = cpu_features();
  return f.os_avx512 && f.avx512f ? nullptr : "no AVX-512 on this CPU";
}

const char* missing_avx512fp16() {
  const auto& f = cpu_features();
  return f.os_avx512 && f.avx512fp16 ? nullptr : "no AVX512-FP16 on this CPU";
}

const char* missing_avx512bf16() {
  unsigned a, b, c, d;
  bool ok = cpu_features().os_avx512 && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
  return ok ? nullptr : "no AVX512-BF16 on this CPU";
}

const char* missing_amx() {
  const auto& f = cpu_features();
  if (!(f.amx_tile && f.amx_bf16)) return "no AMX-BF16 on this CPU";
  return f.os_amx ? nullptr : "Linux refused AMX tile permission";
}

void set_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["FLOP/s"] = benchmark::Counter(flops_per_iteration * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
}

void BM_fp32_fma_avx2(benchmark::State& state) {
  if (const char* why = missing_avx2()) return state.SkipWithError(why);
  for (auto _ : state) {
    int iters = kIters;
    benchmark::DoNotOptimize(iters);
    benchmark::DoNotOptimize(fma_loop_avx2(iters));
  }
  set_flops(state, 2.0 * 8 * kChains * kIters);
}

void BM_fp32_fma_avx512(benchmark::State& state) {
  if (const char* why = missing_avx512()) return state.SkipWithError(why);
  for (auto _ : state) {
    int iters = kIters;
    benchmark::DoNotOptimize(iters);
    benchmark::DoNotOptimize(fma_loop_avx512(iters));
  }
  set_flops(state, 2.0 * 16 * kChains * kIters);
}

void BM_fp16_fma_avx512fp16(benchmark::State& state) {
  if (const char* why = missing_avx512fp16()) return state.SkipWithError(why);
  for (auto _ : state) {
    int iters = kIters;
    benchmark::DoNotOptimize(iters);
    benchmark::DoNotOptimize(fma_loop_avx512fp16(iters));
  }
  set_flops(state, 2.0 * 32 * kChains * kIters);
}

void BM_bf16_dot_avx512bf16(benchmark::State& state) {
  if (const char* why = missing_avx512bf16()) return state.SkipWithError(why);
  for (auto _ : state) {
    int iters = kIters;
    benchmark::DoNotOptimize(iters);
    benchmark::DoNotOptimize(dpbf16_loop_avx512(iters));
  }
  set_flops(state, 2.0 * 32 * kChains * kIters);
}

void BM_bf16_tile_amx(benchmark::State& state) {
  if (const char* why = missing_amx()) return state.SkipWithError(why);
  alignas(64) static uint16_t ab[16 * 32] = {};
  alignas(64) static float c[16 * 16];
  constexpr int iters = kIters / 16;
  for (auto _ : state) {
    amx_loop(iters, ab, c);
    benchmark::ClobberMemory();
  }
  set_flops(state, 2.0 * 4 * 16 * 16 * 32 * iters);
}

// Arrays of 64 MiB each, twice the last-level cache of any CPU this runs on, so every pass
// streams from memory.
constexpr size_t kStreamFloats = size_t{16} << 20;

void set_bytes(benchmark::State& state, double bytes_per_iteration) {
  state.counters["B/s"] = benchmark::Counter(bytes_per_iteration * static_cast<double>(state.iterations()),
                                             benchmark::Counter::kIsRate);
}

std::vector<float> filled(float v) { return std::vector<float>(kStreamFloats, v); }

// Integer sums vectorize without reassociating floats, so the loop outruns memory.
void BM_stream_read(benchmark::State& state) {
  std::vector<uint32_t> a(kStreamFloats, 1);
  for (auto _ : state) {
    uint32_t s = 0;
    for (size_t i = 0; i < kStreamFloats; ++i) s += a[i];
    benchmark::DoNotOptimize(s);
  }
  set_bytes(state, 4.0 * kStreamFloats);
}

void BM_stream_copy(benchmark::State& state) {
  std::vector<float> a = filled(1), b = filled(2);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), kStreamFloats * sizeof(float));
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2.0 * 4 * kStreamFloats);
}

// STREAM's triad, counted as STREAM counts it: two reads and one write per element.
void BM_stream_triad(benchmark::State& state) {
  std::vector<float> a = filled(0), b = filled(1), c = filled(2);
  float* pa = a.data();
  const float* pb = b.data();
  const float* pc = c.data();
  for (auto _ : state) {
    for (size_t i = 0; i < kStreamFloats; ++i) pa[i] = pb[i] + 3.0f * pc[i];
    benchmark::ClobberMemory();
  }
  set_bytes(state, 3.0 * 4 * kStreamFloats);
}

// Two threads on CPUs 0 and 1 hand one counter back and forth: each waits for the other's
// value, then writes the next; ns per round trip. A round trip is two cache-line transfers
// between the cores (tens of ns on one die; a VM's two vCPUs may sit on different dies).
void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

void BM_core_to_core_round_trip(benchmark::State& state) {
  if (std::thread::hardware_concurrency() < 2) {
    state.SkipWithError("skipped: one CPU, no second core to hand a line to");
    return;
  }
  constexpr int64_t kTrips = 200000;
  alignas(64) std::atomic<int64_t> turn{0};
  std::atomic<bool> stop{false};
  std::thread other([&] {
    pin_to(1);
    for (int64_t seen = 1;; seen += 2) {
      while (turn.load(std::memory_order_acquire) != seen)
        if (stop.load(std::memory_order_relaxed)) return;
      turn.store(seen + 1, std::memory_order_release);
    }
  });
  pin_to(0);
  int64_t next = 1;
  for (auto _ : state) {
    for (int64_t i = 0; i < kTrips; ++i, next += 2) {
      turn.store(next, std::memory_order_release);
      while (turn.load(std::memory_order_acquire) != next + 1) {
      }
    }
  }
  stop = true;
  other.join();
  state.counters["ns/round trip"] =
      benchmark::Counter(static_cast<double>(state.iterations() * kTrips),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// A path this CPU lacks runs once, to say so, whatever --benchmark_repetitions asks.
void add(const char* name, void (*fn)(benchmark::State&), const char* missing) {
  benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(name, fn);
  if (missing) b->Iterations(1)->Repetitions(1);
}

const bool registered = [] {
  add("fp32_fma_avx2", BM_fp32_fma_avx2, missing_avx2());
  add("fp32_fma_avx512", BM_fp32_fma_avx512, missing_avx512());
  add("fp16_fma_avx512fp16", BM_fp16_fma_avx512fp16, missing_avx512fp16());
  add("bf16_dot_avx512bf16", BM_bf16_dot_avx512bf16, missing_avx512bf16());
  add("bf16_tile_amx", BM_bf16_tile_amx, missing_amx());
  add("stream_read", BM_stream_read, nullptr);
  add("stream_copy", BM_stream_copy, nullptr);
  add("stream_triad", BM_stream_triad, nullptr);
  benchmark::internal::Benchmark* trip =
      benchmark::RegisterBenchmark("core_to_core_round_trip", BM_core_to_core_round_trip);
  trip->UseRealTime();
  return true;
}();

}  // namespace
