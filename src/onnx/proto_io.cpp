#include "onnx/proto_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>

#include "voxrt/error.h"

namespace voxrt::onnx_io {

namespace fs = std::filesystem;
using onnx::TensorProto;

onnx::ModelProto parse_model(const void* bytes, size_t size, const std::string& model_name) {
  if (size > static_cast<size_t>(INT32_MAX))
    throw Error("model '" + model_name +
                "': larger than 2 GB; store the weights as external data next to the model");
  onnx::ModelProto m;
  if (!m.ParseFromArray(bytes, static_cast<int>(size)))
    throw Error("model '" + model_name + "': not a valid ONNX model (protobuf parsing failed on " +
                std::to_string(size) + " bytes; truncated or not ONNX)");
  if (!m.has_graph())
    throw Error("model '" + model_name + "': not a valid ONNX model (it has no graph)");
  return m;
}

FileBytes& FileBytes::operator=(FileBytes&& o) noexcept {
  if (this != &o) {
    release();
    map_ = std::exchange(o.map_, nullptr);
    size_ = std::exchange(o.size_, 0);
    read_ = std::move(o.read_);
    o.read_.clear();
  }
  return *this;
}

void FileBytes::release() {
  if (map_) munmap(map_, size_);
  map_ = nullptr;
  size_ = 0;
  std::string().swap(read_);
}

FileBytes read_file(const std::string& path) {
  FileBytes b;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot open '" + path + "'");
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw Error("'" + path + "' is a directory, not a model file");
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    // MAP_POPULATE faults the pages in as one request rather than page by page; not for a file
    // parse_model refuses unread (past 2 GB), which it would read whole first.
    const bool populate = st.st_size <= INT32_MAX;
    void* m = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ,
                   MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
    if (m != MAP_FAILED) {
      b.map_ = m;
      b.size_ = static_cast<size_t>(st.st_size);
      ::close(fd);
      return b;
    }
  }
  // Not mapped (empty, a pipe or device, or a mapping refused): read to the end, at most one
  // byte past what parse_model accepts, so that it refuses an oversized stream by name.
  constexpr size_t kMost = size_t{INT32_MAX} + 1;
  char chunk[1 << 16];
  while (b.read_.size() < kMost) {
    const ssize_t got = ::read(fd, chunk, std::min(sizeof chunk, kMost - b.read_.size()));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      ::close(fd);
      throw Error("cannot read '" + path + "'");
    }
    if (got == 0) break;
    b.read_.append(chunk, static_cast<size_t>(got));
  }
  ::close(fd);
  return b;
}

DType dtype_from_onnx(int32_t t, const std::string& where) {
  switch (t) {
    case TensorProto::FLOAT: return DType::f32;
    case TensorProto::FLOAT16: return DType::f16;
    case TensorProto::BFLOAT16: return DType::bf16;
    case TensorProto::DOUBLE: return DType::f64;
    case TensorProto::INT8: return DType::i8;
    case TensorProto::INT16: return DType::i16;
    case TensorProto::INT32: return DType::i32;
    case TensorProto::INT64: return DType::i64;
    case TensorProto::UINT8: return DType::u8;
    case TensorProto::UINT16: return DType::u16;
    case TensorProto::UINT32: return DType::u32;
    case TensorProto::UINT64: return DType::u64;
    case TensorProto::BOOL: return DType::boolean;
    default: break;
  }
  std::string name = TensorProto::DataType_IsValid(t)
                         ? TensorProto::DataType_Name(static_cast<TensorProto::DataType>(t))
                         : "data type " + std::to_string(t);
  throw Error(where + ": element type " + name + " is not supported");
}

int32_t dtype_to_onnx(DType t) {
  switch (t) {
    case DType::f32: return TensorProto::FLOAT;
    case DType::f16: return TensorProto::FLOAT16;
    case DType::bf16: return TensorProto::BFLOAT16;
    case DType::f64: return TensorProto::DOUBLE;
    case DType::i8: return TensorProto::INT8;
    case DType::i16: return TensorProto::INT16;
    case DType::i32: return TensorProto::INT32;
    case DType::i64: return TensorProto::INT64;
    case DType::u8: return TensorProto::UINT8;
    case DType::u16: return TensorProto::UINT16;
    case DType::u32: return TensorProto::UINT32;
    case DType::u64: return TensorProto::UINT64;
    case DType::boolean: return TensorProto::BOOL;
  }
  return TensorProto::UNDEFINED;
}

