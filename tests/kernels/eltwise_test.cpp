// Elementwise kernels (activations, binary arithmetic with its broadcast fast paths, casts,
// copies) against the reference ops, f32 and f16, on every ISA this CPU has.
#include "backends/cpu/kernels/eltwise/eltwise.h"

#include <array>
#include <cmath>
#include <functional>

#include "backends/ref/tensor_math.h"
#include "cpu_op_harness.h"

namespace voxrt::test {
namespace {

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {
      {16},                // one AVX-512 vector
      {5},                 // less than one AVX2 vector
      {1, 3, 5, 7, 11},    // primes
      {1, 16, 8, 8, 8},    // tile multiples
      {2, 2, 33, 35, 37},  // larger than a thread chunk, odd tail
  };
  return s;
}

class Eltwise : public testing::TestWithParam<Isa> {};

void check_unary(Isa isa, const std::string& op, int opset,
                 const std::function<void(OneNode&, DType)>& extra = {}) {
  std::mt19937 rng(7);
  for (DType t : {DType::f32, DType::f16})
    for (const Shape& s : shapes()) {
      OneNode n(op, opset);
      n.input("x", random_tensor(t, s, rng, -6, 6));
      if (extra) extra(n, t);
      n.output("y");
      CpuRun r = n.run(isa);
      EXPECT_NE(r.kernel, "ref") << op;
      EXPECT_LT(r.error, tolerance(t))
          << op << " " << dtype_name(t) << " " << shape_str(s) << " kernel " << r.kernel;
    }
}

TEST_P(Eltwise, Activations) {
  VOXRT_REQUIRE_ISA(GetParam());
  check_unary(GetParam(), "Relu", 14);
  check_unary(GetParam(), "LeakyRelu", 16, [](OneNode& n, DType) { n.attr_float("alpha", 0.1f); });
  check_unary(GetParam(), "Sigmoid", 13);
  check_unary(GetParam(), "Tanh", 13);
}

TEST_P(Eltwise, ActivationsKeepNaN) {
  VOXRT_REQUIRE_ISA(GetParam());
  for (const char* op : {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip"}) {
    Tensor x = Tensor::empty(DType::f32, {37});
    for (int i = 0; i < 37; ++i)
      x.data<float>()[i] = i % 4 == 0 ? NAN : static_cast<float>(i - 18) / 4;
    OneNode n(op, 13);
    n.input("x", x);
    n.output("y");
    CpuRun r = n.run(GetParam());
    EXPECT_LT(r.error, 1e-5) << op;  // infinite when NaN positions differ
  }
}

TEST_P(Eltwise, ClipAttributesAndInputs) {
  VOXRT_REQUIRE_ISA(GetParam());
  check_unary(GetParam(), "Clip", 6, [](OneNode& n, DType) {
    n.attr_float("min", -1.5f);
    n.attr_float("max", 2.5f);
  });
  check_unary(GetParam(), "Clip", 13, [](OneNode& n, DType t) {
    Tensor lo = Tensor::empty(t, {});
    ref::store(lo, 0, 0.0);
    Tensor hi = Tensor::empty(t, {});
    ref::store(hi, 0, 6.0);
    n.constant("lo", lo);
    n.constant("hi", hi);
  });
  check_unary(GetParam(), "Clip", 13, [](OneNode& n, DType t) {
    Tensor lo = Tensor::empty(t, {});
    ref::store(lo, 0, -0.25);
    n.constant("lo", lo);
  });
}

struct BinaryCase {
  Shape a, b;
};

TEST_P(Eltwise, BinaryBroadcasts) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(11);
  const std::vector<BinaryCase> cases = {
      {{1, 3, 5, 7, 11}, {1, 3, 5, 7, 11}},  // same shape
      {{2, 2, 33, 35, 37}, {2, 2, 33, 35, 37}},
      {{1, 16, 8, 8, 8}, {1}},  // scalar
      {{1, 16, 8, 8, 8}, {}},
      {{1, 5, 1, 4, 1}, {2, 5, 3, 4, 2}},    // both broadcast: reference
      {{2, 5, 9, 10, 11}, {1, 5, 1, 1, 1}},  // per channel
      {{1, 5, 1, 1, 1}, {2, 5, 9, 10, 11}},  // per channel, on the left
      {{2, 5, 9, 10, 11}, {5, 1, 1, 1}},     // per channel, fewer dims
      {{3, 4, 7, 19}, {19}},                 // repeated trailing block
      {{3, 4, 7, 19}, {1, 7, 19}},
      {{3}, {3, 4, 7, 3}},           // repeated, on the left
      {{2, 3, 4, 5}, {2, 1, 4, 1}},  // no fast path: reference
  };
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Min", "Max"})
    for (DType t : {DType::f32, DType::f16})
      for (const BinaryCase& c : cases) {
        OneNode n(op, 14);
        n.input("a", random_tensor(t, c.a, rng, 0.5, 3));
        n.input("b", random_tensor(t, c.b, rng, 0.5, 3));
        n.output("y");
        CpuRun r = n.run(GetParam());
        EXPECT_NE(r.kernel, "ref");
        EXPECT_LT(r.error, tolerance(t)) << op << " " << dtype_name(t) << " " << shape_str(c.a)
                                         << " with " << shape_str(c.b) << " kernel " << r.kernel;
      }
}

// PRelu with a slope per channel (or one slope) runs each channel's rows as LeakyRelu with its
// slope; other slope shapes run the reference. Slopes above 1 and negative ones included.
TEST_P(Eltwise, PReluSlopePerChannel) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(12);
  const std::vector<BinaryCase> cases = {
      {{2, 5, 9, 10, 11}, {5, 1, 1, 1}},  // per channel, as torch exports nn.PReLU(C)
      {{1, 7, 17, 19}, {7, 1, 1}},
      {{2, 3, 33, 35}, {1}},      // one slope (the pass makes it LeakyRelu first)
      {{2, 3, 4, 5}, {3, 4, 1}},  // no fast path: reference
  };
  for (DType t : {DType::f32, DType::f16})
    for (const BinaryCase& c : cases) {
      OneNode n("PRelu", 16);
      n.input("x", random_tensor(t, c.a, rng, -3, 3));
      n.input("slope", random_tensor(t, c.b, rng, -0.5, 1.5));
      n.output("y");
      CpuRun r = n.run(GetParam());
      EXPECT_NE(r.kernel, "ref");
      EXPECT_LT(r.error, tolerance(t)) << dtype_name(t) << " " << shape_str(c.a) << " slope "
                                       << shape_str(c.b) << " kernel " << r.kernel;
    }
}

