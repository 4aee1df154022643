#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <tuple>

#include "model_builder.h"
#include "support/paths.h"

namespace voxrt {
namespace {

using test::ModelBuilder;

ModelBuilder relu_model() {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {std::string("batch"), int64_t{3}});
  b.node("Relu", {"x"}, {"h"});
  b.node("LeakyRelu", {"h"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  return b;
}

TEST(Session, RunsAnyBatchSizeWithoutReloading) {
  Session s = relu_model().session();
  ASSERT_EQ(s.inputs().size(), 1u);
  EXPECT_EQ(s.inputs()[0].shape, (Shape{-1, 3}));
  EXPECT_EQ(s.inputs()[0].dim_names[0], "batch");
  for (int64_t n : {1, 3, 5}) {
    Tensor x = Tensor::empty(DType::f32, {n, 3});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 5) - 2.0f;
    std::vector<Tensor> y = s.run({{"x", x}});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].shape(), (Shape{n, 3}));
    for (int64_t i = 0; i < x.numel(); ++i)
      EXPECT_FLOAT_EQ(y[0].data<float>()[i], std::max(0.0f, x.data<float>()[i]));
  }
}

TEST(Session, SummarySaysWhatNeedsShapes) {
  Session s = relu_model().session();
  ModelSummary fixed = s.summary();
  EXPECT_FALSE(fixed.planned);
  EXPECT_EQ(fixed.opset, 17);
  EXPECT_EQ(fixed.op_histogram.at("Relu"), 1);
  EXPECT_TRUE(fixed.output_shapes.empty());
  ModelSummary at = s.summary({{"x", Shape{4, 3}}});
  EXPECT_TRUE(at.planned);
  EXPECT_EQ(at.output_shapes, (std::vector<Shape>{{4, 3}}));
  EXPECT_EQ(at.op_histogram, fixed.op_histogram);
}

TEST(Session, RunsIntoCallerBuffers) {
  Session s = relu_model().session();
  std::vector<float> in = {-1, 2, -3, 4, -5, 6};
  std::vector<float> out(6, 123.0f);
  std::vector<NamedTensor> outs = {{"y", Tensor::view(DType::f32, {2, 3}, out.data())}};
  s.run({{"x", Tensor::view(DType::f32, {2, 3}, in.data())}}, outs);
  EXPECT_EQ(out, (std::vector<float>{0, 2, 0, 4, 0, 6}));
}

TEST(Session, ConcurrentRunsAgree) {
  Session s = relu_model().session();
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      int64_t n = t + 1;
      Tensor x = Tensor::empty(DType::f32, {n, 3});
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i - t);
      bool good = true;
      for (int rep = 0; rep < 50; ++rep) {
        Tensor y = s.run({{"x", x}})[0];
        for (int64_t i = 0; i < x.numel(); ++i)
          good = good && y.data<float>()[i] == std::max(0.0f, x.data<float>()[i]);
      }
      ok[static_cast<size_t>(t)] = good;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok, (std::vector<int>{1, 1, 1, 1}));
}

