#include "cli_common.h"

#include <sched.h>
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <utility>

#include "core/half.h"

namespace voxrt::cli {

std::pair<std::string, Shape> parse_shape_arg(const std::string& arg, const Session& s) {
  std::pair<std::string, Shape> out = parse_shape_arg(arg);
  if (out.first.empty()) {
    if (s.inputs().size() != 1)
      throw Error("--shape '" + arg + "' needs a name: the model has several inputs");
    out.first = s.inputs()[0].name;
  }
  return out;
}

std::vector<std::pair<std::string, Shape>> expected_shapes(const std::vector<std::string>& args) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const std::string& a : args) out.push_back(parse_shape_arg(a));
  return out;
}

std::pair<std::string, Shape> parse_shape_arg(const std::string& arg) {
  std::string name, dims = arg;
  size_t eq = arg.rfind('=');
  if (eq != std::string::npos) {
    name = arg.substr(0, eq);
    dims = arg.substr(eq + 1);
  }
  Shape shape;
  size_t pos = 0;
  while (pos <= dims.size()) {
    size_t x = dims.find('x', pos);
    std::string part = dims.substr(pos, x == std::string::npos ? std::string::npos : x - pos);
    try {
      size_t used = 0;
      long long v = std::stoll(part, &used);
      if (used != part.size() || v < 0) throw std::invalid_argument(part);
      shape.push_back(v);
    } catch (const std::exception&) {
      throw Error("--shape '" + arg + "': '" + part +
                  "' is not a dimension (expected e.g. 1x1x96x96x96)");
    }
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return {name, shape};
}

std::vector<std::pair<std::string, Shape>> resolve_shapes(const std::vector<std::string>& args,
                                                          const Session& s,
                                                          std::vector<std::string>* defaulted) {
  std::vector<std::pair<std::string, Shape>> given;
  for (const std::string& a : args) given.push_back(parse_shape_arg(a, s));
  std::vector<std::pair<std::string, Shape>> out;
  for (const IoInfo& in : s.inputs()) {
    auto it = std::find_if(given.begin(), given.end(), [&](auto& g) { return g.first == in.name; });
    if (it != given.end()) {
      out.push_back(*it);
      continue;
    }
    if (in.shape.empty() && in.dim_names.empty())
      throw Error("input '" + in.name + "' has no declared shape: give it with --shape " + in.name +
                  "=...");
    Shape shape = in.shape;
    bool symbolic = false;
    for (int64_t& d : shape)
      if (d < 0) {
        d = 1;
        symbolic = true;
      }
    if (symbolic && defaulted) defaulted->push_back(in.name);
    out.emplace_back(in.name, shape);
  }
  for (const auto& g : given)
    if (std::none_of(s.inputs().begin(), s.inputs().end(),
                     [&](const IoInfo& i) { return i.name == g.first; }))
      throw Error("--shape names '" + g.first + "', which is not an input of the model");
  return out;
}

std::vector<std::string> precision_names() {
  return {"model", "fp32", "fp16", "model+bf16", "fp32+bf16", "fp16+bf16"};
}

void apply_precision(const std::string& p, SessionOptions& opt) {
  const bool bf16 = p.size() > 5 && p.compare(p.size() - 5, 5, "+bf16") == 0;
  const std::string storage = bf16 ? p.substr(0, p.size() - 5) : p;
  if (storage == "model" || storage.empty())
    opt.precision = Precision::as_model;
  else if (storage == "fp32")
    opt.precision = Precision::fp32;
  else if (storage == "fp16")
    opt.precision = Precision::fp16;
  else {
    std::string names;
    for (const std::string& n : precision_names()) names += (names.empty() ? "" : ", ") + n;
    throw Error("precision '" + p + "' is not one of " + names);
  }
  opt.fpmath = bf16 ? FpMath::bf16 : FpMath::strict;
  const char* winograd = std::getenv("VOXRT_WINOGRAD");
  opt.winograd = !winograd || std::string(winograd) != "0";
  if (bf16 && !cpu_info().bf16_products)
    std::fprintf(stderr,
                 "note: precision %s: this CPU (%s) has no bf16 dot products faster than fp32 "
                 "multiply-adds (AVX512-BF16, not Intel's with AVX512-FP16); running %s\n",
                 p.c_str(), cpu_info().isa.c_str(), storage.c_str());
  if (cpu_info().fp16_emulation_asked && !cpu_info().fp16_arithmetic)
    std::fprintf(stderr,
                 "note: VOXRT_EMULATE_AVX512FP16 is set, but fp16 arithmetic is emulated only on "
                 "CPUs with AVX512-BF16 and without AVX512-FP16, under no lower VOXRT_MAX_ISA "
                 "(this one: %s)\n",
                 cpu_info().isa.c_str());
}

Tensor random_tensor(DType dtype, const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::empty(dtype, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = u(rng);
    switch (dtype) {
      case DType::f32: t.data<float>()[i] = v; break;
      case DType::f16: t.data<uint16_t>()[i] = float_to_half(v); break;
      case DType::f64: t.data<double>()[i] = v; break;
      case DType::i64: t.data<int64_t>()[i] = static_cast<int64_t>(v * 4); break;
      default: throw Error("cannot make random input of type " + std::string(dtype_name(dtype)));
    }
  }
  return t;
}

std::vector<NamedTensor> random_inputs(const std::vector<std::pair<std::string, Shape>>& bound,
                                       const Session& s) {
  std::vector<NamedTensor> in;
  uint32_t seed = 1;
  for (const auto& [name, shape] : bound) {
    DType dt = DType::f32;
    for (const IoInfo& io : s.inputs())
      if (io.name == name) dt = io.dtype;
    in.push_back({name, random_tensor(dt, shape, seed++)});
  }
  return in;
}

std::vector<NamedTensor> output_buffers(const std::vector<std::pair<std::string, Shape>>& bound,
                                        const Session& s) {
  std::vector<Shape> shapes = s.output_shapes(bound);
  std::vector<NamedTensor> out;
  for (size_t k = 0; k < shapes.size(); ++k)
    out.push_back({s.outputs()[k].name, Tensor::empty(s.outputs()[k].dtype, shapes[k])});
  return out;
}

namespace {

// A "Name:   123 kB" line of a /proc/self file (status by default) in bytes, or -1.
int64_t status_bytes(const char* name, const char* file = "/proc/self/status") {
  std::ifstream f(file);
  const std::string key = std::string(name) + ":";
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(key.size())) * 1024;
  return -1;
}

}  // namespace

