#include "case.h"

#include <onnx/onnx.pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/half.h"
#include "voxrt/voxrt.h"

namespace conformance {
namespace fs = std::filesystem;

namespace {

// A problem with the test data itself (a type voxrt has no tensor for): the case is skipped.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + p.string());
  return std::string(std::istreambuf_iterator<char>(f), {});
}

onnx::ModelProto parse_model(const std::string& bytes, const fs::path& p) {
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) throw std::runtime_error("cannot parse " + p.string());
  return m;
}

std::optional<voxrt::DType> dtype_from_onnx(int t) {
  using voxrt::DType;
  switch (t) {
    case onnx::TensorProto::FLOAT: return DType::f32;
    case onnx::TensorProto::UINT8: return DType::u8;
    case onnx::TensorProto::INT8: return DType::i8;
    case onnx::TensorProto::UINT16: return DType::u16;
    case onnx::TensorProto::INT16: return DType::i16;
    case onnx::TensorProto::INT32: return DType::i32;
    case onnx::TensorProto::INT64: return DType::i64;
    case onnx::TensorProto::BOOL: return DType::boolean;
    case onnx::TensorProto::FLOAT16: return DType::f16;
    case onnx::TensorProto::DOUBLE: return DType::f64;
    case onnx::TensorProto::UINT32: return DType::u32;
    case onnx::TensorProto::UINT64: return DType::u64;
    case onnx::TensorProto::BFLOAT16: return DType::bf16;
    default: return std::nullopt;
  }
}

std::string onnx_type_name(int t) {
  if (auto d = dtype_from_onnx(t)) return std::string(voxrt::dtype_name(*d));
  if (onnx::TensorProto_DataType_IsValid(t))
    return onnx::TensorProto_DataType_Name(static_cast<onnx::TensorProto_DataType>(t));
  return "type" + std::to_string(t);
}

std::string type_kind(const onnx::TypeProto& t) {
  switch (t.value_case()) {
    case onnx::TypeProto::kTensorType: return "tensor";
    case onnx::TypeProto::kSequenceType: return "sequence";
    case onnx::TypeProto::kMapType: return "map";
    case onnx::TypeProto::kOptionalType: return "optional";
    case onnx::TypeProto::kSparseTensorType: return "sparse tensor";
    default: return "untyped value";
  }
}

template <class Src, class Dst>
void copy_field(const google::protobuf::RepeatedField<Src>& src, voxrt::Tensor& t) {
  Dst* d = t.data<Dst>();
  for (int i = 0; i < src.size(); ++i) d[i] = static_cast<Dst>(src.Get(i));
}

// int32_data carries the raw bits of f16 and bf16 and the values of the small integer types.
voxrt::Tensor from_int32_field(const onnx::TensorProto& p, voxrt::Tensor t) {
  using voxrt::DType;
  switch (t.dtype()) {
    case DType::i32: copy_field<int32_t, int32_t>(p.int32_data(), t); break;
    case DType::i16: copy_field<int32_t, int16_t>(p.int32_data(), t); break;
    case DType::i8: copy_field<int32_t, int8_t>(p.int32_data(), t); break;
    case DType::u16:
    case DType::f16:
    case DType::bf16: copy_field<int32_t, uint16_t>(p.int32_data(), t); break;
    case DType::u8: copy_field<int32_t, uint8_t>(p.int32_data(), t); break;
    case DType::boolean:
      for (int i = 0; i < p.int32_data_size(); ++i) t.data<uint8_t>()[i] = p.int32_data(i) != 0;
      break;
    default:
      throw std::runtime_error("int32_data used for " + std::string(voxrt::dtype_name(t.dtype())));
  }
  return t;
}

