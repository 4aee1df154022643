#include "runtime/compile.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <sstream>

#include "backends/cpu/cpu_op.h"
#include "backends/ref/ops/fused.h"
#include "onnx/importer.h"
#include "onnx/proto_io.h"
#include "passes/passes.h"
#include "runtime/plan.h"
#include "runtime/thread_pool.h"

namespace voxrt {

std::vector<std::unique_ptr<Op>> build_ops(ir::Graph& g) {
  const OpRegistry& reg = OpRegistry::instance();
  std::vector<std::unique_ptr<Op>> ops;
  ops.reserve(g.nodes.size());
  for (int v : g.inputs)
    if (!g.values[static_cast<size_t>(v)].dtype)
      throw Error(g.where_value(v) + ": graph input has no element type");
  for (const ir::Node& n : g.nodes) {
    std::unique_ptr<Op> op = reg.create(n, g);
    std::vector<ValueMeta> in(n.inputs.size());
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      int v = n.inputs[i];
      if (v < 0) continue;
      const auto& dt = g.values[static_cast<size_t>(v)].dtype;
      if (!dt)
        throw Error(g.where(n) + ": the element type of input '" +
                    g.values[static_cast<size_t>(v)].name + "' is unknown");
      in[i].present = true;
      in[i].dtype = *dt;
      in[i].value = g.constant(v);
      if (in[i].value) in[i].shape = in[i].value->shape();
    }
    std::vector<DType> out = op->infer_types(in);
    for (size_t o = 0; o < n.outputs.size() && o < out.size(); ++o)
      if (n.outputs[o] >= 0) g.values[static_cast<size_t>(n.outputs[o])].dtype = out[o];
    ops.push_back(std::move(op));
  }
  return ops;
}

namespace {

// Weights a lowered op packed into its own panels are kept twice otherwise (a model's weights
// are most of a Session's memory beside the activations: 19 MiB of 112 for MONAI's spleen UNet
// in fp32). A constant read only as a packed input of lowered ops keeps its shape (planning and
// MACs read it) but no bytes: a view of no data, which nothing reads at run time.
void release_packed_constants(CompiledModel& m) {
  ir::Graph& g = m.graph;
  std::vector<int> packed_uses(g.values.size(), 0), uses(g.values.size(), 0);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    for (int v : n.inputs)
      if (v >= 0) ++uses[static_cast<size_t>(v)];
    // A node whose X is constant too may be computed by the reference at plan time (folding,
    // when the passes are off), which reads W: its constants stay.
    const bool runs = n.has_input(0) && !g.is_constant(n.inputs[0]);
    if (const auto* op = dynamic_cast<const cpu::CpuOp*>(m.ops[k].get()); op && runs)
      for (int i : op->packed_inputs())
        if (n.has_input(i)) ++packed_uses[static_cast<size_t>(n.inputs[static_cast<size_t>(i)])];
  }
  for (int v : g.outputs) ++uses[static_cast<size_t>(v)];
  for (auto& [v, t] : g.constants)
    if (packed_uses[static_cast<size_t>(v)] > 0 &&
        packed_uses[static_cast<size_t>(v)] == uses[static_cast<size_t>(v)])
      t = Tensor::view(t.dtype(), t.shape(), nullptr);
}

ir::Graph checked(ir::Graph g) {
  g.topo_sort();
  build_ops(g);
  return g;
}

// A value's declared shape, where it declares one without symbolic dims.
std::optional<Shape> declared_shape(const ir::Value& v) {
  if (!v.dims ||
      std::any_of(v.dims->begin(), v.dims->end(), [](const ir::Dim& d) { return !d.known(); }))
    return std::nullopt;
  Shape shape;
  for (const ir::Dim& d : *v.dims) shape.push_back(d.value);
  return shape;
}

// Each value's shape for the inputs' expected shapes (CompileOptions::input_shapes), inferred
// through the reference ops before lowering. Inputs not given take their declared shapes; where
// one has symbolic dims, none are known and the result is empty (kernels for any shape, as
// without expected shapes), as where only declared shapes are used and they do not fit the
// model. A name that is no input, and given shapes the model refuses, are Errors.
std::vector<Shape> expected_shapes(const CompiledModel& m,
                                   const std::vector<std::pair<std::string, Shape>>& given) {
  const ir::Graph& g = m.graph;
  std::vector<Shape> inputs(g.inputs.size());
  std::vector<char> set(g.inputs.size(), 0);
  for (const auto& [name, shape] : given) {
    size_t i = 0;
    while (i < g.inputs.size() &&
           !(name.empty() ? g.inputs.size() == 1
                          : g.values[static_cast<size_t>(g.inputs[i])].name == name))
      ++i;
    if (i == g.inputs.size())
      throw Error("model '" + g.model_name + "': an expected shape " + shape_str(shape) +
                  " is given for " +
                  (name.empty() ? std::string("an unnamed input, but the model has ") +
                                      std::to_string(g.inputs.size()) + " inputs"
                                : "'" + name + "', which is not an input"));
    inputs[i] = shape;
    set[i] = 1;
  }
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    if (set[i]) continue;
    std::optional<Shape> declared = declared_shape(g.values[static_cast<size_t>(g.inputs[i])]);
    if (!declared) return {};
    inputs[i] = std::move(*declared);
  }
  if (given.empty()) {  // the declared shapes alone: a guess, dropped where it does not fit
    try {
      return make_plan(m, inputs).shapes;
    } catch (const Error&) {
      return {};
    }
  }
  return make_plan(m, inputs).shapes;
}

}  // namespace

