// A graph of one node built in memory, with the tensors that feed it: what the kernel tests and
// the kernel benchmarks both run through the reference op and the CPU lowerings.
//
//   OneNodeGraph n("Relu", 17);
//   n.input("x", x);
//   n.output("y");
//   ir::Graph g = n.graph();
#pragma once

#include <string>
#include <vector>

#include "backends/ref/op.h"
#include "ir/graph.h"

namespace voxrt::test {

class OneNodeGraph {
 public:
  OneNodeGraph(const std::string& op, int opset, const std::string& domain = "") {
    g_.model_name = "one_node.onnx";
    g_.opset = opset;
    node_.op_type = op;
    node_.domain = domain;
    node_.name = op + "_0";
    node_.opset = opset;
  }

  /// A runtime input (its dtype and shape come from `t`).
  void input(const std::string& name, Tensor t) { add(name, std::move(t), false); }
  /// A constant input (weights, scales).
  void constant(const std::string& name, Tensor t) { add(name, std::move(t), true); }
  void omitted_input() {
    node_.inputs.push_back(-1);
    feeds_.emplace_back();
  }
  void output(const std::string& name) { node_.outputs.push_back(g_.add_value(name)); }

  void attr_int(const std::string& k, int64_t v) { set(k, ir::Attribute::Kind::i).i = v; }
  void attr_float(const std::string& k, float v) { set(k, ir::Attribute::Kind::f).f = v; }
  void attr_string(const std::string& k, const std::string& v) { set(k, ir::Attribute::Kind::s).s = v; }
  void attr_ints(const std::string& k, std::vector<int64_t> v) {
    set(k, ir::Attribute::Kind::is).is = std::move(v);
  }

  /// The graph holding the node, every output a graph output ("y" when none was named).
  ir::Graph graph() const {
    ir::Graph g = g_;
    ir::Node n = node_;
    if (n.outputs.empty()) n.outputs = {g.add_value("y")};
    g.outputs = n.outputs;
    g.nodes = {n};
    g.nodes[0].attrs.where = g.where(g.nodes[0]);
    return g;
  }
  /// One entry per node input: what inference sees (values known) and what the op reads.
  std::vector<ValueMeta> metas() const {
    std::vector<ValueMeta> m(feeds_.size());
    for (size_t i = 0; i < feeds_.size(); ++i)
      if (feeds_[i].defined()) m[i] = ValueMeta{true, feeds_[i].dtype(), feeds_[i].shape(), &feeds_[i]};
    return m;
  }
  std::vector<const Tensor*> inputs() const {
    std::vector<const Tensor*> in(feeds_.size(), nullptr);
    for (size_t i = 0; i < feeds_.size(); ++i)
      if (feeds_[i].defined()) in[i] = &feeds_[i];
    return in;
  }
  const std::vector<Tensor>& feeds() const { return feeds_; }
  size_t num_inputs() const { return node_.inputs.size(); }

 private:
  void add(const std::string& name, Tensor t, bool is_constant) {
    int v = g_.add_value(name);
    g_.values[static_cast<size_t>(v)].dtype = t.dtype();
    if (is_constant)
      g_.constants[v] = t;
    else
      g_.inputs.push_back(v);
    node_.inputs.push_back(v);
    feeds_.push_back(std::move(t));
  }
  ir::Attribute& set(const std::string& k, ir::Attribute::Kind kind) {
    ir::Attribute& a = node_.attrs.items[k];
    a.kind = kind;
    return a;
  }

  ir::Graph g_;
  ir::Node node_;
  std::vector<Tensor> feeds_;
};

}  // namespace voxrt::test
