// Data movement and Softmax: Concat and Split (one copy per part's block), Transpose (rows copied
// whole when the last axis stays, else tiles transposed between the two innermost axes), and
// Softmax on f32 and f16 over any axis (contiguous or strided, vectorized across positions).
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_op.h"
#include "backends/cpu/driver_util.h"
#include "backends/cpu/kernels/softmax/softmax.h"
#include "backends/ref/tensor_math.h"

namespace voxrt::cpu {
namespace {

// Copies between a joined tensor and its parts along an axis, `outer` rows of the joined tensor
// (every dim before the axis), part i holding len[i] bytes at offset[i] of each row: into the
// joined tensor (Concat) or out of it (Split). One task per slice of a part's block in one row,
// so one large block (N = 1, axis 1) is shared by the threads too.
void copy_blocks(const RunContext& ctx, int64_t outer, char* joined, int64_t row,
                 const std::vector<char*>& parts, const std::vector<int64_t>& offset,
                 const std::vector<int64_t>& len, bool into_joined) {
  const int64_t count = static_cast<int64_t>(parts.size());
  const int64_t longest = *std::max_element(len.begin(), len.end());
  parallel_rows(ctx, outer * count, longest, int64_t{1} << 18,
                [&](int64_t p, int64_t b, int64_t e) {
                  const int64_t o = p / count;
                  const size_t i = static_cast<size_t>(p % count);
                  e = std::min(e, len[i]);
                  if (b >= e) return;
                  char* part = parts[i] + o * len[i] + b;
                  char* whole = joined + o * row + offset[i] + b;
                  if (into_joined)
                    std::memcpy(whole, part, static_cast<size_t>(e - b));
                  else
                    std::memcpy(part, whole, static_cast<size_t>(e - b));
                });
}

// Concat (into_joined) or Split along `axis`, where the arena does not make the parts slices of
// the joined tensor (runtime/arena.cpp: batch-1 channel Concats and Splits cost no copy).
class JoinCpuOp : public CpuOp {
 public:
  JoinCpuOp(std::unique_ptr<Op> ref, int64_t axis, bool concat)
      : CpuOp(std::move(ref)), axis_(axis), concat_(concat) {}

  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& whole = concat_ ? out[0] : *in[0];
    int64_t axis = axis_;
    if (!ref::normalize_axis(axis, whole.rank())) return ref_->compute(in, out);
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= whole.dim(d);
    if (outer == 0 || whole.numel() == 0) return;
    std::vector<char*> parts;
    std::vector<int64_t> offset, len;
    int64_t at = 0;
    const size_t count = concat_ ? in.size() : out.size();
    for (size_t i = 0; i < count; ++i) {
      const Tensor* t = concat_ ? in[i] : &out[i];
      const int64_t n = static_cast<int64_t>(t->nbytes()) / outer;
      parts.push_back(static_cast<char*>(const_cast<void*>(t->raw())));
      offset.push_back(at);
      len.push_back(n);
      at += n;
    }
    copy_blocks(ctx, outer, static_cast<char*>(const_cast<void*>(whole.raw())),
                static_cast<int64_t>(whole.nbytes()) / outer, parts, offset, len, concat_);
  }
  std::string kernel_name() const override { return concat_ ? "concat_copy" : "split_copy"; }

