#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli_common.h"
#include "npy.h"
#include "profile.h"
#include "runtime/pages.h"

namespace voxrt::cli {

namespace {

std::string human_bytes(int64_t b) {
  char buf[64];
  if (b >= (int64_t{1} << 30))
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / 1073741824.0);
  else if (b >= (int64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / 1048576.0);
  else
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  return buf;
}

std::string io_line(const IoInfo& io) {
  std::string dims;
  for (size_t i = 0; i < io.shape.size(); ++i) {
    dims += i ? "x" : "";
    dims += io.shape[i] >= 0 ? std::to_string(io.shape[i])
                             : (io.dim_names[i].empty() ? "?" : io.dim_names[i]);
  }
  return io.name + "  " + std::string(dtype_name(io.dtype)) + "  " + (dims.empty() ? "?" : dims);
}

}  // namespace

int cmd_info(const std::string& model, const std::vector<std::string>& shapes, bool passes,
             const std::string& precision, int threads) {
  SessionOptions opt;
  apply_precision(precision, opt);
  opt.threads = threads;
  Session s(model, opt);
  // Symbolic dims nobody gave default to 1, which a UNet's pooling may refuse: then the summary
  // keeps what needs no shape and asks for one.
  std::vector<std::string> defaulted;
  auto bound = resolve_shapes(shapes, s, &defaulted);
  ModelSummary sum;
  std::string plan_error;
  try {
    sum = s.summary(bound);
  } catch (const Error& e) {
    if (defaulted.empty()) throw;
    sum = s.summary();
    plan_error = e.what();
  }
  std::cout << "model       " << model << "\n";
  std::cout << "ir version  " << sum.ir_version << ", opset " << sum.opset << "\n";
  for (const IoInfo& i : s.inputs()) std::cout << "input       " << io_line(i) << "\n";
  for (size_t k = 0; k < s.outputs().size(); ++k) {
    std::cout << "output      " << io_line(s.outputs()[k]);
    if (sum.planned)
      std::cout << "  (at the given shape: " << shape_str(sum.output_shapes[k]) << ")";
    std::cout << "\n";
  }
  std::cout << "parameters  " << sum.parameters << "\n";
  std::cout << "weights     " << human_bytes(sum.weight_bytes)
            << " (as held for the kernels: packed panels, constants)\n";
  if (sum.planned) {
    std::cout << "shape       ";
    for (size_t i = 0; i < bound.size(); ++i)
      std::cout << (i ? ", " : "") << bound[i].first << "=" << shape_str(bound[i].second);
    std::printf("\nMACs        %.3f G\n", static_cast<double>(sum.macs) / 1e9);
    std::cout << "activations " << human_bytes(sum.activation_bytes) << " peak on " << threads
              << (threads == 1 ? " thread\n" : " threads\n");
  } else {
    std::cout << "MACs and activations need input shapes: give --shape " << defaulted[0]
              << "=... (with its symbolic dims set to 1: " << plan_error << ")\n";
  }
  std::cout << "ops        ";
  std::vector<std::pair<int, std::string>> hist;
  for (const auto& [op, n] : sum.op_histogram) hist.emplace_back(-n, op);
  std::sort(hist.begin(), hist.end());
  for (const auto& [n, op] : hist) std::cout << " " << op << " x" << -n;
  std::cout << "\n";
  if (passes) {
    std::cout << "\nbefore passes:\n"
              << s.graph_text(true) << "\nafter passes:\n"
              << s.graph_text(false);
  }
  return 0;
}

std::vector<NamedTensor> read_inputs(const std::vector<std::string>& inputs, const Session& s) {
  std::vector<NamedTensor> in;
  for (const std::string& a : inputs) {
    size_t eq = a.find('=');
    std::string name = eq == std::string::npos ? s.inputs().at(0).name : a.substr(0, eq);
    std::string path = eq == std::string::npos ? a : a.substr(eq + 1);
    if (eq == std::string::npos && s.inputs().size() != 1)
      throw Error("--input '" + a + "' needs a name: the model has several inputs");
    Tensor t = read_npy(path);
    for (const IoInfo& io : s.inputs())
      if (io.name == name && io.dtype != t.dtype())
        throw Error("--input '" + a + "' holds " + std::string(dtype_name(t.dtype())) +
                    ", input '" + name + "' takes " + std::string(dtype_name(io.dtype)));
    in.push_back({name, std::move(t)});
  }
  return in;
}

int cmd_run(const std::string& model, const std::vector<std::string>& inputs,
            const std::vector<std::string>& outputs, const std::string& precision, int threads) {
  SessionOptions opt;
  apply_precision(precision, opt);
  opt.threads = threads;
  Session s(model, opt);
  std::vector<NamedTensor> in = read_inputs(inputs, s);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> out = s.run(in);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (const std::string& a : outputs) {
    size_t eq = a.find('=');
    std::string name = eq == std::string::npos ? s.outputs().at(0).name : a.substr(0, eq);
    std::string path = eq == std::string::npos ? a : a.substr(eq + 1);
    size_t k = 0;
    while (k < s.outputs().size() && s.outputs()[k].name != name) ++k;
    if (k == s.outputs().size())
      throw Error("--output names '" + name + "', which is not an output");
    write_npy(path, out[k]);
    std::cout << "wrote " << path << " (" << name << ", " << dtype_name(out[k].dtype()) << " "
              << shape_str(out[k].shape()) << ")\n";
  }
  std::printf("ran in %.1f ms\n", ms);
  return 0;
}

int cmd_bench(const std::string& model, const std::vector<std::string>& shapes,
              const std::string& precision, int threads, int runs, int warmup,
              const std::string& profile_path) {
  SessionOptions opt;
  apply_precision(precision, opt);
  opt.threads = threads;
  opt.profiling = !profile_path.empty();
  opt.input_shapes = expected_shapes(shapes);  // kernels chosen for the shapes timed
  using clock = std::chrono::steady_clock;
  auto ms_since = [](clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
  const auto created_at = clock::now();
  Session s(model, opt);
  const double create_ms = ms_since(created_at);
  auto bound = resolve_shapes(shapes, s);
  ModelSummary sum = s.summary(bound);
  std::vector<NamedTensor> in = random_inputs(bound, s);
  // The first run of a shape maps its arena and first touches its pages: timed apart, as a
  // cold start.
  double first_ms = -1;
  for (int i = 0; i < warmup; ++i) {
    const auto t0 = clock::now();
    s.run(in);
    if (i == 0) first_ms = ms_since(t0);
  }
  std::vector<double> ms;
  std::vector<ProfiledRun> trace;
  const auto start = clock::now();
  for (int i = 0; i < runs; ++i) {
    const auto t0 = clock::now();
    s.run(in);
    ms.push_back(ms_since(t0));
    if (opt.profiling)
      trace.push_back({std::chrono::duration<double, std::milli>(t0 - start).count(), ms.back(),
                       s.last_profile()});
  }
  if (first_ms < 0) first_ms = ms.front();
  if (opt.profiling) write_chrome_trace(profile_path, model + " (" + precision + ")", trace);
  std::sort(ms.begin(), ms.end());
  double median = ms[ms.size() / 2];
  double gflops = 2.0 * static_cast<double>(sum.macs) / (median * 1e6);
  std::printf("model %s  precision %s  threads %d  cpu %s%s  shape", model.c_str(),
              precision.empty() ? "model" : precision.c_str(), threads, cpu_info().isa.c_str(),
              cpu_info().fp16_emulated ? " (fp16 arithmetic emulated)" : "");
  for (const auto& [name, shape] : bound)
    std::printf(" %s=%s", name.c_str(), shape_str(shape).c_str());
  std::printf(
      "\nruns %d (after %d warm-up)  median %.2f ms  min %.2f ms  %.2f GFLOP/s  peak RSS %s  "
      "activations %s  weights %s  scratch %s\n",
      runs, warmup, median, ms.front(), gflops, human_bytes(peak_rss_bytes()).c_str(),
      human_bytes(sum.activation_bytes).c_str(), human_bytes(sum.weight_bytes).c_str(),
      human_bytes(s.scratch_peak_bytes()).c_str());
  std::printf("session created in %.1f ms (load, passes, weights packed)  first run %.2f ms\n",
              create_ms, first_ms);
  if (int64_t file = file_rss_bytes(); file >= 0)
    std::printf("resident file-backed pages (code of voxrt and its libraries) %s\n",
                human_bytes(file).c_str());
  // Where huge pages were asked for, or the system gave some unasked (transparent huge pages in
  // `always` mode): what they hold.
  if (int64_t huge = huge_rss_bytes(); huge > 0 || (huge == 0 && huge_pages_enabled()))
    std::printf("resident in 2 MiB pages %s (huge pages %s)\n", human_bytes(huge).c_str(),
                huge_pages_enabled() ? "asked for" : "not asked for: VOXRT_HUGEPAGES=1 does");
  if (opt.profiling)
    std::printf(
        "profile of the %d timed runs written to %s (Chrome trace: open in ui.perfetto.dev)\n",
        runs, profile_path.c_str());
  return 0;
}

int cmd_convert(const std::string& in, const std::string& out, bool fp16, bool keep_io,
                const std::string& block_ops) {
  if (!fp16) throw Error("convert: nothing to do; --fp16 is the conversion voxrt offers");
  Fp16ConvertOptions opt;
  opt.keep_io_types = keep_io;
  std::stringstream ss(block_ops);
  for (std::string op; std::getline(ss, op, ',');)
    if (!op.empty()) opt.block_ops.insert(op);
  Fp16ConvertReport r = convert_to_fp16(in, out, opt);
  std::cout << "wrote " << out << ": " << r.converted << " weights in fp16, " << r.clamped
            << " clamped to +-65504, " << r.flushed << " too small for fp16 flushed to zero\n";
  return 0;
}

}  // namespace voxrt::cli
