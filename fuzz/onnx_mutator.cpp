// A structure-aware mutator for fuzz_model: parses the input as an ONNX ModelProto and changes one
// thing a model can get wrong (an attribute, an op type, a node input, a declared dim or dtype, an
// initializer's size or type, the opset), so that most mutants still parse and reach the passes,
// shape inference and kernels. Bytes that do not parse get libFuzzer's own byte mutations.
#include <onnx/onnx.pb.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using Rng = std::mt19937_64;

template <typename T>
const T& pick(Rng& rng, const std::vector<T>& v) {
  return v[rng() % v.size()];
}

// A random index into a repeated field of `size` elements (size > 0).
int any(Rng& rng, int size) {
  return static_cast<int>(rng() % static_cast<uint64_t>(size));
}

// clang-format off
int64_t some_int(Rng& rng) {
  static const std::vector<int64_t> values = {
      -3, -2, -1, 0, 1, 2, 3, 4, 7, 64, 1 << 16, std::numeric_limits<int32_t>::max(),
      int64_t{1} << 31, int64_t{1} << 40, std::numeric_limits<int64_t>::max(),
      std::numeric_limits<int64_t>::min()};
  return pick(rng, values);
}

float some_float(Rng& rng) {
  static const std::vector<float> values = {
      0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1e-30f, 1e30f, 65504.0f, 70000.0f,
      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
      std::numeric_limits<float>::quiet_NaN()};
  return pick(rng, values);
}

std::string some_string(Rng& rng) {
  static const std::vector<std::string> values = {
      "", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "nearest", "linear", "cubic",
      "half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_crop_and_resize",
      "round_prefer_floor", "floor", "ceil", "constant", "reflect", "edge", "DCR", "CRD", "bogus"};
  return pick(rng, values);
}
// clang-format on

// Every value name the graph knows: inputs, initializers, node outputs.
std::vector<std::string> value_names(const onnx::GraphProto& g) {
  std::vector<std::string> names = {""};
  for (const auto& v : g.input()) names.push_back(v.name());
  for (const auto& t : g.initializer()) names.push_back(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) names.push_back(o);
  return names;
}

void mutate_attribute(onnx::NodeProto& n, Rng& rng) {
  // clang-format off
  static const std::vector<std::string> names = {
      "axis", "axes", "pads", "strides", "kernel_shape", "dilations", "group", "output_padding",
      "output_shape", "auto_pad", "mode", "epsilon", "alpha", "beta", "to", "keepdims",
      "ceil_mode", "count_include_pad", "perm", "split", "coordinate_transformation_mode",
      "nearest_mode", "num_groups", "value", "transA", "transB", "storage_order",
      "exclude_outside", "cubic_coeff_a", "extrapolation_value", "blocksize", "starts", "ends",
      "min", "max"};
  // clang-format on
  onnx::AttributeProto* a;
  if (n.attribute_size() == 0 || rng() % 3 == 0) {
    a = n.add_attribute();
    a->set_name(pick(rng, names));
    a->set_type(static_cast<onnx::AttributeProto::AttributeType>(
        pick(rng, std::vector<int>{onnx::AttributeProto::INT, onnx::AttributeProto::INTS,
                                   onnx::AttributeProto::FLOAT, onnx::AttributeProto::STRING})));
  } else {
    a = n.mutable_attribute(any(rng, n.attribute_size()));
  }
  switch (a->type()) {
    case onnx::AttributeProto::INT: a->set_i(some_int(rng)); break;
    case onnx::AttributeProto::INTS:
      if (a->ints_size() == 0 || rng() % 3 == 0)
        a->add_ints(some_int(rng));
      else if (rng() % 2)
        a->mutable_ints()->RemoveLast();
      else
        a->set_ints(any(rng, a->ints_size()), some_int(rng));
      break;
    case onnx::AttributeProto::FLOAT: a->set_f(some_float(rng)); break;
    case onnx::AttributeProto::STRING: a->set_s(some_string(rng)); break;
    default:
      a->set_type(onnx::AttributeProto::INT);  // a kind the node did not expect
      a->set_i(some_int(rng));
  }
}