// add_rows (ConvTranspose's tap scatter) against a plain loop: rows of odd lengths at strides
// wider than them, with the bytes between rows left alone.
TEST_P(Eltwise, AddRowsMatchesPlainLoop) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(13);
  for (DType t : {DType::f32, DType::f16})
    for (auto [rows, n, xs, ys] : {std::array<int64_t, 4>{1, 5, 5, 7},
                                   {3, 16, 19, 40},
                                   {7, 37, 40, 90},
                                   {2, 100, 100, 203}}) {
      Tensor x = random_tensor(t, {rows * xs}, rng, -2, 2);
      Tensor y = random_tensor(t, {rows * ys}, rng, -2, 2);
      Tensor want = y.clone();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < n; ++i)
          ref::store(want, r * ys + i, ref::load(want, r * ys + i) + ref::load(x, r * xs + i));
      cpu::eltwise_kernels(t, GetParam())->add_rows(x.raw(), xs, y.raw(), ys, rows, n);
      double err = 0;
      for (int64_t i = 0; i < y.numel(); ++i)
        err = std::max(err, std::abs(ref::load(y, i) - ref::load(want, i)));
      EXPECT_LE(err, t == DType::f32 ? 1e-6 : 4e-3)
          << dtype_name(t) << " rows " << rows << " n " << n;
    }
}

