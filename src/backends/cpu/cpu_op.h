// The CPU backend's contract. After the passes, each node's reference Op is offered to the
// lowering registered for its op type; a lowering returns an optimized CpuOp (which keeps the
// reference op for shape inference and for cases its kernels do not cover) or declines.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/kernels/eltwise/activation.h"
#include "backends/ref/op.h"
#include "voxrt/session.h"

namespace voxrt::cpu {

/// An optimized op wrapping the reference op of the same node: inference, MACs and the plain
/// compute are the reference's; run() is the fast path.
class CpuOp : public Op {
 public:
  explicit CpuOp(std::unique_ptr<Op> ref) : ref_(std::move(ref)) {
    where = ref_->where;
    num_outputs = ref_->num_outputs;
  }
  std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const override {
    return ref_->infer_types(in);
  }
  std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const override {
    return ref_->infer_shapes(in);
  }
  void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const override {
    ref_->compute(in, out);
  }
  int64_t macs(const std::vector<ValueMeta>& in, const std::vector<Shape>& out) const override {
    return ref_->macs(in, out);
  }
  /// Constant inputs this op copied into its own (packed) form when it was lowered and never
  /// reads at run time: the Session may release their bytes, keeping their shapes.
  virtual std::vector<int> packed_inputs() const { return {}; }
  /// Bytes of the weights this op holds in its own (packed) form.
  virtual int64_t packed_bytes() const { return 0; }

 protected:
  std::unique_ptr<Op> ref_;
};

/// What a lowering sees: the node, its graph (dtypes of every value are inferred; constant inputs
/// such as weights are available), and the highest ISA kernels may use.
struct LowerContext {
  const ir::Node& node;
  const ir::Graph& graph;
  Isa isa;
  FpMath fpmath;  // bf16: Conv and ConvTranspose may use the bf16 dot-product gemm rows
  bool winograd = true;  // Conv may take Winograd's form (SessionOptions::winograd)
  /// The node's first output's shape for the inputs' expected shapes
  /// (SessionOptions::input_shapes), or null where none were given.
  const Shape* output_shape = nullptr;
  const Tensor* constant_input(int i) const {
    return node.has_input(i) ? graph.constant(node.inputs[static_cast<size_t>(i)]) : nullptr;
  }
  DType input_dtype(int i) const {
    return *graph.values[static_cast<size_t>(node.inputs[static_cast<size_t>(i)])].dtype;
  }
  DType output_dtype(int i) const {
    return *graph.values[static_cast<size_t>(node.outputs[static_cast<size_t>(i)])].dtype;
  }
};

/// Returns an optimized op taking ownership of `ref`, or nullptr (leaving `ref` alone) to decline.
using Lowering = std::function<std::unique_ptr<Op>(const LowerContext&, std::unique_ptr<Op>& ref)>;

class CpuRegistry {
 public:
  static const CpuRegistry& instance();
  /// `op_type` as the reference registry spells it ("Conv", "voxrt.FusedConv").
  void add(const std::string& op_type, Lowering lowering);
  /// The optimized op for this node, or `ref` itself when no lowering accepts it.
  std::unique_ptr<Op> lower(const ir::Node& node, const ir::Graph& graph, std::unique_ptr<Op> ref,
                            Isa isa, FpMath fpmath = FpMath::strict, bool winograd = true,
                            const Shape* output_shape = nullptr) const;

 private:
  std::multimap<std::string, Lowering> lowerings_;
};

// One registration function per kernel family driver under backends/cpu/.
/// The activation of a voxrt.Fused* node (attributes activation, alpha) as the CPU kernels apply
/// it: none, relu or leaky_relu.
ActParams fused_activation(const ir::Attributes& attrs);

void register_conv_lowerings(CpuRegistry& r);
void register_eltwise_lowerings(CpuRegistry& r);
void register_norm_lowerings(CpuRegistry& r);
void register_pool_lowerings(CpuRegistry& r);
void register_resize_lowerings(CpuRegistry& r);
void register_data_lowerings(CpuRegistry& r);

}  // namespace voxrt::cpu