// A 3x3 convolution through the public options: FpMath::bf16 takes the bf16 dot-product kernels
// where the CPU has them (cpu_info() says), stays within the reduced-precision bar of strict fp32,
// and leaves a CPU without them on the strict kernels.
TEST(Session, Bf16ProductsFollowTheOptionAndTheCpu) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{8}, int64_t{20}, int64_t{23}});
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-0.3f, 0.3f);
  std::vector<float> w(16 * 8 * 9), bias(16);
  for (float& v : w) v = d(rng);
  for (float& v : bias) v = d(rng);
  b.initializer("w", {16, 8, 3, 3}, w);
  b.initializer("b", {16}, bias);
  ModelBuilder::attr_ints(b.node("Conv", {"x", "w", "b"}, {"y"}), "pads", {1, 1, 1, 1});
  b.output("y", onnx::TensorProto::FLOAT);
  Tensor x = Tensor::empty(DType::f32, {1, 8, 20, 23});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng) * 3;

  auto run = [&](FpMath m, std::string& kernel) {
    SessionOptions opt;
    opt.fpmath = m;
    opt.profiling = true;
    Session s = b.session(opt);
    Tensor y = s.run({{"x", x}})[0];
    kernel = s.last_profile().at(0).kernel;
    return y;
  };
  std::string strict_kernel, bf16_kernel;
  Tensor strict = run(FpMath::strict, strict_kernel);
  Tensor bf16 = run(FpMath::bf16, bf16_kernel);
  EXPECT_EQ(strict_kernel.find("bf16"), std::string::npos) << strict_kernel;
  if (!cpu_info().bf16_products) {
    EXPECT_EQ(bf16_kernel, strict_kernel) << "no bf16 products that pay here (" << cpu_info().isa << ")";
    return;
  }
  EXPECT_NE(bf16_kernel.find("bf16dot"), std::string::npos) << bf16_kernel;
  double err = 0, norm = 0;
  for (int64_t i = 0; i < strict.numel(); ++i) {
    double e = bf16.data<float>()[i] - strict.data<float>()[i];
    err += e * e;
    norm += static_cast<double>(strict.data<float>()[i]) * strict.data<float>()[i];
  }
  const double rel = std::sqrt(err / norm);
  EXPECT_LT(rel, 1e-2);
  EXPECT_GT(rel, 1e-6) << "bf16 products should round: the option had no effect";
}

// The memory a Session reports beside its activations: the weights it holds (constants and the
// panels ops packed, about half with fp16 storage and bf16 products) and the scratch its ops
// keep between runs (none before the first run).
TEST(Session, ReportsWeightAndScratchBytes) {
  const std::string dir = voxrt::test::source_dir() + "/tests/fixtures/";
  auto measure = [&](const std::string& file, FpMath m, Backend b, bool winograd = false) {
    SessionOptions o;
    o.fpmath = m;
    o.backend = b;
    o.winograd = winograd;
    Session s(dir + file, o);
    EXPECT_EQ(s.scratch_peak_bytes(), 0);
    const DType t = s.inputs()[0].dtype;
    Tensor x = Tensor::empty(t, {1, 1, 32, 32, 32});
    std::memset(x.raw(), 0, x.nbytes());
    s.run({{s.inputs()[0].name, x}});
    return std::make_tuple(s.summary().weight_bytes, s.scratch_peak_bytes(),
                           s.summary().parameters);
  };
  const auto [ref_w, ref_scratch, params] =
      measure("unet3d_monai_op17.onnx", FpMath::strict, Backend::reference);
  const auto [fp32_w, fp32_scratch, p32] =
      measure("unet3d_monai_op17.onnx", FpMath::strict, Backend::cpu);
  const auto [half_w, half_scratch, p16] =
      measure("unet3d_monai_op17_fp16.onnx", FpMath::bf16, Backend::cpu);
  EXPECT_GE(ref_w, 4 * params);  // every float constant, in float32
  EXPECT_LT(ref_w, 4 * params + (64 << 10));
  EXPECT_EQ(ref_scratch, 0) << "the reference ops take no scratch";
  // Packed panels: the weights once (padded to whole micro-panels), the constants released.
  EXPECT_GE(fp32_w, 4 * params);
  EXPECT_LT(fp32_w, 4 * params * 3 / 2);
  EXPECT_GT(fp32_scratch, 0);
  EXPECT_EQ(p16, p32);
  EXPECT_GT(half_w, fp32_w * 2 / 5);
  EXPECT_LT(half_w, fp32_w * 3 / 5);
  // bf16 pairs: half the bytes of fp32 panels. Where AVX512-FP16 computes fp16 models, its rows
  // are taken over bf16 pairs, their panels widened to f16_pair, as many bytes as fp32's.
  if (cpu_info().bf16_products && !cpu_info().fp16_arithmetic) {
    EXPECT_LT(half_scratch, fp32_scratch);
  }
  // Winograd's form (above, off): its 3x3x3 layers of 16 channels and more hold 64 transformed
  // weights for every 27.
  const auto [wino_w, wino_scratch, pw] =
      measure("unet3d_monai_op17.onnx", FpMath::strict, Backend::cpu, true);
  EXPECT_GT(wino_w, fp32_w);
  EXPECT_LT(wino_w, fp32_w * 64 / 27);
}