namespace {

std::string read_external(const TensorProto& p, const std::string& model_dir,
                          const std::string& where, size_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    try {
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    } catch (const std::exception&) {
      throw Error(where + ": external data field '" + kv.key() + "' is not a number: '" +
                  kv.value() + "'");
    }
  }
  if (location.empty()) throw Error(where + ": external data has no location");
  fs::path rel(location);
  if (rel.is_absolute())
    throw Error(where + ": external data location '" + location +
                "' is absolute; it must be relative to the model's folder");
  fs::path base = fs::weakly_canonical(fs::path(model_dir.empty() ? "." : model_dir));
  fs::path full = fs::weakly_canonical(base / rel);
  auto [b, f] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  if (b != base.end())
    throw Error(where + ": external data location '" + location + "' escapes the model's folder");
  std::error_code ec;
  uintmax_t file_size = fs::file_size(full, ec);
  if (ec) throw Error(where + ": cannot open external data file '" + full.string() + "'");
  if (offset < 0 || static_cast<uintmax_t>(offset) > file_size)
    throw Error(where + ": external data offset " + std::to_string(offset) + " is past the end of '" +
                location + "' (" + std::to_string(file_size) + " bytes)");
  size_t avail = static_cast<size_t>(file_size - static_cast<uintmax_t>(offset));
  size_t n = length < 0 ? expected : static_cast<size_t>(length);
  if (n != expected || n > avail)
    throw Error(where + ": external data holds " + std::to_string(std::min(n, avail)) +
                " bytes, the declared shape needs " + std::to_string(expected));
  std::ifstream in(full, std::ios::binary);
  in.seekg(offset);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  if (!in) throw Error(where + ": cannot read external data from '" + location + "'");
  return s;
}

}  // namespace

namespace {

// tensor_from_proto; with `raw_owner` (p itself), raw_data becomes the tensor's storage.
Tensor decode_tensor(const TensorProto& p, TensorProto* raw_owner, const std::string& model_dir,
                     const std::string& where) {
  if (p.has_segment()) throw Error(where + ": segmented tensors are not supported");
  DType dt = dtype_from_onnx(p.data_type(), where);
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw Error(where + ": dimension " + std::to_string(d) + " is negative");
  int64_t numel = 0;
  try {
    numel = shape_numel(shape);
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  size_t esize = dtype_size(dt);
  if (numel > 0 && static_cast<uint64_t>(numel) > (uint64_t{1} << 40) / esize)
    throw Error(where + ": shape " + shape_str(shape) + " is too large");
  size_t bytes = static_cast<size_t>(numel) * esize;

  if (p.data_location() == TensorProto::EXTERNAL) {
    std::string raw = read_external(p, model_dir, where, bytes);
    Tensor t = Tensor::empty(dt, shape);
    std::memcpy(t.raw(), raw.data(), bytes);
    return t;
  }
  if (p.has_raw_data()) {
    if (p.raw_data().size() != bytes)
      throw Error(where + ": shape " + shape_str(shape) + " needs " + std::to_string(bytes) +
                  " bytes but the tensor holds " + std::to_string(p.raw_data().size()));
    if (raw_owner && bytes) {
      // The string moves into a holder the tensor's storage shares: no copy of the bytes.
      auto held = std::make_shared<std::string>(std::move(*raw_owner->mutable_raw_data()));
      std::shared_ptr<uint8_t[]> storage(held, reinterpret_cast<uint8_t*>(held->data()));
      return Tensor::adopt(dt, shape, std::move(storage));
    }
    Tensor t = Tensor::empty(dt, shape);
    if (bytes) std::memcpy(t.raw(), p.raw_data().data(), bytes);
    return t;
  }
  // The typed field this dtype's values are in, checked against the shape before the tensor is
  // allocated: a huge declared shape over a short field must not allocate first.
  int held = 0;
  switch (dt) {
    case DType::f32: held = p.float_data_size(); break;
    case DType::f64: held = p.double_data_size(); break;
    case DType::i64: held = p.int64_data_size(); break;
    case DType::u32:
    case DType::u64: held = p.uint64_data_size(); break;
    default: held = p.int32_data_size();  // int32 and narrower types, fp16/bf16 as bit patterns
  }
  if (static_cast<int64_t>(held) != numel)
    throw Error(where + ": declares " + std::to_string(numel) + " elements but holds " +
                std::to_string(held));
  Tensor t = Tensor::empty(dt, shape);
  switch (dt) {
    case DType::f32:
      std::copy(p.float_data().begin(), p.float_data().end(), t.data<float>());
      break;
    case DType::f64:
      std::copy(p.double_data().begin(), p.double_data().end(), t.data<double>());
      break;
    case DType::i64:
      std::copy(p.int64_data().begin(), p.int64_data().end(), t.data<int64_t>());
      break;
    case DType::u32:
    case DType::u64:
      for (int64_t i = 0; i < numel; ++i) {
        uint64_t v = p.uint64_data(static_cast<int>(i));
        if (dt == DType::u32) t.data<uint32_t>()[i] = static_cast<uint32_t>(v);
        else t.data<uint64_t>()[i] = v;
      }
      break;
    default:
      for (int64_t i = 0; i < numel; ++i) {
        int32_t v = p.int32_data(static_cast<int>(i));
        switch (esize) {
          case 4: t.data<int32_t>()[i] = v; break;
          case 2: t.data<uint16_t>()[i] = static_cast<uint16_t>(v); break;
          default: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
        }
      }
  }
  return t;
}

}  // namespace

Tensor tensor_from_proto(const TensorProto& p, const std::string& model_dir,
                         const std::string& where) {
  return decode_tensor(p, nullptr, model_dir, where);
}

Tensor tensor_from_proto(TensorProto&& p, const std::string& model_dir, const std::string& where) {
  return decode_tensor(p, &p, model_dir, where);
}

void tensor_to_proto(const Tensor& t, const std::string& name, TensorProto& p) {
  p.set_name(name);
  p.set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape()) p.add_dims(d);
  p.set_raw_data(t.raw(), t.nbytes());
}

}  // namespace voxrt::onnx_io
