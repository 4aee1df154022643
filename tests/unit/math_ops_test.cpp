// Reference math ops (activation, elementwise, reduce, matmul families) through the public
// Session, on the opset variants, dtypes and corners that ONNX's conformance data leaves out.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/half.h"
#include "model_builder.h"

namespace voxrt {
namespace {

using test::ModelBuilder;
using P = onnx::TensorProto;

template <class T>
Tensor make(DType t, Shape shape, const std::vector<T>& v) {
  Tensor x = Tensor::empty(t, std::move(shape));
  EXPECT_EQ(x.nbytes(), v.size() * sizeof(T));
  std::memcpy(x.raw(), v.data(), x.nbytes());
  return x;
}
Tensor f32(Shape shape, const std::vector<float>& v) {
  return make(DType::f32, std::move(shape), v);
}

template <class T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

/// Deterministic, varied floats in [-3, 3).
std::vector<float> ramp(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<float>((i * 37 % 60) / 10.0 - 3.0);
  return v;
}

Tensor run1(const ModelBuilder& b, const std::vector<NamedTensor>& in) {
  std::vector<Tensor> out = b.session().run(in);
  EXPECT_EQ(out.size(), 1u);
  return out.at(0);
}

/// The message of the voxrt::Error that loading `b` throws, or "" if it loads.
std::string load_error(const ModelBuilder& b) {
  try {
    b.session();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

ModelBuilder softmax_model(int opset, const char* op, int64_t axis) {
  ModelBuilder b(opset);
  b.input("x", P::FLOAT, {int64_t{2}, int64_t{3}, int64_t{4}});
  ModelBuilder::attr_int(b.node(op, {"x"}, {"y"}), "axis", axis);
  b.output("y", P::FLOAT);
  return b;
}

TEST(MathOps, SoftmaxBeforeOpset13NormalizesTheTrailingBlock) {
  std::vector<float> x = ramp(24);
  Tensor legacy = run1(softmax_model(11, "Softmax", 1), {{"x", f32({2, 3, 4}, x)}});
  Tensor modern = run1(softmax_model(13, "Softmax", 1), {{"x", f32({2, 3, 4}, x)}});
  Tensor log_legacy = run1(softmax_model(11, "LogSoftmax", 1), {{"x", f32({2, 3, 4}, x)}});
  for (int b = 0; b < 2; ++b) {
    double block = 0;
    for (int i = 0; i < 12; ++i) block += std::exp(x[static_cast<size_t>(b * 12 + i)]);
    for (int i = 0; i < 12; ++i) {
      size_t k = static_cast<size_t>(b * 12 + i);
      EXPECT_NEAR(legacy.data<float>()[k], std::exp(x[k]) / block, 1e-6);
      EXPECT_NEAR(log_legacy.data<float>()[k], x[k] - std::log(block), 1e-5);
    }
    for (int j = 0; j < 4; ++j) {
      double col = 0;
      for (int c = 0; c < 3; ++c) col += std::exp(x[static_cast<size_t>(b * 12 + c * 4 + j)]);
      for (int c = 0; c < 3; ++c) {
        size_t k = static_cast<size_t>(b * 12 + c * 4 + j);
        EXPECT_NEAR(modern.data<float>()[k], std::exp(x[k]) / col, 1e-6);
      }
    }
  }
}

TEST(MathOps, ClipBoundsAreAttributesBeforeOpset11AndInputsAfter) {
  std::vector<float> x = ramp(12);
  ModelBuilder a(6);
  a.input("x", P::FLOAT, {int64_t{12}});
  auto& n = a.node("Clip", {"x"}, {"y"});
  ModelBuilder::attr_float(n, "min", -1.5f);
  ModelBuilder::attr_float(n, "max", 0.5f);
  a.output("y", P::FLOAT);
  Tensor ya = run1(a, {{"x", f32({12}, x)}});

  ModelBuilder b(11);  // min omitted, max given
  b.input("x", P::FLOAT, {int64_t{12}});
  b.initializer("hi", {}, {0.5f});
  b.node("Clip", {"x", "", "hi"}, {"y"});
  b.output("y", P::FLOAT);
  Tensor yb = run1(b, {{"x", f32({12}, x)}});
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(ya.data<float>()[i], std::min(0.5f, std::max(-1.5f, x[i])));
    EXPECT_EQ(yb.data<float>()[i], std::min(0.5f, x[i]));
  }

  ModelBuilder c(11);
  c.input("x", P::FLOAT, {int64_t{2}});
  ModelBuilder::attr_float(c.node("Clip", {"x"}, {"y"}), "min", 0.0f);
  c.output("y", P::FLOAT);
  EXPECT_NE(load_error(c).find("became inputs in opset 11"), std::string::npos) << load_error(c);
}

TEST(MathOps, ClipOnInt32AndIntegersRefusedBeforeOpset12) {
  for (int opset : {11, 13}) {
    ModelBuilder b(opset);
    b.input("x", P::INT32, {int64_t{5}});
    b.input("lo", P::INT32, {});
    b.node("Clip", {"x", "lo"}, {"y"});
    b.output("y", P::INT32);
    if (opset == 11) {
      EXPECT_NE(load_error(b).find("int32"), std::string::npos) << load_error(b);
      continue;
    }
    Tensor y = run1(b, {{"x", make<int32_t>(DType::i32, {5}, {-7, -2, 0, 3, 2147483647})},
                        {"lo", make<int32_t>(DType::i32, {}, {-2})}});
    EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{-2, -2, 0, 3, 2147483647}));
  }
}

template <class T>
Tensor binary_int(const char* op, DType t, int elem, const std::vector<T>& a,
                  const std::vector<T>& b) {
  ModelBuilder m(14);
  int64_t n = static_cast<int64_t>(a.size());
  m.input("a", elem, {n});
  m.input("b", elem, {n});
  m.node(op, {"a", "b"}, {"y"});
  m.output("y", elem);
  return run1(m, {{"a", make(t, {n}, a)}, {"b", make(t, {n}, b)}});
}

TEST(MathOps, IntegerArithmeticTruncatesAndWraps) {
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  std::vector<int32_t> a = {7, -7, 7, -7, 5, kMin};
  std::vector<int32_t> b = {2, 2, -2, -2, 0, -1};
  Tensor q = binary_int<int32_t>("Div", DType::i32, P::INT32, a, b);
  // C truncation toward zero; x / 0 gives 0 rather than a crash; MIN / -1 wraps.
  EXPECT_EQ(values<int32_t>(q), (std::vector<int32_t>{3, -3, -3, 3, 0, kMin}));

  int64_t big = std::numeric_limits<int64_t>::max();
  Tensor s =
      binary_int<int64_t>("Add", DType::i64, P::INT64, {big, (int64_t{1} << 53) + 1}, {1, 2});
  EXPECT_EQ(values<int64_t>(s),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), (int64_t{1} << 53) + 3}));
  Tensor d = binary_int<uint8_t>("Sub", DType::u8, P::UINT8, {3, 200}, {5, 100});
  EXPECT_EQ(values<uint8_t>(d), (std::vector<uint8_t>{254, 100}));
  Tensor m = binary_int<int32_t>("Mul", DType::i32, P::INT32, {65536, -3}, {65536, 5});
  EXPECT_EQ(values<int32_t>(m), (std::vector<int32_t>{0, -15}));
}