 private:
  int64_t axis_;
  bool concat_;
};

// Shape and permutation with unit axes dropped and axes that stay neighbours merged.
void simplify(const Shape& in, const std::vector<int64_t>& perm, Shape& s, std::vector<int64_t>& p) {
  std::vector<int64_t> keep(in.size(), -1);
  Shape s1;
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != 1) {
      keep[d] = static_cast<int64_t>(s1.size());
      s1.push_back(in[d]);
    }
  std::vector<int64_t> p1;
  for (int64_t a : perm)
    if (keep[static_cast<size_t>(a)] >= 0) p1.push_back(keep[static_cast<size_t>(a)]);
  // Merge runs a, a+1 adjacent in the output order.
  s.clear();
  p.clear();
  std::vector<int64_t> group(s1.size(), -1);
  std::vector<int64_t> heads;
  for (size_t k = 0; k < p1.size(); ++k) {
    if (k > 0 && p1[k] == p1[k - 1] + 1) {
      group[static_cast<size_t>(p1[k])] = group[static_cast<size_t>(p1[k - 1])];
      continue;
    }
    group[static_cast<size_t>(p1[k])] = static_cast<int64_t>(heads.size());
    heads.push_back(p1[k]);
  }
  // New axes in input order; sizes multiply within a group.
  std::vector<int64_t> order(heads.size());
  std::vector<int64_t> sizes(heads.size(), 1);
  for (size_t d = 0; d < s1.size(); ++d) sizes[static_cast<size_t>(group[d])] *= s1[d];
  std::vector<int64_t> by_input = heads;
  std::sort(by_input.begin(), by_input.end());
  for (size_t k = 0; k < by_input.size(); ++k) {
    size_t g = static_cast<size_t>(group[static_cast<size_t>(by_input[k])]);
    s.push_back(sizes[g]);
    order[g] = static_cast<int64_t>(k);
  }
  for (size_t g = 0; g < heads.size(); ++g) p.push_back(order[g]);
}

template <class E>
void transpose_tiles(const E* x, E* y, const Shape& s, const std::vector<int64_t>& p,
                     const RunContext& ctx) {
  size_t r = s.size();
  std::vector<int64_t> in_stride = ref::strides_of(s);
  Shape out_shape(r);
  for (size_t k = 0; k < r; ++k) out_shape[k] = s[static_cast<size_t>(p[k])];
  std::vector<int64_t> out_stride_of_out = ref::strides_of(out_shape);
  std::vector<int64_t> out_stride(r);  // output stride of each input axis
  for (size_t k = 0; k < r; ++k) out_stride[static_cast<size_t>(p[k])] = out_stride_of_out[k];
  size_t a = static_cast<size_t>(p[r - 1]);  // input axis that is innermost in the output
  size_t b = r - 1;                          // innermost input axis
  int64_t la = s[a], lb = s[b], sa = in_stride[a], ob = out_stride[b];
  // The input axis just outside b (when it is not a) is walked in blocks inside each tile, so
  // every page the strided reads of a touch gives a run of block * lb elements, not lb.
  bool has_c = b >= 1 && b - 1 != a;
  size_t c = has_c ? b - 1 : 0;
  int64_t nc = has_c ? s[c] : 1;
  int64_t block = has_c ? std::min<int64_t>(nc, std::max<int64_t>(1, 256 / lb)) : 1;
  int64_t blocks = (nc + block - 1) / block;
  std::vector<size_t> others;
  for (size_t d = 0; d < r; ++d)
    if (d != a && d != b && !(has_c && d == c)) others.push_back(d);
  int64_t n_other = 1;
  for (size_t d : others) n_other *= s[d];
  // Reads of a are sa apart, often a multiple of 4 KiB (one cache set): at most 8 at a time.
  constexpr int64_t kTileA = 8, kTileB = 32;
  int64_t per_task = std::max<int64_t>(1, kChunkElems / std::max<int64_t>(1, la * lb * block));
  parallel_for(ctx, n_other * blocks, per_task, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      int64_t xi = 0, yi = 0, rest = t / blocks;
      for (size_t k = others.size(); k-- > 0;) {
        size_t d = others[k];
        int64_t i = rest % s[d];
        rest /= s[d];
        xi += i * in_stride[d];
        yi += i * out_stride[d];
      }
      int64_t c0 = (t % blocks) * block, c1 = std::min(nc, c0 + block);
      for (int64_t i0 = 0; i0 < la; i0 += kTileA) {
        int64_t i1 = std::min(la, i0 + kTileA);
        for (int64_t cc = c0; cc < c1; ++cc) {
          int64_t xb = xi + (has_c ? cc * in_stride[c] : 0), yb = yi + (has_c ? cc * out_stride[c] : 0);
          for (int64_t j0 = 0; j0 < lb; j0 += kTileB) {
            int64_t j1 = std::min(lb, j0 + kTileB);
            for (int64_t j = j0; j < j1; ++j)
              for (int64_t i = i0; i < i1; ++i) y[yb + j * ob + i] = x[xb + i * sa + j];
          }
        }
      }
    }
  });
}

