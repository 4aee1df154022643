// Malformed models and inputs must give a voxrt::Error that names what is wrong, never a crash.
// CI runs this file under AddressSanitizer and UndefinedBehaviorSanitizer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "model_builder.h"

namespace voxrt {
namespace {

using test::ModelBuilder;

ModelBuilder small_model() {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {std::string("N"), int64_t{4}});
  b.initializer("w", {4}, {1, -2, 3, -4});
  b.node("Mul", {"x", "w"}, {"m"});
  b.node("Relu", {"m"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  return b;
}

std::string load_error(const std::string& bytes) {
  try {
    SessionOptions opt;
    opt.model_name = "bad.onnx";
    Session s(bytes.data(), bytes.size(), opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(BadInput, TruncatedFile) {
  std::string b = small_model().bytes();
  for (size_t cut : {b.size() / 2, b.size() - 3, size_t{5}, size_t{0}}) {
    std::string err = load_error(b.substr(0, cut));
    EXPECT_CONTAINS(err, "bad.onnx");
  }
}

TEST(BadInput, BytesThatAreNotOnnx) {
  EXPECT_CONTAINS(load_error("this is a text file, not a model\n"), "not a valid ONNX model");
  std::string png = "\x89PNG\r\n\x1a\n";
  EXPECT_CONTAINS(load_error(png + std::string(100, '\x07')), "bad.onnx");
}

TEST(BadInput, RandomCorruptionNeverCrashes) {
  std::string good = small_model().bytes();
  std::mt19937 rng(7);
  int errors = 0, loaded = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string b = good;
    for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    try {
      SessionOptions opt;
      opt.model_name = "bad.onnx";
      Session s(b.data(), b.size(), opt);
      Tensor x = Tensor::zeros(DType::f32, {2, 4});
      s.run({{s.inputs().at(0).name, x}});
      ++loaded;
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_EQ(errors + loaded, 300);
  EXPECT_GT(errors, 0);
}

TEST(BadInput, GraphWithCycle) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {int64_t{4}});
  b.node("Add", {"x", "c"}, {"a"});
  b.node("Relu", {"a"}, {"c"});
  b.output("a", onnx::TensorProto::FLOAT);
  EXPECT_CONTAINS(load_error(b.bytes()), "cycle");
}

TEST(BadInput, UnknownOp) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {int64_t{4}});
  b.node("FrobnicateVoxels", {"x"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  std::string err = load_error(b.bytes());
  EXPECT_CONTAINS(err, "FrobnicateVoxels");
  EXPECT_CONTAINS(err, "not supported");
}

TEST(BadInput, UnknownDomainAndFutureOpset) {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {int64_t{4}});
  b.node("Relu", {"x"}, {"y"}).set_domain("com.example");
  b.output("y", onnx::TensorProto::FLOAT);
  EXPECT_CONTAINS(load_error(b.bytes()), "com.example");
  ModelBuilder f(99);
  f.input("x", onnx::TensorProto::FLOAT, {int64_t{4}});
  f.node("Relu", {"x"}, {"y"});
  f.output("y", onnx::TensorProto::FLOAT);
  EXPECT_CONTAINS(load_error(f.bytes()), "opset 99");
}

TEST(BadInput, InputOfWrongRankDtypeOrSize) {
  Session s = small_model().session();
  auto err = [&](Tensor x) {
    try {
      s.run({{"x", x}});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_CONTAINS(err(Tensor::zeros(DType::f32, {4})), "rank 1, expected 2");
  EXPECT_CONTAINS(err(Tensor::zeros(DType::f16, {2, 4})), "given float16, expected float");
  EXPECT_CONTAINS(err(Tensor::zeros(DType::f32, {2, 5})), "dimension 1 must be 4");
}

TEST(BadInput, TensorDeclaringMoreThanItHolds) {
  ModelBuilder b = small_model();
  auto* w = b.proto().mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  w->add_dims(1000);
  EXPECT_CONTAINS(load_error(b.bytes()), "initializer 'w'");
  w->clear_float_data();
  w->set_raw_data(std::string(16, '\0'));
  std::string err = load_error(b.bytes());
  EXPECT_CONTAINS(err, "needs 4000 bytes but the tensor holds 16");
}

// A typed data field shorter than the declared shape is refused before the tensor is allocated:
// 512 GiB declared over four floats (found by fuzz/, which would allocate first).
TEST(BadInput, TensorDeclaringMoreIsRefusedBeforeAllocating) {
  ModelBuilder b = small_model();
  auto* w = b.proto().mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  w->add_dims(int64_t{1} << 37);
  EXPECT_CONTAINS(load_error(b.bytes()), "declares 137438953472 elements but holds 4");
}

// An input that has an initializer is that constant; declaring another dtype or shape for it is
// refused (found by fuzz/: the declared int64 was computed over the initializer's float bytes).
TEST(BadInput, InputDeclaringOtherThanItsInitializer) {
  for (bool dtype : {true, false}) {
    ModelBuilder b = small_model();
    if (dtype)
      b.input("w", onnx::TensorProto::INT64, {int64_t{4}});
    else
      b.input("w", onnx::TensorProto::FLOAT, {int64_t{2}, int64_t{2}});
    const std::string err = load_error(b.bytes());
    EXPECT_CONTAINS(err, "input 'w': declares");
    EXPECT_CONTAINS(err, "but its initializer holds float 4");
  }
  ModelBuilder same = small_model();
  same.input("w", onnx::TensorProto::FLOAT, {std::string("n")});
  EXPECT_EQ(load_error(same.bytes()), "");
}

TEST(BadInput, ShapeWhoseElementCountOverflows) {
  ModelBuilder b = small_model();
  auto* w = b.proto().mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  w->add_dims(int64_t{1} << 40);
  w->add_dims(int64_t{1} << 40);
  EXPECT_CONTAINS(load_error(b.bytes()), "initializer 'w'");
  Session s = small_model().session();
  EXPECT_THROW(Tensor::view(DType::f32, {int64_t{1} << 40, int64_t{1} << 40}, nullptr), Error);
  EXPECT_THROW(s.output_shapes({{"x", {int64_t{1} << 62, 4}}}), Error);
}

TEST(BadInput, AdoptWithoutStorage) {
  EXPECT_THROW(Tensor::adopt(DType::f32, {2, 3}, nullptr), Error);
  EXPECT_NO_THROW(Tensor::adopt(DType::f32, {0, 3}, nullptr));  // no elements, no bytes
  std::shared_ptr<uint8_t[]> bytes(new uint8_t[24]);
  Tensor t = Tensor::adopt(DType::f32, {2, 3}, bytes);
  EXPECT_EQ(t.raw(), bytes.get());
  EXPECT_EQ(bytes.use_count(), 2) << "shared, not copied";
}

TEST(BadInput, ExternalDataOutsideTheModelFolder) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "voxrt_external_test";
  fs::create_directories(dir / "model");
  {
    std::ofstream f(dir / "secret.bin", std::ios::binary);
    f << std::string(16, '\0');
    std::ofstream g(dir / "model" / "weights.bin", std::ios::binary);
    float w[4] = {1, -2, 3, -4};
    g.write(reinterpret_cast<const char*>(w), sizeof w);
  }
  auto with_location = [&](const std::string& loc) {
    ModelBuilder b = small_model();
    auto* w = b.proto().mutable_graph()->mutable_initializer(0);
    w->clear_float_data();
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* kv = w->add_external_data();
    kv->set_key("location");
    kv->set_value(loc);
    std::ofstream f(dir / "model" / "m.onnx", std::ios::binary);
    f << b.bytes();
  };
  auto path = (dir / "model" / "m.onnx").string();
  with_location("weights.bin");
  Session ok(path);
  Tensor x = Tensor::empty(DType::f32, {1, 4});
  for (int i = 0; i < 4; ++i) x.data<float>()[i] = 1.0f;
  Tensor y = ok.run({{"x", x}})[0];
  EXPECT_EQ(y.data<float>()[2], 3.0f);
  with_location("../secret.bin");
  try {
    Session s(path);
    FAIL() << "escaping location accepted";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "escapes the model's folder");
  }
  with_location((dir / "secret.bin").string());
  try {
    Session s(path);
    FAIL() << "absolute location accepted";
  } catch (const Error& e) {
    EXPECT_CONTAINS(e.what(), "is absolute");
  }
  fs::remove_all(dir);
}

TEST(BadInput, MissingFile) {
  EXPECT_THROW(Session("/nonexistent/model.onnx"), Error);
}

}  // namespace
}  // namespace voxrt

namespace voxrt {
namespace {

TEST(BadInput, HugeOutputIsRefusedNotAllocated) {
  test::ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {int64_t{1}});
  b.initializer_i64("shape", {3}, {1 << 20, 1 << 20, 1 << 10});
  b.node("Expand", {"x", "shape"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  Session s = b.session();
  Tensor x = Tensor::zeros(DType::f32, {1});
  try {
    s.run({{"x", x}});
    FAIL() << "a 4 PiB output was attempted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("would need more than"), std::string::npos) << e.what();
  }
}

// An output with no elements has nothing to compute, however long its other dims: Tile, Pad and
// Slice built one index list per output dim, so [2^40, 0] took terabytes (found by fuzz/). The run
// skips nodes whose outputs are all empty; constant folding at load calls the ops themselves.
TEST(BadInput, EmptyOutputsWithHugeDimsAllocateNothing) {
  const int64_t huge = int64_t{1} << 40;
  for (bool constant : {false, true}) {
    test::ModelBuilder b(17);
    if (constant) {
      b.initializer("x", {1, 0}, {});
      b.initializer("z", {huge, 0}, {});
    } else {
      b.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{0}});
      b.input("z", onnx::TensorProto::FLOAT, {huge, int64_t{0}});
    }
    b.input("unused", onnx::TensorProto::FLOAT, {int64_t{1}});
    b.initializer_i64("repeats", {2}, {huge, 1});
    b.initializer_i64("pads", {4}, {0, 0, huge, 0});
    b.initializer_i64("starts", {1}, {0});
    b.initializer_i64("ends", {1}, {huge});
    b.initializer_i64("axes", {1}, {0});
    b.node("Tile", {"x", "repeats"}, {"t"});
    b.node("Pad", {"x", "pads"}, {"p"});
    b.node("Slice", {"z", "starts", "ends", "axes"}, {"s"});
    // Graph outputs are not folded: these three are, with constant inputs.
    b.node("Neg", {"t"}, {"tiled"});
    b.node("Neg", {"p"}, {"padded"});
    b.node("Neg", {"s"}, {"sliced"});
    b.output("tiled", onnx::TensorProto::FLOAT);
    b.output("padded", onnx::TensorProto::FLOAT);
    b.output("sliced", onnx::TensorProto::FLOAT);
    Session s = b.session();
    std::vector<NamedTensor> in = {{"unused", Tensor::zeros(DType::f32, {1})}};
    if (!constant) {
      in.push_back({"x", Tensor::zeros(DType::f32, {1, 0})});
      in.push_back({"z", Tensor::zeros(DType::f32, {huge, 0})});
    }
    const std::vector<Tensor> y = s.run(in);
    ASSERT_EQ(y.size(), 3u);
    EXPECT_EQ(y[0].shape(), (Shape{huge, 0})) << constant;
    EXPECT_EQ(y[1].shape(), (Shape{huge + 1, 0})) << constant;
    EXPECT_EQ(y[2].shape(), (Shape{huge, 0})) << constant;
  }
}

}  // namespace
}  // namespace voxrt