TEST(MathOps, PowMixesBaseAndExponentTypes) {
  Tensor ii = binary_int<int64_t>("Pow", DType::i64, P::INT64, {3, -2, 5, 1}, {39, 3, 0, -4});
  int64_t p = 1;
  for (int i = 0; i < 39; ++i) p *= 3;
  EXPECT_EQ(values<int64_t>(ii), (std::vector<int64_t>{p, -8, 1, 1}));

  ModelBuilder m(15);
  m.input("x", P::FLOAT, {int64_t{2}, int64_t{3}});
  m.input("e", P::INT32, {int64_t{3}});
  m.node("Pow", {"x", "e"}, {"y"});
  m.output("y", P::FLOAT);
  std::vector<float> x = {1.5f, -2, 0.5f, 3, 4, -1};
  std::vector<int32_t> e = {2, 3, -1};
  Tensor y = run1(m, {{"x", f32({2, 3}, x)}, {"e", make(DType::i32, {3}, e)}});
  for (size_t i = 0; i < 6; ++i)
    EXPECT_FLOAT_EQ(y.data<float>()[i], std::pow(x[i], static_cast<float>(e[i % 3])));
}

TEST(MathOps, LegacyBroadcastBeforeOpset7AlignsAtAxis) {
  ModelBuilder m(6);
  m.input("a", P::FLOAT, {int64_t{2}, int64_t{3}, int64_t{4}});
  m.input("b", P::FLOAT, {int64_t{3}});
  auto& n = m.node("Mul", {"a", "b"}, {"y"});
  ModelBuilder::attr_int(n, "broadcast", 1);
  ModelBuilder::attr_int(n, "axis", 1);
  m.output("y", P::FLOAT);
  std::vector<float> a = ramp(24), b = {2, 3, 5};
  Tensor y = run1(m, {{"a", f32({2, 3, 4}, a)}, {"b", f32({3}, b)}});
  for (size_t i = 0; i < 24; ++i) EXPECT_EQ(y.data<float>()[i], a[i] * b[(i / 4) % 3]);

  ModelBuilder strict(6);
  strict.input("a", P::FLOAT, {int64_t{2}, int64_t{3}});
  strict.input("b", P::FLOAT, {int64_t{3}});
  strict.node("Add", {"a", "b"}, {"y"});
  strict.output("y", P::FLOAT);
  EXPECT_THROW(run1(strict, {{"a", f32({2, 3}, ramp(6))}, {"b", f32({3}, ramp(3))}}), Error);

  // An axis past the end is refused, the largest one too (found by fuzz/: axis + rank overflowed).
  for (int64_t axis : {int64_t{3}, std::numeric_limits<int64_t>::max()}) {
    ModelBuilder far(6);
    far.input("a", P::FLOAT, {int64_t{2}, int64_t{3}, int64_t{4}});
    far.input("b", P::FLOAT, {int64_t{3}});
    auto& f = far.node("Mul", {"a", "b"}, {"y"});
    ModelBuilder::attr_int(f, "broadcast", 1);
    ModelBuilder::attr_int(f, "axis", axis);
    far.output("y", P::FLOAT);
    try {
      run1(far, {{"a", f32({2, 3, 4}, a)}, {"b", f32({3}, b)}});
      ADD_FAILURE() << "axis " << axis << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("does not broadcast"), std::string::npos) << e.what();
    }
  }
}