void mutate_tensor(onnx::TensorProto& t, Rng& rng) {
  switch (rng() % 4) {
    case 0:
      if (t.dims_size() == 0 || rng() % 4 == 0)
        t.add_dims(some_int(rng));
      else
        t.set_dims(any(rng, t.dims_size()), some_int(rng));
      break;
    case 1: t.set_data_type(static_cast<int32_t>(rng() % 17)); break;
    case 2:
      if (!t.raw_data().empty())
        t.mutable_raw_data()->resize(rng() % t.raw_data().size());
      else if (t.float_data_size())
        t.mutable_float_data()->RemoveLast();
      else if (t.int64_data_size())
        t.mutable_int64_data()->RemoveLast();
      else if (t.int32_data_size())
        t.mutable_int32_data()->RemoveLast();
      break;
    default:
      if (!t.raw_data().empty()) {
        std::string& raw = *t.mutable_raw_data();
        raw[rng() % raw.size()] = static_cast<char>(rng());
      } else if (t.float_data_size()) {
        t.set_float_data(any(rng, t.float_data_size()), some_float(rng));
      } else if (t.int64_data_size()) {
        t.set_int64_data(any(rng, t.int64_data_size()), some_int(rng));
      }
  }
}

void mutate_value_info(onnx::ValueInfoProto& v, Rng& rng) {
  onnx::TypeProto_Tensor* tt = v.mutable_type()->mutable_tensor_type();
  if (rng() % 4 == 0) {
    tt->set_elem_type(static_cast<int32_t>(rng() % 17));
    return;
  }
  onnx::TensorShapeProto* s = tt->mutable_shape();
  if (s->dim_size() == 0 || rng() % 5 == 0) {
    s->add_dim()->set_dim_value(1 + static_cast<int64_t>(rng() % 4));
  } else if (rng() % 5 == 0) {
    s->mutable_dim()->RemoveLast();
  } else {
    onnx::TensorShapeProto_Dimension* d = s->mutable_dim(any(rng, s->dim_size()));
    if (rng() % 3 == 0)
      d->set_dim_param(rng() % 2 ? "N" : "batch_size");
    else
      d->set_dim_value(rng() % 2 ? some_int(rng) : static_cast<int64_t>(rng() % 6));
  }
}

void mutate(onnx::ModelProto& m, Rng& rng) {
  // clang-format off
  static const std::vector<std::string> ops = {
      "Conv", "ConvTranspose", "BatchNormalization", "InstanceNormalization", "GroupNormalization",
      "LayerNormalization", "Relu", "LeakyRelu", "PRelu", "Softmax", "MaxPool", "AveragePool",
      "GlobalAveragePool", "Concat", "Add", "Mul", "Div", "Resize", "Upsample", "Cast", "Reshape",
      "Transpose", "Squeeze", "Unsqueeze", "Shape", "Gather", "Slice", "Pad", "Split", "Tile",
      "Expand", "ConstantOfShape", "ReduceMean", "ArgMax", "MatMul", "Gemm", "Where", "Range",
      "Clip", "Min", "Max", "Identity", "Flatten", "Sqrt", "Pow", "Erf", "Sigmoid"};
  // clang-format on
  onnx::GraphProto& g = *m.mutable_graph();
  switch (rng() % 8) {
    case 0:
    case 1:
      if (g.node_size())
        mutate_attribute(*g.mutable_node(any(rng, g.node_size())), rng);
      return;
    case 2:
      if (g.node_size())
        g.mutable_node(any(rng, g.node_size()))->set_op_type(pick(rng, ops));
      return;
    case 3:
      if (g.node_size()) {
        onnx::NodeProto& n = *g.mutable_node(any(rng, g.node_size()));
        const std::string name = pick(rng, value_names(g));
        if (n.input_size() == 0 || rng() % 4 == 0)
          n.add_input(name);
        else if (rng() % 5 == 0)
          n.mutable_input()->RemoveLast();
        else
          n.set_input(any(rng, n.input_size()), name);
      }
      return;
    case 4:
      if (g.input_size())
        mutate_value_info(*g.mutable_input(any(rng, g.input_size())), rng);
      return;
    case 5:
      if (g.initializer_size())
        mutate_tensor(*g.mutable_initializer(any(rng, g.initializer_size())), rng);
      return;
    case 6:
      if (m.opset_import_size())
        m.mutable_opset_import(0)->set_version(static_cast<int64_t>(rng() % 24));
      return;
    default:
      if (g.node_size() && rng() % 2) {
        *g.add_node() = g.node(any(rng, g.node_size()));
      } else if (g.node_size()) {
        g.mutable_node()->SwapElements(any(rng, g.node_size()), g.node_size() - 1);
        g.mutable_node()->RemoveLast();
      }
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto m;
  if (rng() % 5 == 0 || !m.ParseFromArray(data, static_cast<int>(size)))
    return LLVMFuzzerMutate(data, size, max_size);
  const int changes = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < changes; ++i) mutate(m, rng);
  std::string out;
  if (!m.SerializeToString(&out) || out.size() > max_size)
    return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
