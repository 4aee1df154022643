#include "backends/ref/tensor_math.h"

#include <cmath>
#include <limits>

#include "core/half.h"

namespace voxrt::ref {

double load(const Tensor& t, int64_t i) {
  const void* p = t.raw();
  switch (t.dtype()) {
    case DType::f32: return static_cast<const float*>(p)[i];
    case DType::f16: return half_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::bf16: return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::f64: return static_cast<const double*>(p)[i];
    case DType::i8: return static_cast<const int8_t*>(p)[i];
    case DType::i16: return static_cast<const int16_t*>(p)[i];
    case DType::i32: return static_cast<const int32_t*>(p)[i];
    case DType::i64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::u8: return static_cast<const uint8_t*>(p)[i];
    case DType::u16: return static_cast<const uint16_t*>(p)[i];
    case DType::u32: return static_cast<const uint32_t*>(p)[i];
    case DType::u64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case DType::boolean: return static_cast<const uint8_t*>(p)[i] ? 1.0 : 0.0;
  }
  return 0;
}

namespace {
template <class I>
I to_int(double v) {
  if (std::isnan(v)) return 0;
  double lo = static_cast<double>(std::numeric_limits<I>::min());
  double hi = static_cast<double>(std::numeric_limits<I>::max());
  if (v <= lo) return std::numeric_limits<I>::min();
  if (v >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}
}  // namespace

void store(Tensor& t, int64_t i, double v) {
  void* p = t.raw();
  switch (t.dtype()) {
    case DType::f32: static_cast<float*>(p)[i] = static_cast<float>(v); return;
    case DType::f16: static_cast<uint16_t*>(p)[i] = float_to_half(static_cast<float>(v)); return;
    case DType::bf16: static_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v)); return;
    case DType::f64: static_cast<double*>(p)[i] = v; return;
    case DType::i8: static_cast<int8_t*>(p)[i] = to_int<int8_t>(v); return;
    case DType::i16: static_cast<int16_t*>(p)[i] = to_int<int16_t>(v); return;
    case DType::i32: static_cast<int32_t*>(p)[i] = to_int<int32_t>(v); return;
    case DType::i64: static_cast<int64_t*>(p)[i] = to_int<int64_t>(v); return;
    case DType::u8: static_cast<uint8_t*>(p)[i] = to_int<uint8_t>(v); return;
    case DType::u16: static_cast<uint16_t*>(p)[i] = to_int<uint16_t>(v); return;
    case DType::u32: static_cast<uint32_t*>(p)[i] = to_int<uint32_t>(v); return;
    case DType::u64: static_cast<uint64_t*>(p)[i] = to_int<uint64_t>(v); return;
    case DType::boolean: static_cast<uint8_t*>(p)[i] = v != 0.0; return;
  }
}

std::vector<double> to_f64(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = load(t, i);
  return v;
}

std::vector<int64_t> to_i64(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::i64) {
    for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.data<int64_t>()[i];
    return v;
  }
  for (int64_t i = 0; i < t.numel(); ++i)
    v[static_cast<size_t>(i)] = static_cast<int64_t>(load(t, i));
  return v;
}

void from_f64(const std::vector<double>& v, Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i) store(t, i, v[static_cast<size_t>(i)]);
}

bool broadcast_shape(const Shape& a, const Shape& b, Shape& out) {
  size_t r = std::max(a.size(), b.size());
  out.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) out[i] = da;
    else if (da == 1) out[i] = db;
    else return false;
  }
  return true;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  std::vector<int64_t> own = strides_of(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[i + off] = in[i] == 1 ? 0 : own[i];
  return st;
}

bool normalize_axis(int64_t& axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  return true;
}

}  // namespace voxrt::ref