TEST(MathOps, PReluPerChannelBeforeOpset7AndOnIntegers) {
  ModelBuilder m(6);
  m.input("x", P::FLOAT, {int64_t{2}, int64_t{3}, int64_t{2}});
  m.initializer("s", {3}, {0.5f, 2, -1});
  m.node("PRelu", {"x", "s"}, {"y"});
  m.output("y", P::FLOAT);
  std::vector<float> x = ramp(12);
  std::vector<float> s = {0.5f, 2, -1};
  Tensor y = run1(m, {{"x", f32({2, 3, 2}, x)}});
  for (size_t i = 0; i < 12; ++i)
    EXPECT_EQ(y.data<float>()[i], x[i] < 0 ? x[i] * s[(i / 2) % 3] : x[i]);

  ModelBuilder k(16);
  k.input("x", P::INT32, {int64_t{2}, int64_t{2}});
  k.input("s", P::INT32, {int64_t{2}});
  k.node("PRelu", {"x", "s"}, {"y"});
  k.output("y", P::INT32);
  Tensor yi = run1(k, {{"x", make<int32_t>(DType::i32, {2, 2}, {-4, 5, 6, -7})},
                       {"s", make<int32_t>(DType::i32, {2}, {3, -1})}});
  EXPECT_EQ(values<int32_t>(yi), (std::vector<int32_t>{-12, 5, 6, 7}));
}

