#include "profile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "core/half.h"

namespace voxrt::cli {

namespace {

std::string shapes_text(const std::vector<Shape>& shapes) {
  std::string s;
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (i) s += ',';
    s += shape_str(shapes[i]);
  }
  return s;
}

double gflops(int64_t macs, double ms) {
  return ms > 0 ? 2.0 * static_cast<double>(macs) / (ms * 1e6) : 0;
}

double gbytes_per_s(int64_t bytes, double ms) {
  return ms > 0 ? static_cast<double>(bytes) / (ms * 1e6) : 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// One node's figures at one precision, medians over the profiled runs.
struct NodeStat {
  std::string op, shape, kernel;
  int64_t macs = 0, bytes = 0;
  std::vector<double> ms;  // one per profiled run
  double median_ms = 0;
};

// One output of the last profiled run, as doubles (float outputs only).
struct OutputValues {
  std::string name;
  Shape shape;
  std::vector<double> values;
};

// Every k-th value of one tensor, k the smallest step that keeps at most kSampled of them.
struct Sampled {
  int64_t numel = 0;
  std::vector<float> values;
};
constexpr int64_t kSampled = int64_t{1} << 20;

struct PrecisionProfile {
  std::string label;
  std::vector<std::string> order;  // node keys in execution order
  std::map<std::string, NodeStat> nodes;
  std::vector<double> run_ms;
  int64_t macs = 0;
  double total_ms = 0;  // sum of the node medians
  std::vector<OutputValues> outputs;
  // The first precision: its nodes' float values by value name. The others: per node name, the
  // relative L2 distance of the node's first float output from the first precision's.
  std::map<std::string, Sampled> samples;
  std::map<std::string, double> node_error;
  bool grouped = false;  // the batch ran a group of items at a time (NodeProfile::first_item)
};

template <typename T>
double relative_l2(const std::vector<T>& ref, const std::vector<T>& x) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double r = ref[i], d = static_cast<double>(x[i]) - r;
    diff += d * d;
    norm += r * r;
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// Every `step`-th value of a float32 or float16 tensor, as T; none for other dtypes.
template <typename T>
std::vector<T> every(const Tensor& t, int64_t step) {
  std::vector<T> v;
  if (t.dtype() != DType::f32 && t.dtype() != DType::f16) return v;
  v.reserve(static_cast<size_t>((t.numel() + step - 1) / step));
  for (int64_t i = 0; i < t.numel(); i += step)
    v.push_back(static_cast<T>(t.dtype() == DType::f32 ? t.data<float>()[i]
                                                       : half_to_float(t.data<uint16_t>()[i])));
  return v;
}

// The sampled values of a float tensor; numel 0 for other dtypes.
Sampled sample(const Tensor& t) {
  Sampled s;
  s.values = every<float>(t, std::max<int64_t>(1, (t.numel() + kSampled - 1) / kSampled));
  if (!s.values.empty()) s.numel = t.numel();
  return s;
}

// All the values of a float tensor, as doubles.
std::vector<double> float_values(const Tensor& t) {
  return every<double>(t, 1);
}

// Node names identify a node across precisions; unnamed or repeated ones get the op type and a
// count so that the key stays unique within a run.
std::vector<std::string> node_keys(const std::vector<NodeProfile>& run) {
  std::vector<std::string> keys;
  std::map<std::string, int> seen;
  int64_t group = 0;
  for (const NodeProfile& n : run) {
    // A batch run a group of items at a time lists its nodes again for each group: same keys.
    if (n.first_item != group) {
      seen.clear();
      group = n.first_item;
    }
    std::string k = n.node.empty() ? n.op_type : n.node;
    int c = seen[k]++;
    keys.push_back(c ? k + "#" + std::to_string(c) : k);
  }
  return keys;
}

PrecisionProfile profile_precision(const std::string& model, const std::vector<std::string>& shapes,
                                   const std::vector<std::string>& inputs,
                                   const std::string& precision, int threads, int runs, int warmup,
                                   std::vector<std::pair<std::string, Shape>>& bound,
                                   const PrecisionProfile* first) {
  SessionOptions opt;
  apply_precision(precision, opt);
  opt.threads = threads;
  opt.profiling = true;
  opt.input_shapes = expected_shapes(shapes);  // kernels chosen for the shapes profiled
  Session s(model, opt);
  std::vector<NamedTensor> in;
  if (inputs.empty()) {
    bound = resolve_shapes(shapes, s);
    in = random_inputs(bound, s);
  } else {
    in = read_inputs(inputs, s);
    bound.clear();
    for (const NamedTensor& t : in) bound.emplace_back(t.name, t.tensor.shape());
  }
  std::vector<NamedTensor> out = output_buffers(bound, s);
  for (int i = 0; i < warmup; ++i) s.run(in, out);
  PrecisionProfile p;
  p.label = precision;
  for (int r = 0; r < runs; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    s.run(in, out);
    p.run_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    std::vector<NodeProfile> prof = s.last_profile();
    std::vector<std::string> keys = node_keys(prof);
    // A node's time in this run: its groups' times summed where the batch ran a group of items at
    // a time (its shape is then a group's).
    std::map<std::string, double> run_ms;
    for (size_t i = 0; i < prof.size(); ++i) {
      auto [it, fresh] = p.nodes.try_emplace(keys[i]);
      NodeStat& st = it->second;
      if (fresh) {
        p.order.push_back(keys[i]);
        st.op = prof[i].op_type;
        st.shape = shapes_text(prof[i].output_shapes);
        st.kernel = prof[i].kernel;
      }
      if (r == 0) {
        st.macs += prof[i].macs;
        st.bytes += prof[i].bytes;
      }
      p.grouped = p.grouped || prof[i].first_item > 0;
      run_ms[keys[i]] += prof[i].milliseconds;
    }
    for (const auto& [key, ms] : run_ms) p.nodes[key].ms.push_back(ms);
  }
  for (auto& [key, st] : p.nodes) {
    st.median_ms = median(st.ms);
    p.total_ms += st.median_ms;
    p.macs += st.macs;
  }
  // One more run, untimed, to see each node's values: kept for the first precision, compared
  // with them for the others (by value name, which the passes keep alike across precisions).
  s.run(in, out, [&](const std::string& node, const std::string& value, const Tensor& t) {
    if (!first) {
      if (Sampled v = sample(t); v.numel) p.samples[value] = std::move(v);
      return;
    }
    auto ref = first->samples.find(value);
    if (p.node_error.count(node) || ref == first->samples.end()) return;
    Sampled v = sample(t);
    if (v.numel == ref->second.numel)
      p.node_error[node] = relative_l2(ref->second.values, v.values);
  });
  for (const NamedTensor& o : out)
    p.outputs.push_back({o.name, o.tensor.shape(), float_values(o.tensor)});
  return p;
}

// Rows in the first precision's order; nodes only another precision runs (the Casts an fp16
// plan adds at the edges) go in after the node they follow there.
std::vector<std::string> merged_order(const std::vector<PrecisionProfile>& ps) {
  std::vector<std::string> rows = ps[0].order;
  for (size_t k = 1; k < ps.size(); ++k) {
    size_t at = 0;
    for (const std::string& key : ps[k].order) {
      auto it = std::find(rows.begin(), rows.end(), key);
      if (it != rows.end()) {
        at = static_cast<size_t>(it - rows.begin()) + 1;
        continue;
      }
      rows.insert(rows.begin() + static_cast<std::ptrdiff_t>(at), key);
      ++at;
    }
  }
  return rows;
}

const NodeStat* find_stat(const PrecisionProfile& p, const std::string& key) {
  auto it = p.nodes.find(key);
  return it == p.nodes.end() ? nullptr : &it->second;
}

std::string clip(const std::string& s, size_t width) {
  return s.size() <= width ? s : "..." + s.substr(s.size() - (width - 3));
}

// ms, GFLOP/s, GB/s and share of one row at one precision; dashes where that precision lacks
// the row or the node does no arithmetic.
void print_cells(bool present, double ms, int64_t macs, int64_t bytes, double total_ms) {
  double share = total_ms > 0 ? 100 * ms / total_ms : 0;
  if (!present) {
    std::printf("  %9s %8s %6s %6s", "-", "-", "-", "-");
    return;
  }
  std::printf("  %9.3f", ms);
  if (macs)
    std::printf(" %8.1f", gflops(macs, ms));
  else
    std::printf(" %8s", "-");
  std::printf(" %6.1f %5.1f%%", gbytes_per_s(bytes, ms), share);
}

void print_speedup(bool present, double base_ms, double ms) {
  if (present && ms > 0)
    std::printf("  %7.2fx", base_ms / ms);
  else
    std::printf("  %8s", "-");
}

void print_node_table(const std::vector<PrecisionProfile>& ps) {
  std::vector<std::string> rows = merged_order(ps);
  size_t name_w = 4, op_w = 2, shape_w = 12;
  for (const std::string& key : rows) {
    name_w = std::max(name_w, std::min<size_t>(key.size(), 40));
    for (const PrecisionProfile& p : ps)
      if (const NodeStat* st = find_stat(p, key)) {
        op_w = std::max(op_w, st->op.size());
        shape_w = std::max(shape_w, std::min<size_t>(st->shape.size(), 28));
      }
  }
  int nw = static_cast<int>(name_w), ow = static_cast<int>(op_w), sw = static_cast<int>(shape_w);
  std::printf("%-*s  %-*s  %-*s", nw, "node", ow, "op", sw, "output shape");
  for (const PrecisionProfile& p : ps)
    std::printf("  %9s %8s %6s %6s", (p.label + " ms").c_str(), "GFLOP/s", "GB/s", "share");
  for (size_t k = 1; k < ps.size(); ++k)
    std::printf("  %8s", (ps[k].label + "/" + ps[0].label).c_str());
  for (size_t k = 1; k < ps.size(); ++k) std::printf("  %9s", (ps[k].label + " err").c_str());
  std::printf("  kernel\n");
  for (const std::string& key : rows) {
    const NodeStat* any = nullptr;
    for (const PrecisionProfile& p : ps)
      if (!any) any = find_stat(p, key);
    std::printf("%-*s  %-*s  %-*s", nw, clip(key, name_w).c_str(), ow, any->op.c_str(), sw,
                clip(any->shape, shape_w).c_str());
    for (const PrecisionProfile& p : ps) {
      const NodeStat* st = find_stat(p, key);
      print_cells(st, st ? st->median_ms : 0, st ? st->macs : 0, st ? st->bytes : 0, p.total_ms);
    }
    for (size_t k = 1; k < ps.size(); ++k) {
      const NodeStat *base = find_stat(ps[0], key), *st = find_stat(ps[k], key);
      print_speedup(base && st, base ? base->median_ms : 0, st ? st->median_ms : 0);
    }
    for (size_t k = 1; k < ps.size(); ++k) {
      auto e = ps[k].node_error.find(key);
      if (e == ps[k].node_error.end())
        std::printf("  %9s", "-");
      else
        std::printf("  %9.2e", e->second);
    }
    // One kernel name where the precisions running the node agree, else each in turn.
    std::vector<std::string> kernels;
    for (const PrecisionProfile& p : ps)
      if (const NodeStat* st = find_stat(p, key)) kernels.push_back(st->kernel);
    std::string text = kernels[0];
    if (std::count(kernels.begin(), kernels.end(), kernels[0]) !=
        static_cast<std::ptrdiff_t>(kernels.size()))
      for (size_t k = 1; k < kernels.size(); ++k) text += " | " + kernels[k];
    std::printf("  %s\n", text.c_str());
  }
}

struct OpSum {
  int nodes = 0;
  int64_t macs = 0, bytes = 0;
  double ms = 0;
};

void print_op_table(const std::vector<PrecisionProfile>& ps) {
  std::map<std::string, std::vector<OpSum>> ops;
  for (size_t k = 0; k < ps.size(); ++k)
    for (const auto& [key, st] : ps[k].nodes) {
      std::vector<OpSum>& v = ops[st.op];
      v.resize(ps.size());
      ++v[k].nodes;
      v[k].macs += st.macs;
      v[k].bytes += st.bytes;
      v[k].ms += st.median_ms;
    }
  std::vector<std::pair<double, std::string>> order;
  for (const auto& [op, v] : ops) order.emplace_back(-v[0].ms, op);
  std::sort(order.begin(), order.end());
  std::printf("\n%-24s %7s", "op type", "nodes");
  for (const PrecisionProfile& p : ps)
    std::printf("  %9s %8s %6s %6s", (p.label + " ms").c_str(), "GFLOP/s", "GB/s", "share");
  for (size_t k = 1; k < ps.size(); ++k)
    std::printf("  %8s", (ps[k].label + "/" + ps[0].label).c_str());
  std::printf("\n");
  for (const auto& [neg, op] : order) {
    const std::vector<OpSum>& v = ops[op];
    std::string counts;
    for (size_t k = 0; k < ps.size(); ++k) {
      if (k) counts += '/';
      counts += std::to_string(v[k].nodes);
    }
    std::printf("%-24s %7s", op.c_str(), counts.c_str());
    for (size_t k = 0; k < ps.size(); ++k)
      print_cells(v[k].nodes > 0, v[k].ms, v[k].macs, v[k].bytes, ps[k].total_ms);
    for (size_t k = 1; k < ps.size(); ++k)
      print_speedup(v[0].nodes > 0 && v[k].nodes > 0, v[0].ms, v[k].ms);
    std::printf("\n");
  }
}

void print_totals(const std::vector<PrecisionProfile>& ps) {
  std::printf("\n%-34s", "total");
  for (const PrecisionProfile& p : ps) std::printf("  %9s", p.label.c_str());
  for (size_t k = 1; k < ps.size(); ++k)
    std::printf("  %8s", (ps[k].label + "/" + ps[0].label).c_str());
  std::printf("\n%-34s", "sum of node medians, ms");
  for (const PrecisionProfile& p : ps) std::printf("  %9.2f", p.total_ms);
  for (size_t k = 1; k < ps.size(); ++k) print_speedup(true, ps[0].total_ms, ps[k].total_ms);
  std::printf("\n%-34s", "run median (wall), ms");
  for (const PrecisionProfile& p : ps) std::printf("  %9.2f", median(p.run_ms));
  for (size_t k = 1; k < ps.size(); ++k)
    print_speedup(true, median(ps[0].run_ms), median(ps[k].run_ms));
  std::printf("\n%-34s", "GFLOP/s over the run median");
  for (const PrecisionProfile& p : ps) std::printf("  %9.1f", gflops(p.macs, median(p.run_ms)));
  std::printf("\n");
}

// Each precision's outputs against the first one's, on the same inputs: the relative L2
// error and, for outputs with channels on axis 1 (segmentation scores), how many positions pick
// the same channel.
void print_accuracy(const std::vector<PrecisionProfile>& ps, bool random) {
  if (ps.size() < 2) return;
  std::printf(
      "\noutputs against %s on the same inputs%s:\n", ps[0].label.c_str(),
      random ? " (random ones: a trained model on real data, --input, may differ)" : " (--input)");
  for (size_t k = 1; k < ps.size(); ++k)
    for (size_t o = 0; o < ps[k].outputs.size() && o < ps[0].outputs.size(); ++o) {
      const OutputValues &a = ps[0].outputs[o], &b = ps[k].outputs[o];
      std::printf("%-12s %-20s", ps[k].label.c_str(), ("'" + b.name + "'").c_str());
      if (a.values.empty() || a.values.size() != b.values.size()) {
        std::printf("  not compared (not float, or shapes differ)\n");
        continue;
      }
      std::printf("  relative L2 %.2e", relative_l2(a.values, b.values));
      if (a.shape.size() >= 2 && a.shape[1] > 1) {
        const int64_t c = a.shape[1],
                      inner = static_cast<int64_t>(a.values.size()) / (a.shape[0] * c);
        int64_t same = 0, total = 0;
        for (int64_t n = 0; n < a.shape[0]; ++n)
          for (int64_t i = 0; i < inner; ++i, ++total) {
            int64_t ia = 0, ib = 0;
            for (int64_t ch = 1; ch < c; ++ch) {
              const size_t at = static_cast<size_t>((n * c + ch) * inner + i);
              if (a.values[at] > a.values[static_cast<size_t>((n * c + ia) * inner + i)]) ia = ch;
              if (b.values[at] > b.values[static_cast<size_t>((n * c + ib) * inner + i)]) ib = ch;
            }
            same += ia == ib;
          }
        std::printf(
            "  argmax over axis 1 agrees at %.3f%% of %lld positions",
            100.0 * static_cast<double>(same) / static_cast<double>(std::max<int64_t>(1, total)),
            static_cast<long long>(total));
      }
      std::printf("\n");
    }
}

}  // namespace

void write_chrome_trace(const std::string& path, const std::string& title,
                        const std::vector<ProfiledRun>& runs) {
  using nlohmann::json;
  json events = json::array();
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", title}}}});
  events.push_back(
      {{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "run"}}}});
  for (size_t r = 0; r < runs.size(); ++r) {
    const ProfiledRun& run = runs[r];
    double t0_us = run.offset_ms * 1e3;
    events.push_back({{"name", "run " + std::to_string(r)},
                      {"cat", "run"},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", 1},
                      {"ts", t0_us},
                      {"dur", run.milliseconds * 1e3}});
    for (const NodeProfile& n : run.nodes) {
      json shapes = json::array();
      for (const Shape& s : n.output_shapes) shapes.push_back(shape_str(s));
      json args = {{"kernel", n.kernel},
                   {"output_shapes", shapes},
                   {"MACs", n.macs},
                   {"bytes", n.bytes},
                   {"GB/s", gbytes_per_s(n.bytes, n.milliseconds)}};
      if (n.macs) args["GFLOP/s"] = gflops(n.macs, n.milliseconds);
      events.push_back({{"name", n.node},
                        {"cat", n.op_type},
                        {"ph", "X"},
                        {"pid", 1},
                        {"tid", 1},
                        {"ts", t0_us + n.start_ms * 1e3},
                        {"dur", n.milliseconds * 1e3},
                        {"args", args}});
    }
  }
  json doc = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  std::ofstream f(path);
  if (!f) throw Error("--profile: cannot write '" + path + "'");
  f << doc.dump() << "\n";
  if (!f) throw Error("--profile: writing '" + path + "' failed");
}

