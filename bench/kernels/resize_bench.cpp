// Resize at the UNet decoder's step (16 x 48^3 to 16 x 96^3): trilinear half-pixel (the 2x row
// kernel), trilinear align_corners (the general row kernel) and nearest; GB/s over one read of X
// and one write of Y.
//
//   build/bench/resize_bench --benchmark_min_time=0.5
#include "op_bench_util.h"

namespace voxrt::bench {
namespace {

Tensor scales() {
  Tensor s = Tensor::empty(DType::f32, {5});
  float v[] = {1, 1, 2, 2, 2};
  for (int i = 0; i < 5; ++i) s.data<float>()[i] = v[i];
  return s;
}

void resize(benchmark::State& s, Isa isa, DType t, int threads, const char* mode, const char* coord) {
  BenchNode("Resize", 17)
      .input(random_tensor(t, {1, 16, 48, 48, 48}))
      .omitted()
      .constant(scales())
      .attr_string("mode", mode)
      .attr_string("coordinate_transformation_mode", coord)
      .run(s, isa, threads);
}

int reg = [] {
  register_isas("Resize_linear_half_pixel_x2", [](benchmark::State& s, Isa isa, DType t, int threads) {
    resize(s, isa, t, threads, "linear", "half_pixel");
  });
  register_isas("Resize_linear_align_corners_x2", [](benchmark::State& s, Isa isa, DType t, int threads) {
    resize(s, isa, t, threads, "linear", "align_corners");
  });
  register_isas("Resize_nearest_x2", [](benchmark::State& s, Isa isa, DType t, int threads) {
    resize(s, isa, t, threads, "nearest", "asymmetric");
  });
  return 0;
}();

}  // namespace
}  // namespace voxrt::bench