voxrt::Tensor tensor_from_proto(const onnx::TensorProto& p, const std::string& what) {
  if (p.data_location() == onnx::TensorProto::EXTERNAL)
    throw Unsupported(what + " keeps its data in an external file");
  std::optional<voxrt::DType> dt = dtype_from_onnx(p.data_type());
  if (!dt)
    throw Unsupported(what + " has element type " + onnx_type_name(p.data_type()) +
                      ", which voxrt has no tensor type for");
  voxrt::Shape shape(p.dims().begin(), p.dims().end());
  voxrt::Tensor t = voxrt::Tensor::zeros(*dt, shape);
  auto expect_count = [&](int64_t n, const char* field) {
    if (n != t.numel())
      throw std::runtime_error(what + ": " + field + " holds " + std::to_string(n) +
                               " values, shape " + voxrt::shape_str(shape) + " needs " +
                               std::to_string(t.numel()));
  };
  if (p.has_raw_data()) {
    if (p.raw_data().size() != t.nbytes())
      throw std::runtime_error(what + ": raw_data has " + std::to_string(p.raw_data().size()) +
                               " bytes, expected " + std::to_string(t.nbytes()));
    if (t.nbytes()) std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
    return t;
  }
  using voxrt::DType;
  switch (*dt) {
    case DType::f32:
      expect_count(p.float_data_size(), "float_data");
      copy_field<float, float>(p.float_data(), t);
      return t;
    case DType::f64:
      expect_count(p.double_data_size(), "double_data");
      copy_field<double, double>(p.double_data(), t);
      return t;
    case DType::i64:
      expect_count(p.int64_data_size(), "int64_data");
      copy_field<int64_t, int64_t>(p.int64_data(), t);
      return t;
    case DType::u32:
      expect_count(p.uint64_data_size(), "uint64_data");
      copy_field<uint64_t, uint32_t>(p.uint64_data(), t);
      return t;
    case DType::u64:
      expect_count(p.uint64_data_size(), "uint64_data");
      copy_field<uint64_t, uint64_t>(p.uint64_data(), t);
      return t;
    default:
      expect_count(p.int32_data_size(), "int32_data");
      return from_int32_field(p, std::move(t));
  }
}

// ONNX's test generator has no numpy bfloat16, so it stores bf16 values as their uint16 bits:
// such data is read as the bf16 the graph declares.
voxrt::Tensor load_tensor_file(const fs::path& p, const onnx::ValueInfoProto& declared) {
  onnx::TensorProto proto;
  std::string bytes = read_file(p);
  if (!proto.ParseFromString(bytes)) throw std::runtime_error("cannot parse " + p.string());
  voxrt::Tensor t =
      tensor_from_proto(proto, p.parent_path().filename().string() + "/" + p.filename().string());
  if (t.dtype() == voxrt::DType::u16 &&
      declared.type().tensor_type().elem_type() == onnx::TensorProto::BFLOAT16) {
    voxrt::Tensor b = voxrt::Tensor::empty(voxrt::DType::bf16, t.shape());
    if (t.nbytes()) std::memcpy(b.raw(), t.raw(), t.nbytes());
    return b;
  }
  return t;
}

double float_at(const voxrt::Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case voxrt::DType::f32: return t.data<float>()[i];
    case voxrt::DType::f64: return t.data<double>()[i];
    case voxrt::DType::f16: return voxrt::half_to_float(t.data<uint16_t>()[i]);
    case voxrt::DType::bf16: return voxrt::bf16_to_float(t.data<uint16_t>()[i]);
    default: return 0;
  }
}

// Integers of every width as exact text; bools as 0/1.
std::string int_text(const voxrt::Tensor& t, int64_t i) {
  using voxrt::DType;
  switch (t.dtype()) {
    case DType::i8: return std::to_string(t.data<int8_t>()[i]);
    case DType::i16: return std::to_string(t.data<int16_t>()[i]);
    case DType::i32: return std::to_string(t.data<int32_t>()[i]);
    case DType::i64: return std::to_string(t.data<int64_t>()[i]);
    case DType::u8: return std::to_string(t.data<uint8_t>()[i]);
    case DType::u16: return std::to_string(t.data<uint16_t>()[i]);
    case DType::u32: return std::to_string(t.data<uint32_t>()[i]);
    case DType::u64: return std::to_string(t.data<uint64_t>()[i]);
    case DType::boolean: return t.data<uint8_t>()[i] ? "1" : "0";
    default: return "?";
  }
}

// numpy.isclose(got, want, rtol, atol, equal_nan=True).
bool close(double got, double want) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::fabs(got - want) <= kAtol + kRtol * std::fabs(want);
}

std::string index_text(const voxrt::Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) {
    if (d) s += ',';
    s += std::to_string(idx[d]);
  }
  return s + "]";
}

std::string num(double v) {
  std::ostringstream o;
  o.precision(9);
  o << v;
  return o.str();
}

