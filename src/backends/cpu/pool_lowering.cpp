// MaxPool (without the Indices output), AveragePool, GlobalAveragePool and GlobalMaxPool on f32
// and f16, 1D to 3D. The window geometry is the reference's (window.h); each output row along
// the last axis is one kernel call over the input rows its window covers.
#include <algorithm>

#include "backends/cpu/cpu_op.h"
#include "backends/cpu/driver_util.h"
#include "backends/cpu/kernels/pool/pool.h"
#include "backends/cpu/kernels/reduce/reduce.h"
#include "backends/ref/ops/window.h"

namespace voxrt::cpu {
namespace {

// How many taps of output index `o` along axis d fall inside the padded extent
// (count_include_pad's divisor).
int64_t padded_taps(const ref::Geometry& g, size_t d, int64_t o) {
  return ref::taps_within(o * g.stride[d] - g.pad_begin[d], g.dilation[d], g.kernel[d],
                          -g.pad_begin[d], g.in[d] + g.pad_end[d])
      .count();
}

// The taps of output index `o` along axis d that read the input.
ref::TapRange inside_taps(const ref::Geometry& g, size_t d, int64_t o) {
  return ref::taps_within(o * g.stride[d] - g.pad_begin[d], g.dilation[d], g.kernel[d], 0, g.in[d]);
}

class PoolCpuOp : public CpuOp {
 public:
  PoolCpuOp(std::unique_ptr<Op> ref, ref::WindowAttrs attrs, bool is_max, bool include_pad,
            const PoolKernels* k)
      : CpuOp(std::move(ref)), attrs_(std::move(attrs)), max_(is_max), include_pad_(include_pad),
        k_(k) {}

  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    size_t rank = attrs_.kernel.size();
    if (y.numel() == 0) return;
    ref::Geometry g = ref::resolve_window(where, attrs_, Shape(x.shape().begin() + 2, x.shape().end()),
                                          attrs_.kernel);
    // Outer axes padded to two (1D and 2D pools get unit axes in front).
    ref::Geometry g3;
    for (auto* v : {&g3.in, &g3.out, &g3.kernel, &g3.stride, &g3.dilation})
      v->assign(3 - rank, 1);
    g3.pad_begin.assign(3 - rank, 0);
    g3.pad_end.assign(3 - rank, 0);
    auto append = [](std::vector<int64_t>& to, const std::vector<int64_t>& from) {
      to.insert(to.end(), from.begin(), from.end());
    };
    append(g3.in, g.in);
    append(g3.out, g.out);
    append(g3.kernel, g.kernel);
    append(g3.stride, g.stride);
    append(g3.dilation, g.dilation);
    append(g3.pad_begin, g.pad_begin);
    append(g3.pad_end, g.pad_end);
    PoolAxis row{g3.in[2], g3.out[2], g3.kernel[2], g3.stride[2], g3.dilation[2], g3.pad_begin[2],
                 g3.pad_end[2]};
    int64_t planes = x.dim(0) * x.dim(1);
    int64_t in_plane = g3.in[0] * g3.in[1] * g3.in[2], out_plane = g3.out[0] * g3.out[1] * g3.out[2];
    size_t es = dtype_size(x.dtype());
    const char* xp = static_cast<const char*>(x.raw());
    char* yp = static_cast<char*>(y.raw());
    // Output rows along H whose every kh tap is inside the input: one kernel call for them all.
    int64_t oh_lo = std::min(g3.out[1], (g3.pad_begin[1] + g3.stride[1] - 1) / g3.stride[1]);
    int64_t oh_last = g3.in[1] - 1 - (g3.kernel[1] - 1) * g3.dilation[1] + g3.pad_begin[1];
    int64_t oh_hi = oh_last >= 0 ? std::min(g3.out[1], oh_last / g3.stride[1] + 1) : 0;
    oh_hi = std::max(oh_hi, oh_lo);
    int64_t step = g3.stride[1] * g3.in[2];
    // Items (batch item, output plane od, band of output rows, channel) in that order, in one
    // range a thread, range t first on thread t (split_ranges): each core pools the items and
    // depths, or in a shallow output the rows, that the convolutions before and after it write
    // and read on that core (their own depth ranges and row bands), for every channel
    // (row_bands, SpatialItem).
    const int64_t bands = row_bands(ctx.pool, g3.out[0], g3.out[1]);
    split_ranges(ctx.pool, g3.out[0] * bands * planes, [&](RangeCursor& items) {
      std::vector<const void*> rows;
      for (int64_t u; (u = items.next()) >= 0;) {
        const SpatialItem it(u, x.dim(1), g3.out[0], bands);
        const int64_t od = it.depth, band = it.band, plane = it.n * x.dim(1) + it.channel;
        const int64_t r0 = g3.out[1] * band / bands, r1 = g3.out[1] * (band + 1) / bands;
        int64_t pd = padded_taps(g3, 0, od);
        auto run_rows = [&](int64_t oh, int64_t count) {
          rows.clear();
          const ref::TapRange td = inside_taps(g3, 0, od), th = inside_taps(g3, 1, oh);
          for (int64_t kd = td.first; kd < td.last; ++kd) {
            int64_t id = od * g3.stride[0] - g3.pad_begin[0] + kd * g3.dilation[0];
            for (int64_t kh = th.first; kh < th.last; ++kh) {
              int64_t ih = oh * g3.stride[1] - g3.pad_begin[1] + kh * g3.dilation[1];
              rows.push_back(xp + (plane * in_plane + (id * g3.in[1] + ih) * g3.in[2]) *
                                      static_cast<int64_t>(es));
            }
          }
          char* yr = yp + (plane * out_plane + (od * g3.out[1] + oh) * g3.out[2]) *
                              static_cast<int64_t>(es);
          int nrows = static_cast<int>(rows.size());
          if (max_)
            k_->max_rows(rows.data(), nrows, step, count, row, yr);
          else
            k_->avg_rows(rows.data(), nrows, static_cast<int>(pd * padded_taps(g3, 1, oh)),
                         include_pad_, step, count, row, yr);
        };
        const int64_t mid0 = std::clamp(oh_lo, r0, r1), mid1 = std::clamp(oh_hi, mid0, r1);
        for (int64_t oh = r0; oh < mid0; ++oh) run_rows(oh, 1);
        if (mid1 > mid0) run_rows(mid0, mid1 - mid0);
        for (int64_t oh = mid1; oh < r1; ++oh) run_rows(oh, 1);
      }
    });
  }

