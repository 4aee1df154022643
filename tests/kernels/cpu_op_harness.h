// Builds a one-node graph, runs its node through the reference op and through the CPU lowering
// at a chosen ISA (on two threads), and measures the relative L2 difference. Shared by the
// eltwise, norm, pool, resize and data kernel tests.
//
//   OneNode t("Relu", 17);
//   t.input("x", random_tensor(DType::f32, {1, 8, 9, 10, 11}, rng));
//   t.output("y");
//   CpuRun r = t.run(Isa::avx2);   // r.error, r.kernel
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/cpu_op.h"
#include "backends/ref/tensor_math.h"
#include "runtime/compile.h"
#include "runtime/thread_pool.h"

namespace voxrt::test {

using cpu::Isa;

inline const std::vector<Isa>& all_isas() {
  static const std::vector<Isa> v = {Isa::scalar, Isa::avx2, Isa::avx512, Isa::avx512fp16};
  return v;
}

inline std::string isa_param_name(const testing::TestParamInfo<Isa>& i) {
  return cpu::isa_name(i.param);
}

/// Skips the current test when the CPU cannot run `isa`.
#define VOXRT_REQUIRE_ISA(isa)                                                       \
  do {                                                                               \
    if ((isa) > cpu::cpu_features().detected)                                        \
      GTEST_SKIP() << "this CPU lacks " << cpu::isa_name(isa) << " (detected "       \
                   << cpu::isa_name(cpu::cpu_features().detected) << ")";            \
  } while (0)

/// Uniform values in [lo, hi), none exactly zero, stored as `t`.
inline Tensor random_tensor(DType t, const Shape& shape, std::mt19937& rng, double lo = -2,
                            double hi = 2) {
  Tensor x = Tensor::empty(t, shape);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = u(rng);
    if (v == 0) v = 0.5;
    ref::store(x, i, v);
  }
  return x;
}

struct CpuRun {
  double error = 0;    // relative L2 of the lowered output against the reference
  std::string kernel;  // what the lowering chose ("ref" when it declined)
  std::vector<Tensor> ref_out, cpu_out;
};

/// sqrt(sum (a - b)^2 / sum b^2); NaN where exactly one side is NaN counts as infinite error.
inline double rel_l2(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    double x = ref::load(a, i), y = ref::load(b, i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) return INFINITY;
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) return INFINITY;
      continue;
    }
    num += (x - y) * (x - y);
    den += y * y;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

class OneNode {
 public:
  OneNode(const std::string& op, int opset, const std::string& domain = "") {
    g_.model_name = "test.onnx";
    g_.opset = opset;
    node_.op_type = op;
    node_.domain = domain;
    node_.name = op + "_0";
    node_.opset = opset;
  }

  /// A runtime input (its dtype and shape come from `t`).
  void input(const std::string& name, Tensor t) {
    int v = g_.add_value(name);
    g_.values[static_cast<size_t>(v)].dtype = t.dtype();
    g_.inputs.push_back(v);
    node_.inputs.push_back(v);
    feeds_.push_back(std::move(t));
  }
  /// A constant input (weights, scales).
  void constant(const std::string& name, Tensor t) {
    int v = g_.add_value(name);
    g_.values[static_cast<size_t>(v)].dtype = t.dtype();
    g_.constants[v] = t;
    node_.inputs.push_back(v);
    feeds_.push_back(std::move(t));
  }
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

  /// Runs the reference and the lowering at `isa` on the same inputs.
  CpuRun run(Isa isa, int threads = 2) {
    ir::Graph g = g_;
    g.nodes = {node_};
    g.nodes[0].attrs.where = g.where(g.nodes[0]);
    for (int o : node_.outputs) g.outputs.push_back(o);
    std::vector<std::unique_ptr<Op>> ops = build_ops(g);
    std::unique_ptr<Op> lowered = cpu::CpuRegistry::instance().lower(
        g.nodes[0], g, OpRegistry::instance().create(g.nodes[0], g), isa);
    std::vector<ValueMeta> metas(feeds_.size());
    std::vector<const Tensor*> ins(feeds_.size(), nullptr);
    for (size_t i = 0; i < feeds_.size(); ++i) {
      if (!feeds_[i].defined()) continue;
      metas[i] = ValueMeta{true, feeds_[i].dtype(), feeds_[i].shape(), &feeds_[i]};
      ins[i] = &feeds_[i];
    }
    std::vector<DType> types = ops[0]->infer_types(metas);
    std::vector<Shape> shapes = ops[0]->infer_shapes(metas);
    CpuRun r;
    for (size_t o = 0; o < shapes.size(); ++o) {
      r.ref_out.push_back(Tensor::zeros(types[o], shapes[o]));
      // Garbage in the fast path's output shows up as a mismatch.
      Tensor c = Tensor::empty(types[o], shapes[o]);
      for (int64_t i = 0; i < c.numel(); ++i) ref::store(c, i, 12345.0);
      r.cpu_out.push_back(c);
    }
    ops[0]->compute(ins, r.ref_out);
    ThreadPool pool(threads);
    lowered->run(RunContext{&pool}, ins, r.cpu_out);
    r.kernel = lowered->kernel_name();
    r.error = rel_l2(r.cpu_out[0], r.ref_out[0]);
    return r;
  }

 private:
  ir::Attribute& set(const std::string& k, ir::Attribute::Kind kind) {
    ir::Attribute& a = node_.attrs.items[k];
    a.kind = kind;
    return a;
  }

  ir::Graph g_;
  ir::Node node_;
  std::vector<Tensor> feeds_;
};

/// The accuracy bar of a storage dtype against the reference.
inline double tolerance(DType t) { return t == DType::f16 ? 1e-2 : 1e-5; }

}  // namespace voxrt::test
