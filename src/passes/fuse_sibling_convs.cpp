#include <algorithm>
#include <cstring>
#include <map>

#include "backends/ref/op.h"
#include "backends/ref/ops/fused.h"
#include "backends/ref/tensor_math.h"
#include "passes/passes.h"

namespace voxrt {

namespace {

// A convolution the pass may join with its siblings: one output, constant weights and bias, one
// group, X whole (no fused Concat), no residual, head, fused Cast or per-channel slopes yet.
bool joinable(const ir::Graph& g, const ir::Node& n) {
  const bool plain = n.op_type == "Conv" && n.domain.empty();
  const bool fused = n.op_type == "FusedConv" && n.domain == kInternalDomain;
  if ((!plain && !fused) || n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs.empty() ||
      n.inputs[0] < 0 || !n.has_input(1) || n.has_input(3) || n.num_inputs() > 4 ||
      n.attrs.get_int("group", 1) != 1 || n.attrs.get_int("x_parts", 1) != 1 ||
      n.attrs.has(kFusedHead) || n.attrs.has(kFusedCastTo) || n.attrs.has(kFusedSlopes))
    return false;
  const Tensor* w = g.constant(n.inputs[1]);
  if (!w || w->rank() < 3 || w->dim(0) < 1) return false;
  if (n.has_input(2)) {
    const Tensor* b = g.constant(n.inputs[2]);
    if (!b || b->dtype() != w->dtype() || b->rank() != 1 || b->dim(0) != w->dim(0)) return false;
  }
  return g.values[static_cast<size_t>(n.outputs[0])].dtype.has_value();
}

// Whether two joinable convolutions compute over the same windows of the same input channels.
bool same_window(const ir::Graph& g, const ir::Node& a, const ir::Node& b) {
  const Tensor& wa = *g.constant(a.inputs[1]);
  const Tensor& wb = *g.constant(b.inputs[1]);
  if (wa.dtype() != wb.dtype() || wa.rank() != wb.rank() ||
      g.values[static_cast<size_t>(a.outputs[0])].dtype !=
          g.values[static_cast<size_t>(b.outputs[0])].dtype)
    return false;
  for (int64_t d = 1; d < wa.rank(); ++d)
    if (wa.dim(d) != wb.dim(d)) return false;
  for (const char* name : {"strides", "pads", "dilations", "kernel_shape"})
    if (a.attrs.get_ints(name, {}) != b.attrs.get_ints(name, {})) return false;
  return a.attrs.get_string("auto_pad", "NOTSET") == b.attrs.get_string("auto_pad", "NOTSET");
}

// The slope of a LeakyRelu that does what node n's activation does.
float slope_of(const ir::Node& n) {
  const FusedEpilogue e = FusedEpilogue::from_attrs(n.attrs);
  switch (e.kind) {
    case FusedEpilogue::Kind::relu: return 0.0f;
    case FusedEpilogue::Kind::leaky_relu: return e.alpha;
    case FusedEpilogue::Kind::none: break;
  }
  return 1.0f;
}

int new_value(ir::Graph& g, const std::string& base, DType dtype) {
  std::string name = base;
  for (int i = 1; g.find_value(name) >= 0; ++i) name = base + "_" + std::to_string(i);
  const int v = g.add_value(name);
  g.values[static_cast<size_t>(v)].dtype = dtype;
  return v;
}

// The members' weights (or biases, zeros where a member has none) joined along output channels.
Tensor join_rows(const ir::Graph& g, const std::vector<const ir::Node*>& members, int input) {
  const Tensor& w0 = *g.constant(members[0]->inputs[1]);
  Shape shape = input == 1 ? w0.shape() : Shape{0};
  shape[0] = 0;
  for (const ir::Node* m : members) shape[0] += g.constant(m->inputs[1])->dim(0);
  Tensor joined = Tensor::zeros(w0.dtype(), shape);
  size_t at = 0;
  for (const ir::Node* m : members) {
    const int64_t rows = g.constant(m->inputs[1])->dim(0);
    const size_t bytes =
        static_cast<size_t>(input == 1 ? g.constant(m->inputs[1])->numel() : rows) *
        dtype_size(w0.dtype());
    if (m->has_input(input))
      std::memcpy(static_cast<uint8_t*>(joined.raw()) + at, g.constant(m->inputs[input])->raw(),
                  bytes);
    at += bytes;
  }
  return joined;
}

}  // namespace

// Convolutions of one input over the same windows (a MONAI residual unit's first convolution and
// its residual convolution, both 3x3x3 at stride 2 from the unit's input) become one
// voxrt.FusedConv whose output holds all their channels, each member's activation kept as a
// per-channel LeakyRelu slope (1: none), and a Split along channels gives back the members'
// outputs. The input is then padded, split into stride phases and read once rather than once a
// member, and at batch 1 the arena makes the Split's outputs slices of the joint output
// (runtime/arena.cpp), so it copies nothing. Runs after the epilogues joined the convolutions and
// after heads: a convolution that took a head or a residual stays alone.
void fuse_sibling_convs(ir::Graph& g) {
  const auto consumers = g.consumers();
  std::vector<char> drop(g.nodes.size(), 0), taken(g.nodes.size(), 0);
  std::map<size_t, ir::Node> split_after;  // the joint node's index -> the Split after it
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (taken[k] || !joinable(g, g.nodes[k])) continue;
    std::vector<size_t> group = {k};
    for (int c : consumers[static_cast<size_t>(g.nodes[k].inputs[0])]) {
      const size_t j = static_cast<size_t>(c);
      if (j > k && !taken[j] && joinable(g, g.nodes[j]) &&
          g.nodes[j].inputs[0] == g.nodes[k].inputs[0] && same_window(g, g.nodes[k], g.nodes[j]) &&
          std::find(group.begin(), group.end(), j) == group.end())
        group.push_back(j);
    }
    if (group.size() < 2) continue;
    std::sort(group.begin(), group.end());
    std::vector<const ir::Node*> members;
    for (size_t j : group) {
      members.push_back(&g.nodes[j]);
      taken[j] = 1;
    }

    // The joint weights, bias and activation.
    const ir::Node& first = g.nodes[k];
    const DType out_type = *g.values[static_cast<size_t>(first.outputs[0])].dtype;
    Tensor w = join_rows(g, members, 1);
    const bool any_bias = std::any_of(members.begin(), members.end(),
                                      [](const ir::Node* m) { return m->has_input(2); });
    std::vector<float> slopes;
    std::vector<int64_t> split;
    bool same_act = true;
    for (const ir::Node* m : members) {
      const int64_t rows = g.constant(m->inputs[1])->dim(0);
      split.push_back(rows);
      slopes.insert(slopes.end(), static_cast<size_t>(rows), slope_of(*m));
      same_act = same_act && slope_of(*m) == slope_of(first);
    }
    ir::Node joint;
    joint.name = first.name + "/siblings";
    joint.op_type = "FusedConv";
    joint.domain = kInternalDomain;
    joint.opset = first.opset;
    joint.attrs = first.attrs;
    joint.attrs.where = g.where(joint);
    joint.attrs.items.erase("activation");
    joint.attrs.items.erase("alpha");
    joint.attrs.set_string("activation", "");
    if (!same_act) {
      joint.attrs.set_floats(kFusedSlopes, slopes);
    } else if (first.op_type == "FusedConv") {
      for (const char* name : {"activation", "alpha"})
        if (first.attrs.has(name)) joint.attrs.items[name] = first.attrs.items.at(name);
    }
    const int wv = new_value(g, joint.name + "_W", w.dtype());
    const int bv = any_bias ? new_value(g, joint.name + "_B", w.dtype()) : -1;
    if (any_bias) g.constants[bv] = join_rows(g, members, 2);
    g.constants[wv] = std::move(w);
    const int y = new_value(g, joint.name + "_Y", out_type);
    joint.inputs = {first.inputs[0], wv, bv};
    joint.outputs = {y};

    ir::Node sp;
    sp.name = first.name + "/split";
    sp.op_type = "Split";
    sp.opset = first.opset;
    sp.inputs = {y};
    sp.attrs.set_int("axis", 1);
    sp.attrs.where = g.where(sp);
    if (sp.opset >= 13) {
      Tensor t = Tensor::empty(DType::i64, {static_cast<int64_t>(split.size())});
      std::memcpy(t.raw(), split.data(), split.size() * sizeof(int64_t));
      const int sv = new_value(g, sp.name + "_sizes", DType::i64);
      g.constants[sv] = std::move(t);
      sp.inputs.push_back(sv);
    } else {
      sp.attrs.set_ints("split", split);
    }
    for (const ir::Node* m : members) sp.outputs.push_back(m->outputs[0]);
    for (size_t j : group) drop[j] = j != k;
    g.nodes[k] = std::move(joint);
    split_after[k] = std::move(sp);
  }
  if (split_after.empty()) return;
  // The Splits after their joint nodes, where the first member stood: every member's consumers
  // follow it.
  std::vector<ir::Node> nodes;
  nodes.reserve(g.nodes.size() + split_after.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (drop[k]) continue;
    nodes.push_back(std::move(g.nodes[k]));
    auto it = split_after.find(k);
    if (it != split_after.end()) nodes.push_back(std::move(it->second));
  }
  g.nodes = std::move(nodes);
  g.remove_dead();
}

}  // namespace voxrt