// VmHWM, the high-water mark of this program's own address space. getrusage's ru_maxrss also
// counts the parent's resident memory at fork, which Linux keeps across exec: under a Python or
// node parent (bench/compare_onnxruntime) a small model's peak read as the parent's 13.6 MiB.
int64_t peak_rss_bytes() {
  const int64_t hwm = status_bytes("VmHWM");
  if (hwm >= 0) return hwm;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;
}

int64_t file_rss_bytes() {
  return status_bytes("RssFile");
}

int64_t huge_rss_bytes() {
  return status_bytes("AnonHugePages", "/proc/self/smaps_rollup");
}

namespace {

// Whole CPUs of this process's cgroup CPU quota (v2 cpu.max, v1 cpu.cfs_quota_us over
// cpu.cfs_period_us), rounded up; 0 where there is none or it cannot be read. A container
// started with --cpus=2 on a large host sees every CPU in its affinity mask.
int cgroup_cpu_quota() {
  std::ifstream groups("/proc/self/cgroup");
  std::string line, v1, v2;
  while (std::getline(groups, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
    const std::string path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && b == a + 1) v2 = path;
    if (controllers.find(",cpu,") != std::string::npos) v1 = path;
  }
  auto whole = [](double quota, double period) {
    return quota > 0 && period > 0 ? static_cast<int>(std::ceil(quota / period)) : 0;
  };
  // The process's own group, then the hierarchy's root: a container's namespace shows the
  // host's path in /proc/self/cgroup but mounts its own group at the root.
  for (const std::string& dir : {"/sys/fs/cgroup/cpu" + v1, std::string("/sys/fs/cgroup/cpu")}) {
    std::ifstream q(dir + "/cpu.cfs_quota_us"), p(dir + "/cpu.cfs_period_us");
    double quota = 0, period = 0;
    if (!v1.empty() && q >> quota && p >> period) return whole(quota, period);
  }
  for (const std::string& dir : {"/sys/fs/cgroup" + v2, std::string("/sys/fs/cgroup")}) {
    std::ifstream max(dir + "/cpu.max");
    std::string quota;
    double period = 0;
    if (!v2.empty() && max >> quota >> period)
      return quota == "max" ? 0 : whole(std::atof(quota.c_str()), period);
  }
  return 0;
}

}  // namespace

int physical_cores() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) != 0) return 1;
  std::set<std::pair<int, int>> cores;  // (package, core)
  int cpus = 0;
  bool topology = true;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &mask)) continue;
    ++cpus;
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    std::ifstream package(dir + "physical_package_id"), core(dir + "core_id");
    int p = -1, k = -1;
    if (!(package >> p) || !(core >> k)) topology = false;
    cores.insert({p, k});
  }
  int n = topology ? static_cast<int>(cores.size()) : cpus;
  if (const int quota = cgroup_cpu_quota(); quota > 0) n = std::min(n, quota);
  return std::max(1, n);
}

}  // namespace voxrt::cli
