// Scalar "vector" traits for gemm_tile.h: the portable rows, used where no vector ISA is allowed.
#pragma once

#include <cstdint>

#include "core/half.h"

namespace voxrt::cpu::gemm_detail {

struct Scalar {
  using Vec = float;
  static constexpr int W = 1;
  static Vec zero() { return 0.0f; }
  static Vec set1(float x) { return x; }
  static Vec load(const float* p) { return *p; }
  static Vec load(const uint16_t* p) { return half_to_float(*p); }
  static void store(float* p, Vec v) { *p = v; }
  static void store(uint16_t* p, Vec v) { *p = float_to_half(v); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return a * b + c; }
  static Vec add(Vec a, Vec b) { return a + b; }
  static Vec relu(Vec v) { return v > 0 ? v : 0.0f; }
  static Vec leaky(Vec v, Vec alpha) { return v >= 0 ? v : alpha * v; }
  static void store_even_odd(Vec a, Vec b, float* e, float* o) {
    *e = a;
    *o = b;
  }
};

}  // namespace voxrt::cpu::gemm_detail
