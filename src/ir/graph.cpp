#include "ir/graph.h"

#include <algorithm>
#include <deque>

namespace voxrt::ir {

namespace {
const Attribute& need(const Attributes& a, const std::string& name, Attribute::Kind kind,
                      const char* what) {
  const Attribute& at = a.items.at(name);
  if (at.kind != kind)
    throw Error(a.where + ": attribute '" + name + "' must be " + what);
  return at;
}
}  // namespace

int64_t Attributes::get_int(const std::string& name, int64_t fallback) const {
  if (!has(name)) return fallback;
  return need(*this, name, Attribute::Kind::i, "an int").i;
}
float Attributes::get_float(const std::string& name, float fallback) const {
  if (!has(name)) return fallback;
  return need(*this, name, Attribute::Kind::f, "a float").f;
}
std::string Attributes::get_string(const std::string& name, const std::string& fallback) const {
  if (!has(name)) return fallback;
  return need(*this, name, Attribute::Kind::s, "a string").s;
}
std::vector<int64_t> Attributes::get_ints(const std::string& name,
                                          std::vector<int64_t> fallback) const {
  if (!has(name)) return fallback;
  return need(*this, name, Attribute::Kind::is, "a list of ints").is;
}
std::vector<float> Attributes::get_floats(const std::string& name,
                                          std::vector<float> fallback) const {
  if (!has(name)) return fallback;
  return need(*this, name, Attribute::Kind::fs, "a list of floats").fs;
}
const Tensor* Attributes::get_tensor(const std::string& name) const {
  if (!has(name)) return nullptr;
  return &need(*this, name, Attribute::Kind::t, "a tensor").t;
}

void Attributes::set_int(const std::string& name, int64_t v) {
  Attribute& a = items[name] = Attribute{};
  a.kind = Attribute::Kind::i;
  a.i = v;
}
void Attributes::set_float(const std::string& name, float v) {
  Attribute& a = items[name] = Attribute{};
  a.kind = Attribute::Kind::f;
  a.f = v;
}
void Attributes::set_string(const std::string& name, std::string v) {
  Attribute& a = items[name] = Attribute{};
  a.kind = Attribute::Kind::s;
  a.s = std::move(v);
}
void Attributes::set_ints(const std::string& name, std::vector<int64_t> v) {
  Attribute& a = items[name] = Attribute{};
  a.kind = Attribute::Kind::is;
  a.is = std::move(v);
}
void Attributes::set_floats(const std::string& name, std::vector<float> v) {
  Attribute& a = items[name] = Attribute{};
  a.kind = Attribute::Kind::fs;
  a.fs = std::move(v);
}

int Graph::add_value(const std::string& name) {
  if (!name.empty()) {
    auto it = by_name_.find(name);
    if (it != by_name_.end()) return it->second;
  }
  int id = static_cast<int>(values.size());
  values.push_back(Value{name, std::nullopt, std::nullopt});
  if (!name.empty()) by_name_[name] = id;
  return id;
}

int Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

void Graph::rebuild_index() {
  by_name_.clear();
  for (size_t i = 0; i < values.size(); ++i)
    if (!values[i].name.empty()) by_name_[values[i].name] = static_cast<int>(i);
}

const Tensor* Graph::constant(int v) const {
  auto it = constants.find(v);
  return it == constants.end() ? nullptr : &it->second;
}

std::string Graph::where(const Node& node) const {
  return "model '" + model_name + "', node '" + node.name + "' (" + node.op_type + ")";
}

std::string Graph::where_value(int v) const {
  return "model '" + model_name + "', tensor '" + values[static_cast<size_t>(v)].name + "'";
}

std::vector<int> Graph::producers() const {
  std::vector<int> p(values.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int o : nodes[n].outputs)
      if (o >= 0) p[static_cast<size_t>(o)] = static_cast<int>(n);
  return p;
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> c(values.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int i : nodes[n].inputs)
      if (i >= 0) c[static_cast<size_t>(i)].push_back(static_cast<int>(n));
  return c;
}

void Graph::topo_sort() {
  std::vector<char> available(values.size(), 0);
  for (int v : inputs) available[static_cast<size_t>(v)] = 1;
  for (auto& [v, t] : constants) available[static_cast<size_t>(v)] = 1;
  std::vector<int> prod(values.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n)
    for (int o : nodes[n].outputs) {
      if (o < 0) continue;
      if (prod[static_cast<size_t>(o)] >= 0 || available[static_cast<size_t>(o)])
        throw Error(where(nodes[n]) + ": output '" + values[static_cast<size_t>(o)].name +
                    "' is already produced elsewhere in the graph");
      prod[static_cast<size_t>(o)] = static_cast<int>(n);
    }
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<int>> users(values.size());
  std::deque<int> ready;
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int i : nodes[n].inputs) {
      if (i < 0 || available[static_cast<size_t>(i)]) continue;
      if (prod[static_cast<size_t>(i)] < 0)
        throw Error(where(nodes[n]) + ": input '" + values[static_cast<size_t>(i)].name +
                    "' is neither a graph input, an initializer nor any node's output");
      ++pending[n];
      users[static_cast<size_t>(i)].push_back(static_cast<int>(n));
    }
    if (pending[n] == 0) ready.push_back(static_cast<int>(n));
  }
  std::vector<Node> sorted;
  sorted.reserve(nodes.size());
  while (!ready.empty()) {
    int n = ready.front();
    ready.pop_front();
    for (int o : nodes[static_cast<size_t>(n)].outputs) {
      if (o < 0) continue;
      for (int u : users[static_cast<size_t>(o)])
        if (--pending[static_cast<size_t>(u)] == 0) ready.push_back(u);
      users[static_cast<size_t>(o)].clear();
    }
    sorted.push_back(std::move(nodes[static_cast<size_t>(n)]));
  }
  if (sorted.size() != nodes.size()) {
    for (size_t n = 0; n < nodes.size(); ++n)
      if (pending[n] > 0)
        throw Error(where(nodes[n]) + ": the graph has a cycle through this node");
  }
  nodes = std::move(sorted);
}

void Graph::remove_dead() {
  std::vector<char> live(values.size(), 0);
  for (int o : outputs) live[static_cast<size_t>(o)] = 1;
  std::vector<char> keep(nodes.size(), 0);
  for (size_t k = nodes.size(); k-- > 0;) {
    const Node& n = nodes[k];
    bool used = std::any_of(n.outputs.begin(), n.outputs.end(),
                            [&](int o) { return o >= 0 && live[static_cast<size_t>(o)]; });
    if (!used) continue;
    keep[k] = 1;
    for (int i : n.inputs)
      if (i >= 0) live[static_cast<size_t>(i)] = 1;
  }
  std::vector<Node> kept;
  for (size_t k = 0; k < nodes.size(); ++k)
    if (keep[k]) kept.push_back(std::move(nodes[k]));
  nodes = std::move(kept);
  for (auto it = constants.begin(); it != constants.end();)
    it = live[static_cast<size_t>(it->first)] ? std::next(it) : constants.erase(it);
}

}  // namespace voxrt::ir