class TransposeCpuOp : public CpuOp {
 public:
  TransposeCpuOp(std::unique_ptr<Op> ref, std::vector<int64_t> perm)
      : CpuOp(std::move(ref)), perm_(std::move(perm)) {}

  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    if (x.numel() == 0) return;
    std::vector<int64_t> perm = perm_;
    if (perm.empty())
      for (int64_t d = x.rank(); d-- > 0;) perm.push_back(d);
    Shape s;
    std::vector<int64_t> p;
    simplify(x.shape(), perm, s, p);
    size_t es = dtype_size(x.dtype());
    if (p.size() <= 1) {
      parallel_for(ctx, static_cast<int64_t>(x.nbytes()), kChunkElems * 4, [&](int64_t b, int64_t e) {
        std::memcpy(static_cast<char*>(y.raw()) + b, static_cast<const char*>(x.raw()) + b,
                    static_cast<size_t>(e - b));
      });
      return;
    }
    if (p.back() == static_cast<int64_t>(p.size()) - 1) {
      // The innermost axis stays: treat it as one element of es * len bytes.
      int64_t len = s.back() * static_cast<int64_t>(es);
      s.back() = 1;
      s.push_back(len);
      p.push_back(static_cast<int64_t>(p.size()));
      Shape s2;
      std::vector<int64_t> p2;
      simplify(s, p, s2, p2);
      return copy_rows(ctx, static_cast<const char*>(x.raw()), static_cast<char*>(y.raw()), s2, p2);
    }
    switch (es) {
      case 1: return transpose_tiles(x.data<uint8_t>(), y.data<uint8_t>(), s, p, ctx);
      case 2: return transpose_tiles(x.data<uint16_t>(), y.data<uint16_t>(), s, p, ctx);
      case 4: return transpose_tiles(x.data<uint32_t>(), y.data<uint32_t>(), s, p, ctx);
      case 8: return transpose_tiles(x.data<uint64_t>(), y.data<uint64_t>(), s, p, ctx);
      default: return ref_->compute(in, out);
    }
  }
  std::string kernel_name() const override { return "transpose_tiles"; }

 private:
  // s's last axis is a byte run that stays last: copy it whole for every other index.
  static void copy_rows(const RunContext& ctx, const char* x, char* y, const Shape& s,
                        const std::vector<int64_t>& p) {
    size_t r = s.size();
    int64_t len = s.back();
    std::vector<int64_t> in_stride = ref::strides_of(s);
    Shape out_shape(r);
    for (size_t k = 0; k < r; ++k) out_shape[k] = s[static_cast<size_t>(p[k])];
    int64_t rows = 1;
    for (size_t k = 0; k + 1 < r; ++k) rows *= out_shape[k];
    parallel_for(ctx, rows, std::max<int64_t>(1, (int64_t{1} << 17) / std::max<int64_t>(1, len)),
                 [&](int64_t r0, int64_t r1) {
      for (int64_t row = r0; row < r1; ++row) {
        int64_t rest = row, xi = 0;
        for (size_t k = r - 1; k-- > 0;) {
          int64_t i = rest % out_shape[k];
          rest /= out_shape[k];
          xi += i * in_stride[static_cast<size_t>(p[k])];
        }
        std::memcpy(y + row * len, x + xi, static_cast<size_t>(len));
      }
    });
  }

  std::vector<int64_t> perm_;
};

