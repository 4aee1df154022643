// Helpers the CPU drivers share: splitting work across the Session's threads, and naming
// kernels.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "backends/ref/op.h"
#include "core/half.h"
#include "runtime/thread_pool.h"

namespace voxrt::cpu {

/// Elements one task handles in streaming kernels: big enough to amortize the pool's dispatch,
/// small enough to balance a few threads.
inline constexpr int64_t kChunkElems = 1 << 15;

/// Outputs of more bytes than this are written with non-temporal stores by the drivers whose
/// time is their stores (Resize's linear rows and nearest rows doubled along the width, the
/// kernel-equals-stride ConvTranspose's interleave): an output this large is read back from memory
/// by the next layer either way, and written through the caches each line is first read for
/// ownership, from the other core where that core last held it. Smaller ones may still be in L3 for
/// their reader: unet2d's 4 MB upsample, streamed, took 0.21 -> 0.10 ms on two threads with its
/// reader 0.75 -> 0.81, and on one thread its reader 1.31 -> 1.48 (Zen 5). Settable for tests
/// (set_stream_above).
inline std::atomic<int64_t> stream_above{8 << 20};

/// Whether an output of `bytes` goes out as non-temporal stores (see stream_above). The writer
/// fences (_mm_sfence) before its part is reported done.
inline bool streams_output(size_t bytes) {
  return static_cast<int64_t>(bytes) > stream_above.load(std::memory_order_relaxed);
}

/// Sets stream_above, returning the previous threshold.
inline int64_t set_stream_above(int64_t bytes) {
  return stream_above.exchange(std::max<int64_t>(bytes, 0));
}

/// dst[2j] = a[j], dst[2j + 1] = b[j] for j < n (a kernel-2 ConvTranspose's two width taps;
/// with a == b, a row doubled by nearest Resize). T: uint16_t or a 4-byte type.
template <class T>
void interleave(const T* __restrict a, const T* __restrict b, int64_t n, T* __restrict dst) {
  for (int64_t j = 0; j < n; ++j) {
    dst[2 * j] = a[j];
    dst[2 * j + 1] = b[j];
  }
}

/// interleave with non-temporal stores (streams_output) where dst is 16-byte aligned, 16 bytes of
/// each source at a time (SSE2, which every x86-64 has: drivers are built for nothing above it).
template <class T>
void interleave_stream(const T* __restrict a, const T* __restrict b, int64_t n, T* __restrict dst) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4);
  constexpr int64_t lanes = 16 / sizeof(T);
  int64_t j = 0;
  if (reinterpret_cast<uintptr_t>(dst) % 16 == 0)
    for (; j + lanes <= n; j += lanes) {
      const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + j)),
                    vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + j));
      __m128i lo, hi;
      if constexpr (sizeof(T) == 4) {
        lo = _mm_unpacklo_epi32(va, vb);
        hi = _mm_unpackhi_epi32(va, vb);
      } else {
        lo = _mm_unpacklo_epi16(va, vb);
        hi = _mm_unpackhi_epi16(va, vb);
      }
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 2 * j), lo);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + 2 * j + lanes), hi);
    }
  interleave(a + j, b + j, n - j, dst + 2 * j);
}

/// fn(begin, end) over items [0, n): across the pool in ranges of at most `max_chunk` items (0:
/// about four a thread), or on the calling thread alone where there is no pool or one item.
/// Drivers whose work takes scratch once per call of fn (the conv drivers) want these ranges.
inline void split_items(ThreadPool* pool, int64_t n,
                        const std::function<void(int64_t, int64_t)>& fn, int64_t max_chunk = 0) {
  if (pool && n > 1)
    pool->parallel_for(n, fn, max_chunk);
  else
    fn(0, n);
}