TEST(MathOps, MinMaxAreVariadicBroadcastAndPropagateNaN) {
  ModelBuilder m(13);
  m.input("a", P::FLOAT, {int64_t{2}, int64_t{3}});
  m.input("b", P::FLOAT, {int64_t{3}});
  m.input("c", P::FLOAT, {int64_t{2}, int64_t{1}});
  m.node("Max", {"a", "b", "c"}, {"y"});
  m.output("y", P::FLOAT);
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {1, 5, -2, nan, 0, 3}, b = {2, -1, 0}, c = {0.5f, 2.5f};
  Tensor y = run1(m, {{"a", f32({2, 3}, a)}, {"b", f32({3}, b)}, {"c", f32({2, 1}, c)}});
  for (size_t i = 0; i < 6; ++i) {
    if (std::isnan(a[i])) {
      EXPECT_TRUE(std::isnan(y.data<float>()[i]));
      continue;
    }
    EXPECT_EQ(y.data<float>()[i], std::max({a[i], b[i % 3], c[i / 3]}));
  }
}

TEST(MathOps, WhereAndEqualBroadcast) {
  ModelBuilder m(16);
  m.input("a", P::INT64, {int64_t{2}, int64_t{3}});
  m.input("b", P::INT64, {int64_t{3}});
  m.node("Equal", {"a", "b"}, {"c"});
  m.node("Where", {"c", "a", "b"}, {"y"});
  m.output("c", P::BOOL);
  m.output("y", P::INT64);
  int64_t big = (int64_t{1} << 60) + 1;
  std::vector<int64_t> a = {big, 2, 3, big - 1, 5, 6}, b = {big, 5, 6};
  std::vector<Tensor> out =
      m.session().run({{"a", make(DType::i64, {2, 3}, a)}, {"b", make(DType::i64, {3}, b)}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].dtype(), DType::boolean);
  for (size_t i = 0; i < 6; ++i) {
    bool eq = a[i] == b[i % 3];
    EXPECT_EQ(out[0].data<uint8_t>()[i], eq ? 1 : 0) << i;
    EXPECT_EQ(out[1].data<int64_t>()[i], eq ? a[i] : b[i % 3]) << i;
  }
}

ModelBuilder reduce_model(const char* op, int opset, std::vector<int64_t> axes, bool as_input,
                          int64_t keepdims) {
  ModelBuilder b(opset);
  b.input("x", P::FLOAT, {int64_t{2}, int64_t{3}, int64_t{4}});
  std::vector<std::string> in = {"x"};
  if (as_input) {
    b.initializer_i64("axes", {static_cast<int64_t>(axes.size())}, axes);
    in.push_back("axes");
  }
  auto& n = b.node(op, in, {"y"});
  if (!as_input) ModelBuilder::attr_ints(n, "axes", axes);
  ModelBuilder::attr_int(n, "keepdims", keepdims);
  b.output("y", P::FLOAT);
  return b;
}