TEST(Session, RejectsWrongInputs) {
  Session s = relu_model().session();
  Tensor wrong_rank = Tensor::zeros(DType::f32, {3});
  EXPECT_THROW(s.run({{"x", wrong_rank}}), Error);
  Tensor wrong_dim = Tensor::zeros(DType::f32, {2, 4});
  try {
    s.run({{"x", wrong_dim}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'x'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dimension 1 must be 3"), std::string::npos) << e.what();
  }
  Tensor wrong_type = Tensor::zeros(DType::f16, {2, 3});
  EXPECT_THROW(s.run({{"x", wrong_type}}), Error);
  EXPECT_THROW(s.run({{"nope", wrong_dim}}), Error);
  EXPECT_THROW(s.run({}), Error);
}

// SessionOptions::input_shapes: kernels chosen for the inputs' expected shapes. An fp16 3x3x3
// layer of 64 x 64 channel pairs takes Winograd's F(4, 3) (its transformed weights, 864 bytes a
// pair, more than F(2, 3)'s or the direct form's) where its expected output takes at least
// twice those bytes, not for a small expected output nor untold; a model whose input declares
// no symbolic dim is told its declared shape. The Session still runs any shape, within the fp16
// bound of the reference. Names that are no input, a missing name where the model has several
// inputs, and shapes the model refuses are Errors at creation; an input left out whose declared
// shape has symbolic dims leaves the Session untold.
TEST(Session, ChoosesKernelsForExpectedInputShapes) {
  const auto conv_model = [](std::vector<ModelBuilder::DimSpec> dims) {
    ModelBuilder b(17);
    b.input("x", onnx::TensorProto::FLOAT, dims);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    std::vector<float> w(64 * 64 * 27), bias(64);
    for (float& v : w) v = normal(rng);
    for (float& v : bias) v = normal(rng);
    b.initializer("w", {64, 64, 3, 3, 3}, w);
    b.initializer("b", {64}, bias);
    auto& conv = b.node("Conv", {"x", "w", "b"}, {"y"});
    ModelBuilder::attr_ints(conv, "pads", {1, 1, 1, 1, 1, 1});
    b.output("y", onnx::TensorProto::FLOAT);
    return b;
  };
  const ModelBuilder dynamic = conv_model(
      {std::string("N"), int64_t{64}, std::string("D"), std::string("H"), std::string("W")});
  const ModelBuilder fixed =
      conv_model({int64_t{1}, int64_t{64}, int64_t{40}, int64_t{40}, int64_t{40}});
  const ModelBuilder fixed_small =
      conv_model({int64_t{1}, int64_t{64}, int64_t{8}, int64_t{8}, int64_t{8}});
  auto open = [](const ModelBuilder& model, std::vector<std::pair<std::string, Shape>> shapes,
                 Backend backend = Backend::cpu) {
    SessionOptions o;
    o.precision = Precision::fp16;
    o.backend = backend;
    o.input_shapes = std::move(shapes);
    return model.session(o);
  };
  Session untold = open(dynamic, {});
  Session big = open(dynamic, {{"x", {1, 64, 40, 40, 40}}});  // 8 MB of fp16 output
  Session small = open(dynamic, {{"", {1, 64, 8, 8, 8}}});    // the only input, unnamed
  Session declared = open(fixed, {});
  Session declared_small = open(fixed_small, {});
  EXPECT_GT(big.summary().weight_bytes, untold.summary().weight_bytes + (2 << 20));
  // Small outputs take no more (on AVX512-FP16 fewer: no F(2, 3) on fp16 products below 24^3).
  EXPECT_LE(small.summary().weight_bytes, untold.summary().weight_bytes);
  EXPECT_EQ(declared.summary().weight_bytes, big.summary().weight_bytes);
  EXPECT_EQ(declared_small.summary().weight_bytes, small.summary().weight_bytes);
  Session ref = open(dynamic, {}, Backend::reference);
  std::mt19937 rng(8);
  Tensor x = Tensor::empty(DType::f32, {1, 64, 5, 6, 7});
  std::normal_distribution<float> unit(0.0f, 1.0f);
  for (int64_t i = 0; i < x.numel(); ++i) static_cast<float*>(x.raw())[i] = unit(rng);
  const Tensor want = ref.run({{"x", x}})[0];
  for (Session* s : {&untold, &big, &small}) {  // any shape: 5x6x7 here
    const Tensor got = s->run({{"x", x}})[0];
    ASSERT_EQ(got.shape(), want.shape());
    double num = 0, den = 0;
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double g = static_cast<const float*>(got.raw())[i],
                   r = static_cast<const float*>(want.raw())[i];
      num += (g - r) * (g - r);
      den += r * r;
    }
    EXPECT_LT(std::sqrt(num / den), 1e-2);
  }
  auto error_of = [&](std::vector<std::pair<std::string, Shape>> shapes) {
    try {
      open(dynamic, std::move(shapes));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of({{"nope", {1, 64, 8, 8, 8}}}).find("'nope', which is not an input"),
            std::string::npos)
      << error_of({{"nope", {1, 64, 8, 8, 8}}});
  EXPECT_NE(error_of({{"x", {1, 32, 8, 8, 8}}}).find("tensor 'x'"), std::string::npos)
      << error_of({{"x", {1, 32, 8, 8, 8}}});
  ModelBuilder two(17);
  two.input("a", onnx::TensorProto::FLOAT, {std::string("N"), int64_t{3}});
  two.input("b", onnx::TensorProto::FLOAT, {std::string("N"), int64_t{3}});
  two.node("Add", {"a", "b"}, {"c"});
  two.output("c", onnx::TensorProto::FLOAT);
  SessionOptions o;
  o.input_shapes = {{"", {2, 3}}};
  EXPECT_THROW(two.session(o), Error);
  o.input_shapes = {{"a", {2, 3}}};  // b's declared shape has a symbolic dim: nothing told
  EXPECT_NO_THROW(two.session(o));
  o.input_shapes = {{"a", {2, 3}}, {"b", {2, 3}}};
  EXPECT_NO_THROW(two.session(o));
}

// A model file's declared inputs, read without a Session (voxrt segment chooses its expected
// shapes from them): what the Session lists, for fp32 and fp16 files of 2D and 3D models; a
// missing file is an Error naming it.
TEST(Session, ModelInputsReadWithoutCompiling) {
  const std::string dir = voxrt::test::source_dir() + "/tests/fixtures/";
  for (const char* file : {"unet3d_bn_op17.onnx", "unet3d_bn_op17_fp16.onnx",
                           "unet3d_bn_op11_fp16io32.onnx", "unet2d_op17.onnx"}) {
    const std::vector<IoInfo> read = model_inputs(dir + file);
    const Session s(dir + file);
    ASSERT_EQ(read.size(), s.inputs().size()) << file;
    for (size_t i = 0; i < read.size(); ++i) {
      EXPECT_EQ(read[i].name, s.inputs()[i].name) << file;
      EXPECT_EQ(read[i].dtype, s.inputs()[i].dtype) << file;
      EXPECT_EQ(read[i].shape, s.inputs()[i].shape) << file;
      EXPECT_EQ(read[i].dim_names, s.inputs()[i].dim_names) << file;
    }
    EXPECT_EQ(read[0].shape.size(), std::string(file).find("2d") != std::string::npos ? 4u : 5u)
        << file;
    EXPECT_EQ(read[0].shape[0], -1) << file << ": the batch is symbolic";
  }
  EXPECT_EQ(model_inputs(dir + "unet3d_bn_op17_fp16.onnx")[0].dtype, DType::f16);
  try {
    model_inputs(dir + "no_such_model.onnx");
    ADD_FAILURE() << "a missing file was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_model.onnx"), std::string::npos) << e.what();
  }
}