class SoftmaxCpuOp : public CpuOp {
 public:
  SoftmaxCpuOp(std::unique_ptr<Op> ref, int64_t axis, bool coerce_2d, const SoftmaxKernels* k)
      : CpuOp(std::move(ref)), axis_(axis), coerce_2d_(coerce_2d), k_(k) {}

  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    int64_t axis = axis_;
    if (!ref::normalize_axis(axis, x.rank()) || x.numel() == 0) return ref_->compute(in, out);
    // Named copies, not a structured binding: the lambdas below capture them (clang before 16
    // refuses to capture bindings, and the fuzz build uses clang).
    const ref::SoftmaxExtents e = ref::softmax_extents(x.shape(), axis, coerce_2d_);
    const int64_t outer = e.outer, n = e.n, inner = e.inner;
    size_t es = dtype_size(x.dtype());
    const char* xp = static_cast<const char*>(x.raw());
    char* yp = static_cast<char*>(y.raw());
    if (inner == 1) {
      parallel_for(ctx, outer, std::max<int64_t>(1, kChunkElems / n), [&](int64_t r0, int64_t r1) {
        int64_t at = r0 * n * static_cast<int64_t>(es);
        k_->rows(xp + at, yp + at, r1 - r0, n);
      });
      return;
    }
    int64_t chunk = std::max<int64_t>(64, kChunkElems / n / 64 * 64);
    parallel_rows(ctx, outer, inner, chunk, [&](int64_t o, int64_t j0, int64_t j1) {
      int64_t at = (o * n * inner + j0) * static_cast<int64_t>(es);
      k_->strided(xp + at, yp + at, n, inner, j1 - j0);
    });
  }
  std::string kernel_name() const override {
    return kernel_label(k_->name, coerce_2d_ || axis_ == -1 ? "rows" : "axis");
  }

 private:
  int64_t axis_;
  bool coerce_2d_;
  const SoftmaxKernels* k_;
};

std::unique_ptr<Op> lower_concat(const LowerContext& ctx, std::unique_ptr<Op>& ref) {
  if (ctx.node.outputs.size() != 1 || ctx.node.num_inputs() < 1) return nullptr;
  for (int i = 0; i < ctx.node.num_inputs(); ++i)
    if (!ctx.node.has_input(i)) return nullptr;
  return std::make_unique<JoinCpuOp>(std::move(ref), ctx.node.attrs.get_int("axis", 0), true);
}

std::unique_ptr<Op> lower_split(const LowerContext& ctx, std::unique_ptr<Op>& ref) {
  // An omitted output's part of the input is not known here: the reference op splits those.
  if (ctx.node.outputs.empty() || !ctx.node.has_input(0) ||
      std::any_of(ctx.node.outputs.begin(), ctx.node.outputs.end(), [](int o) { return o < 0; }))
    return nullptr;
  return std::make_unique<JoinCpuOp>(std::move(ref), ctx.node.attrs.get_int("axis", 0), false);
}

std::unique_ptr<Op> lower_transpose(const LowerContext& ctx, std::unique_ptr<Op>& ref) {
  if (ctx.node.outputs.size() != 1 || !ctx.node.has_input(0)) return nullptr;
  return std::make_unique<TransposeCpuOp>(std::move(ref), ctx.node.attrs.get_ints("perm"));
}

std::unique_ptr<Op> lower_softmax(const LowerContext& ctx, std::unique_ptr<Op>& ref) {
  if (!ctx.node.has_input(0) || !is_f32_or_f16(ctx.input_dtype(0))) return nullptr;
  bool legacy = ctx.node.opset < 13;
  int64_t axis = ctx.node.attrs.get_int("axis", legacy ? 1 : -1);
  return std::make_unique<SoftmaxCpuOp>(std::move(ref), axis, legacy,
                                        softmax_kernels(ctx.input_dtype(0), ctx.isa));
}

}  // namespace

void register_data_lowerings(CpuRegistry& r) {
  r.add("Concat", lower_concat);
  r.add("Split", lower_split);
  r.add("Transpose", lower_transpose);
  r.add("Softmax", lower_softmax);
}

}  // namespace voxrt::cpu
