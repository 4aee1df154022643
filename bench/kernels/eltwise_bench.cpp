// Elementwise ops at UNet activation sizes (8 x 96^3): GB/s of one read and one write per
// input and output element, per ISA and storage dtype.
//
//   build/bench/eltwise_bench --benchmark_min_time=0.5
#include "op_bench_util.h"

namespace voxrt::bench {
namespace {

const Shape kShape = {1, 8, 96, 96, 96};

int reg = [] {
  for (const char* op : {"Relu", "LeakyRelu", "Sigmoid"})
    register_isas(op, [op](benchmark::State& s, Isa isa, DType t, int threads) {
      BenchNode(op, 17).input(random_tensor(t, kShape)).run(s, isa, threads);
    });
  register_isas("Add", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("Add", 17).input(random_tensor(t, kShape)).input(random_tensor(t, kShape)).run(s, isa, threads);
  });
  register_isas("Mul_per_channel", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("Mul", 17).input(random_tensor(t, kShape)).constant(random_tensor(t, {1, 8, 1, 1, 1})).run(s, isa, threads);
  });
  register_isas("Cast_to_other", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("Cast", 17).input(random_tensor(t, kShape)).attr_int("to", t == DType::f32 ? 10 : 1).run(s, isa, threads);
  });
  return 0;
}();

}  // namespace
}  // namespace voxrt::bench
