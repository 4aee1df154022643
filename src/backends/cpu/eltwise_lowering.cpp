// Elementwise ops on f32 and f16: activations, PRelu with a slope per channel or one slope,
// Add/Sub/Mul/Div/Min/Max where one side is the
// same shape, a scalar, one value per channel or a repeated trailing block (other broadcasts
// and legacy opset < 7 broadcasting run the reference), Cast between f32 and f16, and the ops
// that copy their input (Reshape, Flatten, Squeeze, Unsqueeze, Identity).
#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cpu/cpu_op.h"
#include "backends/cpu/driver_util.h"
#include "backends/cpu/kernels/eltwise/eltwise.h"
#include "backends/ref/tensor_math.h"

namespace voxrt::cpu {
namespace {

char* bytes(Tensor& t) {
  return static_cast<char*>(t.raw());
}
const char* bytes(const Tensor& t) {
  return static_cast<const char*>(t.raw());
}

class UnaryCpuOp : public CpuOp {
 public:
  UnaryCpuOp(std::unique_ptr<Op> ref, const EltwiseKernels* k, ActParams p, bool clip_inputs)
      : CpuOp(std::move(ref)), k_(k), p_(p), clip_inputs_(clip_inputs) {}

  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    ActParams p = p_;
    if (clip_inputs_) {
      // Clip from opset 11 takes its bounds as optional scalar inputs.
      if (in.size() > 1 && in[1]) p.lo = static_cast<float>(ref::load(*in[1], 0));
      if (in.size() > 2 && in[2]) p.hi = static_cast<float>(ref::load(*in[2], 0));
    }
    size_t es = dtype_size(x.dtype());
    parallel_for(ctx, x.numel(), kChunkElems, [&](int64_t b, int64_t e) {
      k_->unary(bytes(x) + b * es, bytes(y) + b * es, e - b, p);
    });
  }
  // Each vector of x is read before the same elements of y are written.
  bool may_overwrite_input() const override { return true; }
  std::string kernel_name() const override { return kernel_label(k_->name, act_name(p_.act)); }

 private:
  const EltwiseKernels* k_;
  ActParams p_;
  bool clip_inputs_;
};

const char* binop_name(BinOp op) {
  switch (op) {
    case BinOp::add: return "add";
    case BinOp::sub: return "sub";
    case BinOp::mul: return "mul";
    case BinOp::div: return "div";
    case BinOp::min: return "min";
    case BinOp::max: return "max";
  }
  return "";
}

// How the smaller operand of a binary op lines up with the output.
struct Broadcast {
  enum class Kind { none, same, scalar, per_row, repeated } kind = Kind::none;
  int64_t rows = 0, len = 0, period = 1;  // per_row: rows of len, value row % period
};

// `small` against the output shape `y`, right-aligned as numpy broadcasting does.
Broadcast classify(const Shape& small, const Shape& y) {
  Broadcast b;
  if (small == y) {
    b.kind = Broadcast::Kind::same;
    return b;
  }
  if (small.size() > y.size()) return b;
  int64_t n = shape_numel(small);
  if (n == 1) {
    b.kind = Broadcast::Kind::scalar;
    return b;
  }
  size_t off = y.size() - small.size();
  Shape s(off, 1);
  s.insert(s.end(), small.begin(), small.end());
  // The axes where `small` is not 1 must be one contiguous run matching y.
  size_t first = s.size(), last = 0;
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] != 1) {
      if (s[d] != y[d]) return b;
      first = std::min(first, d);
      last = d;
    }
  for (size_t d = first; d <= last; ++d)
    if (s[d] != y[d]) return b;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < first; ++d) outer *= y[d];
  for (size_t d = last + 1; d < y.size(); ++d) inner *= y[d];
  if (inner == 1) {
    b.kind = Broadcast::Kind::repeated;
    b.rows = outer;
    b.len = n;
  } else if (inner >= 16) {
    b.kind = Broadcast::Kind::per_row;
    b.rows = outer * n;
    b.len = inner;
    b.period = n;
  }
  return b;
}

