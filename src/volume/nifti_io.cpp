// NIfTI-1 and NIfTI-2 through Debian's niftilib (nifti2_io reads both versions) and znzlib.
// niftilib parses and validates the header; the voxel data is read here, in bounded chunks, so that
// a truncated file or a header that claims more voxels than the file holds is an Error, not a huge
// allocation or a half-filled volume.
#include <nifti2_io.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "voxrt/volume.h"

namespace voxrt {

struct NiftiHeader {
  nifti_image* nim = nullptr;
  ~NiftiHeader() {
    if (nim) nifti_image_free(nim);
  }
};

namespace {

// Volumes past this many voxels are refused: 2^32 voxels are 16 GiB as float32.
constexpr int64_t kMaxVoxels = int64_t{1} << 32;
// Deflate cannot expand data by more than about 1032:1; a gzip file claiming more is lying.
constexpr int64_t kMaxDeflateRatio = 1040;
constexpr size_t kChunkBytes = size_t{16} << 20;
// Header extensions (DICOM fields, XML) take kilobytes; vox_offset past this is corrupt.
constexpr double kMaxVoxOffset = double(int64_t{64} << 20);

struct ZnzCloser {
  void operator()(znzptr* f) const {
    if (f) Xznzclose(&f);
  }
};
using Znz = std::unique_ptr<znzptr, ZnzCloser>;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("NIfTI file '" + path + "': " + what);
}

void quiet_niftilib() {
  static std::once_flag once;
  std::call_once(once, [] { nifti_set_debug_level(0); });
}

bool starts_with_gzip_magic(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  unsigned char m[2] = {0, 0};
  f.read(reinterpret_cast<char*>(m), 2);
  return f.gcount() == 2 && m[0] == 0x1f && m[1] == 0x8b;
}

int32_t read_i32(const unsigned char* p, bool swap) {
  uint32_t u;
  std::memcpy(&u, p, 4);
  if (swap) u = __builtin_bswap32(u);
  return static_cast<int32_t>(u);
}

int64_t read_i16(const unsigned char* p, bool swap) {
  uint16_t u;
  std::memcpy(&u, p, 2);
  if (swap) u = __builtin_bswap16(u);
  return static_cast<int16_t>(u);
}

int64_t read_i64(const unsigned char* p, bool swap) {
  uint64_t u;
  std::memcpy(&u, p, 8);
  if (swap) u = __builtin_bswap64(u);
  return static_cast<int64_t>(u);
}

double read_f32(const unsigned char* p, bool swap) {
  auto u = static_cast<uint32_t>(read_i32(p, swap));
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct StoredType {
  int code;
  const char* name;
};
constexpr StoredType kStoredTypes[] = {
    {DT_UINT8, "uint8"},     {DT_INT8, "int8"},       {DT_UINT16, "uint16"}, {DT_INT16, "int16"},
    {DT_UINT32, "uint32"},   {DT_INT32, "int32"},     {DT_UINT64, "uint64"}, {DT_INT64, "int64"},
    {DT_FLOAT32, "float32"}, {DT_FLOAT64, "float64"},
};

const char* stored_type_name(int code) {
  for (const StoredType& t : kStoredTypes)
    if (t.code == code) return t.name;
  return nullptr;
}

// What niftilib answers with a NULL, or trusts and crashes on (NIfTI-2 dim[0] past 7 indexes past
// its arrays; a huge vox_offset makes it read that many bytes of extensions): checked on the raw
// header first.
int check_header_bytes(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) fail(path, "no such file");
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory");
  Znz f(znzopen(path.c_str(), "rb", 1));
  if (!f) fail(path, "cannot be opened");
  std::array<unsigned char, 540> h{};
  size_t got = znzread(h.data(), 1, h.size(), f.get());
  if (got < 4) fail(path, "holds " + std::to_string(got) + " bytes, too few for a NIfTI header");
  int32_t size = read_i32(h.data(), false);
  bool swap = false;
  if (size != 348 && size != 540) {
    swap = true;
    size = read_i32(h.data(), true);
  }
  if (size != 348 && size != 540)
    fail(path, "is not a NIfTI file (it starts with the 32-bit value " +
                   std::to_string(read_i32(h.data(), false)) +
                   "; a NIfTI-1 header starts with 348, a NIfTI-2 header with 540)");
  if (got < static_cast<size_t>(size))
    fail(path, "is truncated: it ends after " + std::to_string(got) + " bytes, inside its " +
                   std::to_string(size) + "-byte header");
  int version = size == 348 ? 1 : 2;
  const char* magic = reinterpret_cast<const char*>(version == 1 ? h.data() + 344 : h.data() + 4);
  bool ok = version == 1 ? (std::memcmp(magic, "n+1", 4) == 0 || std::memcmp(magic, "ni1", 4) == 0)
                         : (std::memcmp(magic, "n+2", 4) == 0 || std::memcmp(magic, "ni2", 4) == 0);
  if (!ok)
    fail(path,
         std::string("has a ") + std::to_string(size) + "-byte header without the NIfTI-" +
             std::to_string(version) + " magic" +
             (version == 1
                  ? " (an ANALYZE 7.5 file? its orientation is undefined: convert it to NIfTI)"
                  : ""));
  const unsigned char* b = h.data();
  int64_t datatype = version == 1 ? read_i16(b + 70, swap) : read_i16(b + 12, swap);
  int64_t dim[8];
  for (int d = 0; d < 8; ++d)
    dim[d] = version == 1 ? read_i16(b + 40 + 2 * d, swap) : read_i64(b + 16 + 8 * d, swap);
  double vox_offset =
      version == 1 ? read_f32(b + 108, swap) : static_cast<double>(read_i64(b + 168, swap));
  if (dim[0] < 1 || dim[0] > 7)
    fail(path, "dim[0] is " + std::to_string(dim[0]) + "; NIfTI allows 1 to 7");
  for (int d = 1; d <= dim[0]; ++d)
    if (dim[d] < 1)
      fail(path, "dim[" + std::to_string(d) + "] is " + std::to_string(dim[d]) + ", not positive");
  if (!stored_type_name(static_cast<int>(datatype)))
    fail(path, "holds voxels of datatype code " + std::to_string(datatype) +
                   "; voxrt reads uint8, int8, uint16, int16, uint32, int32, uint64, int64, "
                   "float32 and float64");
  if (!(vox_offset >= 0 && vox_offset <= kMaxVoxOffset))
    fail(path, "vox_offset " + std::to_string(vox_offset) +
                   " is not a plausible start of the voxel data");
  return version;
}

template <class T>
void convert_chunk(const unsigned char* src, size_t count, float* dst, bool scale, double slope,
                   double inter) {
  for (size_t i = 0; i < count; ++i) {
    T v;
    std::memcpy(&v, src + i * sizeof(T), sizeof(T));
    double d = static_cast<double>(v);
    dst[i] = static_cast<float>(scale ? d * slope + inter : d);
  }
}

void convert(int datatype, const unsigned char* src, size_t count, float* dst, bool scale,
             double slope, double inter) {
  switch (datatype) {
    case DT_UINT8: return convert_chunk<uint8_t>(src, count, dst, scale, slope, inter);
    case DT_INT8: return convert_chunk<int8_t>(src, count, dst, scale, slope, inter);
    case DT_UINT16: return convert_chunk<uint16_t>(src, count, dst, scale, slope, inter);
    case DT_INT16: return convert_chunk<int16_t>(src, count, dst, scale, slope, inter);
    case DT_UINT32: return convert_chunk<uint32_t>(src, count, dst, scale, slope, inter);
    case DT_INT32: return convert_chunk<int32_t>(src, count, dst, scale, slope, inter);
    case DT_UINT64: return convert_chunk<uint64_t>(src, count, dst, scale, slope, inter);
    case DT_INT64: return convert_chunk<int64_t>(src, count, dst, scale, slope, inter);
    case DT_FLOAT32: return convert_chunk<float>(src, count, dst, scale, slope, inter);
    case DT_FLOAT64: return convert_chunk<double>(src, count, dst, scale, slope, inter);
  }
}

int64_t checked_voxels(const std::string& path, const nifti_image* nim) {
  if (nim->ndim < 1 || nim->ndim > 7)
    fail(path, "dim[0] is " + std::to_string(nim->ndim) + ", not 1..7");
  int64_t n = 1;
  for (int d = 1; d <= 7; ++d) {
    int64_t v = nim->dim[d];
    if (d > nim->ndim) continue;
    if (v < 1)
      fail(path, "dim[" + std::to_string(d) + "] is " + std::to_string(v) + ", not positive");
    if (d > 4 && v != 1)
      fail(path, "has " + std::to_string(nim->ndim) + " dimensions (dim[" + std::to_string(d) +
                     "] = " + std::to_string(v) +
                     "); voxrt reads 3D volumes, or 4D with channels on the 4th");
    if (n > kMaxVoxels / v)
      fail(path, "dimensions multiply past the limit of " + std::to_string(kMaxVoxels) + " voxels");
    n *= v;
  }
  return n;
}

int nifti_code_for(DType t) {
  switch (t) {
    case DType::u8: return DT_UINT8;
    case DType::i8: return DT_INT8;
    case DType::u16: return DT_UINT16;
    case DType::i16: return DT_INT16;
    case DType::u32: return DT_UINT32;
    case DType::i32: return DT_INT32;
    case DType::i64: return DT_INT64;
    case DType::f32: return DT_FLOAT32;
    case DType::f64: return DT_FLOAT64;
    default: return DT_UNKNOWN;
  }
}

std::string grid_str(const nifti_image* nim) {
  std::string s = std::to_string(nim->nx);
  for (int64_t d : {nim->ny, nim->nz}) s += 'x' + std::to_string(d);
  if (nim->ndim >= 4) s += 'x' + std::to_string(nim->nt);
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

NiftiImage read_nifti(const std::string& path) {
  quiet_niftilib();
  int version = check_header_bytes(path);
  auto header = std::make_shared<NiftiHeader>();
  header->nim = nifti_image_read(path.c_str(), 0);
  nifti_image* nim = header->nim;
  if (!nim)
    fail(path,
         "niftilib refused its header (inconsistent dimensions, datatype or extensions, or a "
         "name without .nii, .nii.gz, .hdr or .img)");
  const char* type_name = stored_type_name(nim->datatype);
  if (!type_name)
    fail(path,
         std::string("holds voxels of type ") + nifti_datatype_string(nim->datatype) +
             "; voxrt reads uint8, int8, uint16, int16, uint32, int32, uint64, int64, float32 and "
             "float64");
  int64_t voxels = checked_voxels(path, nim);
  int64_t bytes = voxels * nim->nbyper;

  std::string data_path = nim->iname ? nim->iname : path;
  bool gz = starts_with_gzip_magic(data_path);
  std::error_code ec;
  int64_t file_size = static_cast<int64_t>(std::filesystem::file_size(data_path, ec));
  if (ec) fail(path, "its voxel data '" + data_path + "' cannot be opened");
  int64_t offset = nim->iname_offset;
  if (!gz && file_size < offset + bytes)
    fail(path, "is truncated or its header lies: " + grid_str(nim) + " " + type_name +
                   " voxels need " + std::to_string(bytes) + " bytes from offset " +
                   std::to_string(offset) + ", but the file holds " + std::to_string(file_size) +
                   " bytes");
  if (gz && bytes > (file_size + 1024) * kMaxDeflateRatio)
    fail(path, "its header lies: it claims " + std::to_string(bytes) +
                   " bytes of voxels, more than a " + std::to_string(file_size) +
                   "-byte gzip file can hold");

  Znz f(znzopen(data_path.c_str(), "rb", gz ? 1 : 0));
  if (!f) fail(path, "its voxel data '" + data_path + "' cannot be opened");
  if (znzseek(f.get(), static_cast<znz_off_t>(offset), SEEK_SET) < 0)
    fail(path, "cannot seek to the voxel data at offset " + std::to_string(offset));

  NiftiImage img;
  int64_t channels = nim->ndim >= 4 ? nim->nt : 1;
  img.data = Tensor::empty(DType::f32, {channels, nim->nz, nim->ny, nim->nx});
  bool swap = nim->byteorder != nifti_short_order() && nim->nbyper > 1;
  bool scale = std::isfinite(nim->scl_slope) && nim->scl_slope != 0 &&
               !(nim->scl_slope == 1 && nim->scl_inter == 0);
  double inter = std::isfinite(nim->scl_inter) ? nim->scl_inter : 0.0;
  std::vector<unsigned char> chunk(std::min<size_t>(kChunkBytes, static_cast<size_t>(bytes)));
  float* out = img.data.data<float>();
  int64_t done = 0;
  while (done < bytes) {
    size_t want =
        static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(chunk.size()), bytes - done));
    size_t got = znzread(chunk.data(), 1, want, f.get());
    if (got != want)
      fail(path, "is truncated" + std::string(gz ? " or its compressed data is corrupt" : "") +
                     ": its header needs " + std::to_string(bytes) +
                     " bytes of voxels, the file gave " +
                     std::to_string(done + static_cast<int64_t>(got)));
    size_t count = want / static_cast<size_t>(nim->nbyper);
    if (swap) nifti_swap_Nbytes(static_cast<int64_t>(count), nim->nbyper, chunk.data());
    convert(nim->datatype, chunk.data(), count, out + done / nim->nbyper, scale, nim->scl_slope,
            inter);
    done += static_cast<int64_t>(want);
  }

