// Helpers shared by the reference ops: element loads and stores across dtypes (compute happens in
// double), broadcasting, and axis normalization. Plain and slow on purpose: this is the oracle.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "voxrt/tensor.h"

namespace voxrt::ref {

/// Element i of t as a double, whatever t's dtype.
double load(const Tensor& t, int64_t i);
/// Writes v (rounded to t's dtype; integers truncate toward zero) to element i.
void store(Tensor& t, int64_t i, double v);

/// Every element as double / int64.
std::vector<double> to_f64(const Tensor& t);
std::vector<int64_t> to_i64(const Tensor& t);
/// Fills t from doubles (t.numel() of them).
void from_f64(const std::vector<double>& v, Tensor& t);

/// Numpy-style broadcast of two shapes; returns false if they do not broadcast.
bool broadcast_shape(const Shape& a, const Shape& b, Shape& out);
/// Strides to read a tensor of `in` shape at the indices of `out` shape (0 on broadcast axes).
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);
/// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& s);

/// Maps a possibly negative axis into [0, rank); returns false if out of range.
bool normalize_axis(int64_t& axis, int64_t rank);

struct SoftmaxExtents {
  int64_t outer, n, inner;
};
/// Softmax's view of a shape as outer x n x inner, normalizing over n: the axis alone (opset 13
/// and later) or, with `coerce_2d`, every dim from the axis on (earlier opsets).
inline SoftmaxExtents softmax_extents(const Shape& s, int64_t axis, bool coerce_2d) {
  SoftmaxExtents e{1, 1, 1};
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    int64_t v = s[static_cast<size_t>(d)];
    if (d < axis) e.outer *= v;
    else if (d == axis || coerce_2d) e.n *= v;
    else e.inner *= v;
  }
  return e;
}

/// Calls f(T{}) with T the C++ integer type of `t`; does nothing for non-integer types.
template <class F>
void visit_int(DType t, F&& f) {
  switch (t) {
    case DType::i8: f(int8_t{}); return;
    case DType::i16: f(int16_t{}); return;
    case DType::i32: f(int32_t{}); return;
    case DType::i64: f(int64_t{}); return;
    case DType::u8: f(uint8_t{}); return;
    case DType::u16: f(uint16_t{}); return;
    case DType::u32: f(uint32_t{}); return;
    case DType::u64: f(uint64_t{}); return;
    default: return;
  }
}

/// Calls f(out_index, in_offsets...) over every element of `out`, advancing a multi-index.
/// `in_strides` holds one stride vector per input, each of out.size() entries.
template <class F>
void for_each_index(const Shape& out, const std::vector<std::vector<int64_t>>& in_strides, F f) {
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  size_t rank = out.size();
  std::vector<int64_t> idx(rank, 0);
  std::vector<int64_t> off(in_strides.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, off);
    for (size_t d = rank; d-- > 0;) {
      ++idx[d];
      for (size_t k = 0; k < off.size(); ++k) off[k] += in_strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < off.size(); ++k) off[k] -= in_strides[k][d] * idx[d];
      idx[d] = 0;
    }
  }
}

}  // namespace voxrt::ref
