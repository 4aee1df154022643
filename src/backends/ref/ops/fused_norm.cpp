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
  FusedNormOp(std::unique_ptr<Op> norm, FusedEpilogue epilogue)
      : norm_(std::move(norm)), epilogue_(epilogue) {}

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    return norm_->infer_types(in);
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    return norm_->infer_shapes(in);
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    norm_->compute(in, out);
    Tensor& y = out[0];
    for (int64_t i = 0; i < y.numel(); ++i) ref::store(y, i, epilogue_.apply(ref::load(y, i)));
  }

 private:
  std::unique_ptr<Op> norm_;
  FusedEpilogue epilogue_;
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
  return norm;
}

void register_fused_norm_ops(OpRegistry& r) {
  for (const FusedNormName& n : kNames)
    r.add(std::string(kInternalDomain) + "." + n.fused, 1, 21,
          [](const OpContext& c) -> std::unique_ptr<Op> {
            ir::Node inner = fused_norm_inner_node(c.node);
            std::unique_ptr<Op> norm = OpRegistry::instance().create(inner, c.graph);
            return std::make_unique<FusedNormOp>(std::move(norm),
                                                 FusedEpilogue::from_attrs(c.node.attrs));
          });
}

}  // namespace voxrt
