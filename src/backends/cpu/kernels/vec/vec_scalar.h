// One-lane "vector" of plain floats with the interface of vec_avx2.h and vec_avx512.h, so a
// kernel template written once gives the scalar fallback too. Include only from kernel sources.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/half.h"

namespace voxrt::cpu {
namespace {

struct VecScalar {
  static constexpr int kWidth = 1;
  static constexpr const char* kIsa = "scalar";
  using V = float;
  using M = bool;

  static V load(const float* p) { return *p; }
  static V load(const Half* p) { return half_to_float(p->bits); }
  static V load_partial(const float* p, int n) { return n > 0 ? *p : 0.0f; }
  static V load_partial(const Half* p, int n) { return n > 0 ? load(p) : 0.0f; }
  static void store(float* p, V v) { *p = v; }
  static void store(Half* p, V v) { p->bits = float_to_half(v); }
  static void store_partial(float* p, V v, int n) {
    if (n > 0) *p = v;
  }
  static void store_partial(Half* p, V v, int n) {
    if (n > 0) store(p, v);
  }
  // One element has nothing to stream past: a plain store (see vec_avx512.h).
  static void stream(float* p, V v) { store(p, v); }
  static void stream(Half* p, V v) { store(p, v); }
  static float load1(const float* p) { return *p; }
  static float load1(const Half* p) { return half_to_float(p->bits); }
  static void store1(float* p, float v) { *p = v; }
  static void store1(Half* p, float v) { p->bits = float_to_half(v); }

  static V set1(float x) { return x; }
  static V zero() { return 0.0f; }
  static V add(V a, V b) { return a + b; }
  static V sub(V a, V b) { return a - b; }
  static V mul(V a, V b) { return a * b; }
  static V div(V a, V b) { return a / b; }
  static V fmadd(V a, V b, V c) { return std::fma(a, b, c); }
  // Hardware max/min: the second operand when either is NaN.
  static V max(V a, V b) { return a > b ? a : b; }
  static V min(V a, V b) { return a < b ? a : b; }
  static V round(V a) { return std::nearbyint(a); }
  // 2^n for integral n in [-126, 127]; NaN stays NaN (the cast below would be undefined).
  static V pow2(V n) {
    if (n != n) return n;
    uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }

  static M lt(V a, V b) { return a < b; }
  static M ge(V a, V b) { return a >= b; }
  static M is_nan(V a) { return a != a; }
  static M first(int n) { return n > 0; }
  static V select(M m, V a, V b) { return m ? a : b; }

  static float lane0(V a) { return a; }
  static float hsum(V a) { return a; }
  static float hmax(V a) { return a; }

  static void deinterleave(V a, V b, V& even, V& odd) {
    even = a;
    odd = b;
  }
  static void interleave(V even, V odd, V& lo, V& hi) {
    lo = even;
    hi = odd;
  }
  static V shift_up(V, V prev) { return prev; }
  static V shift_down(V, V next) { return next; }
  static V broadcast_lane(V a, int) { return a; }
  static V gather(const float* base, const int32_t* idx) { return base[idx[0]]; }
};

}  // namespace
}  // namespace voxrt::cpu