TEST(MathOps, ReduceAxesMoveFromAttributeToInput) {
  std::vector<float> x = ramp(24);
  for (auto [opset, as_input] : {std::pair{17, false}, std::pair{18, true}}) {
    Tensor mean =
        run1(reduce_model("ReduceMean", opset, {0, -1}, as_input, 0), {{"x", f32({2, 3, 4}, x)}});
    Tensor mx =
        run1(reduce_model("ReduceMax", opset, {2}, as_input, 1), {{"x", f32({2, 3, 4}, x)}});
    ASSERT_EQ(mean.shape(), (Shape{3}));
    ASSERT_EQ(mx.shape(), (Shape{2, 3, 1}));
    for (int c = 0; c < 3; ++c) {
      double s = 0;
      for (int b = 0; b < 2; ++b)
        for (int w = 0; w < 4; ++w) s += x[static_cast<size_t>(b * 12 + c * 4 + w)];
      EXPECT_NEAR(mean.data<float>()[c], s / 8, 1e-6);
    }
    for (int r = 0; r < 6; ++r)
      EXPECT_EQ(mx.data<float>()[r], *std::max_element(x.begin() + r * 4, x.begin() + r * 4 + 4));
  }
  ModelBuilder wrong = reduce_model("ReduceSum", 13, {1}, false, 1);
  EXPECT_NE(load_error(wrong).find("became an input in opset 13"), std::string::npos);
  try {
    run1(reduce_model("ReduceSum", 13, {1, -2}, true, 1), {{"x", f32({2, 3, 4}, x)}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than once"), std::string::npos) << e.what();
  }
}

TEST(MathOps, ReduceWithoutAxesReducesAllUnlessNoop) {
  std::vector<float> x = ramp(24);
  for (int64_t noop : {0, 1}) {
    ModelBuilder b(18);
    b.input("x", P::FLOAT, {int64_t{2}, int64_t{3}, int64_t{4}});
    auto& n = b.node("ReduceSum", {"x"}, {"y"});
    ModelBuilder::attr_int(n, "keepdims", 0);
    ModelBuilder::attr_int(n, "noop_with_empty_axes", noop);
    b.output("y", P::FLOAT);
    Tensor y = run1(b, {{"x", f32({2, 3, 4}, x)}});
    if (noop) {
      EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
      EXPECT_EQ(values<float>(y), x);
    } else {
      double s = 0;
      for (float v : x) s += v;
      EXPECT_EQ(y.shape(), Shape{});
      EXPECT_NEAR(y.data<float>()[0], s, 1e-5);
    }
  }
}

TEST(MathOps, ArgMaxTiesAndLastIndex) {
  std::vector<float> x = {1, 3, 3, 0, 2, 2, 2, 1};
  for (int64_t last : {0, 1}) {
    ModelBuilder b(13);
    b.input("x", P::FLOAT, {int64_t{2}, int64_t{4}});
    auto& n = b.node("ArgMax", {"x"}, {"y"});
    ModelBuilder::attr_int(n, "axis", -1);
    ModelBuilder::attr_int(n, "keepdims", 0);
    ModelBuilder::attr_int(n, "select_last_index", last);
    b.output("y", P::INT64);
    Tensor y = run1(b, {{"x", f32({2, 4}, x)}});
    EXPECT_EQ(y.shape(), (Shape{2}));
    EXPECT_EQ(values<int64_t>(y),
              last ? (std::vector<int64_t>{2, 2}) : (std::vector<int64_t>{1, 0}));
  }
}

TEST(MathOps, MatMulVectorsAndBatchBroadcast) {
  struct Case {
    Shape a, b, y;
  };
  for (const Case& c : {Case{{4}, {2, 4, 3}, {2, 3}}, Case{{2, 3, 4}, {4}, {2, 3}},
                        Case{{4}, {4}, {}}, Case{{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}}}) {
    ModelBuilder m(13);
    std::vector<ModelBuilder::DimSpec> da(c.a.begin(), c.a.end()), db(c.b.begin(), c.b.end());
    m.input("a", P::FLOAT, da);
    m.input("b", P::FLOAT, db);
    m.node("MatMul", {"a", "b"}, {"y"});
    m.output("y", P::FLOAT);
    // B from 7 on, so that its values differ from A's.
    const std::vector<float> a = ramp(shape_numel(c.a)), ramp_b = ramp(shape_numel(c.b) + 7);
    std::vector<float> b(ramp_b.begin() + 7, ramp_b.end());
    Tensor y = run1(m, {{"a", f32(c.a, a)}, {"b", f32(c.b, b)}});
    ASSERT_EQ(y.shape(), c.y);
    // Independent check: promote to the general batched case by hand.
    Shape a4 = c.a.size() == 1 ? Shape{1, 1, 1, c.a[0]} : c.a;
    Shape b4 = c.b.size() == 1 ? Shape{1, 1, c.b[0], 1} : c.b;
    while (a4.size() < 4) a4.insert(a4.begin(), 1);
    while (b4.size() < 4) b4.insert(b4.begin(), 1);
    int64_t B0 = std::max(a4[0], b4[0]), B1 = std::max(a4[1], b4[1]);
    int64_t M = a4[2], K = a4[3], N = b4[3];
    int64_t i = 0;
    for (int64_t p = 0; p < B0; ++p)
      for (int64_t q = 0; q < B1; ++q)
        for (int64_t r = 0; r < M; ++r)
          for (int64_t s = 0; s < N; ++s, ++i) {
            double acc = 0;
            for (int64_t k = 0; k < K; ++k) {
              int64_t ia = (((a4[0] > 1 ? p : 0) * a4[1] + (a4[1] > 1 ? q : 0)) * M + r) * K + k;
              int64_t ib = (((b4[0] > 1 ? p : 0) * b4[1] + (b4[1] > 1 ? q : 0)) * K + k) * N + s;
              acc += a[static_cast<size_t>(ia)] * b[static_cast<size_t>(ib)];
            }
            EXPECT_NEAR(y.data<float>()[i], acc, 1e-5);
          }
  }
}

TEST(MathOps, GemmTransposesScalesAndOptionalC) {
  for (bool with_c : {false, true}) {
    ModelBuilder m(13);
    m.input("a", P::FLOAT, {int64_t{4}, int64_t{3}});  // transposed: M=3, K=4
    m.input("b", P::FLOAT, {int64_t{2}, int64_t{4}});  // transposed: K=4, N=2
    std::vector<std::string> in = {"a", "b"};
    if (with_c) {
      m.initializer("c", {2}, {10, -20});
      in.push_back("c");
    }
    auto& n = m.node("Gemm", in, {"y"});
    ModelBuilder::attr_int(n, "transA", 1);
    ModelBuilder::attr_int(n, "transB", 1);
    ModelBuilder::attr_float(n, "alpha", 0.5f);
    ModelBuilder::attr_float(n, "beta", 2.0f);
    m.output("y", P::FLOAT);
    std::vector<float> a = ramp(12), b = ramp(8);
    Tensor y = run1(m, {{"a", f32({4, 3}, a)}, {"b", f32({2, 4}, b)}});
    ASSERT_EQ(y.shape(), (Shape{3, 2}));
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 2; ++c) {
        double acc = 0;
        for (int k = 0; k < 4; ++k)
          acc += a[static_cast<size_t>(k * 3 + r)] * b[static_cast<size_t>(c * 4 + k)];
        double want = 0.5 * acc + (with_c ? 2.0 * (c ? -20 : 10) : 0);
        EXPECT_NEAR(y.data<float>()[r * 2 + c], want, 1e-5);
      }
  }
  ModelBuilder old(9);
  old.input("a", P::FLOAT, {int64_t{2}, int64_t{2}});
  old.node("Gemm", {"a", "a"}, {"y"});
  old.output("y", P::FLOAT);
  EXPECT_NE(load_error(old).find("expects 3 inputs"), std::string::npos) << load_error(old);
}

TEST(MathOps, HalfAndBFloat16StorageComputeInDouble) {
  for (auto [elem, dt] :
       {std::pair{int(P::FLOAT16), DType::f16}, std::pair{int(P::BFLOAT16), DType::bf16}}) {
    ModelBuilder m(13);
    m.input("x", elem, {int64_t{2}, int64_t{5}});
    m.node("Softmax", {"x"}, {"s"});
    m.node("Sigmoid", {"s"}, {"y"});
    m.output("y", elem);
    std::vector<float> x = ramp(10);
    std::vector<uint16_t> bits;
    for (float v : x) bits.push_back(dt == DType::f16 ? float_to_half(v) : float_to_bf16(v));
    Tensor y = run1(m, {{"x", make(dt, {2, 5}, bits)}});
    ASSERT_EQ(y.dtype(), dt);
    for (int r = 0; r < 2; ++r) {
      double sum = 0;
      auto xin = [&](int i) {
        uint16_t h = bits[static_cast<size_t>(i)];
        return static_cast<double>(dt == DType::f16 ? half_to_float(h) : bf16_to_float(h));
      };
      for (int c = 0; c < 5; ++c) sum += std::exp(xin(r * 5 + c));
      for (int c = 0; c < 5; ++c) {
        uint16_t h = y.data<uint16_t>()[r * 5 + c];
        double got = dt == DType::f16 ? half_to_float(h) : bf16_to_float(h);
        double want = 1 / (1 + std::exp(-std::exp(xin(r * 5 + c)) / sum));
        EXPECT_NEAR(got, want, dt == DType::f16 ? 1e-3 : 8e-3);
      }
    }
  }
}

TEST(MathOps, ShapeErrorsNameTheNodeAndTheShapes) {
  ModelBuilder m(14);
  m.input("a", P::FLOAT, {int64_t{2}, int64_t{3}});
  m.input("b", P::FLOAT, {int64_t{4}});
  m.node("Add", {"a", "b"}, {"y"});
  m.output("y", P::FLOAT);
  try {
    run1(m, {{"a", f32({2, 3}, ramp(6))}, {"b", f32({4}, ramp(4))}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("Add_1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2x3"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace voxrt