// mix (a convolution's fused 1x1 head) against a float64 loop: m fp32 rows `xs` apart into mh
// rows of each storage dtype `ys` apart, lengths that end in partial vectors, with and without a
// bias, and the bytes between output rows left alone.
TEST_P(Eltwise, MixMatchesPlainLoop) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(29);
  for (DType t : {DType::f32, DType::f16})
    for (auto [m, mh, n, xs, ys] : {std::array<int64_t, 5>{1, 1, 5, 5, 7},
                                    {8, 3, 48, 48, 50},
                                    {6, 4, 37, 40, 41},
                                    {20, 2, 100, 101, 130},
                                    {3, 5, 1, 3, 2}})
      for (bool bias : {true, false}) {
        Tensor x = random_tensor(DType::f32, {m * xs}, rng, -2, 2);
        Tensor w = random_tensor(DType::f32, {mh * m}, rng, -1, 1);
        Tensor b = random_tensor(DType::f32, {mh}, rng, -1, 1);
        Tensor y = random_tensor(t, {mh * ys}, rng, -2, 2);
        Tensor want = y.clone();
        for (int64_t h = 0; h < mh; ++h)
          for (int64_t i = 0; i < n; ++i) {
            double a = bias ? ref::load(b, h) : 0.0;
            for (int64_t c = 0; c < m; ++c) a += ref::load(w, h * m + c) * ref::load(x, c * xs + i);
            ref::store(want, h * ys + i, a);
          }
        cpu::eltwise_kernels(t, GetParam())
            ->mix(x.data<float>(), xs, m, w.data<float>(), bias ? b.data<float>() : nullptr, mh, n,
                  y.raw(), ys);
        double err = 0;
        for (int64_t i = 0; i < y.numel(); ++i)
          err = std::max(err, std::abs(ref::load(y, i) - ref::load(want, i)));
        EXPECT_LE(err, t == DType::f32 ? 1e-5 : 8e-3)
            << dtype_name(t) << " m " << m << " mh " << mh << " n " << n << " bias " << bias;
      }
}

TEST_P(Eltwise, MinMaxPropagateNaN) {
  VOXRT_REQUIRE_ISA(GetParam());
  for (const char* op : {"Min", "Max"}) {
    Tensor a = Tensor::empty(DType::f32, {20}), b = Tensor::empty(DType::f32, {20});
    for (int i = 0; i < 20; ++i) {
      a.data<float>()[i] = i % 3 == 0 ? NAN : static_cast<float>(i);
      b.data<float>()[i] = i % 4 == 0 ? NAN : static_cast<float>(10 - i);
    }
    OneNode n(op, 13);
    n.input("a", a);
    n.input("b", b);
    n.output("y");
    CpuRun r = n.run(GetParam());
    EXPECT_EQ(r.error, 0) << op;  // NaN positions must agree
  }
}

TEST_P(Eltwise, CastsBetweenF32AndF16) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(3);
  for (const Shape& s : shapes())
    for (DType from : {DType::f32, DType::f16}) {
      OneNode n("Cast", 13);
      n.input("x", random_tensor(from, s, rng, -70000, 70000));
      n.attr_int("to", from == DType::f32 ? 10 : 1);
      n.output("y");
      CpuRun r = n.run(GetParam());
      EXPECT_NE(r.kernel, "ref");
      // Rounding to nearest even like the reference, overflow to inf included: exact.
      EXPECT_EQ(r.error, 0) << shape_str(s) << " from " << dtype_name(from) << " " << r.kernel;
    }
}

TEST_P(Eltwise, ReshapeCopies) {
  VOXRT_REQUIRE_ISA(GetParam());
  std::mt19937 rng(5);
  OneNode n("Reshape", 14);
  n.input("x", random_tensor(DType::f16, {2, 3, 40, 41, 5}, rng));
  Tensor shape = Tensor::empty(DType::i64, {2});
  shape.data<int64_t>()[0] = 6;
  shape.data<int64_t>()[1] = -1;
  n.constant("shape", shape);
  n.output("y");
  CpuRun r = n.run(GetParam());
  EXPECT_EQ(r.kernel, "copy");
  EXPECT_EQ(r.error, 0);
}

INSTANTIATE_TEST_SUITE_P(Isa, Eltwise, testing::ValuesIn(all_isas()), isa_param_name);

}  // namespace
}  // namespace voxrt::test