  img.header = header;
  img.version = version;
  img.stored_type = type_name;
  img.spacing = {nim->dx, nim->dy, nim->dz};
  return img;
}

void write_nifti(const std::string& path, const Tensor& data, const NiftiImage& like) {
  quiet_niftilib();
  if (!like.header || !like.header->nim)
    fail(path, "the image to copy the geometry from has no header");
  const nifti_image* src = like.header->nim;
  if (data.rank() != 3 && data.rank() != 4)
    fail(path, "data of shape " + shape_str(data.shape()) +
                   " is neither {nz, ny, nx} nor {c, nz, ny, nx}");
  int64_t off = data.rank() == 4 ? 1 : 0;
  int64_t nz = data.dim(off), ny = data.dim(off + 1), nx = data.dim(off + 2);
  int64_t channels = off ? data.dim(0) : 1;
  if (nx != src->nx || ny != src->ny || nz != src->nz)
    fail(path, "data of shape " + shape_str(data.shape()) +
                   " does not match the reference image's " + std::to_string(src->nz) + "x" +
                   std::to_string(src->ny) + "x" + std::to_string(src->nx) + " (nz x ny x nx)");
  int code = nifti_code_for(data.dtype());
  if (code == DT_UNKNOWN)
    fail(path, std::string("NIfTI has no voxel type for ") + std::string(dtype_name(data.dtype())) +
                   " (float16 probabilities go to .npy)");

  std::unique_ptr<nifti_image, void (*)(nifti_image*)> nim(nifti_copy_nim_info(src),
                                                           nifti_image_free);
  if (!nim) fail(path, "niftilib could not copy the reference header");
  nifti_free_extensions(nim.get());
  nim->ndim = nim->dim[0] = channels > 1 ? 4 : 3;
  nim->nx = nim->dim[1] = nx;
  nim->ny = nim->dim[2] = ny;
  nim->nz = nim->dim[3] = nz;
  nim->nt = nim->dim[4] = channels;
  nim->nu = nim->dim[5] = 1;
  nim->nv = nim->dim[6] = 1;
  nim->nw = nim->dim[7] = 1;
  nim->nvox = nx * ny * nz * channels;
  if (channels > 1 && !(nim->dt > 0)) nim->dt = nim->pixdim[4] = 1;
  nim->datatype = code;
  nifti_datatype_sizes(code, &nim->nbyper, &nim->swapsize);
  nim->scl_slope = 1;
  nim->scl_inter = 0;
  nim->cal_min = nim->cal_max = 0;
  bool integer = !is_float(data.dtype());
  nim->intent_code = integer ? NIFTI_INTENT_LABEL : NIFTI_INTENT_NONE;
  nim->intent_p1 = nim->intent_p2 = nim->intent_p3 = 0;
  std::memset(nim->intent_name, 0, sizeof nim->intent_name);
  std::snprintf(nim->descrip, sizeof nim->descrip, "%s", "voxrt");
  nim->byteorder = nifti_short_order();
  bool v2 = like.version == 2;
  nim->nifti_type = v2 ? NIFTI_FTYPE_NIFTI2_1 : NIFTI_FTYPE_NIFTI1_1;
  nim->iname_offset = v2 ? 544 : 352;

  nifti_1_header h1;
  nifti_2_header h2;
  static_assert(sizeof(nifti_1_header) == 348 && sizeof(nifti_2_header) == 540);
  if (v2 ? nifti_convert_nim2n2hdr(nim.get(), &h2) : nifti_convert_nim2n1hdr(nim.get(), &h1))
    fail(path, "niftilib could not build the header (dimensions too large for NIfTI-1?)");
  const void* hdr = v2 ? static_cast<const void*>(&h2) : static_cast<const void*>(&h1);
  size_t hdr_size = v2 ? sizeof h2 : sizeof h1;

  bool gz = ends_with(path, ".gz");
  znzptr* raw = znzopen(path.c_str(), gz ? "wb1" : "wb", gz ? 1 : 0);
  if (!raw) fail(path, "cannot be created");
  Znz f(raw);
  const char extension_flag[4] = {0, 0, 0, 0};
  bool ok = znzwrite(hdr, 1, hdr_size, f.get()) == hdr_size &&
            znzwrite(extension_flag, 1, 4, f.get()) == 4;
  const auto* bytes = static_cast<const unsigned char*>(data.raw());
  for (size_t done = 0; ok && done < data.nbytes(); done += kChunkBytes) {
    size_t n = std::min(kChunkBytes, data.nbytes() - done);
    ok = znzwrite(bytes + done, 1, n, f.get()) == n;
  }
  znzptr* closing = f.release();
  if (Xznzclose(&closing) != 0) ok = false;
  if (!ok) fail(path, "writing failed (disk full, or no permission?)");
}

Tensor reverse_spatial_axes(const Tensor& v) {
  if (v.rank() != 3 && v.rank() != 4)
    throw Error("reverse_spatial_axes: expected a {a, b, d} or {c, a, b, d} volume, got " +
                shape_str(v.shape()));
  int64_t off = v.rank() - 3;
  int64_t c = off ? v.dim(0) : 1, a = v.dim(off), b = v.dim(off + 1), d = v.dim(off + 2);
  Shape shape{d, b, a};
  if (off) shape.insert(shape.begin(), c);
  Tensor out = Tensor::empty(v.dtype(), shape);
  size_t es = dtype_size(v.dtype());
  const auto* s = static_cast<const unsigned char*>(v.raw());
  auto* o = static_cast<unsigned char*>(out.raw());
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t x = 0; x < a; ++x)
      for (int64_t y = 0; y < b; ++y)
        for (int64_t z = 0; z < d; ++z)
          std::memcpy(o + static_cast<size_t>(((ch * d + z) * b + y) * a + x) * es,
                      s + static_cast<size_t>(((ch * a + x) * b + y) * d + z) * es, es);
  return out;
}

}  // namespace voxrt
