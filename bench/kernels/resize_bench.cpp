// Resize at the UNet decoder's step (16 x 48^3 to 16 x 96^3): trilinear half-pixel (the 2x row
// kernel), trilinear align_corners (the general row kernel) and nearest, and half-pixel 24 x 24^3
// to 24 x 48^3 (short rows), and unet2d's bilinear 16 x 128^2 to 16 x 256^2; GB/s over one read of
// X and one write of Y.
//
//   build/bench/resize_bench --benchmark_min_time=0.5
#include "op_bench_util.h"

namespace voxrt::bench {
namespace {

// 1, 1, then 2 for each spatial axis of a rank-`rank` input.
Tensor scales(int rank) {
  Tensor s = Tensor::empty(DType::f32, {rank});
  for (int i = 0; i < rank; ++i) s.data<float>()[i] = i < 2 ? 1.0f : 2.0f;
  return s;
}

void resize(benchmark::State& s, Isa isa, DType t, int threads, const char* mode, const char* coord,
            const Shape& x = {1, 16, 48, 48, 48}) {
  BenchNode("Resize", 17)
      .input(random_tensor(t, x))
      .omitted()
      .constant(scales(static_cast<int>(x.size())))
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
  // unet3d_resize's first upsample: rows of 24, where the work per row is short.
  register_isas("Resize_linear_half_pixel_x2_24ch_24",
                [](benchmark::State& s, Isa isa, DType t, int threads) {
                  resize(s, isa, t, threads, "linear", "half_pixel", {1, 24, 24, 24, 24});
                });
  register_isas("Resize_linear_half_pixel_x2_2d_16ch_128",
                [](benchmark::State& s, Isa isa, DType t, int threads) {
                  resize(s, isa, t, threads, "linear", "half_pixel", {1, 16, 128, 128});
                });
  register_isas("Resize_nearest_x2", [](benchmark::State& s, Isa isa, DType t, int threads) {
    resize(s, isa, t, threads, "nearest", "asymmetric");
  });
  return 0;
}();

}  // namespace
}  // namespace voxrt::bench