// onnxconverter_common's default block list keeps both decoder Resizes of unet3d_resize in
// float32 between Casts; voxrt runs those islands in fp16, so the file compiles to the graph of
// a whole conversion (the fp32 file with Precision::fp16: Resize included, fp32 at the edges)
// and plans the same activation bytes. One Cast is left, the input's: the output's joined the
// last convolution, which took the head and the Softmax after it.
TEST(Session, DefaultBlockListCompilesLikeAWholeConversion) {
  const std::string dir = voxrt::test::source_dir() + "/tests/fixtures/";
  for (const char* opset : {"op11", "op17"}) {
    const std::string stem = dir + "unet3d_resize_" + opset;
    Session blocked(stem + "_fp16io32.onnx");
    SessionOptions o;
    o.precision = Precision::fp16;
    Session whole(stem + ".onnx", o);
    const std::vector<std::pair<std::string, Shape>> shape = {{"input", {1, 1, 32, 32, 32}}};
    const ModelSummary a = blocked.summary(shape), b = whole.summary(shape);
    EXPECT_EQ(a.op_histogram, b.op_histogram) << opset;
    EXPECT_EQ(a.op_histogram.count("Cast") ? a.op_histogram.at("Cast") : 0, 1) << opset;
    EXPECT_EQ(a.activation_bytes, b.activation_bytes) << opset;
  }
}

