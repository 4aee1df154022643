// NIfTI reading against files written by tools/nifti_min.py (an independent numpy writer), geometry
// kept on writing, Dice, and bad files: every one an Error naming the file, never a crash.
// CI runs this file under AddressSanitizer and UndefinedBehaviorSanitizer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "npy.h"
#include "voxrt/volume.h"

namespace voxrt {
namespace {

namespace fs = std::filesystem;
const std::string kData = VOXRT_VOLUME_DATA;

nlohmann::json manifest() {
  std::ifstream f(kData + "/cases.json");
  return nlohmann::json::parse(f);
}

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

class TempDir {
 public:
  TempDir()
      : path_(fs::temp_directory_path() / ("voxrt_volume_test_" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(file(name), std::ios::binary) << bytes;
    return file(name);
  }

 private:
  fs::path path_;
};

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

std::string read_error(const std::string& path) {
  try {
    read_nifti(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Nifti, ReadsEveryFixtureWithScaling) {
  nlohmann::json all = manifest();
  for (const auto& m : all["nifti"]) {
    SCOPED_TRACE(m["file"].get<std::string>());
    NiftiImage img = read_nifti(kData + "/" + m["file"].get<std::string>());
    Tensor want = cli::read_npy(kData + "/" + m["values"].get<std::string>());
    ASSERT_EQ(img.data.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i)
      ASSERT_EQ(img.data.data<float>()[i], want.data<float>()[i]) << i;
    EXPECT_EQ(img.version, m["version"].get<int>());
    auto spacing = m["spacing"].get<std::vector<double>>();
    for (size_t a = 0; a < 3; ++a) EXPECT_NEAR(img.spacing[a], spacing[a], 1e-6);
  }
}

// Byte ranges of the geometry fields: dims 1-3, pixdim 0-3 (qfac and spacing), xyzt_units, and
// qform_code .. srow_z. Everything but the data type, dim[0]/dim[4] and scaling must survive.
struct Range {
  size_t offset, size;
};
const std::vector<Range> kNifti1Geometry = {{42, 6}, {76, 16}, {123, 1}, {252, 76}};
const std::vector<Range> kNifti2Geometry = {{24, 24}, {104, 32}, {344, 152}, {500, 4}};

TEST(Nifti, WritingKeepsTheGeometry) {
  TempDir dir;
  for (const char* name : {"n1_uint8.nii", "n2_f64_4d.nii"}) {
    SCOPED_TRACE(name);
    std::string in = kData + "/" + name;
    NiftiImage img = read_nifti(in);
    Tensor labels = Tensor::empty(DType::u8, {img.data.dim(1), img.data.dim(2), img.data.dim(3)});
    for (int64_t i = 0; i < labels.numel(); ++i)
      labels.data<uint8_t>()[i] = static_cast<uint8_t>(i % 3);
    std::string out = dir.file(std::string("labels_") + name);
    write_nifti(out, labels, img);
    std::string a = bytes_of(in), b = bytes_of(out);
    ASSERT_GT(b.size(), img.version == 1 ? 352u : 544u);
    for (const Range& r : img.version == 1 ? kNifti1Geometry : kNifti2Geometry)
      EXPECT_EQ(a.substr(r.offset, r.size), b.substr(r.offset, r.size))
          << "header bytes at " << r.offset;
    NiftiImage back = read_nifti(out);
    EXPECT_EQ(back.version, img.version);
    EXPECT_EQ(back.stored_type, "uint8");
    ASSERT_EQ(back.data.numel(), labels.numel());
    for (int64_t i = 0; i < labels.numel(); ++i)
      ASSERT_EQ(back.data.data<float>()[i], labels.data<uint8_t>()[i]);
  }
}

TEST(Nifti, CompressedRoundTripOfEveryWrittenType) {
  TempDir dir;
  NiftiImage like = read_nifti(kData + "/n1_int16_scaled.nii.gz");
  Shape shape{1, like.data.dim(1), like.data.dim(2), like.data.dim(3)};
  for (DType t : {DType::u8, DType::u16, DType::i16, DType::i32, DType::f32, DType::f64}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    Tensor data = Tensor::empty(t, shape);
    for (int64_t i = 0; i < data.numel(); ++i) {
      auto v = static_cast<double>(i % 200);
      switch (t) {
        case DType::u8: data.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
        case DType::u16: data.data<uint16_t>()[i] = static_cast<uint16_t>(v * 300); break;
        case DType::i16: data.data<int16_t>()[i] = static_cast<int16_t>(-v); break;
        case DType::i32: data.data<int32_t>()[i] = static_cast<int32_t>(v * 100000); break;
        case DType::f32: data.data<float>()[i] = static_cast<float>(v / 7); break;
        default: data.data<double>()[i] = v / 7; break;
      }
    }
    std::string out = dir.file("round.nii.gz");
    write_nifti(out, data, like);
    NiftiImage back = read_nifti(out);
    ASSERT_EQ(back.data.shape(), shape);
    for (int64_t i = 0; i < data.numel(); ++i) {
      double want = t == DType::u8    ? data.data<uint8_t>()[i]
                    : t == DType::u16 ? data.data<uint16_t>()[i]
                    : t == DType::i16 ? data.data<int16_t>()[i]
                    : t == DType::i32 ? data.data<int32_t>()[i]
                    : t == DType::f32 ? data.data<float>()[i]
                                      : static_cast<float>(data.data<double>()[i]);
      ASSERT_EQ(back.data.data<float>()[i], static_cast<float>(want)) << i;
    }
  }
  Tensor probs = Tensor::zeros(DType::f32, {3, shape[1], shape[2], shape[3]});
  write_nifti(dir.file("probs.nii"), probs, like);
  EXPECT_EQ(read_nifti(dir.file("probs.nii")).data.shape(), probs.shape());
  EXPECT_THROW(write_nifti(dir.file("x.nii"), Tensor::zeros(DType::f16, shape), like), Error);
  EXPECT_THROW(write_nifti(dir.file("x.nii"), Tensor::zeros(DType::u8, {2, 2, 2}), like), Error);
}

TEST(Nifti, ReverseSpatialAxesRoundTrips) {
  Tensor v = Tensor::empty(DType::f32, {2, 3, 4, 5});
  for (int64_t i = 0; i < v.numel(); ++i) v.data<float>()[i] = static_cast<float>(i);
  Tensor r = reverse_spatial_axes(v);
  EXPECT_EQ(r.shape(), (Shape{2, 5, 4, 3}));
  EXPECT_EQ(r.data<float>()[((1 * 5 + 4) * 4 + 2) * 3 + 1],
            v.data<float>()[((1 * 3 + 1) * 4 + 2) * 5 + 4]);
  Tensor back = reverse_spatial_axes(r);
  EXPECT_EQ(std::memcmp(back.raw(), v.raw(), v.nbytes()), 0);
  Tensor labels = Tensor::zeros(DType::u16, {3, 4, 5});
  EXPECT_EQ(reverse_spatial_axes(labels).shape(), (Shape{5, 4, 3}));
}

TEST(Nifti, BadFilesGiveClearErrors) {
  TempDir dir;
  std::string good = bytes_of(kData + "/n1_uint8.nii");
  ASSERT_GT(good.size(), 352u);

  EXPECT_CONTAINS(read_error(dir.file("missing.nii")), "no such file");
  EXPECT_CONTAINS(
      read_error(dir.write("text.nii", "this is not an image, just some text to read\n")),
      "is not a NIfTI file");
  EXPECT_CONTAINS(read_error(dir.write("tiny.nii", "ab")), "too few for a NIfTI header");
  EXPECT_CONTAINS(read_error(dir.write("header_cut.nii", good.substr(0, 200))),
                  "inside its 348-byte header");
  EXPECT_CONTAINS(read_error(dir.write("data_cut.nii", good.substr(0, good.size() - 10))),
                  "is truncated");

  std::string lying = good;
  int16_t big = 30000;
  std::memcpy(&lying[42], &big, 2);  // dim[1]
  EXPECT_CONTAINS(read_error(dir.write("lying.nii", lying)), "header lies");

  std::string no_magic = good;
  std::memcpy(&no_magic[344], "abc", 4);
  EXPECT_CONTAINS(read_error(dir.write("analyze.nii", no_magic)), "without the NIfTI-1 magic");

  std::string complex = good;
  int16_t dt = 32, bitpix = 64;  // DT_COMPLEX64
  std::memcpy(&complex[70], &dt, 2);
  std::memcpy(&complex[72], &bitpix, 2);
  EXPECT_CONTAINS(read_error(dir.write("complex.nii", complex)), "datatype code 32");

  std::string dims8 = good;
  int16_t eight = 8;
  std::memcpy(&dims8[40], &eight, 2);
  EXPECT_CONTAINS(read_error(dir.write("dims8.nii", dims8)), "dim[0] is 8");

  std::string gz = bytes_of(kData + "/n1_int16_scaled.nii.gz");
  EXPECT_CONTAINS(read_error(dir.write("cut.nii.gz", gz.substr(0, gz.size() / 2))), "cut.nii.gz");
  EXPECT_CONTAINS(read_error(dir.write("cut2.nii.gz", gz.substr(0, 30))), "cut2.nii.gz");

  std::string zeros(2000, '\0');
  EXPECT_CONTAINS(read_error(dir.write("zeros.nii", zeros)), "is not a NIfTI file");
  fs::create_directories(dir.file("dir.nii"));
  EXPECT_CONTAINS(read_error(dir.file("dir.nii")), "is a directory");
}

TEST(Nifti, CorruptedBytesNeverCrash) {
  TempDir dir;
  std::string good = bytes_of(kData + "/n2_f64_4d.nii");
  uint32_t seed = 11;
  int errors = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::string b = good;
    for (int k = 0; k < 4; ++k) {
      seed = seed * 1664525u + 1013904223u;
      size_t at = (seed >> 8) % 544;
      b[at] = static_cast<char>(seed >> 24);
    }
    try {
      read_nifti(dir.write("corrupt.nii", b));
    } catch (const Error& e) {
      ++errors;
      EXPECT_CONTAINS(e.what(), "corrupt.nii");
    }
  }
  EXPECT_GT(errors, 0);
}

TEST(Dice, MatchesNumpy) {
  auto m = manifest()["dice"];
  NiftiImage a = read_nifti(kData + "/" + m["a"].get<std::string>());
  NiftiImage b = read_nifti(kData + "/" + m["b"].get<std::string>());
  std::vector<DiceScore> scores = dice_scores(a.data, b.data);
  ASSERT_EQ(scores.size(), m["scores"].size());
  for (const DiceScore& s : scores)
    EXPECT_NEAR(s.dice, m["scores"][std::to_string(s.label)].get<double>(), 1e-12);
  EXPECT_THROW(dice_scores(a.data, Tensor::zeros(DType::f32, {1, 2, 2, 2})), Error);
}

}  // namespace
}  // namespace voxrt