class BinaryCpuOp : public CpuOp {
 public:
  BinaryCpuOp(std::unique_ptr<Op> ref, const EltwiseKernels* k, BinOp op)
      : CpuOp(std::move(ref)), k_(k), op_(op) {}

  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& a = *in[0];
    const Tensor& b = *in[1];
    Tensor& y = out[0];
    if (a.shape() == y.shape() && run_with(ctx, a, b, y, false)) return;
    if (b.shape() == y.shape() && run_with(ctx, b, a, y, true)) return;
    ref_->compute(in, out);
  }
  std::string kernel_name() const override { return kernel_label(k_->name, binop_name(op_)); }

 private:
  // `full` has the output's shape; `other` broadcasts to it. `swapped`: full is the right operand.
  bool run_with(const RunContext& ctx, const Tensor& full, const Tensor& other, Tensor& y,
                bool swapped) const {
    Broadcast bc = classify(other.shape(), y.shape());
    size_t es = dtype_size(y.dtype());
    switch (bc.kind) {
      case Broadcast::Kind::none: return false;
      case Broadcast::Kind::same:
        parallel_for(ctx, y.numel(), kChunkElems, [&](int64_t b, int64_t e) {
          const char* l = bytes(swapped ? other : full) + b * es;
          const char* r = bytes(swapped ? full : other) + b * es;
          k_->binary(l, r, bytes(y) + b * es, e - b, op_);
        });
        return true;
      case Broadcast::Kind::scalar: {
        float s = load_float(other.raw(), other.dtype(), 0);
        parallel_for(ctx, y.numel(), kChunkElems, [&](int64_t b, int64_t e) {
          k_->binary_scalar(bytes(full) + b * es, s, bytes(y) + b * es, e - b, op_, swapped);
        });
        return true;
      }
      case Broadcast::Kind::per_row:
        parallel_rows(ctx, bc.rows, bc.len, kChunkElems, [&](int64_t r, int64_t b, int64_t e) {
          float s = load_float(other.raw(), other.dtype(), r % bc.period);
          int64_t at = (r * bc.len + b) * static_cast<int64_t>(es);
          k_->binary_scalar(bytes(full) + at, s, bytes(y) + at, e - b, op_, swapped);
        });
        return true;
      case Broadcast::Kind::repeated:
        parallel_rows(ctx, bc.rows, bc.len, kChunkElems, [&](int64_t r, int64_t b, int64_t e) {
          int64_t at = (r * bc.len + b) * static_cast<int64_t>(es);
          const char* o = bytes(other) + b * static_cast<int64_t>(es);
          const char* f = bytes(full) + at;
          k_->binary(swapped ? o : f, swapped ? f : o, bytes(y) + at, e - b, op_);
        });
        return true;
    }
    return false;
  }

  const EltwiseKernels* k_;
  BinOp op_;
};

// PRelu with a slope per channel (or any slope that is one value per run of the output); a
// single constant slope became LeakyRelu before lowering. Each run is LeakyRelu with its slope.
class PReluCpuOp : public CpuOp {
 public:
  PReluCpuOp(std::unique_ptr<Op> ref, const EltwiseKernels* k) : CpuOp(std::move(ref)), k_(k) {}

  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    const Tensor& slope = *in[1];
    Tensor& y = out[0];
    Broadcast bc = classify(slope.shape(), y.shape());
    if (x.shape() != y.shape() || slope.dtype() != x.dtype()) return ref_->compute(in, out);
    size_t es = dtype_size(y.dtype());
    ActParams p;
    p.act = Act::leaky_relu;
    if (bc.kind == Broadcast::Kind::scalar) {
      p.alpha = load_float(slope.raw(), slope.dtype(), 0);
      parallel_for(ctx, y.numel(), kChunkElems, [&](int64_t b, int64_t e) {
        k_->unary(bytes(x) + b * es, bytes(y) + b * es, e - b, p);
      });
      return;
    }
    if (bc.kind != Broadcast::Kind::per_row) return ref_->compute(in, out);
    parallel_rows(ctx, bc.rows, bc.len, kChunkElems, [&](int64_t r, int64_t b, int64_t e) {
      ActParams row = p;
      row.alpha = load_float(slope.raw(), slope.dtype(), r % bc.period);
      int64_t at = (r * bc.len + b) * static_cast<int64_t>(es);
      k_->unary(bytes(x) + at, bytes(y) + at, e - b, row);
    });
  }
  std::string kernel_name() const override { return kernel_label(k_->name, "prelu"); }

 private:
  const EltwiseKernels* k_;
};

class CastCpuOp : public CpuOp {
 public:
  CastCpuOp(std::unique_ptr<Op> ref, const CastKernels& k, bool to_f16)
      : CpuOp(std::move(ref)), k_(k), to_f16_(to_f16) {}
  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    size_t ex = dtype_size(x.dtype()), ey = dtype_size(y.dtype());
    parallel_for(ctx, x.numel(), kChunkElems, [&](int64_t b, int64_t e) {
      (to_f16_ ? k_.f32_to_f16 : k_.f16_to_f32)(bytes(x) + b * ex, bytes(y) + b * ey, e - b);
    });
  }
  std::string kernel_name() const override {
    return kernel_label(k_.name, to_f16_ ? "f32_to_f16" : "f16_to_f32");
  }

 private:
  const CastKernels& k_;
  bool to_f16_;
};