// Empty when equal, else the reason.
std::string compare(const voxrt::Tensor& got, const voxrt::Tensor& want, const std::string& what) {
  if (got.dtype() != want.dtype())
    return what + " has dtype " + std::string(voxrt::dtype_name(got.dtype())) + ", expected " +
           std::string(voxrt::dtype_name(want.dtype()));
  if (got.shape() != want.shape())
    return what + " has shape " + voxrt::shape_str(got.shape()) + ", expected " +
           voxrt::shape_str(want.shape());
  if (got.numel() && !got.raw()) return what + " has no data";
  int64_t bad = 0, first = -1;
  double max_abs = 0;
  bool fl = voxrt::is_float(got.dtype());
  size_t es = voxrt::dtype_size(got.dtype());
  const auto* g = static_cast<const uint8_t*>(got.raw());
  const auto* w = static_cast<const uint8_t*>(want.raw());
  for (int64_t i = 0; i < got.numel(); ++i) {
    bool same;
    if (fl) {
      double a = float_at(got, i), b = float_at(want, i);
      same = close(a, b);
      if (!same && std::isfinite(a) && std::isfinite(b))
        max_abs = std::max(max_abs, std::fabs(a - b));
    } else if (got.dtype() == voxrt::DType::boolean) {
      same = (g[i] != 0) == (w[i] != 0);
    } else {
      same = std::memcmp(g + i * es, w + i * es, es) == 0;
    }
    if (!same) {
      if (first < 0) first = i;
      ++bad;
    }
  }
  if (!bad) return {};
  std::string got_v = fl ? num(float_at(got, first)) : int_text(got, first);
  std::string want_v = fl ? num(float_at(want, first)) : int_text(want, first);
  std::string s = what + ": " + std::to_string(bad) + " of " + std::to_string(got.numel()) +
                  " values differ; first at " + index_text(got.shape(), first) + ": got " + got_v +
                  ", expected " + want_v;
  if (fl && max_abs > 0) s += " (max abs error " + num(max_abs) + ")";
  return s;
}

std::vector<fs::path> sorted_dirs(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> v;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0)
      v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

size_t count_files(const fs::path& dir, const std::string& prefix) {
  size_t n = 0;
  while (fs::exists(dir / (prefix + std::to_string(n) + ".pb"))) ++n;
  return n;
}

void collect_ops(const onnx::GraphProto& g, std::set<std::string>& ops) {
  for (const onnx::NodeProto& n : g.node()) {
    const std::string& d = n.domain();
    ops.insert(d.empty() || d == "ai.onnx" ? n.op_type() : d + ":" + n.op_type());
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g()) collect_ops(a.g(), ops);
      for (const onnx::GraphProto& sub : a.graphs()) collect_ops(sub, ops);
    }
  }
}

void run_data_set(const voxrt::Session& session, const onnx::GraphProto& graph,
                  const fs::path& set_dir, std::string& failure) {
  std::string set = set_dir.filename().string();
  size_t n_in = count_files(set_dir, "input_");
  size_t n_out = count_files(set_dir, "output_");
  if (n_out == 0) throw std::runtime_error(set + " has no output_0.pb to compare with");
  if (n_in > static_cast<size_t>(graph.input_size()))
    throw std::runtime_error(set + " has " + std::to_string(n_in) + " inputs, the graph " +
                             std::to_string(graph.input_size()));
  if (n_out > static_cast<size_t>(graph.output_size()))
    throw std::runtime_error(set + " has " + std::to_string(n_out) + " outputs, the graph " +
                             std::to_string(graph.output_size()));
  std::vector<voxrt::NamedTensor> inputs;
  for (size_t i = 0; i < n_in; ++i) {
    const onnx::ValueInfoProto& vi = graph.input(static_cast<int>(i));
    if (vi.type().value_case() != onnx::TypeProto::kTensorType)
      throw Unsupported("graph input '" + vi.name() + "' is a " + type_kind(vi.type()) +
                        "; voxrt takes tensors only");
    inputs.push_back(
        {vi.name(), load_tensor_file(set_dir / ("input_" + std::to_string(i) + ".pb"), vi)});
  }
  std::vector<voxrt::Tensor> want;
  for (size_t i = 0; i < n_out; ++i) {
    const onnx::ValueInfoProto& vi = graph.output(static_cast<int>(i));
    if (vi.type().value_case() != onnx::TypeProto::kTensorType)
      throw Unsupported("graph output '" + vi.name() + "' is a " + type_kind(vi.type()) +
                        "; voxrt returns tensors only");
    want.push_back(load_tensor_file(set_dir / ("output_" + std::to_string(i) + ".pb"), vi));
  }
  std::vector<voxrt::Tensor> got = session.run(inputs);
  if (got.size() < want.size()) {
    failure = set + ": the session returned " + std::to_string(got.size()) + " outputs, expected " +
              std::to_string(want.size());
    return;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    std::string what =
        "output " + std::to_string(i) + " '" + graph.output(static_cast<int>(i)).name() + "'";
    std::string why = compare(got[i], want[i], what);
    if (!why.empty() && failure.empty()) failure = why + " (" + set + ")";
  }
}

}  // namespace

