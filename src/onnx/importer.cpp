#include "onnx/importer.h"

#include "onnx/proto_io.h"
#include "voxrt/error.h"

namespace voxrt::onnx_io {

namespace {

constexpr int kMaxOpset = 21;

void import_type(const onnx::TypeProto& type, ir::Value& v, const std::string& where) {
  if (!type.has_tensor_type())
    throw Error(where + ": only tensor types are supported (not sequences, maps or optionals)");
  const auto& tt = type.tensor_type();
  if (tt.elem_type() != 0) v.dtype = dtype_from_onnx(tt.elem_type(), where);
  if (!tt.has_shape()) return;
  std::vector<ir::Dim> dims;
  for (const auto& d : tt.shape().dim()) {
    ir::Dim dim;
    if (d.has_dim_value()) {
      if (d.dim_value() < 0)
        throw Error(where + ": dimension " + std::to_string(d.dim_value()) + " is negative");
      dim.value = d.dim_value();
    } else if (d.has_dim_param()) {
      dim.symbol = d.dim_param();
    }
    dims.push_back(dim);
  }
  v.dims = std::move(dims);
}

ir::Attribute import_attribute(const onnx::AttributeProto& a, const std::string& model_dir,
                               const std::string& where) {
  ir::Attribute at;
  using A = onnx::AttributeProto;
  A::AttributeType type = a.type();
  if (type == A::UNDEFINED) {
    // Models from old exporters leave the type unset: infer it from the field that holds data.
    if (a.has_f())
      type = A::FLOAT;
    else if (a.has_i())
      type = A::INT;
    else if (a.has_s())
      type = A::STRING;
    else if (a.has_t())
      type = A::TENSOR;
    else if (a.floats_size())
      type = A::FLOATS;
    else if (a.ints_size())
      type = A::INTS;
    else if (a.strings_size())
      type = A::STRINGS;
  }
  switch (type) {
    case A::FLOAT:
      at.kind = ir::Attribute::Kind::f;
      at.f = a.f();
      break;
    case A::INT:
      at.kind = ir::Attribute::Kind::i;
      at.i = a.i();
      break;
    case A::STRING:
      at.kind = ir::Attribute::Kind::s;
      at.s = a.s();
      break;
    case A::TENSOR:
      at.kind = ir::Attribute::Kind::t;
      at.t = tensor_from_proto(a.t(), model_dir, where + ", attribute '" + a.name() + "'");
      break;
    case A::FLOATS:
      at.kind = ir::Attribute::Kind::fs;
      at.fs.assign(a.floats().begin(), a.floats().end());
      break;
    case A::INTS:
      at.kind = ir::Attribute::Kind::is;
      at.is.assign(a.ints().begin(), a.ints().end());
      break;
    case A::STRINGS:
      at.kind = ir::Attribute::Kind::ss;
      at.ss.assign(a.strings().begin(), a.strings().end());
      break;
    default:
      throw Error(where + ": attribute '" + a.name() +
                  "' holds a graph, sparse tensor or type, which is not supported");
  }
  return at;
}

// `consume`: the model's graph, whose initializers' bytes are released as they are imported.
ir::Graph import_graph(const onnx::ModelProto& model, onnx::GraphProto* consume,
                       const std::string& model_name, const std::string& model_dir) {
  ir::Graph g;
  g.model_name = model_name;
  std::string mwhere = "model '" + model_name + "'";
  g.ir_version = model.ir_version();
  if (g.ir_version < 3)
    throw Error(mwhere + ": IR version " + std::to_string(g.ir_version) +
                " is not supported (3 or later expected)");
  for (const auto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") g.opset = static_cast<int>(op.version());
  }
  if (g.opset == 0) throw Error(mwhere + ": imports no default-domain (ai.onnx) opset");
  if (g.opset > kMaxOpset)
    throw Error(mwhere + ": opset " + std::to_string(g.opset) + " is newer than supported (1 to " +
                std::to_string(kMaxOpset) + ")");

  const onnx::GraphProto& gp = model.graph();
  for (int i = 0; i < gp.initializer_size(); ++i) {
    const onnx::TensorProto& init = gp.initializer(i);
    std::string where = mwhere + ", initializer '" + init.name() + "'";
    if (init.name().empty()) throw Error(mwhere + ": an initializer has no name");
    int v = g.add_value(init.name());
    // A consumed initializer's raw bytes become the constant's storage.
    Tensor t =
        consume ? tensor_from_proto(std::move(*consume->mutable_initializer(i)), model_dir, where)
                : tensor_from_proto(init, model_dir, where);
    g.values[static_cast<size_t>(v)].dtype = t.dtype();
    g.constants[v] = std::move(t);
    if (consume) {
      // Swapping with empty containers frees the storage; clearing would keep its capacity.
      onnx::TensorProto& done = *consume->mutable_initializer(i);
      std::string().swap(*done.mutable_raw_data());
      google::protobuf::RepeatedField<float>().Swap(done.mutable_float_data());
      google::protobuf::RepeatedField<int32_t>().Swap(done.mutable_int32_data());
      google::protobuf::RepeatedField<int64_t>().Swap(done.mutable_int64_data());
      google::protobuf::RepeatedField<double>().Swap(done.mutable_double_data());
    }
  }
  for (const auto& in : gp.input()) {
    int v = g.add_value(in.name());
    const std::string where = mwhere + ", input '" + in.name() + "'";
    if (!g.is_constant(v)) {
      import_type(in.type(), g.values[static_cast<size_t>(v)], where);
      g.inputs.push_back(v);
      continue;
    }
    // An input with an initializer is that constant (voxrt does not override initializers): what
    // the input declares must be what the initializer holds.
    ir::Value declared{in.name(), std::nullopt, std::nullopt};
    import_type(in.type(), declared, where);
    const Tensor& t = *g.constant(v);
    bool same = !declared.dtype || *declared.dtype == t.dtype();
    if (declared.dims) {
      same = same && declared.dims->size() == t.shape().size();
      for (size_t d = 0; same && d < declared.dims->size(); ++d)
        same = !(*declared.dims)[d].known() || (*declared.dims)[d].value == t.shape()[d];
    }
    if (!same)
      throw Error(where + ": declares " +
                  (declared.dtype ? std::string(dtype_name(*declared.dtype)) : "a tensor") +
                  (declared.dims ? " of rank " + std::to_string(declared.dims->size()) : "") +
                  " but its initializer holds " + std::string(dtype_name(t.dtype())) + " " +
                  shape_str(t.shape()));
  }
  for (const auto& vi : gp.value_info()) {
    int v = g.add_value(vi.name());
    ir::Value& val = g.values[static_cast<size_t>(v)];
    if (val.dtype || val.dims) continue;
    try {
      import_type(vi.type(), val, mwhere + ", tensor '" + vi.name() + "'");
    } catch (const Error&) {
      // value_info is advisory: types the graph really uses are checked where they are consumed.
    }
  }
  for (int n = 0; n < gp.node_size(); ++n) {
    const onnx::NodeProto& np = gp.node(n);
    ir::Node node;
    node.op_type = np.op_type();
    node.domain = np.domain();
    if (node.domain == "voxrt")
      throw Error(mwhere + ", node '" + np.name() +
                  "': domain 'voxrt' is reserved for voxrt's own passes");
    node.name = np.name().empty() ? np.op_type() + "_" + std::to_string(n) : np.name();
    node.opset = g.opset;
    std::string where = g.where(node);
    node.attrs.where = where;
    for (const auto& a : np.attribute()) {
      if (a.name().empty()) throw Error(where + ": an attribute has no name");
      node.attrs.items[a.name()] = import_attribute(a, model_dir, where);
    }
    for (const auto& i : np.input()) node.inputs.push_back(i.empty() ? -1 : g.add_value(i));
    // Trailing omitted inputs carry no meaning.
    while (!node.inputs.empty() && node.inputs.back() < 0) node.inputs.pop_back();
    for (const auto& o : np.output()) node.outputs.push_back(o.empty() ? -1 : g.add_value(o));
    g.nodes.push_back(std::move(node));
  }
  for (const auto& out : gp.output()) {
    int v = g.find_value(out.name());
    if (v < 0) v = g.add_value(out.name());
    ir::Value& val = g.values[static_cast<size_t>(v)];
    ir::Value declared{val.name, std::nullopt, std::nullopt};
    import_type(out.type(), declared, mwhere + ", output '" + out.name() + "'");
    if (!val.dims) val.dims = declared.dims;
    if (!val.dtype) val.dtype = declared.dtype;
    g.outputs.push_back(v);
  }
  if (g.outputs.empty()) throw Error(mwhere + ": the graph has no outputs");
  return g;
}

}  // namespace

ir::Graph import_model(const onnx::ModelProto& model, const std::string& model_name,
                       const std::string& model_dir) {
  return import_graph(model, nullptr, model_name, model_dir);
}

ir::Graph import_model(onnx::ModelProto&& model, const std::string& model_name,
                       const std::string& model_dir) {
  return import_graph(model, model.mutable_graph(), model_name, model_dir);
}

namespace {

void export_value(const ir::Graph& g, int v, onnx::ValueInfoProto& vi) {
  const ir::Value& val = g.values[static_cast<size_t>(v)];
  vi.set_name(val.name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  if (val.dtype) tt->set_elem_type(dtype_to_onnx(*val.dtype));
  if (!val.dims) return;
  auto* shape = tt->mutable_shape();
  for (const ir::Dim& d : *val.dims) {
    auto* dim = shape->add_dim();
    if (d.known())
      dim->set_dim_value(d.value);
    else if (!d.symbol.empty())
      dim->set_dim_param(d.symbol);
  }
}

void export_attribute(const std::string& name, const ir::Attribute& a, onnx::AttributeProto& p) {
  using A = onnx::AttributeProto;
  p.set_name(name);
  switch (a.kind) {
    case ir::Attribute::Kind::f:
      p.set_type(A::FLOAT);
      p.set_f(a.f);
      break;
    case ir::Attribute::Kind::i:
      p.set_type(A::INT);
      p.set_i(a.i);
      break;
    case ir::Attribute::Kind::s:
      p.set_type(A::STRING);
      p.set_s(a.s);
      break;
    case ir::Attribute::Kind::t:
      p.set_type(A::TENSOR);
      tensor_to_proto(a.t, "", *p.mutable_t());
      break;
    case ir::Attribute::Kind::fs:
      p.set_type(A::FLOATS);
      for (float f : a.fs) p.add_floats(f);
      break;
    case ir::Attribute::Kind::is:
      p.set_type(A::INTS);
      for (int64_t i : a.is) p.add_ints(i);
      break;
    case ir::Attribute::Kind::ss:
      p.set_type(A::STRINGS);
      for (const auto& s : a.ss) p.add_strings(s);
      break;
    case ir::Attribute::Kind::other: break;
  }
}

}  // namespace

onnx::ModelProto export_model(const ir::Graph& g) {
  onnx::ModelProto m;
  m.set_ir_version(g.ir_version);
  m.set_producer_name("voxrt");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(g.opset);
  onnx::GraphProto* gp = m.mutable_graph();
  gp->set_name(g.model_name);
  for (const auto& [v, t] : g.constants)
    tensor_to_proto(t, g.values[static_cast<size_t>(v)].name, *gp->add_initializer());
  for (int v : g.inputs) export_value(g, v, *gp->add_input());
  for (int v : g.outputs) export_value(g, v, *gp->add_output());
  for (const ir::Node& n : g.nodes) {
    onnx::NodeProto* np = gp->add_node();
    np->set_name(n.name);
    np->set_op_type(n.op_type);
    if (!n.domain.empty()) np->set_domain(n.domain);
    for (int i : n.inputs) np->add_input(i < 0 ? "" : g.values[static_cast<size_t>(i)].name);
    for (int o : n.outputs) np->add_output(o < 0 ? "" : g.values[static_cast<size_t>(o)].name);
    for (const auto& [name, a] : n.attrs.items) export_attribute(name, a, *np->add_attribute());
  }
  return m;
}

}  // namespace voxrt::onnx_io
