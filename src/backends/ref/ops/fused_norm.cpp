// Reference of the fused normalization + activation ops: the normalization's own reference op,
// then the activation in double, so a fused graph keeps its oracle.
#include "backends/ref/ops/fused_norm.h"

#include "backends/ref/op.h"
#include "backends/ref/ops/fused.h"
#include "backends/ref/tensor_math.h"

namespace voxrt {

namespace {

struct FusedNormName {
  const char* fused;
  const char* norm;
};
constexpr FusedNormName kNames[] = {
    {"FusedBatchNorm", "BatchNormalization"},
    {"FusedInstanceNorm", "InstanceNormalization"},
    {"FusedGroupNorm", "GroupNormalization"},
};

class FusedNormOp : public Op {
 public:
  FusedNormOp(std::unique_ptr<Op> norm, FusedEpilogue epilogue, bool residual, bool after,
              int64_t x_from, int64_t residual_from)
      : norm_(std::move(norm)),
        epilogue_(epilogue),
        residual_(residual),
        after_(after),
        x_from_(x_from),
        residual_from_(residual_from) {}

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    std::vector<DType> t = norm_->infer_types(norm_inputs(in));
    if (residual_ && in.back().dtype != t[0])
      fail("residual input of " + std::string(dtype_name(in.back().dtype)) +
           " does not match the output's " + std::string(dtype_name(t[0])));
    return t;
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    std::vector<ValueMeta> norm_in = norm_inputs(in);
    if (x_from_ >= 0 && norm_in.size() > 1)
      norm_in[0].shape = window_shape(norm_in[0].shape, x_from_, channels(norm_in), "X");
    std::vector<Shape> s = norm_->infer_shapes(norm_in);
    const Shape r =
        residual_ && residual_from_ >= 0
            ? window_shape(in.back().shape, residual_from_, channels(norm_in), "the residual")
        : residual_ ? in.back().shape
                    : Shape{};
    if (residual_ && r != s[0])
      fail("residual input of shape " + shape_str(in.back().shape) + " does not match the output " +
           shape_str(s[0]));
    return s;
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    std::vector<const Tensor*> norm_in = norm_inputs(in);
    Tensor x_window, residual_window;
    if (x_from_ >= 0) {
      x_window = channel_window(*norm_in[0], x_from_, norm_in[1]->numel());
      norm_in[0] = &x_window;
    }
    norm_->compute(norm_in, out);
    Tensor& y = out[0];
    const Tensor* r = residual_ ? in.back() : nullptr;
    if (r && residual_from_ >= 0) {
      residual_window = channel_window(*r, residual_from_, y.dim(1));
      r = &residual_window;
    }
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double res = r ? ref::load(*r, i) : 0.0;
      ref::store(y, i,
                 after_ ? epilogue_.apply(ref::load(y, i), 0) + res
                        : epilogue_.apply(ref::load(y, i) + res, 0));
    }
  }

 private:
  template <class T>
  std::vector<T> norm_inputs(const std::vector<T>& in) const {
    return residual_ ? std::vector<T>(in.begin(), in.end() - 1) : in;
  }

  // C: scale's element count.
  static int64_t channels(const std::vector<ValueMeta>& norm_in) {
    return shape_numel(norm_in[1].shape);
  }

  // `shape` with `count` channels, which it must hold from channel `from` on.
  Shape window_shape(Shape shape, int64_t from, int64_t count, const char* what) const {
    if (shape.size() < 2 || from + count > shape[1])
      fail(std::string(what) + " of shape " + shape_str(shape) + " has no channels [" +
           std::to_string(from) + ", " + std::to_string(from + count) + ")");
    shape[1] = count;
    return shape;
  }

  std::unique_ptr<Op> norm_;
  FusedEpilogue epilogue_;
  bool residual_;
  bool after_;             // the residual added after the activation
  int64_t x_from_;         // X's first channel in input 0 (kFusedXFrom), or -1: X whole
  int64_t residual_from_;  // the residual's in the last input, or -1: whole
};

}  // namespace

std::string fused_norm_op_type(const std::string& norm_op) {
  for (const FusedNormName& n : kNames)
    if (norm_op == n.norm) return n.fused;
  return "";
}

ir::Node fused_norm_inner_node(const ir::Node& fused) {
  ir::Node norm = fused;
  for (const FusedNormName& n : kNames)
    if (fused.op_type == n.fused) norm.op_type = n.norm;
  norm.domain.clear();
  norm.attrs.items.erase("activation");
  norm.attrs.items.erase("alpha");
  if (fused.attrs.get_int(kNormResidual, 0) != 0 && !norm.inputs.empty()) norm.inputs.pop_back();
  norm.attrs.items.erase(kNormResidual);
  norm.attrs.items.erase(kResidualAfterActivation);
  norm.attrs.items.erase(kFusedXFrom);
  norm.attrs.items.erase(kFusedResidualFrom);
  return norm;
}

void register_fused_norm_ops(OpRegistry& r) {
  for (const FusedNormName& n : kNames)
    r.add(std::string(kInternalDomain) + "." + n.fused, 1, 21,
          [](const OpContext& c) -> std::unique_ptr<Op> {
            ir::Node inner = fused_norm_inner_node(c.node);
            std::unique_ptr<Op> norm = OpRegistry::instance().create(inner, c.graph);
            if (c.node.attrs.has(kFusedSlopes)) c.fail("per-channel slopes are for FusedConv");
            const bool residual = c.node.attrs.get_int(kNormResidual, 0) != 0;
            const bool after = c.node.attrs.get_int(kResidualAfterActivation, 0) != 0;
            if (after && !residual) c.fail("residual_after_activation without a residual");
            const int64_t x_from = window_from(c.node.attrs, kFusedXFrom),
                          residual_from = window_from(c.node.attrs, kFusedResidualFrom);
            if ((x_from >= 0 || residual_from >= 0) && c.node.op_type == "FusedGroupNorm")
              c.fail("x_from and residual_from are for FusedBatchNorm and FusedInstanceNorm");
            if (residual_from >= 0 && !residual) c.fail("residual_from without a residual");
            return std::make_unique<FusedNormOp>(std::move(norm),
                                                 FusedEpilogue::from_attrs(c.node.attrs), residual,
                                                 after, x_from, residual_from);
          });
}

}  // namespace voxrt