// Ops whose output holds the input's bytes: a threaded copy.
class CopyCpuOp : public CpuOp {
 public:
  using CpuOp::CpuOp;
  void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
           std::vector<Tensor>& out) const override {
    const Tensor& x = *in[0];
    Tensor& y = out[0];
    if (x.nbytes() != y.nbytes()) return ref_->compute(in, out);
    if (x.raw() == y.raw()) return;
    parallel_for(ctx, static_cast<int64_t>(x.nbytes()), kChunkElems * 4, [&](int64_t b, int64_t e) {
      std::memcpy(bytes(y) + b, bytes(x) + b, static_cast<size_t>(e - b));
    });
  }
  std::string kernel_name() const override { return "copy"; }
};

bool float_io(const LowerContext& ctx) {
  return ctx.node.has_input(0) && is_f32_or_f16(ctx.input_dtype(0)) &&
         ctx.node.outputs.size() == 1 && ctx.node.outputs[0] >= 0;
}

Lowering unary(Act act) {
  return [act](const LowerContext& ctx, std::unique_ptr<Op>& ref) -> std::unique_ptr<Op> {
    if (!float_io(ctx)) return nullptr;
    ActParams p;
    p.act = act;
    bool clip_inputs = false;
    if (act == Act::leaky_relu) p.alpha = ctx.node.attrs.get_float("alpha", 0.01f);
    if (act == Act::clip) {
      if (ctx.node.opset < 11) {
        p.lo = ctx.node.attrs.get_float("min", std::numeric_limits<float>::lowest());
        p.hi = ctx.node.attrs.get_float("max", std::numeric_limits<float>::max());
      } else {
        clip_inputs = true;
      }
    }
    const EltwiseKernels* k = eltwise_kernels(ctx.input_dtype(0), ctx.isa);
    return std::make_unique<UnaryCpuOp>(std::move(ref), k, p, clip_inputs);
  };
}

Lowering binary(BinOp op) {
  return [op](const LowerContext& ctx, std::unique_ptr<Op>& ref) -> std::unique_ptr<Op> {
    if (!float_io(ctx) || ctx.node.num_inputs() != 2 || !ctx.node.has_input(1)) return nullptr;
    if (ctx.input_dtype(1) != ctx.input_dtype(0)) return nullptr;
    // Before opset 7 these ops broadcast by the legacy `axis` rule.
    if ((op != BinOp::min && op != BinOp::max) && ctx.node.opset < 7) return nullptr;
    const EltwiseKernels* k = eltwise_kernels(ctx.input_dtype(0), ctx.isa);
    return std::make_unique<BinaryCpuOp>(std::move(ref), k, op);
  };
}

std::unique_ptr<Op> lower_prelu(const LowerContext& ctx, std::unique_ptr<Op>& ref) {
  // Before opset 7 PRelu broadcast a 1-D slope along channels (the reference's legacy rule).
  if (!float_io(ctx) || ctx.node.num_inputs() != 2 || !ctx.node.has_input(1) || ctx.node.opset < 7)
    return nullptr;
  if (ctx.input_dtype(1) != ctx.input_dtype(0)) return nullptr;
  return std::make_unique<PReluCpuOp>(std::move(ref), eltwise_kernels(ctx.input_dtype(0), ctx.isa));
}

std::unique_ptr<Op> lower_cast(const LowerContext& ctx, std::unique_ptr<Op>& ref) {
  if (!float_io(ctx)) return nullptr;
  DType from = ctx.input_dtype(0), to = ctx.output_dtype(0);
  if (from == to) return std::make_unique<CopyCpuOp>(std::move(ref));
  if (!is_f32_or_f16(to)) return nullptr;
  return std::make_unique<CastCpuOp>(std::move(ref), cast_kernels(ctx.isa), to == DType::f16);
}

std::unique_ptr<Op> lower_copy(const LowerContext& ctx, std::unique_ptr<Op>& ref) {
  if (ctx.node.outputs.size() != 1 || ctx.node.outputs[0] < 0 || !ctx.node.has_input(0))
    return nullptr;
  return std::make_unique<CopyCpuOp>(std::move(ref));
}

}  // namespace

void register_eltwise_lowerings(CpuRegistry& r) {
  r.add("Relu", unary(Act::relu));
  r.add("LeakyRelu", unary(Act::leaky_relu));
  r.add("PRelu", lower_prelu);
  r.add("Sigmoid", unary(Act::sigmoid));
  r.add("Tanh", unary(Act::tanh));
  r.add("Clip", unary(Act::clip));
  r.add("Add", binary(BinOp::add));
  r.add("Sub", binary(BinOp::sub));
  r.add("Mul", binary(BinOp::mul));
  r.add("Div", binary(BinOp::div));
  r.add("Min", binary(BinOp::min));
  r.add("Max", binary(BinOp::max));
  r.add("Cast", lower_cast);
  for (const char* op : {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"})
    r.add(op, lower_copy);
}

}  // namespace voxrt::cpu
