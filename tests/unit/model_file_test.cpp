// Models read from files (onnx_io::read_file maps regular files and reads anything else), and
// initializers whose raw bytes become the constants' storage without a copy (the importer's
// consuming form).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "model_builder.h"
#include "onnx/proto_io.h"

namespace voxrt {
namespace {

namespace fs = std::filesystem;
using test::ModelBuilder;

ModelBuilder scaling_model() {
  ModelBuilder b(17);
  b.input("x", onnx::TensorProto::FLOAT, {std::string("N"), int64_t{4}});
  b.initializer("w", {4}, {1.5f, -2, 3, -4.25f});
  b.initializer("s", {1}, {0.5f});  // a few bytes: the string's own inline buffer
  b.node("Mul", {"x", "w"}, {"m"});
  b.node("Mul", {"m", "s"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  return b;
}

fs::path write_temp(const std::string& name, const std::string& bytes) {
  const fs::path p = fs::temp_directory_path() / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

TEST(ModelFile, MappedFileRunsAsTheBytesInMemory) {
  const std::string bytes = scaling_model().bytes();
  const fs::path p = write_temp("voxrt_model_file_test.onnx", bytes);
  const onnx_io::FileBytes mapped = onnx_io::read_file(p.string());
  ASSERT_EQ(mapped.size(), bytes.size());
  EXPECT_EQ(std::string(static_cast<const char*>(mapped.data()), mapped.size()), bytes);

  Tensor x = Tensor::empty(DType::f32, {2, 4});
  for (int i = 0; i < 8; ++i) x.data<float>()[i] = static_cast<float>(i) - 3.0f;
  Session from_file(p.string());
  Session from_memory(bytes.data(), bytes.size());
  const Tensor a = from_file.run({{"x", x}}).at(0), b = from_memory.run({{"x", x}}).at(0);
  const float w[4] = {1.5f, -2, 3, -4.25f};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(a.data<float>()[i], (static_cast<float>(i) - 3.0f) * w[i % 4] * 0.5f) << i;
    EXPECT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
  }
  fs::remove(p);
}

TEST(ModelFile, WhatCannotBeMappedIsReadOrRefused) {
  // An empty file is read (no mapping of zero bytes) and refused as a model by name.
  const fs::path empty = write_temp("voxrt_model_file_empty.onnx", "");
  EXPECT_EQ(onnx_io::read_file(empty.string()).size(), 0u);
  try {
    Session s(empty.string());
    ADD_FAILURE() << "an empty file loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("voxrt_model_file_empty.onnx"), std::string::npos)
        << e.what();
  }
  fs::remove(empty);
  // A directory is refused by name (reading one had asked for an unbounded buffer).
  try {
    onnx_io::read_file(fs::temp_directory_path().string());
    ADD_FAILURE() << "a directory was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Session(fs::temp_directory_path().string()), Error);
  // What cannot be mapped (a character device here) is read to its end.
  EXPECT_EQ(onnx_io::read_file("/dev/null").size(), 0u);
  EXPECT_THROW(onnx_io::read_file("/nonexistent/voxrt/model.onnx"), Error);
}

// A file past protobuf's 2 GB is refused by name (sparse here: nothing is written or read).
TEST(ModelFile, FilePastTwoGigabytesIsRefusedByName) {
  const fs::path p = fs::temp_directory_path() / "voxrt_model_file_huge.onnx";
  { std::ofstream(p, std::ios::binary) << "x"; }
  std::error_code ec;
  fs::resize_file(p, uintmax_t{3} << 30, ec);
  if (ec) GTEST_SKIP() << "cannot make a sparse 3 GiB file here: " << ec.message();
  try {
    Session s(p.string());
    ADD_FAILURE() << "a 3 GiB file loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("larger than 2 GB"), std::string::npos) << e.what();
  }
  fs::remove(p);
}

TEST(ModelFile, ReleasedAndMovedBytesAreGone) {
  const fs::path p = write_temp("voxrt_model_file_move.onnx", "0123456789");
  onnx_io::FileBytes a = onnx_io::read_file(p.string());
  onnx_io::FileBytes b = std::move(a);
  EXPECT_EQ(a.size(), 0u);
  ASSERT_EQ(b.size(), 10u);
  EXPECT_EQ(static_cast<const char*>(b.data())[9], '9');
  b.release();
  EXPECT_EQ(b.size(), 0u);
  fs::remove(p);
}

TEST(ModelFile, ConsumedRawDataBecomesTheTensorsStorage) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(64);  // past a string's inline buffer, whose bytes a move copies
  float v[64];
  for (int i = 0; i < 64; ++i) v[i] = 1.25f * static_cast<float>(i) - 7;
  p.set_raw_data(std::string(reinterpret_cast<const char*>(v), sizeof v));
  const Tensor copied = onnx_io::tensor_from_proto(p, "", "t");
  EXPECT_EQ(p.raw_data().size(), sizeof v);  // the const form leaves the proto as it was
  const char* bytes_at = p.raw_data().data();
  const Tensor taken = onnx_io::tensor_from_proto(std::move(p), "", "t");
  EXPECT_EQ(taken.raw(), static_cast<const void*>(bytes_at));  // the same bytes, not a copy
  EXPECT_TRUE(p.raw_data().empty());                           // NOLINT: moved from on purpose
  ASSERT_EQ(taken.shape(), Shape{64});
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(taken.data<float>()[i], v[i]);
    EXPECT_EQ(copied.data<float>()[i], v[i]);
  }
  // A short raw_data is refused either way.
  onnx::TensorProto bad;
  bad.set_data_type(onnx::TensorProto::FLOAT);
  bad.add_dims(4);
  bad.set_raw_data(std::string(8, '\0'));
  EXPECT_THROW(onnx_io::tensor_from_proto(std::move(bad), "", "bad"), Error);
}

}  // namespace
}  // namespace voxrt
