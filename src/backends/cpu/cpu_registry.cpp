#include "backends/cpu/cpu_op.h"
#include "backends/ref/ops/fused.h"

namespace voxrt::cpu {

const CpuRegistry& CpuRegistry::instance() {
  static const CpuRegistry registry = [] {
    CpuRegistry r;
    register_conv_lowerings(r);
    register_eltwise_lowerings(r);
    register_norm_lowerings(r);
    register_pool_lowerings(r);
    register_resize_lowerings(r);
    register_data_lowerings(r);
    return r;
  }();
  return registry;
}

ActParams fused_activation(const ir::Attributes& attrs) {
  const FusedEpilogue f = FusedEpilogue::from_attrs(attrs);
  ActParams a;
  a.act = f.kind == FusedEpilogue::Kind::relu         ? Act::relu
          : f.kind == FusedEpilogue::Kind::leaky_relu ? Act::leaky_relu
                                                      : Act::none;
  a.alpha = f.alpha;
  return a;
}

void CpuRegistry::add(const std::string& op_type, Lowering lowering) {
  lowerings_.emplace(op_type, std::move(lowering));
}

std::unique_ptr<Op> CpuRegistry::lower(const ir::Node& node, const ir::Graph& graph,
                                       std::unique_ptr<Op> ref, Isa isa, FpMath fpmath,
                                       bool winograd, const Shape* output_shape) const {
  std::string key = node.domain == kInternalDomain
                        ? std::string(kInternalDomain) + "." + node.op_type
                        : node.op_type;
  LowerContext ctx{node, graph, isa, fpmath, winograd, output_shape};
  auto [begin, end] = lowerings_.equal_range(key);
  for (auto it = begin; it != end; ++it)
    if (std::unique_ptr<Op> op = it->second(ctx, ref)) return op;
  return ref;
}

}  // namespace voxrt::cpu
