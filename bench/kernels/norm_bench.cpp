// Normalizations with their fused activation at UNet activation sizes: GB/s over one read of X
// and one write of Y (InstanceNorm and GroupNorm read X twice: statistics, then the output).
//
//   build/bench/norm_bench --benchmark_min_time=0.5
#include "op_bench_util.h"

namespace voxrt::bench {
namespace {

const Shape kShape = {1, 8, 96, 96, 96};

int reg = [] {
  register_isas("FusedInstanceNorm_lrelu", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("FusedInstanceNorm", 17, "voxrt")
        .input(random_tensor(t, kShape))
        .constant(random_tensor(t, {8}, 0.5, 1.5))
        .constant(random_tensor(t, {8}))
        .attr_string("activation", "LeakyRelu")
        .run(s, isa, threads);
  });
  register_isas("FusedInstanceNorm_lrelu_48cubed", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("FusedInstanceNorm", 17, "voxrt")
        .input(random_tensor(t, {1, 16, 48, 48, 48}))
        .constant(random_tensor(t, {16}, 0.5, 1.5))
        .constant(random_tensor(t, {16}))
        .attr_string("activation", "LeakyRelu")
        .run(s, isa, threads);
  });
  register_isas("FusedGroupNorm_relu", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("FusedGroupNorm", 21, "voxrt")
        .input(random_tensor(t, kShape))
        .constant(random_tensor(t, {8}, 0.5, 1.5))
        .constant(random_tensor(t, {8}))
        .attr_int("num_groups", 4)
        .attr_string("activation", "Relu")
        .run(s, isa, threads);
  });
  register_isas("FusedBatchNorm_relu", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("FusedBatchNorm", 15, "voxrt")
        .input(random_tensor(t, kShape))
        .constant(random_tensor(t, {8}, 0.5, 1.5))
        .constant(random_tensor(t, {8}))
        .constant(random_tensor(t, {8}))
        .constant(random_tensor(t, {8}, 0.5, 1.5))
        .attr_string("activation", "Relu")
        .run(s, isa, threads);
  });
  return 0;
}();

}  // namespace
}  // namespace voxrt::bench
