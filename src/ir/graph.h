// The in-memory graph every layer after the loader works on: values with dtypes and (possibly
// symbolic) shapes, nodes with typed attributes, and constant tensors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "voxrt/error.h"
#include "voxrt/tensor.h"

namespace voxrt::ir {

/// One dimension as declared in the model: a number, a symbol ("batch_size"), or unknown.
struct Dim {
  int64_t value = -1;
  std::string symbol;
  bool known() const { return value >= 0; }
};

struct Value {
  std::string name;
  std::optional<DType> dtype;
  std::optional<std::vector<Dim>> dims;  // nullopt: rank unknown
};

struct Attribute {
  enum class Kind { f, i, s, t, fs, is, ss, other };
  Kind kind = Kind::other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> fs;
  std::vector<int64_t> is;
  std::vector<std::string> ss;
};

class Node;

/// Attributes of one node, read through typed getters that name the node on error.
class Attributes {
 public:
  std::map<std::string, Attribute> items;

  bool has(const std::string& name) const { return items.count(name) != 0; }
  int64_t get_int(const std::string& name, int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> get_floats(const std::string& name, std::vector<float> fallback = {}) const;
  const Tensor* get_tensor(const std::string& name) const;

  /// Sets (or replaces) an attribute of that kind: the passes' rewrites.
  void set_int(const std::string& name, int64_t v);
  void set_float(const std::string& name, float v);
  void set_string(const std::string& name, std::string v);
  void set_ints(const std::string& name, std::vector<int64_t> v);
  void set_floats(const std::string& name, std::vector<float> v);

  /// Where getters report errors, e.g. "model 'unet.onnx', node 'Conv_3' (Conv)".
  std::string where;
};

class Node {
 public:
  std::string name;
  std::string op_type;
  std::string domain;
  int opset = 0;             // default-domain opset the model imports
  std::vector<int> inputs;   // value ids; -1 marks an omitted optional input
  std::vector<int> outputs;  // value ids; -1 marks an omitted optional output
  Attributes attrs;

  int num_inputs() const { return static_cast<int>(inputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs[static_cast<size_t>(i)] >= 0; }
};

class Graph {
 public:
  std::string model_name;
  int64_t ir_version = 0;
  int opset = 0;
  std::vector<Value> values;
  std::map<int, Tensor> constants;  // initializers and folded values, by value id
  std::vector<Node> nodes;          // topologically sorted after load
  std::vector<int> inputs;          // graph inputs that are not constants
  std::vector<int> outputs;

  int add_value(const std::string& name);
  /// -1 if absent.
  int find_value(const std::string& name) const;
  bool is_constant(int v) const { return constants.count(v) != 0; }
  const Tensor* constant(int v) const;

  /// "model 'unet.onnx', node 'Conv_3' (Conv)"
  std::string where(const Node& node) const;
  std::string where_value(int v) const;

  /// Orders nodes so each follows its producers; throws voxrt::Error naming a node on a cycle or
  /// on an input that nothing produces.
  void topo_sort();
  /// Drops nodes whose outputs are never used and values nothing refers to.
  void remove_dead();
  /// For each value id, the indices of nodes that consume it.
  std::vector<std::vector<int>> consumers() const;
  /// For each value id, the index of the node producing it, or -1.
  std::vector<int> producers() const;

 private:
  std::map<std::string, int> by_name_;

 public:
  void rebuild_index();
};

}  // namespace voxrt::ir
