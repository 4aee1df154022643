// Data-movement ops of the reference backend (shape.cpp, tensor.cpp, resize.cpp): features newer
// than Debian's conformance data, checked against straightforward formulas written here, and bad
// attributes or inputs, which must give a voxrt::Error naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/half.h"
#include "model_builder.h"

namespace voxrt {
namespace {

using test::ModelBuilder;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

void attr_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

void initializer_f32(ModelBuilder& b, const std::string& name, const std::vector<float>& v) {
  b.initializer(name, {static_cast<int64_t>(v.size())}, v);
}

Tensor iota(Shape shape) {
  Tensor t = Tensor::empty(DType::f32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::sin(0.37f * i) * 10;
  return t;
}

// Loads and runs; returns the error message, or "" when both succeed.
std::string error_of(const ModelBuilder& b, const std::vector<NamedTensor>& in) {
  try {
    Session s = b.session();
    s.run(in);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Tensor run1(const ModelBuilder& b, const std::vector<NamedTensor>& in) {
  return b.session().run(in).at(0);
}

// One node on a float input x of `shape`, with int64 initializers named after the node's other
// inputs.
ModelBuilder one_node(int opset, const std::string& op, const Shape& shape,
                      const std::vector<std::pair<std::string, std::vector<int64_t>>>& ints,
                      const std::function<void(onnx::NodeProto&)>& attrs = {}, int outputs = 1) {
  ModelBuilder b(opset);
  std::vector<ModelBuilder::DimSpec> dims(shape.begin(), shape.end());
  b.input("x", onnx::TensorProto::FLOAT, dims);
  std::vector<std::string> in{"x"};
  for (const auto& [name, v] : ints) {
    in.push_back(name);
    if (!name.empty()) b.initializer_i64(name, {static_cast<int64_t>(v.size())}, v);
  }
  std::vector<std::string> out;
  for (int i = 0; i < outputs; ++i) out.push_back("y" + std::to_string(i));
  onnx::NodeProto& n = b.node(op, in, out);
  if (attrs) attrs(n);
  for (const std::string& o : out) b.output(o, onnx::TensorProto::FLOAT);
  return b;
}

// Linear interpolation along one axis with half_pixel coordinates, edges clamped.
void half_pixel_taps(int64_t i, int64_t in, int64_t out, int64_t& i0, int64_t& i1, double& f) {
  double c = (i + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5;
  c = std::clamp(c, 0.0, static_cast<double>(in - 1));
  i0 = static_cast<int64_t>(std::floor(c));
  i1 = std::min(i0 + 1, in - 1);
  f = c - static_cast<double>(i0);
}

TEST(ShapeOps, ResizeTrilinearHalfPixel) {
  ModelBuilder b =
      one_node(13, "Resize", {1, 2, 3, 4, 5}, {{"", {}}, {"", {}}, {"sizes", {1, 2, 5, 7, 4}}},
               [](onnx::NodeProto& n) { attr_string(n, "mode", "linear"); });
  Tensor x = iota({1, 2, 3, 4, 5});
  Tensor y = run1(b, {{"x", x}});
  ASSERT_EQ(y.shape(), (Shape{1, 2, 5, 7, 4}));
  const float* xp = x.data<float>();
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t z = 0; z < 5; ++z)
      for (int64_t v = 0; v < 7; ++v)
        for (int64_t u = 0; u < 4; ++u) {
          int64_t z0, z1, v0, v1, u0, u1;
          double fz, fv, fu;
          half_pixel_taps(z, 3, 5, z0, z1, fz);
          half_pixel_taps(v, 4, 7, v0, v1, fv);
          half_pixel_taps(u, 5, 4, u0, u1, fu);
          auto at = [&](int64_t a, int64_t bb, int64_t cc) {
            return xp[((c * 3 + a) * 4 + bb) * 5 + cc];
          };
          double want = 0;
          for (int dz = 0; dz < 2; ++dz)
            for (int dv = 0; dv < 2; ++dv)
              for (int du = 0; du < 2; ++du)
                want += (dz ? fz : 1 - fz) * (dv ? fv : 1 - fv) * (du ? fu : 1 - fu) *
                        at(dz ? z1 : z0, dv ? v1 : v0, du ? u1 : u0);
          EXPECT_NEAR(y.data<float>()[(((c * 5 + z) * 7 + v) * 4) + u], want, 1e-4);
        }
}

TEST(ShapeOps, ResizeAntialiasLinearAlongAxes) {
  // Opset 18: only axis 3 is resized (axes attribute), by 0.3 with a triangle filter 1/0.3 wide.
  ModelBuilder b(18);
  b.input("x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{10}});
  initializer_f32(b, "scales", {0.3f});
  onnx::NodeProto& n = b.node("Resize", {"x", "", "scales"}, {"y"});
  attr_string(n, "mode", "linear");
  ModelBuilder::attr_int(n, "antialias", 1);
  ModelBuilder::attr_ints(n, "axes", {3});
  b.output("y", onnx::TensorProto::FLOAT);
  Tensor x = iota({1, 1, 2, 10});
  Tensor y = run1(b, {{"x", x}});
  ASSERT_EQ(y.shape(), (Shape{1, 1, 2, 3}));
  double s = static_cast<double>(0.3f);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 3; ++i) {
      double c = (i + 0.5) / s - 0.5, num = 0, den = 0;
      for (int64_t k = static_cast<int64_t>(std::floor(c - 1 / s)); k <= c + 1 / s; ++k) {
        double w = std::max(0.0, 1 - std::abs(k - c) * s);
        num += w * x.data<float>()[r * 10 + std::clamp<int64_t>(k, 0, 9)];
        den += w;
      }
      EXPECT_NEAR(y.data<float>()[r * 3 + i], num / den, 1e-4);
    }
}

TEST(ShapeOps, PadWrapAndReflectAndAxes) {
  Tensor x = iota({3, 4});
  auto check = [&](const std::string& mode, int64_t (*src)(int64_t, int64_t)) {
    ModelBuilder b = one_node(19, "Pad", {3, 4}, {{"pads", {2, 6}}, {"", {}}, {"axes", {-1}}},
                              [&](onnx::NodeProto& n) { attr_string(n, "mode", mode); });
    Tensor y = run1(b, {{"x", x}});
    ASSERT_EQ(y.shape(), (Shape{3, 12}));
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t j = 0; j < 12; ++j)
        EXPECT_EQ(y.data<float>()[r * 12 + j], x.data<float>()[r * 4 + src(j - 2, 4)])
            << mode << " at " << r << "," << j;
  };
  check("wrap", [](int64_t j, int64_t n) { return ((j % n) + n) % n; });
  check("reflect", [](int64_t j, int64_t n) {
    int64_t p = 2 * (n - 1), m = ((j % p) + p) % p;
    return m < n ? m : p - m;
  });
  check("edge", [](int64_t j, int64_t n) { return std::clamp<int64_t>(j, 0, n - 1); });
}

TEST(ShapeOps, SplitNumOutputsUneven) {
  ModelBuilder b = one_node(
      18, "Split", {7, 2}, {},
      [](onnx::NodeProto& n) { ModelBuilder::attr_int(n, "num_outputs", 3); }, 3);
  Tensor x = iota({7, 2});
  std::vector<Tensor> y = b.session().run({{"x", x}});
  ASSERT_EQ(y.size(), 3u);
  EXPECT_EQ(y[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(y[1].shape(), (Shape{3, 2}));
  EXPECT_EQ(y[2].shape(), (Shape{1, 2}));
  EXPECT_EQ(y[2].data<float>()[1], x.data<float>()[13]);
}

TEST(ShapeOps, SliceNegativeStepsClamp) {
  ModelBuilder b =
      one_node(13, "Slice", {6, 5},
               {{"starts", {100, -2}}, {"ends", {-100, 0}}, {"axes", {0, 1}}, {"steps", {-2, -1}}});
  Tensor x = iota({6, 5});
  Tensor y = run1(b, {{"x", x}});
  ASSERT_EQ(y.shape(), (Shape{3, 3}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_EQ(y.data<float>()[i * 3 + j], x.data<float>()[(5 - 2 * i) * 5 + (3 - j)]);
}

TEST(ShapeOps, CastDoubleToHalfRoundsOnce) {
  // 1 + 2^-11 + 2^-40 lies just above the midpoint of fp16's 1 and 1 + 2^-10; rounding through
  // float first would land on the midpoint and round to even (1.0).
  ModelBuilder b(13);
  b.input("x", onnx::TensorProto::DOUBLE, {int64_t{1}});
  ModelBuilder::attr_int(b.node("Cast", {"x"}, {"y"}), "to", onnx::TensorProto::FLOAT16);
  b.output("y", onnx::TensorProto::FLOAT16);
  Tensor x = Tensor::empty(DType::f64, {1});
  x.data<double>()[0] = 1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  Tensor y = run1(b, {{"x", x}});
  EXPECT_EQ(y.data<uint16_t>()[0], 0x3C01);
}

struct BadCase {
  const char* what;
  ModelBuilder model;
  const char* expect;
};

TEST(ShapeOps, BadAttributesAndInputsNameTheNode) {
  auto mode = [](const char* m) { return [m](onnx::NodeProto& n) { attr_string(n, "mode", m); }; };
  std::vector<BadCase> cases = {
      {"reshape size", one_node(13, "Reshape", {2, 3}, {{"s", {4, -1}}}), "cannot infer the -1"},
      {"reshape arity", one_node(13, "Reshape", {2, 3}, {}), "input 1 is missing"},
      {"reshape two -1", one_node(13, "Reshape", {2, 3}, {{"s", {-1, -1}}}), "more than one -1"},
      {"reshape count", one_node(13, "Reshape", {2, 3}, {{"s", {5}}}), "cannot reshape 2x3"},
      {"transpose",
       one_node(13, "Transpose", {2, 3}, {},
                [](onnx::NodeProto& n) {
                  ModelBuilder::attr_ints(n, "perm", {0, 0});
                }),
       "not a permutation"},
      {"squeeze", one_node(13, "Squeeze", {2, 3}, {{"a", {1}}}), "its size is not 1"},
      {"unsqueeze", one_node(13, "Unsqueeze", {2, 3}, {{"a", {3}}}), "out of range"},
      {"slice step", one_node(13, "Slice", {4}, {{"s", {0}}, {"e", {4}}, {"a", {0}}, {"st", {0}}}),
       "contain 0"},
      {"split sum", one_node(13, "Split", {5}, {{"sp", {2, 2}}}, {}, 2), "summing to 5"},
      {"split uneven old", one_node(13, "Split", {5}, {}, {}, 2), "does not split evenly"},
      {"split sum overflows",  // found by fuzz/: the sum was signed overflow
       one_node(13, "Split", {5}, {{"sp", {int64_t{1} << 62, int64_t{1} << 62, 5}}}, {}, 3),
       "overflows"},
      {"pad crop", one_node(13, "Pad", {3}, {{"p", {-2, -2}}}), "remove more than"},
      {"pad mode", one_node(13, "Pad", {3}, {{"p", {1, 1}}}, mode("wrap")), "mode 'wrap'"},
      {"tile", one_node(13, "Tile", {3}, {{"r", {-1}}}), "negative entry"},
      {"expand", one_node(13, "Expand", {3}, {{"s", {2, 4}}}), "does not broadcast"},
      {"resize mode",
       one_node(13, "Resize", {1, 4}, {{"", {}}, {"", {}}, {"sz", {1, 2}}}, mode("area")),
       "mode 'area'"},
      {"resize no size", one_node(13, "Resize", {1, 4}, {}), "one of 'scales' and 'sizes'"},
      {"resize sizes length", one_node(13, "Resize", {1, 4}, {{"", {}}, {"", {}}, {"sz", {2}}}),
       "expected 2"},
      {"resize symmetric at 18",
       one_node(18, "Resize", {1, 4}, {{"", {}}, {"", {}}, {"sz", {1, 2}}},
                [](onnx::NodeProto& n) {
                  attr_string(n, "coordinate_transformation_mode", "half_pixel_symmetric");
                }),
       "half_pixel_symmetric"},
      {"cast to string",
       one_node(13, "Cast", {3}, {},
                [](onnx::NodeProto& n) { ModelBuilder::attr_int(n, "to", 8); }),
       "casting to string"},
      {"cast to float8",
       one_node(19, "Cast", {3}, {},
                [](onnx::NodeProto& n) { ModelBuilder::attr_int(n, "to", 17); }),
       "float8e4m3fn"},
      {"gather axis",
       one_node(13, "Gather", {3}, {{"i", {0}}},
                [](onnx::NodeProto& n) { ModelBuilder::attr_int(n, "axis", 1); }),
       "out of range"},
  };
  for (BadCase& c : cases) {
    const auto& dims = c.model.proto().graph().input(0).type().tensor_type().shape();
    Shape s;
    for (const auto& d : dims.dim()) s.push_back(d.dim_value());
    std::string err = error_of(c.model, {{"x", iota(s)}});
    EXPECT_CONTAINS(err, c.expect) << c.what;
    EXPECT_CONTAINS(err, "node '") << c.what;
  }
}

TEST(ShapeOps, GatherIndexOutOfRangeFailsAtRun) {
  ModelBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {int64_t{3}});
  b.input("i", onnx::TensorProto::INT64, {int64_t{2}});
  b.node("Gather", {"x", "i"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  Tensor idx = Tensor::empty(DType::i64, {2});
  idx.data<int64_t>()[0] = 0;
  idx.data<int64_t>()[1] = -4;
  EXPECT_CONTAINS(error_of(b, {{"x", iota({3})}, {"i", idx}}), "index -4 is out of range");
}

TEST(ShapeOps, DropoutTrainingModeRefused) {
  ModelBuilder b(13);
  b.input("x", onnx::TensorProto::FLOAT, {int64_t{3}});
  auto* t = b.proto().mutable_graph()->add_initializer();
  t->set_name("training");
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(1);
  b.node("Dropout", {"x", "", "training"}, {"y"});
  b.output("y", onnx::TensorProto::FLOAT);
  EXPECT_CONTAINS(error_of(b, {{"x", iota({3})}}), "training_mode is true with a non-zero ratio");
}

TEST(ShapeOps, RangeRefusesZeroDeltaAndHugeCounts) {
  for (auto [delta, limit, expect] : {std::tuple{0.0f, 10.0f, "delta non-zero"},
                                      std::tuple{1e-9f, 1e9f, "more than supported"}}) {
    ModelBuilder b(13);
    b.input("x", onnx::TensorProto::FLOAT, {int64_t{1}});
    b.initializer("start", {}, {0.0f});
    b.initializer("limit", {}, {limit});
    b.initializer("delta", {}, {delta});
    b.node("Range", {"start", "limit", "delta"}, {"r"});
    b.node("Identity", {"x"}, {"y"});
    b.output("r", onnx::TensorProto::FLOAT);
    b.output("y", onnx::TensorProto::FLOAT);
    EXPECT_CONTAINS(error_of(b, {{"x", iota({1})}}), expect);
  }
}

}  // namespace
}  // namespace voxrt