ir::Graph import_checked(const void* bytes, size_t size, const std::string& model_name,
                         const std::string& model_dir) {
  onnx::ModelProto proto = onnx_io::parse_model(bytes, size, model_name);
  return checked(onnx_io::import_model(std::move(proto), model_name, model_dir));
}

ir::Graph import_checked(onnx_io::FileBytes&& bytes, const std::string& model_name,
                         const std::string& model_dir) {
  onnx::ModelProto proto = onnx_io::parse_model(bytes.data(), bytes.size(), model_name);
  bytes.release();  // parsed: the file's bytes are not needed any more
  return checked(onnx_io::import_model(std::move(proto), model_name, model_dir));
}

CompiledModel compile_model(const void* bytes, size_t size, const std::string& model_name,
                            const std::string& model_dir, const CompileOptions& options) {
  return compile_graph(import_checked(bytes, size, model_name, model_dir), options);
}

CompiledModel compile_model(onnx_io::FileBytes&& bytes, const std::string& model_name,
                            const std::string& model_dir, const CompileOptions& options) {
  return compile_graph(import_checked(std::move(bytes), model_name, model_dir), options);
}

CompiledModel compile_graph(ir::Graph graph, const CompileOptions& options) {
  CompiledModel m;
  m.graph = std::move(graph);
  if (options.fp16) {
    // Constant nodes become initializers first, so each is converted by what reads it (Resize
    // scales stay float32) instead of being converted and cast back.
    fold_constants(m.graph);
    convert_fp16(m.graph, Fp16Options{});
    build_ops(m.graph);
  } else if (options.fp32 && convert_fp32(m.graph)) {
    build_ops(m.graph);
  }
  m.graph_before_passes = graph_to_text(m.graph);
  if (options.optimize) run_passes(m.graph, options.stop_after);
  m.graph.remove_dead();
  m.ops = build_ops(m.graph);
  if (options.cpu_kernels) {
    const cpu::Isa isa = cpu::max_isa();
    const std::vector<Shape> shapes = expected_shapes(m, options.input_shapes);
    auto lower = [&](size_t k) {
      const ir::Node& n = m.graph.nodes[k];
      const Shape* out = !shapes.empty() && !n.outputs.empty() && n.outputs[0] >= 0
                             ? &shapes[static_cast<size_t>(n.outputs[0])]
                             : nullptr;
      m.ops[k] = cpu::CpuRegistry::instance().lower(n, m.graph, std::move(m.ops[k]), isa,
                                                    options.fpmath, options.winograd, out);
    };
    if (options.pool && options.pool->size() > 1) {
      // Lowerings read the graph and write only their own node's op; packing a layer's weights
      // is most of a large model's load. A node's failure is kept, and the first node's in
      // graph order thrown, as the loop below would.
      std::vector<std::exception_ptr> failed(m.ops.size());
      options.pool->parallel_for(
          static_cast<int64_t>(m.ops.size()),
          [&](int64_t begin, int64_t end) {
            for (int64_t k = begin; k < end; ++k) try {
                lower(static_cast<size_t>(k));
              } catch (...) {
                failed[static_cast<size_t>(k)] = std::current_exception();
              }
          },
          1);
      for (const std::exception_ptr& f : failed)
        if (f) std::rethrow_exception(f);
    } else {
      for (size_t k = 0; k < m.ops.size(); ++k) lower(k);
    }
    release_packed_constants(m);
  }
  return m;
}

std::string graph_to_text(const ir::Graph& g) {
  std::ostringstream s;
  auto val = [&](int v) {
    if (v < 0) return std::string("-");
    const ir::Value& x = g.values[static_cast<size_t>(v)];
    std::string t = x.name;
    if (x.dtype) t += ":" + std::string(dtype_name(*x.dtype));
    if (const Tensor* c = g.constant(v)) t += "[" + shape_str(c->shape()) + "]";
    return t;
  };
  s << "graph '" << g.model_name << "' opset " << g.opset << ", " << g.nodes.size() << " nodes, "
    << g.constants.size() << " constants\n";
  for (int v : g.inputs) s << "  input  " << val(v) << "\n";
  for (const ir::Node& n : g.nodes) {
    s << "  " << n.name << ": " << n.op_type << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) s << (i ? ", " : "") << val(n.inputs[i]);
    s << ") -> ";
    for (size_t i = 0; i < n.outputs.size(); ++i) s << (i ? ", " : "") << val(n.outputs[i]);
    s << "\n";
  }
  for (int v : g.outputs) s << "  output " << val(v) << "\n";
  return s.str();
}

}  // namespace voxrt