// A constant read as float32 (Resize's scales) and as an fp16 operand (Mul's) is duplicated by the
// fp16 conversion, each reader getting its type (found by fuzz/: the pass then indexed its
// consumer table with the copy's new id, past the end).
TEST(Session, Fp16ConversionSplitsAConstantReadInBothTypes) {
  ModelBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 4});
  b.initializer("k", {4}, {1, 1, 1, 2});
  b.node("Resize", {"x", "", "k"}, {"up"});
  b.node("Mul", {"x", "k"}, {"scaled"});
  b.output("up", onnx::TensorProto::FLOAT);
  b.output("scaled", onnx::TensorProto::FLOAT);
  SessionOptions opt;
  opt.precision = Precision::fp16;
  Session s = b.session(opt);
  std::vector<float> xv = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<Tensor> y = s.run({{"x", Tensor::view(DType::f32, {1, 1, 2, 4}, xv.data())}});
  ASSERT_EQ(y.size(), 2u);
  ASSERT_EQ(y[0].shape(), (Shape{1, 1, 2, 8}));
  ASSERT_EQ(y[1].shape(), (Shape{1, 1, 2, 4}));
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(y[0].data<float>()[i], xv[static_cast<size_t>(i / 2)]);
  for (int64_t i = 0; i < 8; ++i)
    EXPECT_EQ(y[1].data<float>()[i], xv[static_cast<size_t>(i)] * (i % 4 == 3 ? 2 : 1));
}

// A profiled node reports the activation bytes it read and wrote: its non-constant inputs and
// its outputs at their storage types, weights excluded (voxrt profile's GB/s).
TEST(Session, ProfileCountsActivationBytes) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 4, 6, 7});
  b.input("r", onnx::TensorProto::FLOAT, {1, 5, 6, 7});
  b.initializer("w", {5, 4, 1, 1}, std::vector<float>(20, 0.25f));
  b.node("Conv", {"x", "w"}, {"c"});
  b.node("Add", {"c", "r"}, {"s"});
  b.node("Relu", {"s"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  SessionOptions opt;
  opt.profiling = true;
  opt.optimize = false;  // three nodes, as written
  Session s = b.session(opt);
  Tensor x = Tensor::zeros(DType::f32, {1, 4, 6, 7}), r = Tensor::zeros(DType::f32, {1, 5, 6, 7});
  s.run({{"x", x}, {"r", r}});
  const std::vector<NodeProfile> p = s.last_profile();
  ASSERT_EQ(p.size(), 3u);
  const int64_t plane = 6 * 7 * 4;
  EXPECT_EQ(p[0].bytes, (4 + 5) * plane);      // x in, c out; the weights are a constant
  EXPECT_EQ(p[1].bytes, (5 + 5 + 5) * plane);  // c and r in, s out
  EXPECT_EQ(p[2].bytes, (5 + 5) * plane);
}

// run(inputs, outputs, observe) shows each node's values as the run writes them: the node's
// and the value's names, in execution order, with the values the node computed.
TEST(Session, ObserverSeesEachNodesValues) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {2, 3, 4, 5});
  b.initializer("two", {}, std::vector<float>{2.0f});
  b.node("Relu", {"x"}, {"h"}).set_name("relu");
  b.node("Mul", {"h", "two"}, {"m"}).set_name("double");
  b.node("Add", {"m", "x"}, {"y"}).set_name("add");
  b.output("y", onnx::TensorProto::FLOAT);
  SessionOptions opt;
  opt.optimize = false;  // three nodes, as written
  Session s = b.session(opt);
  Tensor x = Tensor::empty(DType::f32, {2, 3, 4, 5});
  std::mt19937 rng(5);
  std::normal_distribution<float> dist;
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng);
  Tensor y = Tensor::empty(DType::f32, {2, 3, 4, 5});
  std::vector<NamedTensor> outs = {{"y", y}};
  std::vector<std::pair<std::string, std::string>> seen;
  std::vector<std::vector<float>> values;
  s.run({{"x", x}}, outs, [&](const std::string& node, const std::string& value, const Tensor& t) {
    seen.emplace_back(node, value);
    ASSERT_EQ(t.shape(), x.shape());
    values.emplace_back(t.data<float>(), t.data<float>() + t.numel());
  });
  ASSERT_EQ(seen, (std::vector<std::pair<std::string, std::string>>{
                      {"relu", "h"}, {"double", "m"}, {"add", "y"}}));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data<float>()[i], h = std::max(0.0f, v);
    const auto at = static_cast<size_t>(i);
    EXPECT_EQ(values[0][at], h);
    EXPECT_EQ(values[1][at], 2 * h);
    EXPECT_EQ(values[2][at], 2 * h + v);
    EXPECT_EQ(values[2][at], y.data<float>()[i]);
  }
}

