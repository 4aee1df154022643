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
#include "support/one_node_graph.h"
#include "support/rel_l2.h"

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

class OneNode : public OneNodeGraph {
 public:
  using OneNodeGraph::OneNodeGraph;

  /// Runs the reference and the lowering at `isa` on the same inputs.
  CpuRun run(Isa isa, int threads = 2) {
    ir::Graph g = graph();
    std::vector<std::unique_ptr<Op>> ops = build_ops(g);
    std::unique_ptr<Op> lowered = cpu::CpuRegistry::instance().lower(
        g.nodes[0], g, OpRegistry::instance().create(g.nodes[0], g), isa);
    std::vector<ValueMeta> m = metas();
    std::vector<const Tensor*> ins = inputs();
    std::vector<DType> types = ops[0]->infer_types(m);
    std::vector<Shape> shapes = ops[0]->infer_shapes(m);
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
};

/// The accuracy bar of a storage dtype against the reference.
inline double tolerance(DType t) { return t == DType::f16 ? 1e-2 : 1e-5; }

}  // namespace voxrt::test
