// Concat, Transpose and Softmax at UNet sizes; GB/s over one read of every input and one write
// of the output.
//
//   build/bench/data_bench --benchmark_min_time=0.5
#include "op_bench_util.h"

namespace voxrt::bench {
namespace {

int reg = [] {
  register_isas("Concat_channels", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("Concat", 17)
        .input(random_tensor(t, {1, 8, 96, 96, 96}))
        .input(random_tensor(t, {1, 8, 96, 96, 96}))
        .attr_int("axis", 1)
        .run(s, isa, threads);
  });
  register_isas("Softmax_channels", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("Softmax", 17).input(random_tensor(t, {1, 3, 96, 96, 96})).attr_int("axis", 1).run(s, isa, threads);
  });
  register_isas("Softmax_last_axis", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("Softmax", 17).input(random_tensor(t, {1, 96, 96, 96, 3})).attr_int("axis", -1).run(s, isa, threads);
  });
  register_isas("Transpose_0_4_2_3_1", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("Transpose", 17).input(random_tensor(t, {1, 3, 96, 96, 96})).attr_ints("perm", {0, 4, 2, 3, 1}).run(s, isa, threads);
  });
  register_isas("Transpose_0_4_2_3_1_back", [](benchmark::State& s, Isa isa, DType t, int threads) {
    BenchNode("Transpose", 17).input(random_tensor(t, {1, 96, 96, 96, 3})).attr_ints("perm", {0, 4, 2, 3, 1}).run(s, isa, threads);
  });
  return 0;
}();

}  // namespace
}  // namespace voxrt::bench
