// Times one node through the CPU lowering at a chosen ISA with preallocated outputs, reporting
// bytes/s over the op's minimum traffic (every input read once, every output written once) to
// set against the streaming bandwidth peak_bench measures. Used by the eltwise, norm, pool,
// resize and data benchmarks.
#pragma once

#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/cpu_op.h"
#include "backends/ref/tensor_math.h"
#include "runtime/compile.h"
#include "runtime/scratch.h"
#include "runtime/thread_pool.h"
#include "support/one_node_graph.h"

namespace voxrt::bench {

using cpu::Isa;

inline Tensor random_tensor(DType t, const Shape& shape, double lo = -2, double hi = 2) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(static_cast<float>(lo), static_cast<float>(hi));
  Tensor x = Tensor::empty(t, shape);
  for (int64_t i = 0; i < x.numel(); ++i) ref::store(x, i, u(rng));
  return x;
}

/// One node with its inputs, lowered once per ISA.
class BenchNode {
 public:
  BenchNode(const std::string& op, int opset, const std::string& domain = "") : n_(op, opset, domain) {}
  BenchNode& input(Tensor t) {
    n_.input(next_name(), std::move(t));
    return *this;
  }
  BenchNode& constant(Tensor t) {
    n_.constant(next_name(), std::move(t));
    return *this;
  }
  BenchNode& omitted() {
    n_.omitted_input();
    return *this;
  }
  BenchNode& attr_int(const std::string& k, int64_t v) {
    n_.attr_int(k, v);
    return *this;
  }
  BenchNode& attr_float(const std::string& k, float v) {
    n_.attr_float(k, v);
    return *this;
  }
  BenchNode& attr_string(const std::string& k, const std::string& v) {
    n_.attr_string(k, v);
    return *this;
  }
  BenchNode& attr_ints(const std::string& k, std::vector<int64_t> v) {
    n_.attr_ints(k, std::move(v));
    return *this;
  }

  /// Times the lowered node at `isa` on `threads` threads; skips when the CPU lacks the ISA.
  void run(benchmark::State& state, Isa isa, int threads = 1) {
    if (isa > cpu::cpu_features().detected) {
      state.SkipWithError("this CPU lacks the ISA");
      return;
    }
    ir::Graph g = n_.graph();
    std::vector<std::unique_ptr<Op>> ops = build_ops(g);
    std::unique_ptr<Op> op = cpu::CpuRegistry::instance().lower(g.nodes[0], g, std::move(ops[0]), isa);
    std::vector<ValueMeta> metas = n_.metas();
    std::vector<const Tensor*> ins = n_.inputs();
    int64_t bytes = 0;
    for (const Tensor& t : n_.feeds()) bytes += static_cast<int64_t>(t.nbytes());
    std::vector<DType> types = op->infer_types(metas);
    std::vector<Shape> shapes = op->infer_shapes(metas);
    std::vector<Tensor> out;
    for (size_t o = 0; o < shapes.size(); ++o) {
      out.push_back(Tensor::zeros(types[o], shapes[o]));
      bytes += static_cast<int64_t>(out.back().nbytes());
    }
    ThreadPool pool(threads);
    const RunScratch scratch(threads);  // kept between runs, as a Session keeps it
    const RunContext ctx = scratch.context(&pool);
    op->run(ctx, ins, out);  // first touch of the output outside the timing
    for (auto _ : state) {
      op->run(ctx, ins, out);
      benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(state.iterations() * bytes);
    state.SetLabel(op->kernel_name());
  }

 private:
  std::string next_name() const { return "in" + std::to_string(n_.num_inputs()); }
  test::OneNodeGraph n_;
};

/// Registers `fn(state, isa, dtype)` for each ISA and storage dtype as "name/isa/dtype", and with
/// two threads at the top ISA.
template <class F>
void register_isas(const std::string& name, F fn) {
  for (DType t : {DType::f32, DType::f16}) {
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512})
      benchmark::RegisterBenchmark(
          (name + "/" + cpu::isa_name(isa) + "/" + std::string(dtype_name(t))).c_str(),
          [fn, isa, t](benchmark::State& s) { fn(s, isa, t, 1); })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    benchmark::RegisterBenchmark((name + "/avx512/" + std::string(dtype_name(t)) + "/threads:2").c_str(),
                                 [fn, t](benchmark::State& s) { fn(s, Isa::avx512, t, 2); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
}

}  // namespace voxrt::bench