// Through a whole model, where the arena reuses bytes as values die: every value the optimized
// kernels write is, when observed, the one the reference computes under the same name.
TEST(Session, ObservedValuesOfAModelAreTheReferences) {
  const std::string model = voxrt::test::source_dir() + "/tests/fixtures/unet3d_bn_op17.onnx";
  Tensor x = Tensor::empty(DType::f32, {1, 1, 24, 24, 24});
  std::mt19937 rng(11);
  std::normal_distribution<float> dist;
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = dist(rng);
  auto observed = [&](Backend backend) {
    SessionOptions opt;
    opt.backend = backend;
    Session s(model, opt);
    std::vector<NamedTensor> outs = {{"output", Tensor::empty(DType::f32, {1, 3, 24, 24, 24})}};
    std::map<std::string, std::vector<float>> values;
    s.run({{"input", x}}, outs, [&](const std::string&, const std::string& value, const Tensor& t) {
      if (t.dtype() == DType::f32)
        values[value].assign(t.data<float>(), t.data<float>() + t.numel());
    });
    return values;
  };
  const auto cpu = observed(Backend::cpu), ref = observed(Backend::reference);
  int compared = 0;
  for (const auto& [name, want] : ref) {
    auto got = cpu.find(name);
    if (got == cpu.end()) continue;
    ASSERT_EQ(got->second.size(), want.size()) << name;
    double diff = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      diff += (got->second[i] - want[i]) * double(got->second[i] - want[i]);
      norm += want[i] * double(want[i]);
    }
    EXPECT_GT(norm, 0) << name;
    EXPECT_LT(std::sqrt(diff / norm), 1e-5) << name;
    ++compared;
  }
  EXPECT_GE(compared, 12);  // the model's 15 nodes after the passes, less any fused differently
}

// run(inputs) returns tensors whose storage comes back to the Session when the caller drops
// them (runtime/output_cache, tested in scratch_test.cpp): outputs the caller holds are never
// handed out again, and they may outlive the Session.
TEST(Session, ReturnedOutputsStayTheCallersAndMayOutliveTheSession) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {1, 4, 64, 64});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  Tensor x = Tensor::empty(DType::f32, {1, 4, 64, 64});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 7) - 3;
  auto s = std::make_unique<Session>(b.session());
  for (int i = 0; i < 2; ++i) s->run({{"x", x}});  // dropped at once: their storage returns
  Tensor y = s->run({{"x", x}})[0];
  Tensor held = s->run({{"x", x}})[0];
  EXPECT_NE(held.raw(), y.raw()) << "outputs the caller holds are never handed out again";
  s.reset();
  for (int64_t i = 0; i < held.numel(); ++i)
    ASSERT_EQ(held.data<float>()[i], std::max(x.data<float>()[i], 0.0f)) << i;
}

}  // namespace
}  // namespace voxrt
