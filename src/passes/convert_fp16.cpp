#include <algorithm>
#include <cmath>
#include <map>

#include "backends/ref/tensor_math.h"
#include "core/half.h"
#include "passes/passes.h"

namespace voxrt {

namespace {

constexpr float kHalfMax = 65504.0f;

// Inputs that ONNX defines as float32 whatever the data type (Resize's scales), or that are
// coordinates better kept exact (Resize's roi): they stay float32 in an fp16 graph.
bool slot_stays_f32(const ir::Node& n, size_t input) {
  if (n.op_type == "Resize") return input == 1 || input == 2;
  if (n.op_type == "Upsample") return input == 1;
  return false;
}

Tensor to_half(const Tensor& t, Fp16Report& report) {
  Tensor h = Tensor::empty(DType::f16, t.shape());
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = t.data<float>()[i];
    if (std::isfinite(v) && std::fabs(v) > kHalfMax) {
      v = std::copysign(kHalfMax, v);
      ++report.clamped;
    }
    uint16_t b = float_to_half(v);
    if (v != 0.0f && (b & 0x7fff) == 0) ++report.flushed;
    h.data<uint16_t>()[i] = b;
  }
  report.converted += t.numel();
  return h;
}

bool is_f32(const ir::Graph& g, int v) {
  return v >= 0 && g.values[static_cast<size_t>(v)].dtype == DType::f32;
}

int add_cast(ir::Graph& g, std::vector<ir::Node>& out, int from, DType to,
             const std::string& name) {
  int v = g.add_value(name);
  g.values[static_cast<size_t>(v)].dtype = to;
  ir::Node c;
  c.op_type = "Cast";
  c.name = name;
  c.opset = g.opset;
  c.inputs = {from};
  c.outputs = {v};
  c.attrs.set_int("to", to == DType::f16 ? 10 : 1);
  c.attrs.where = g.where(c);
  out.push_back(std::move(c));
  return v;
}

// Graph output `out` keeps its name: whatever wrote it now writes a new value (`out`'s name +
// `suffix`), and a Cast to `to` writes `out`.
void cast_at_output(ir::Graph& g, std::vector<ir::Node>& nodes, int out, const std::string& suffix,
                    DType to) {
  const std::string name = g.values[static_cast<size_t>(out)].name;
  int inner = g.add_value(name + suffix);
  for (ir::Node& n : nodes) {
    for (int& o : n.outputs)
      if (o == out) o = inner;
    for (int& i : n.inputs)
      if (i == out) i = inner;
  }
  std::vector<ir::Node> tail;
  add_cast(g, tail, inner, to, "graph_output_cast_" + name);
  tail[0].outputs[0] = out;
  nodes.push_back(std::move(tail[0]));
}

// The converted nodes replace the graph's. Activations are retyped by inference afterwards:
// every value but the graph's inputs and the constants starts afresh.
void install(ir::Graph& g, std::vector<ir::Node> nodes) {
  for (size_t v = 0; v < g.values.size(); ++v) {
    int id = static_cast<int>(v);
    bool io = std::count(g.inputs.begin(), g.inputs.end(), id) > 0;
    if (!io && !g.is_constant(id)) g.values[v].dtype.reset();
  }
  g.nodes = std::move(nodes);
  g.topo_sort();
}

}  // namespace