int cmd_profile(const std::string& model, const std::vector<std::string>& shapes,
                const std::vector<std::string>& inputs, const std::vector<std::string>& precisions,
                int threads, int runs, int warmup) {
  if (precisions.empty()) throw Error("profile: --compare needs at least one precision");
  if (!shapes.empty() && !inputs.empty())
    throw Error("profile: give --shape (random inputs) or --input (.npy files), not both");
  std::vector<PrecisionProfile> ps;
  ps.reserve(precisions.size());
  std::vector<std::pair<std::string, Shape>> bound;
  for (const std::string& p : precisions)
    ps.push_back(profile_precision(model, shapes, inputs, p, threads, runs, warmup, bound,
                                   ps.empty() ? nullptr : &ps[0]));
  std::printf("model %s  threads %d  shape", model.c_str(), threads);
  for (const auto& [name, shape] : bound)
    std::printf(" %s=%s", name.c_str(), shape_str(shape).c_str());
  std::printf("\nper node: median of %d profiled runs (after %d warm-up)", runs, warmup);
  if (ps.size() > 1)
    std::printf("; %s/%s = %s ms over %s ms, above 1 where %s is faster", ps[1].label.c_str(),
                ps[0].label.c_str(), ps[0].label.c_str(), ps[1].label.c_str(), ps[1].label.c_str());
  if (ps[0].grouped)
    std::printf(
        "\nthe batch ran a group of items at a time (every node computes each item on its own):"
        " a row's\nshape is a group's, its time the groups' sum (VOXRT_WHOLE_BATCH=1 runs the "
        "batch whole)");
  std::printf(
      "\nGB/s: activation bytes a node read and wrote (its inputs and outputs at their storage "
      "types,\nweights excluded) per second. A node near the machine's memory bandwidth "
      "(build/bench/peak_bench) is\nbound by memory traffic, which fp16 storage halves; one near "
      "the FMA peak is bound by arithmetic,\nwhich only faster products shorten (+bf16, or "
      "AVX512-FP16).\n");
  if (ps.size() > 1)
    std::printf(
        "err: relative L2 distance of the node's output from %s's on the same inputs (every k-th "
        "value\nof outputs above %lld values), the rounding of every node before it included.\n",
        ps[0].label.c_str(), static_cast<long long>(kSampled));
  std::printf("\n");
  print_node_table(ps);
  print_op_table(ps);
  print_totals(ps);
  print_accuracy(ps, inputs.empty());
  return 0;
}

}  // namespace voxrt::cli
