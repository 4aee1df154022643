// Concat, Split, Transpose and Softmax against the reference ops, on every ISA this CPU has.
#include "cpu_op_harness.h"

namespace voxrt::test {
namespace {

class Data : public testing::TestWithParam<Isa> {};

TEST_P(Data, Concat) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(13);
  struct Case {
    std::vector<Shape> in;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {{{1, 8, 9, 10, 11}, {1, 3, 9, 10, 11}}, 1},
      {{{2, 8, 9, 10, 11}, {2, 3, 9, 10, 11}, {2, 1, 9, 10, 11}}, 1},
      {{{1, 2, 40, 41, 42}, {1, 2, 40, 41, 42}}, 1},  // blocks over a thread slice
      {{{2, 3, 4}, {2, 3, 5}}, -1},
      {{{3, 2}, {1, 2}}, 0},
  };
  for (DType t : {DType::f32, DType::f16, DType::i64})
    for (const Case& c : cases) {
      OneNode n("Concat", 13);
      for (size_t i = 0; i < c.in.size(); ++i)
        n.input("x" + std::to_string(i), random_tensor(t, c.in[i], rng, -100, 100));
      n.attr_int("axis", c.axis);
      n.output("y");
      CpuRun r = n.run(GetParam());
      EXPECT_NE(r.kernel, "ref");
      EXPECT_EQ(r.error, 0) << dtype_name(t) << " axis " << c.axis;
    }
}

// Split along an axis into parts of given sizes (opset 13's input, opset 11's attribute) or equal
// ones, every output compared with the reference's.
TEST_P(Data, Split) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(16);
  struct Case {
    Shape x;
    int64_t axis;
    std::vector<int64_t> sizes;  // empty: equal parts, `parts` of them
    int parts;
  };
  const std::vector<Case> cases = {
      {{2, 11, 9, 10, 11}, 1, {8, 3}, 2},     // the sibling join's Split at batch 2
      {{1, 4, 40, 41, 42}, 1, {2, 1, 1}, 3},  // blocks over a thread slice
      {{3, 2, 4, 10}, -1, {3, 7}, 2},
      {{6, 5}, 0, {}, 3},
  };
  for (int opset : {11, 13})
    for (DType t : {DType::f32, DType::f16, DType::i64})
      for (const Case& c : cases) {
        OneNode n("Split", opset);
        n.input("x", random_tensor(t, c.x, rng, -100, 100));
        if (!c.sizes.empty()) {
          Tensor sizes = Tensor::empty(DType::i64, {static_cast<int64_t>(c.sizes.size())});
          for (size_t i = 0; i < c.sizes.size(); ++i) sizes.data<int64_t>()[i] = c.sizes[i];
          if (opset >= 13)
            n.constant("split", sizes);
          else
            n.attr_ints("split", c.sizes);
        }
        n.attr_int("axis", c.axis);
        for (int i = 0; i < c.parts; ++i) n.output("y" + std::to_string(i));
        CpuRun r = n.run(GetParam());
        EXPECT_EQ(r.kernel, "split_copy");
        ASSERT_EQ(r.cpu_out.size(), static_cast<size_t>(c.parts));
        for (int i = 0; i < c.parts; ++i)
          EXPECT_EQ(rel_l2(r.cpu_out[static_cast<size_t>(i)], r.ref_out[static_cast<size_t>(i)]), 0)
              << dtype_name(t) << " " << shape_str(c.x) << " opset " << opset << " output " << i;
      }
}

TEST_P(Data, Transpose) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(14);
  struct Case {
    Shape x;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {
      {{1, 3, 5, 6, 37}, {0, 4, 2, 3, 1}},   // what torch emits around Softmax
      {{1, 37, 5, 6, 3}, {0, 4, 2, 3, 1}},
      {{2, 3, 5, 6, 7}, {0, 2, 3, 4, 1}},    // NCDHW -> NDHWC
      {{2, 5, 6, 7, 3}, {0, 4, 1, 2, 3}},    // and back
      {{2, 3, 4, 5}, {1, 0, 2, 3}},          // the last axis stays
      {{4, 1, 65, 33}, {}},                  // reversed
      {{1, 1, 7}, {2, 1, 0}},
  };
  for (DType t : {DType::f32, DType::f16, DType::u8})
    for (const Case& c : cases) {
      OneNode n("Transpose", 13);
      n.input("x", random_tensor(t, c.x, rng, 1, 200));
      if (!c.perm.empty()) n.attr_ints("perm", c.perm);
      n.output("y");
      CpuRun r = n.run(GetParam());
      EXPECT_NE(r.kernel, "ref");
      EXPECT_EQ(r.error, 0) << dtype_name(t) << " " << shape_str(c.x);
    }
}

TEST_P(Data, Softmax) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(15);
  struct Case {
    Shape x;
    int64_t axis;
    int opset;
  };
  const std::vector<Case> cases = {
      {{1, 3, 9, 10, 11}, 1, 13},    // over channels
      {{2, 5, 17, 19}, 1, 13},
      {{1, 11, 10, 9, 3}, -1, 13},   // over the last axis
      {{3, 1000}, -1, 13},
      {{2, 3, 4, 5}, 2, 13},
      {{2, 3, 4, 5}, 1, 11},         // before opset 13: over the flattened trailing block
      {{1, 7, 1, 1}, 1, 13},
  };
  for (DType t : {DType::f32, DType::f16})
    for (const Case& c : cases) {
      OneNode n("Softmax", c.opset);
      n.input("x", random_tensor(t, c.x, rng, -8, 8));
      n.attr_int("axis", c.axis);
      n.output("y");
      CpuRun r = n.run(GetParam());
      EXPECT_NE(r.kernel, "ref");
      EXPECT_LT(r.error, tolerance(t)) << dtype_name(t) << " " << shape_str(c.x) << " axis "
                                       << c.axis << " opset " << c.opset << " " << r.kernel;
    }
}

INSTANTIATE_TEST_SUITE_P(Isa, Data, testing::ValuesIn(all_isas()), isa_param_name);

}  // namespace
}  // namespace voxrt::test