const char* status_name(Status s) {
  switch (s) {
    case Status::pass: return "pass";
    case Status::fail: return "fail";
    case Status::load_refused: return "load-refused";
    case Status::skip: return "skip";
  }
  return "fail";
}

ModelSummary summarize_model(const fs::path& case_dir) {
  fs::path p = case_dir / "model.onnx";
  onnx::ModelProto m = parse_model(read_file(p), p);
  ModelSummary s;
  std::set<std::string> ops;
  collect_ops(m.graph(), ops);
  s.ops.assign(ops.begin(), ops.end());
  for (const onnx::OperatorSetIdProto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") s.opset = static_cast<int>(o.version());
  std::set<std::string> types;
  auto add = [&](const onnx::ValueInfoProto& vi) {
    if (vi.type().value_case() == onnx::TypeProto::kTensorType)
      types.insert(onnx_type_name(vi.type().tensor_type().elem_type()));
    else
      types.insert(type_kind(vi.type()));
  };
  for (const onnx::ValueInfoProto& vi : m.graph().input()) add(vi);
  for (const onnx::ValueInfoProto& vi : m.graph().output()) add(vi);
  s.io_dtypes.assign(types.begin(), types.end());
  return s;
}

CaseResult run_case(const fs::path& case_dir, const std::string& name) {
  fs::path model_path = case_dir / "model.onnx";
  if (!fs::is_directory(case_dir))
    return {Status::fail, "test folder " + case_dir.string() +
                              " does not exist (set VOXRT_ONNX_TESTDATA to the folder holding "
                              "node/, pytorch-converted/, pytorch-operator/ and simple/)"};
  std::string bytes;
  onnx::ModelProto model;
  try {
    bytes = read_file(model_path);
    model = parse_model(bytes, model_path);
  } catch (const std::exception& e) {
    return {Status::fail, e.what()};
  }
  for (const auto* io : {&model.graph().input(), &model.graph().output()})
    for (const onnx::ValueInfoProto& vi : *io) {
      if (vi.type().value_case() != onnx::TypeProto::kTensorType)
        return {Status::skip, "graph value '" + vi.name() + "' is a " + type_kind(vi.type()) +
                                  "; voxrt's inputs and outputs are tensors"};
      int t = vi.type().tensor_type().elem_type();
      if (!dtype_from_onnx(t))
        return {Status::skip, "graph value '" + vi.name() + "' has element type " +
                                  onnx_type_name(t) + ", which voxrt has no tensor type for"};
    }
  std::optional<voxrt::Session> session;
  try {
    voxrt::SessionOptions opt;
    opt.model_name = name;
    session.emplace(bytes.data(), bytes.size(), opt);
  } catch (const std::exception& e) {
    return {Status::load_refused, e.what()};
  }
  std::vector<fs::path> sets = sorted_dirs(case_dir, "test_data_set_");
  if (sets.empty()) return {Status::fail, "no test_data_set_* in " + case_dir.string()};
  std::string failure;
  try {
    for (const fs::path& set : sets) run_data_set(*session, model.graph(), set, failure);
  } catch (const Unsupported& e) {
    return {Status::skip, e.what()};
  } catch (const std::exception& e) {
    return {Status::fail, e.what()};
  }
  if (!failure.empty()) return {Status::fail, failure};
  return {Status::pass, {}};
}

}  // namespace conformance
