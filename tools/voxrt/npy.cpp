#include "npy.h"

#include <cstring>
#include <fstream>
#include <regex>

#include "voxrt/error.h"

namespace voxrt::cli {

namespace {

struct Descr {
  const char* code;
  DType dtype;
};
constexpr Descr kDescrs[] = {{"<f4", DType::f32},    {"<f2", DType::f16}, {"<f8", DType::f64},
                             {"<i8", DType::i64},    {"<i4", DType::i32}, {"|u1", DType::u8},
                             {"|b1", DType::boolean}};

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open '" + path + "'");
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw Error("'" + path + "' is not a .npy file");
  uint32_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    f.read(reinterpret_cast<char*>(b), 2);
    hlen = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  }
  if (!f || hlen > (1u << 20)) throw Error("'" + path + "': bad .npy header");
  std::string header(hlen, '\0');
  f.read(header.data(), hlen);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr':\\s*'([^']+)'")))
    throw Error("'" + path + "': .npy header has no descr");
  std::string descr = m[1];
  const Descr* d = nullptr;
  for (const Descr& x : kDescrs)
    if (descr == x.code) d = &x;
  if (!d) throw Error("'" + path + "': element type '" + descr + "' is not supported");
  if (std::regex_search(header, std::regex("'fortran_order':\\s*True")))
    throw Error("'" + path + "': Fortran-ordered arrays are not supported");
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)")))
    throw Error("'" + path + "': .npy header has no shape");
  Shape shape;
  std::string dims = m[1];
  std::regex num("\\d+");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator();
       ++it)
    shape.push_back(std::stoll(it->str()));
  f.seekg(0, std::ios::end);
  std::streamoff end = f.tellg();
  std::streamoff data_start = (magic[6] == 1 ? 10 : 12) + hlen;
  Tensor t = Tensor::empty(d->dtype, shape);
  if (end - data_start != static_cast<std::streamoff>(t.nbytes()))
    throw Error("'" + path + "': shape " + shape_str(shape) + " needs " +
                std::to_string(t.nbytes()) + " bytes, the file holds " +
                std::to_string(end - data_start));
  f.seekg(data_start);
  f.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  return t;
}

void write_npy(const std::string& path, const Tensor& t) {
  const char* code = nullptr;
  for (const Descr& x : kDescrs)
    if (x.dtype == t.dtype()) code = x.code;
  if (!code) throw Error("cannot write " + std::string(dtype_name(t.dtype())) + " to .npy");
  std::string shape;
  for (int64_t d : t.shape()) shape += std::to_string(d) + ",";
  if (t.rank() > 1) shape.pop_back();
  std::string header =
      "{'descr': '" + std::string(code) + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("cannot write '" + path + "'");
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t hl = static_cast<uint16_t>(header.size());
  char b[2] = {static_cast<char>(hl & 0xff), static_cast<char>(hl >> 8)};
  f.write(b, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  if (!f) throw Error("cannot write '" + path + "'");
}

}  // namespace voxrt::cli
