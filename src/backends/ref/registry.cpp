#include <algorithm>

#include "backends/ref/op.h"

namespace voxrt {

std::vector<DType> Op::infer_types(const std::vector<ValueMeta>& in) const {
  return std::vector<DType>(static_cast<size_t>(num_outputs), in.at(0).dtype);
}

int64_t Op::macs(const std::vector<ValueMeta>&, const std::vector<Shape>&) const { return 0; }

void Op::fail(const std::string& what) const { throw Error(where + ": " + what); }

const Tensor* known_value(const ir::Graph& g, const std::map<int, Tensor>& folded, int v) {
  if (const Tensor* c = g.constant(v)) return c->raw() || c->numel() == 0 ? c : nullptr;
  auto it = folded.find(v);
  return it == folded.end() ? nullptr : &it->second;
}

std::optional<std::vector<Tensor>> fold_shape_only(const Op& op, const ir::Node& n,
                                                   const std::vector<ValueMeta>& in,
                                                   const std::vector<Shape>& shapes,
                                                   const std::vector<DType>& types,
                                                   int64_t max_elements) {
  bool all_values = true;
  for (const ValueMeta& m : in) all_values = all_values && (!m.present || m.value);
  const bool shape_only = n.domain.empty() && (n.op_type == "Shape" || n.op_type == "Size");
  if (!shape_only && !all_values) return std::nullopt;
  for (const Shape& s : shapes)
    if (shape_numel(s) > max_elements) return std::nullopt;
  // Shape and Size read no data: a stand-in tensor of the right shape serves as their input.
  std::vector<Tensor> stand_in(in.size());
  std::vector<const Tensor*> ins(in.size(), nullptr);
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].present) continue;
    if (in[i].value) {
      ins[i] = in[i].value;
    } else {
      stand_in[i] = Tensor::view(in[i].dtype, in[i].shape, reinterpret_cast<void*>(16));
      ins[i] = &stand_in[i];
    }
  }
  std::vector<Tensor> res;
  for (size_t o = 0; o < shapes.size(); ++o) res.push_back(Tensor::empty(types[o], shapes[o]));
  op.compute(ins, res);
  return res;
}

void Op::require_dtype(DType t, std::initializer_list<DType> allowed,
                       const std::string& role) const {
  if (std::find(allowed.begin(), allowed.end(), t) != allowed.end()) return;
  std::string list;
  for (DType a : allowed) list += (list.empty() ? "" : ", ") + std::string(dtype_name(a));
  fail(role + " has dtype " + std::string(dtype_name(t)) + ", expected one of: " + list);
}

const Tensor& Op::need_value(const ValueMeta& m, const std::string& role) const {
  if (!m.value)
    fail(role + " must be known before the graph runs (a constant, or computed from shapes); "
                "data-dependent shapes are not supported");
  return *m.value;
}

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_activation_ops(r);
    register_elementwise_ops(r);
    register_conv_ops(r);
    register_norm_ops(r);
    register_pool_ops(r);
    register_reduce_ops(r);
    register_shape_ops(r);
    register_tensor_ops(r);
    register_resize_ops(r);
    register_matmul_ops(r);
    register_fused_ops(r);
    register_fused_norm_ops(r);
    std::sort(r.schemas_.begin(), r.schemas_.end(), [](const OpSchema& a, const OpSchema& b) {
      return a.op_type != b.op_type ? a.op_type < b.op_type : a.min_opset < b.min_opset;
    });
    return r;
  }();
  return registry;
}

void OpRegistry::add(std::string op_type, int min_opset, int max_opset, OpFactory make) {
  schemas_.push_back(OpSchema{std::move(op_type), min_opset, max_opset, std::move(make)});
}

const OpSchema* OpRegistry::find(const std::string& op_type, int opset) const {
  for (const OpSchema& s : schemas_)
    if (s.op_type == op_type && opset >= s.min_opset && opset <= s.max_opset) return &s;
  return nullptr;
}

std::vector<const OpSchema*> OpRegistry::all() const {
  std::vector<const OpSchema*> v;
  for (const OpSchema& s : schemas_) v.push_back(&s);
  return v;
}

std::unique_ptr<Op> OpRegistry::create(const ir::Node& node, const ir::Graph& graph) const {
  std::string where = graph.where(node);
  // voxrt's own fused ops live in the "voxrt" domain; passes create them, models cannot.
  bool internal = node.domain == kInternalDomain;
  if (!node.domain.empty() && node.domain != "ai.onnx" && !internal)
    throw Error(where + ": operator domain '" + node.domain +
                "' is not supported (only the default ONNX domain is)");
  const OpSchema* s = find(internal ? std::string(kInternalDomain) + "." + node.op_type : node.op_type,
                           node.opset);
  if (!s) {
    bool known = std::any_of(schemas_.begin(), schemas_.end(),
                             [&](const OpSchema& x) { return x.op_type == node.op_type; });
    if (known)
      throw Error(where + ": opset " + std::to_string(node.opset) +
                  " of this operator is not supported");
    throw Error(where + ": operator '" + node.op_type + "' is not supported");
  }
  std::unique_ptr<Op> op = s->make(OpContext{node, graph, node.opset, where});
  op->where = where;
  op->num_outputs = static_cast<int>(node.outputs.size());
  return op;
}

}  // namespace voxrt