// The model's float32 tensors become float16 except graph I/O (with keep_io_types), the inputs
// and outputs of blocked ops, and inputs ONNX requires in float32. Casts mark every boundary.
Fp16Report convert_fp16(ir::Graph& g, const Fp16Options& opt) {
  Fp16Report report;
  auto consumers = g.consumers();
  auto blocked = [&](const ir::Node& n) { return opt.block_ops.count(n.op_type) != 0; };
  auto needs_f32 = [&](const ir::Node& n, size_t i) { return blocked(n) || slot_stays_f32(n, i); };

  // Constants: convert those read by at least one fp16 consumer; a constant read in both ways is
  // duplicated so each side gets its type.
  std::map<int, int> f32_copy;
  for (auto& [v, t] : g.constants) {
    if (t.dtype() != DType::f32) continue;
    bool any16 = false, any32 = false;
    for (int c : consumers[static_cast<size_t>(v)]) {
      const ir::Node& n = g.nodes[static_cast<size_t>(c)];
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (n.inputs[i] == v) (needs_f32(n, i) ? any32 : any16) = true;
    }
    if (!any16) continue;
    if (any32) f32_copy[v] = -1;
  }
  for (auto& [v, copy] : f32_copy) {
    copy = g.add_value(g.values[static_cast<size_t>(v)].name + "_f32");
    g.values[static_cast<size_t>(copy)].dtype = DType::f32;
    g.constants[copy] = g.constants[v];
  }
  for (auto& [v, t] : g.constants) {
    // The copies just made stay float32 (and have no entry in `consumers`).
    if (static_cast<size_t>(v) >= consumers.size()) continue;
    if (t.dtype() != DType::f32 || f32_copy.count(v) == 0) {
      bool any16 = false;
      for (int c : consumers[static_cast<size_t>(v)]) {
        const ir::Node& n = g.nodes[static_cast<size_t>(c)];
        for (size_t i = 0; i < n.inputs.size(); ++i)
          if (n.inputs[i] == v && !needs_f32(n, i)) any16 = true;
      }
      if (t.dtype() != DType::f32 || !any16) continue;
    }
    t = to_half(t, report);
    g.values[static_cast<size_t>(v)].dtype = DType::f16;
  }

  std::vector<ir::Node> nodes;
  std::map<int, int> input_cast;  // graph input -> its fp16 copy
  for (int v : g.inputs) {
    if (!is_f32(g, v)) continue;
    if (opt.keep_io_types)
      input_cast[v] = add_cast(g, nodes, v, DType::f16,
                               "graph_input_cast_" + g.values[static_cast<size_t>(v)].name);
    else
      g.values[static_cast<size_t>(v)].dtype = DType::f16;
  }

  std::map<int, int> produced_f32;  // value produced in f32 by a blocked op -> its fp16 copy
  for (ir::Node& n : g.nodes) {
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      int& v = n.inputs[i];
      if (v < 0) continue;
      if (f32_copy.count(v) && needs_f32(n, i)) v = f32_copy[v];
      bool keep32 = needs_f32(n, i);
      if (!keep32) {
        if (input_cast.count(v)) v = input_cast[v];
        if (produced_f32.count(v)) v = produced_f32[v];
      } else if (!g.is_constant(v) && g.values[static_cast<size_t>(v)].dtype == DType::f16) {
        v = add_cast(g, nodes, v, DType::f32, n.name + "_input_cast_" + std::to_string(i));
      } else if (is_f32(g, v) && !input_cast.count(v) && !produced_f32.count(v) &&
                 !g.is_constant(v)) {
        // f32 activation about to turn f16 upstream: read it back as f32.
        v = add_cast(g, nodes, v, DType::f32, n.name + "_input_cast_" + std::to_string(i));
      }
    }
    if (blocked(n)) {
      nodes.push_back(n);
      for (int o : n.outputs)
        if (is_f32(g, o))
          produced_f32[o] =
              add_cast(g, nodes, o, DType::f16,
                       n.name + "_output_cast_" + g.values[static_cast<size_t>(o)].name);
      continue;
    }
    if (n.op_type == "Cast" && n.attrs.get_int("to", 0) == 1) n.attrs.items["to"].i = 10;
    if ((n.op_type == "Constant" || n.op_type == "ConstantOfShape") && n.attrs.has("value")) {
      ir::Attribute& a = n.attrs.items["value"];
      if (a.kind == ir::Attribute::Kind::t && a.t.dtype() == DType::f32) a.t = to_half(a.t, report);
    }
    if (n.op_type == "Constant" && n.attrs.has("value_float")) {
      ir::Attribute a;
      a.kind = ir::Attribute::Kind::t;
      a.t = Tensor::empty(DType::f32, {});
      a.t.data<float>()[0] = n.attrs.get_float("value_float", 0);
      n.attrs.items.erase("value_float");
      n.attrs.items["value"] = ir::Attribute{a.kind, 0, 0, "", to_half(a.t, report), {}, {}, {}};
    }
    nodes.push_back(n);
  }
  for (auto& n : nodes)
    for (int& v : n.inputs)
      if (v >= 0 && produced_f32.count(v)) {
        bool is_cast_of_it =
            n.op_type == "Cast" && n.name.find("_output_cast_") != std::string::npos;
        if (!is_cast_of_it) v = produced_f32[v];
      }

  for (int& out : g.outputs) {
    if (produced_f32.count(out)) continue;  // blocked op: already float32
    if (!is_f32(g, out) || g.is_constant(out)) continue;
    if (!opt.keep_io_types) {
      g.values[static_cast<size_t>(out)].dtype = DType::f16;
      continue;
    }
    // The producer now writes an fp16 copy; a Cast back to float32 keeps the output's name.
    cast_at_output(g, nodes, out, "_fp16", DType::f32);
  }
  install(g, std::move(nodes));
  return report;
}