/// fn(cursor) on each thread of the pool, the cursors giving out items [0, n) in size()
/// contiguous ranges, thread t's the t-th first and then runs of the others' (ThreadPool::
/// parallel_ranges), or on the calling thread alone, all of them in order: for work whose items
/// follow the rows of the activations, so that layer after layer each core reads the rows it
/// wrote, while a core slowed by the host hands the end of its range to the other.
inline void split_ranges(ThreadPool* pool, int64_t n, const std::function<void(RangeCursor&)>& fn) {
  if (pool && n > 1) {
    pool->parallel_ranges(n, fn);
  } else if (n > 0) {
    RangeCursor all(n);
    fn(all);
  }
}

/// Bands of rows an output plane is cut into where split_ranges takes items (batch item, output
/// depth, band, channel) in that order (SpatialItem): one band where the output has depths for
/// every thread to take two or more, else one band a thread (at most one a row), so that thread t
/// writes the depths, or in a shallow output (2D) the rows, that the convolutions before and
/// after it read and write on that core. Pooling and Resize cut their items so.
inline int64_t row_bands(const ThreadPool* pool, int64_t depths, int64_t rows) {
  const int64_t threads = pool ? pool->size() : 1;
  return depths >= 2 * threads ? 1 : std::clamp<int64_t>(rows, 1, threads);
}

/// Item u of `channels` x `depths` x `bands` per batch item, batch items first: as the
/// convolutions order theirs, so that with a batch of several items on threads each core takes
/// the items (and within an item the depths) that the layers before and after it take there.
struct SpatialItem {
  int64_t n, depth, band, channel;
  SpatialItem(int64_t u, int64_t channels, int64_t depths, int64_t bands) {
    const int64_t per_item = depths * bands * channels, v = u % per_item;
    n = u / per_item;
    depth = v / (bands * channels);
    band = v / channels % bands;
    channel = v % channels;
  }
};

/// fn(begin, end) over [0, n) in tasks of exactly `chunk` elements (the last shorter), on the
/// pool when there is one: streaming kernels, whose chunk sizes bound their cache footprint.
template <class F>
void parallel_for(const RunContext& ctx, int64_t n, int64_t chunk, F&& fn) {
  if (n <= 0) return;
  if (!ctx.pool || ctx.pool->size() == 1 || n <= chunk) {
    for (int64_t b = 0; b < n; b += chunk) fn(b, b + chunk < n ? b + chunk : n);
    return;
  }
  split_items(
      ctx.pool, (n + chunk - 1) / chunk,
      [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) fn(t * chunk, (t + 1) * chunk < n ? (t + 1) * chunk : n);
      },
      1);
}

/// fn(row, begin, end) over `rows` rows of `len` elements, each row cut into chunks of at most
/// `chunk`, all (row, chunk) pairs spread over the pool.
template <class F>
void parallel_rows(const RunContext& ctx, int64_t rows, int64_t len, int64_t chunk, F&& fn) {
  if (rows <= 0 || len <= 0) return;
  int64_t per_row = (len + chunk - 1) / chunk;
  parallel_for(ctx, rows * per_row, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t r = t / per_row, b = (t % per_row) * chunk;
      fn(r, b, b + chunk < len ? b + chunk : len);
    }
  });
}

/// Element i of a float (f32 or f16) array.
inline float load_float(const void* p, DType t, int64_t i) {
  return t == DType::f16 ? half_to_float(static_cast<const uint16_t*>(p)[i])
                         : static_cast<const float*>(p)[i];
}
inline void store_float(void* p, DType t, int64_t i, float v) {
  if (t == DType::f16)
    static_cast<uint16_t*>(p)[i] = float_to_half(v);
  else
    static_cast<float*>(p)[i] = v;
}

/// "f32_eltwise__avx2" with op "relu" gives "f32_eltwise_relu__avx2".
inline std::string kernel_label(const char* family_name, const std::string& op) {
  std::string s = family_name;
  size_t at = s.find("__");
  if (op.empty() || at == std::string::npos) return s;
  return s.substr(0, at) + "_" + op + s.substr(at);
}

inline bool is_f32_or_f16(DType t) {
  return t == DType::f32 || t == DType::f16;
}

}  // namespace voxrt::cpu
