// Builds small ONNX models in memory for tests.
//
//   ModelBuilder b(17);
//   b.input("x", onnx::TensorProto::FLOAT, {"N", 4});
//   b.node("Relu", {"x"}, {"y"});
//   b.output("y", onnx::TensorProto::FLOAT);
//   voxrt::Session s = b.session();
#pragma once

#include <onnx/onnx.pb.h>

#include <string>
#include <variant>
#include <vector>

#include "voxrt/voxrt.h"

namespace voxrt::test {

class ModelBuilder {
 public:
  explicit ModelBuilder(int opset, int64_t ir_version = 8) {
    model_.set_ir_version(ir_version);
    auto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  /// Dims are numbers or symbol names.
  using DimSpec = std::variant<int64_t, std::string>;
  void input(const std::string& name, int elem_type, const std::vector<DimSpec>& dims) {
    value_info(*model_.mutable_graph()->add_input(), name, elem_type, dims, true);
  }
  void output(const std::string& name, int elem_type) {
    value_info(*model_.mutable_graph()->add_output(), name, elem_type, {}, false);
  }
  void initializer(const std::string& name, const std::vector<int64_t>& dims,
                   const std::vector<float>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
  }
  void initializer_i64(const std::string& name, const std::vector<int64_t>& dims,
                       const std::vector<int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in,
                        const std::vector<std::string>& out) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(model_.graph().node_size()));
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return *n;
  }
  static void attr_int(onnx::NodeProto& n, const std::string& name, int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_ints(onnx::NodeProto& n, const std::string& name,
                        const std::vector<int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void attr_float(onnx::NodeProto& n, const std::string& name, float v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }

  onnx::ModelProto& proto() { return model_; }
  std::string bytes() const { return model_.SerializeAsString(); }
  Session session(SessionOptions opt = {}) const {
    std::string b = bytes();
    if (opt.model_name.empty()) opt.model_name = "test.onnx";
    return Session(b.data(), b.size(), opt);
  }

 private:
  static void value_info(onnx::ValueInfoProto& vi, const std::string& name, int elem_type,
                         const std::vector<DimSpec>& dims, bool with_shape) {
    vi.set_name(name);
    auto* tt = vi.mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    if (!with_shape) return;
    auto* shape = tt->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = shape->add_dim();
      if (std::holds_alternative<int64_t>(d))
        dim->set_dim_value(std::get<int64_t>(d));
      else
        dim->set_dim_param(std::get<std::string>(d));
    }
  }
  onnx::ModelProto model_;
};

}  // namespace voxrt::test
