// Ops that voxrt's passes create by fusing ONNX nodes (domain "voxrt"). Their reference
// implementation runs the original ops one after another, so fused graphs keep an oracle.
#include "backends/ref/op.h"
#include "backends/ref/ops/fused.h"
#include "backends/ref/tensor_math.h"

namespace voxrt {

namespace {

class FusedConvOp : public Op {
 public:
  FusedConvOp(std::unique_ptr<Op> conv, FusedEpilogue epilogue, bool has_residual)
      : conv_(std::move(conv)), epilogue_(epilogue), has_residual_(has_residual) {}

  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    std::vector<DType> t = conv_->infer_types(conv_inputs(in));
    if (has_residual_ && in[3].dtype != t[0]) fail("residual input must have the output's dtype");
    return t;
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    std::vector<Shape> s = conv_->infer_shapes(conv_inputs(in));
    if (has_residual_ && in[3].shape != s[0])
      fail("residual input of shape " + shape_str(in[3].shape) + " does not match the output " +
           shape_str(s[0]));
    return s;
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    std::vector<const Tensor*> cin(in.begin(), in.begin() + std::min<size_t>(3, in.size()));
    conv_->compute(cin, out);
    Tensor& y = out[0];
    const Tensor* r = has_residual_ ? in[3] : nullptr;
    for (int64_t i = 0; i < y.numel(); ++i) {
      double v = ref::load(y, i) + (r ? ref::load(*r, i) : 0.0);
      ref::store(y, i, epilogue_.apply(v));
    }
  }
  int64_t macs(const std::vector<ValueMeta>& in, const std::vector<Shape>& out) const override {
    return conv_->macs(conv_inputs(in), out);
  }

 private:
  static std::vector<ValueMeta> conv_inputs(const std::vector<ValueMeta>& in) {
    return std::vector<ValueMeta>(in.begin(), in.begin() + std::min<size_t>(3, in.size()));
  }
  std::unique_ptr<Op> conv_;
  FusedEpilogue epilogue_;
  bool has_residual_;
};

}  // namespace

FusedEpilogue FusedEpilogue::from_attrs(const ir::Attributes& a) {
  FusedEpilogue e;
  std::string act = a.get_string("activation", "");
  if (act == "Relu") e.kind = Kind::relu;
  else if (act == "LeakyRelu") e.kind = Kind::leaky_relu;
  else if (!act.empty()) throw Error(a.where + ": unknown fused activation '" + act + "'");
  e.alpha = a.get_float("alpha", 0.01f);
  return e;
}

ir::Node fused_conv_inner_node(const ir::Node& fused) {
  ir::Node conv = fused;
  conv.op_type = "Conv";
  conv.domain.clear();
  if (conv.inputs.size() > 3) conv.inputs.resize(3);
  conv.attrs.items.erase("activation");
  conv.attrs.items.erase("alpha");
  return conv;
}

void register_fused_ops(OpRegistry& r) {
  r.add(std::string(kInternalDomain) + ".FusedConv", 1, 21, [](const OpContext& c) -> std::unique_ptr<Op> {
    ir::Node inner = fused_conv_inner_node(c.node);
    std::unique_ptr<Op> conv = OpRegistry::instance().create(inner, c.graph);
    bool residual = c.node.has_input(3);
    return std::make_unique<FusedConvOp>(std::move(conv), FusedEpilogue::from_attrs(c.node.attrs), residual);
  });
}

}  // namespace voxrt
