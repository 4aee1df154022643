// Helpers of the pass tests (passes_test.cpp, conv_passes_test.cpp): graphs run node by node on
// the reference ops or the CPU lowerings, the rewritten graph against the graph as it was, and
// the fixture models as the passes before a pass leave them.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "backends/cpu/cpu_op.h"
#include "passes/passes.h"
#include "runtime/compile.h"
#include "support/paths.h"
#include "support/rel_l2.h"

namespace voxrt::test {

// Runs every node in order (the reference ops, or the CPU lowerings at the machine's ISA).
inline std::vector<Tensor> run_graph(ir::Graph g, const std::vector<Tensor>& inputs, bool lower) {
  std::vector<std::unique_ptr<Op>> ops = build_ops(g);
  if (lower)
    for (size_t k = 0; k < ops.size(); ++k)
      ops[k] = cpu::CpuRegistry::instance().lower(g.nodes[k], g, std::move(ops[k]), cpu::max_isa());
  std::vector<Tensor> vals(g.values.size());
  for (const auto& [v, t] : g.constants) vals[static_cast<size_t>(v)] = t;
  for (size_t i = 0; i < inputs.size(); ++i) vals[static_cast<size_t>(g.inputs[i])] = inputs[i];
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    std::vector<ValueMeta> metas(n.inputs.size());
    std::vector<const Tensor*> ins(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] < 0) continue;
      const Tensor& t = vals[static_cast<size_t>(n.inputs[i])];
      metas[i] = ValueMeta{true, t.dtype(), t.shape(), &t};
      ins[i] = &t;
    }
    std::vector<DType> types = ops[k]->infer_types(metas);
    std::vector<Shape> shapes = ops[k]->infer_shapes(metas);
    std::vector<Tensor> outs;
    for (size_t o = 0; o < n.outputs.size(); ++o)
      outs.push_back(n.outputs[o] >= 0 ? Tensor::empty(types[o], shapes[o]) : Tensor());
    ops[k]->run(RunContext{}, ins, outs);
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) vals[static_cast<size_t>(n.outputs[o])] = outs[o];
  }
  std::vector<Tensor> out;
  for (int v : g.outputs) out.push_back(vals[static_cast<size_t>(v)]);
  return out;
}

inline int count_ops(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node& node : g.nodes) n += node.op_type == op;
  return n;
}

// The rewritten graph against the graph as it was: `before` on the reference ops, `after` on the
// reference ops and on the CPU lowerings, each within `tol` (relative L2).
inline void expect_same_outputs(const ir::Graph& before, const ir::Graph& after,
                                const std::vector<Tensor>& inputs, double tol,
                                const std::string& what) {
  Tensor y0 = run_graph(before, inputs, false)[0];
  for (bool lower : {false, true})
    EXPECT_LT(rel_l2(run_graph(after, inputs, lower)[0], y0), tol)
        << what << (lower ? " lowered" : " reference");
}

inline Tensor random_input(const Shape& s, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  Tensor x = Tensor::empty(DType::f32, s);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = u(rng);
  return x;
}

inline ir::Graph import(const std::string& bytes) {
  return import_checked(bytes.data(), bytes.size(), "test.onnx", "");
}

inline std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A fixture model (tests/fixtures/<file>) as the passes up to `stop_after` leave it: the graph a
// pass after those sees. Throws if the file is missing.
inline ir::Graph fixture_after(const std::string& file, const char* stop_after) {
  std::string bytes = read(voxrt::test::source_dir() + "/tests/fixtures/" + file);
  if (bytes.empty()) throw Error("missing fixture " + file);
  ir::Graph g = import(bytes);
  run_passes(g, stop_after);
  return g;
}

inline std::vector<float> pattern(size_t n, unsigned salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 37 + salt) % 11) / 11.0f - 0.45f;
  return v;
}

}  // namespace voxrt::test
