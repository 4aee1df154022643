// Resize kernels (nearest in every mode, linear in every supported coordinate mode, the scale-2
// half-pixel row kernel, scales and sizes, 1D to 3D, Upsample) against the reference ops, f32
// and f16, on every ISA this CPU has.
#include "backends/cpu/driver_util.h"
#include "cpu_op_harness.h"
#include "support/scoped_setting.h"

namespace voxrt::test {
namespace {

struct ResizeCase {
  Shape x{};
  std::vector<float> scales{};  // empty: sizes
  std::vector<int64_t> sizes{};
};

const std::vector<ResizeCase>& cases() {
  static const std::vector<ResizeCase> c = {
      {{1, 3, 4, 5, 6}, {1, 1, 2, 2, 2}},        // the UNet decoder's 2x
      {{1, 2, 7, 9, 37}, {1, 1, 2, 2, 2}},       // rows of several vectors, odd sizes
      {{2, 3, 6, 67}, {1, 1, 2, 2}},             // 2D
      {{1, 2, 5, 6, 7}, {1, 1, 1.5f, 0.5f, 3}},  // mixed up- and downsampling
      {{1, 2, 11}, {1, 1, 2.5f}},                // 1D
      {{1, 2, 5, 6, 7}, {}, {1, 2, 9, 4, 19}},   // sizes
      {{1, 1, 1, 1, 3}, {1, 1, 2, 2, 2}},        // smaller than a vector
      {{1, 2, 3, 9, 1}, {1, 1, 2, 2, 2}},        // one column
      {{1, 2, 3, 4, 17}, {1, 1, 2, 2, 2}},       // one element past a vector (8 or 16 lanes)
      {{1, 2, 3, 4, 32}, {1, 1, 2, 2, 2}},       // whole vectors
  };
  return c;
}

class Resize : public testing::TestWithParam<Isa> {};

void add_scales(OneNode& n, const ResizeCase& c) {
  n.omitted_input();  // roi
  if (!c.scales.empty()) {
    Tensor s = Tensor::empty(DType::f32, {static_cast<int64_t>(c.scales.size())});
    for (size_t i = 0; i < c.scales.size(); ++i) s.data<float>()[i] = c.scales[i];
    n.constant("scales", s);
    return;
  }
  n.omitted_input();
  Tensor s = Tensor::empty(DType::i64, {static_cast<int64_t>(c.sizes.size())});
  for (size_t i = 0; i < c.sizes.size(); ++i) s.data<int64_t>()[i] = c.sizes[i];
  n.constant("sizes", s);
}

TEST_P(Resize, Linear) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(8);
  for (const char* coord : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"})
    for (DType t : {DType::f32, DType::f16})
      for (const ResizeCase& c : cases()) {
        OneNode n("Resize", 13);
        n.input("x", random_tensor(t, c.x, rng));
        add_scales(n, c);
        n.attr_string("mode", "linear");
        n.attr_string("coordinate_transformation_mode", coord);
        n.output("y");
        CpuRun r = n.run(GetParam());
        EXPECT_NE(r.kernel, "ref");
        EXPECT_LT(r.error, tolerance(t))
            << coord << " " << dtype_name(t) << " " << shape_str(c.x) << " " << r.kernel;
      }
}

TEST_P(Resize, Nearest) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(9);
  for (const char* coord : {"half_pixel", "asymmetric", "align_corners"})
    for (const char* mode : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
      for (DType t : {DType::f32, DType::f16})
        for (const ResizeCase& c : cases()) {
          OneNode n("Resize", 13);
          n.input("x", random_tensor(t, c.x, rng));
          add_scales(n, c);
          n.attr_string("coordinate_transformation_mode", coord);
          n.attr_string("nearest_mode", mode);
          n.output("y");
          CpuRun r = n.run(GetParam());
          EXPECT_NE(r.kernel, "ref");
          EXPECT_EQ(r.error, 0) << coord << " " << mode << " " << dtype_name(t) << " "
                                << shape_str(c.x);
        }
}

// Linear rows and nearest rows doubled along the width, streamed past the caches as outputs over
// 8 MiB are (every output here): the same results. Whole vectors stream where they land aligned:
// every row of the two added cases (rows of 32 and 96 elements), some rows of the others.
TEST_P(Resize, Streamed) {
  VOXRT_REQUIRE_ISA(GetParam());
  const ScopedSetting<int64_t, &cpu::set_stream_above> streamed(0);  // every output streamed
  std::mt19937 rng(11);
  std::vector<ResizeCase> streamed_cases = cases();
  streamed_cases.push_back({{1, 2, 3, 5, 16}, {1, 1, 2, 2, 2}});
  streamed_cases.push_back({{1, 1, 2, 3, 48}, {1, 1, 2, 2, 2}});
  struct Mode {
    const char* mode;
    const char* coord;
  };
  for (Mode m : {Mode{"linear", "half_pixel"}, Mode{"linear", "align_corners"},
                 Mode{"nearest", "asymmetric"}, Mode{"nearest", "half_pixel"}})
    for (DType t : {DType::f32, DType::f16})
      for (const ResizeCase& c : streamed_cases) {
        const bool linear = std::string(m.mode) == "linear";
        OneNode n("Resize", 13);
        n.input("x", random_tensor(t, c.x, rng));
        add_scales(n, c);
        n.attr_string("mode", m.mode);
        n.attr_string("coordinate_transformation_mode", m.coord);
        if (!linear) n.attr_string("nearest_mode", "floor");
        n.output("y");
        CpuRun r = n.run(GetParam());
        EXPECT_NE(r.kernel, "ref");
        EXPECT_LE(r.error, linear ? tolerance(t) : 0.0)
            << m.mode << " " << m.coord << " " << dtype_name(t) << " " << shape_str(c.x) << " "
            << r.kernel;
      }
}

TEST_P(Resize, UpsampleAndResize10) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(10);
  for (const char* mode : {"nearest", "linear"})
    for (int opset : {9, 10}) {
      OneNode n(opset == 9 ? "Upsample" : "Resize", opset);
      n.input("x", random_tensor(DType::f32, {1, 2, 5, 6, 7}, rng));
      Tensor s = Tensor::empty(DType::f32, {5});
      float v[] = {1, 1, 2, 2, 3};
      for (int i = 0; i < 5; ++i) s.data<float>()[i] = v[i];
      n.constant("scales", s);
      n.attr_string("mode", mode);
      n.output("y");
      CpuRun r = n.run(GetParam());
      EXPECT_NE(r.kernel, "ref");
      EXPECT_LT(r.error, 1e-6) << mode << " opset " << opset;
    }
}

// Scales on N or C are not in the fast path: the reference runs, with the same result.
TEST_P(Resize, ChannelScaleFallsBack) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(12);
  OneNode n("Resize", 13);
  ResizeCase c{{1, 2, 4, 5}, {1, 2, 2, 2}};
  n.input("x", random_tensor(DType::f32, c.x, rng));
  add_scales(n, c);
  n.attr_string("mode", "linear");
  n.output("y");
  EXPECT_LT(n.run(GetParam()).error, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Isa, Resize, testing::ValuesIn(all_isas()), isa_param_name);

}  // namespace
}  // namespace voxrt::test
