// Pooling kernels (the 2x2(x2) stride-2 path, stride 1 and 2 windows with padding and dilation,
// other strides, ceil_mode, count_include_pad, global pools) against the reference ops, f32 and
// f16, on every ISA this CPU has.
#include "cpu_op_harness.h"

namespace voxrt::test {
namespace {

struct PoolCase {
  Shape x{};
  std::vector<int64_t> kernel{}, strides{}, pads{}, dilations{};
  bool ceil = false;
  std::string auto_pad{};
};

const std::vector<PoolCase>& cases() {
  static const std::vector<PoolCase> c = {
      {{1, 3, 8, 8, 8}, {2, 2, 2}, {2, 2, 2}},    // tile-equal rows
      {{2, 5, 9, 11, 67}, {2, 2, 2}, {2, 2, 2}},  // odd sizes, rows of several vectors
      {{1, 2, 6, 130}, {2, 2}, {2, 2}},           // 2D
      {{1, 2, 7, 9, 37}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}},
      {{1, 3, 9, 10, 41}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1, 1, 1, 1}},
      {{1, 3, 9, 10, 41}, {3, 3, 3}, {2, 2, 2}, {1, 0, 1, 0, 1, 2}, {}, true},
      {{1, 2, 5, 70}, {2, 3}, {1, 2}, {0, 1, 1, 0}, {1, 2}},  // dilation along the row
      {{1, 2, 5, 53}, {1, 3}, {1, 3}},                        // stride 3: lane by lane
      {{1, 4, 29}, {4}, {2}, {2, 1}},                         // 1D
      {{1, 2, 6, 7, 45}, {2, 2, 2}, {2, 2, 2}, {}, {}, false, "SAME_UPPER"},
      {{1, 1, 3, 3, 3}, {2, 2, 2}, {2, 2, 2}},                // smaller than a vector
      {{1, 2, 5, 7}, {2, 9}, {1, 2}, {1, 4, 0, 4}},           // a kernel wider than the row
      {{1, 2, 6, 20}, {3, 4}, {2, 1}, {2, 3, 2, 5}, {1, 3}},  // dilated taps past both ends
      // A window of 2^31 - 1 taps over five columns (found by fuzz/: the edge walked every tap).
      {{2, 1, 1, 5}, {1, 2147483647}, {2, 2}, {}, {}, false, "SAME_UPPER"},
  };
  return c;
}

class Pool : public testing::TestWithParam<Isa> {};

TEST_P(Pool, MaxAndAverage) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(5);
  for (const char* op : {"MaxPool", "AveragePool"})
    for (int include_pad : {0, 1})
      for (DType t : {DType::f32, DType::f16})
        for (const PoolCase& c : cases()) {
          if (include_pad && std::string(op) == "MaxPool") continue;
          OneNode n(op, 19);
          n.input("x", random_tensor(t, c.x, rng));
          n.attr_ints("kernel_shape", c.kernel);
          if (!c.strides.empty()) n.attr_ints("strides", c.strides);
          if (!c.pads.empty()) n.attr_ints("pads", c.pads);
          if (!c.dilations.empty()) n.attr_ints("dilations", c.dilations);
          if (c.ceil) n.attr_int("ceil_mode", 1);
          if (!c.auto_pad.empty()) n.attr_string("auto_pad", c.auto_pad);
          if (include_pad) n.attr_int("count_include_pad", 1);
          n.output("y");
          CpuRun r = n.run(GetParam());
          EXPECT_NE(r.kernel, "ref");
          EXPECT_LT(r.error, tolerance(t)) << op << " " << dtype_name(t) << " " << shape_str(c.x)
                                           << " kernel " << c.kernel.size() << "D k"
                                           << c.kernel.back() << " s" << (c.strides.empty() ? 1 : c.strides.back())
                                           << " include_pad " << include_pad << " " << r.kernel;
        }
}

TEST_P(Pool, MaxPoolSkipsNaN) {
  VOXRT_REQUIRE_ISA(GetParam());
  Tensor x = Tensor::empty(DType::f32, {1, 1, 2, 64});
  for (int i = 0; i < 128; ++i) x.data<float>()[i] = i % 5 == 0 ? NAN : static_cast<float>(i % 17);
  OneNode n("MaxPool", 12);
  n.input("x", x);
  n.attr_ints("kernel_shape", {2, 2});
  n.attr_ints("strides", {2, 2});
  n.output("y");
  EXPECT_EQ(n.run(GetParam()).error, 0);
}

TEST_P(Pool, Global) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(6);
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"})
    for (DType t : {DType::f32, DType::f16})
      for (const Shape& s : {Shape{1, 3, 5, 7, 11}, Shape{2, 16, 8, 8, 8}, Shape{1, 2, 3}, Shape{1, 2, 61, 67, 71}}) {
        OneNode n(op, 13);
        n.input("x", random_tensor(t, s, rng, 1, 3));
        n.output("y");
        CpuRun r = n.run(GetParam());
        EXPECT_NE(r.kernel, "ref");
        EXPECT_LT(r.error, tolerance(t)) << op << " " << dtype_name(t) << " " << shape_str(s);
      }
}

INSTANTIATE_TEST_SUITE_P(Isa, Pool, testing::ValuesIn(all_isas()), isa_param_name);

}  // namespace
}  // namespace voxrt::test
