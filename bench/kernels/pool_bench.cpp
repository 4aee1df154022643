// Pooling at UNet sizes: the 2x2x2 stride-2 MaxPool, a 3x3x3 stride-1 padded AveragePool and
// GlobalAveragePool; GB/s over one read of X and one write of Y.
//
//   build/bench/pool_bench --benchmark_min_time=0.5
#include "op_bench_util.h"

namespace voxrt::bench {
namespace {

const Shape kShape = {1, 8, 96, 96, 96};

int reg = [] {
  register_isas("MaxPool_k2s2", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("MaxPool", 17)
        .input(random_tensor(t, kShape))
        .attr_ints("kernel_shape", {2, 2, 2})
        .attr_ints("strides", {2, 2, 2})
        .run(s, isa, threads);
  });
  register_isas("AveragePool_k3s1p1", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("AveragePool", 17)
        .input(random_tensor(t, kShape))
        .attr_ints("kernel_shape", {3, 3, 3})
        .attr_ints("pads", {1, 1, 1, 1, 1, 1})
        .run(s, isa, threads);
  });
  register_isas("GlobalAveragePool", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("GlobalAveragePool", 17).input(random_tensor(t, kShape)).run(s, isa, threads);
  });
  return 0;
}();

}  // namespace
}  // namespace voxrt::bench