bool convert_fp32(ir::Graph& g) {
  auto is_f16 = [&](int v) {
    return v >= 0 && g.values[static_cast<size_t>(v)].dtype == DType::f16;
  };
  auto f16_attr = [](const ir::Node& n) {
    if (!n.domain.empty()) return false;
    if (n.op_type == "Cast") return n.attrs.get_int("to", 0) == 10;
    if ((n.op_type == "Constant" || n.op_type == "ConstantOfShape") && n.attrs.has("value")) {
      const ir::Attribute& a = n.attrs.items.at("value");
      return a.kind == ir::Attribute::Kind::t && a.t.dtype() == DType::f16;
    }
    return false;
  };
  bool any = false;
  for (size_t v = 0; v < g.values.size() && !any; ++v) any = is_f16(static_cast<int>(v));
  for (const ir::Node& n : g.nodes) any = any || f16_attr(n);
  if (!any) return false;  // a float32 model: left as it is
  auto widen = [](const Tensor& t) {
    Tensor f = Tensor::empty(DType::f32, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i)
      f.data<float>()[i] = half_to_float(t.data<uint16_t>()[i]);
    return f;
  };
  for (auto& [v, t] : g.constants) {
    if (t.dtype() != DType::f16) continue;
    t = widen(t);
    g.values[static_cast<size_t>(v)].dtype = DType::f32;
  }
  std::vector<ir::Node> nodes;
  std::map<int, int> input_cast;  // float16 graph input -> its float32 copy
  for (int v : g.inputs)
    if (is_f16(v))
      input_cast[v] = add_cast(g, nodes, v, DType::f32,
                               "graph_input_cast_" + g.values[static_cast<size_t>(v)].name);
  for (ir::Node& n : g.nodes) {
    for (int& v : n.inputs)
      if (v >= 0 && input_cast.count(v)) v = input_cast[v];
    if (f16_attr(n)) {
      if (n.op_type == "Cast")
        n.attrs.items["to"].i = 1;
      else
        n.attrs.items["value"].t = widen(n.attrs.items["value"].t);
    }
    nodes.push_back(std::move(n));
  }
  for (int out : g.outputs) {
    if (!is_f16(out) || g.is_constant(out) || input_cast.count(out)) continue;
    // The producer now writes a float32 copy; a Cast to float16 keeps the output's name and type.
    cast_at_output(g, nodes, out, "_fp32", DType::f16);
  }
  install(g, std::move(nodes));
  return true;
}

}  // namespace voxrt