  std::string kernel_name() const override { return kernel_label(k_->name, max_ ? "max" : "avg"); }

 private:
  ref::WindowAttrs attrs_;
  bool max_, include_pad_;
  const PoolKernels* k_;
};

class GlobalPoolCpuOp : public CpuOp {
 public:
  GlobalPoolCpuOp(std::unique_ptr<Op> ref, bool is_max, const ReduceKernels* k)
      : CpuOp(std::move(ref)), max_(is_max), k_(k) {}

  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    int64_t planes = x.dim(0) * x.dim(1);
    if (planes == 0) return;
    int64_t s = x.numel() / planes;
    size_t es = dtype_size(x.dtype());
    parallel_for(ctx, planes, 1, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        const char* xp = static_cast<const char*>(x.raw()) + p * s * static_cast<int64_t>(es);
        float v = max_ ? k_->max(xp, s) : static_cast<float>(k_->sum(xp, s) / static_cast<double>(s));
        store_float(y.raw(), y.dtype(), p, v);
      }
    });
  }
  std::string kernel_name() const override {
    return kernel_label(k_->name, max_ ? "global_max" : "global_avg");
  }

 private:
  bool max_;
  const ReduceKernels* k_;
};

bool float_io(const LowerContext& ctx) {
  const ir::Node& n = ctx.node;
  if (!n.has_input(0) || !is_f32_or_f16(ctx.input_dtype(0)) || n.outputs.empty()) return false;
  for (size_t o = 1; o < n.outputs.size(); ++o)
    if (n.outputs[o] >= 0) return false;  // MaxPool's Indices
  return true;
}

Lowering pool(bool is_max) {
  return [is_max](const LowerContext& ctx, std::unique_ptr<Op>& ref) -> std::unique_ptr<Op> {
    if (!float_io(ctx)) return nullptr;
    OpContext oc{ctx.node, ctx.graph, ctx.node.opset, ref->where};
    ref::WindowAttrs a = ref::parse_window(oc);
    if (a.kernel.empty() || a.kernel.size() > 3) return nullptr;
    // The kernels take at most 1024 input rows per window.
    if (a.kernel.size() == 3 && a.kernel[0] * a.kernel[1] > 1024) return nullptr;
    if (a.kernel.size() == 2 && a.kernel[0] > 1024) return nullptr;
    a.ceil_mode = ctx.node.attrs.get_int("ceil_mode", 0) == 1;
    bool include_pad = !is_max && ctx.node.attrs.get_int("count_include_pad", 0) == 1;
    const PoolKernels* k = pool_kernels(ctx.input_dtype(0), ctx.isa);
    return std::make_unique<PoolCpuOp>(std::move(ref), std::move(a), is_max, include_pad, k);
  };
}

Lowering global_pool(bool is_max) {
  return [is_max](const LowerContext& ctx, std::unique_ptr<Op>& ref) -> std::unique_ptr<Op> {
    if (!float_io(ctx)) return nullptr;
    return std::make_unique<GlobalPoolCpuOp>(std::move(ref), is_max,
                                             reduce_kernels(ctx.input_dtype(0), ctx.isa));
  };
}

}  // namespace

void register_pool_lowerings(CpuRegistry& r) {
  r.add("MaxPool", pool(true));
  r.add("AveragePool", pool(false));
  r.add("GlobalMaxPool", global_pool(true));
  r.add("GlobalAveragePool", global_pool(false));
}

}  // namespace voxrt::cpu
