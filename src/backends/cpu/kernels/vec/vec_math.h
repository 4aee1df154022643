// Transcendental functions and activations written once over any vector type of vec/*.h (fp32
// lanes). Include after a vec header, only from kernel sources.
#pragma once

#include "backends/cpu/kernels/eltwise/activation.h"

namespace voxrt::cpu {
namespace {

/// e^x to about 2 ulp (Cephes' expf): x = n ln2 + r, e^r by a degree-6 polynomial. Inputs are
/// clamped to [-87.3, 88] (n in [-126, 127]), so the result is never inf; NaN stays NaN.
template <class S>
typename S::V vexp(typename S::V x) {
  using V = typename S::V;
  // x second: the hardware min and max then keep a NaN x.
  x = S::min(S::set1(88.0f), S::max(S::set1(-87.33654f), x));
  V n = S::round(S::mul(x, S::set1(1.44269504088896341f)));
  V r = S::fmadd(n, S::set1(-0.693359375f), x);
  r = S::fmadd(n, S::set1(2.12194440e-4f), r);
  V p = S::set1(1.9875691500e-4f);
  p = S::fmadd(p, r, S::set1(1.3981999507e-3f));
  p = S::fmadd(p, r, S::set1(8.3334519073e-3f));
  p = S::fmadd(p, r, S::set1(4.1665795894e-2f));
  p = S::fmadd(p, r, S::set1(1.6666665459e-1f));
  p = S::fmadd(p, r, S::set1(5.0000001201e-1f));
  p = S::fmadd(p, S::mul(r, r), S::add(r, S::set1(1.0f)));
  return S::mul(p, S::pow2(n));
}

template <class S>
typename S::V vsigmoid(typename S::V x) {
  return S::div(S::set1(1.0f), S::add(S::set1(1.0f), vexp<S>(S::sub(S::zero(), x))));
}

/// tanh: Cephes' odd polynomial below |x| = 0.625 (no cancellation near 0), 1 - 2 / (e^2x + 1)
/// above.
template <class S>
typename S::V vtanh(typename S::V x) {
  using V = typename S::V;
  V z = S::mul(x, x);
  V p = S::set1(-5.70498872745e-3f);
  p = S::fmadd(p, z, S::set1(2.06390887954e-2f));
  p = S::fmadd(p, z, S::set1(-5.37397155531e-2f));
  p = S::fmadd(p, z, S::set1(1.33314422036e-1f));
  p = S::fmadd(p, z, S::set1(-3.33332819422e-1f));
  V small = S::fmadd(S::mul(p, z), x, x);
  V e = vexp<S>(S::add(x, x));
  V large = S::sub(S::set1(1.0f), S::div(S::set1(2.0f), S::add(e, S::set1(1.0f))));
  return S::select(S::lt(z, S::set1(0.390625f)), small, large);
}

/// Broadcast activation parameters, built once per kernel call.
template <class S>
struct ActVec {
  typename S::V alpha, lo, hi;
  explicit ActVec(const ActParams& p) : alpha(S::set1(p.alpha)), lo(S::set1(p.lo)), hi(S::set1(p.hi)) {}
};

/// Activation A on one vector; A is a template argument so the switch folds away.
template <class S, Act A>
typename S::V activate(typename S::V x, const ActVec<S>& p) {
  if constexpr (A == Act::relu) {
    // max(x, 0) keeps NaN when x is NaN only with x second; ONNX leaves NaN as NaN.
    return S::select(S::lt(x, S::zero()), S::zero(), x);
  } else if constexpr (A == Act::leaky_relu) {
    return S::select(S::lt(x, S::zero()), S::mul(x, p.alpha), x);
  } else if constexpr (A == Act::sigmoid) {
    return vsigmoid<S>(x);
  } else if constexpr (A == Act::tanh) {
    return vtanh<S>(x);
  } else if constexpr (A == Act::clip) {
    x = S::select(S::lt(x, p.lo), p.lo, x);
    return S::select(S::lt(p.hi, x), p.hi, x);
  } else {
    return x;
  }
}

/// Calls f.template operator()<A>() with the activation `a` as a compile-time value.
template <class F>
void with_act(Act a, F&& f) {
  switch (a) {
    case Act::none: f.template operator()<Act::none>(); return;
    case Act::relu: f.template operator()<Act::relu>(); return;
    case Act::leaky_relu: f.template operator()<Act::leaky_relu>(); return;
    case Act::sigmoid: f.template operator()<Act::sigmoid>(); return;
    case Act::tanh: f.template operator()<Act::tanh>(); return;
    case Act::clip: f.template operator()<Act::clip>(); return;
  }
}

}  // namespace
}  // namespace voxrt::cpu
