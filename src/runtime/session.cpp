#include "voxrt/session.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <mutex>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/cpu_op.h"
#include "onnx/proto_io.h"
#include "runtime/compile.h"
#include "runtime/plan.h"
#include "runtime/session_impl.h"

namespace voxrt {

namespace {

std::vector<IoInfo> io_infos(const ir::Graph& g, const std::vector<int>& ids) {
  std::vector<IoInfo> out;
  for (int v : ids) {
    const ir::Value& val = g.values[static_cast<size_t>(v)];
    IoInfo info;
    info.name = val.name;
    info.dtype = val.dtype.value_or(DType::f32);
    if (val.dims)
      for (const ir::Dim& d : *val.dims) {
        info.shape.push_back(d.known() ? d.value : -1);
        info.dim_names.push_back(d.symbol);
      }
    out.push_back(std::move(info));
  }
  return out;
}

// Loading holds the file, the parsed protobuf and the imported weights at once, and packing
// copies the weights again; glibc keeps most of what was freed in its heap, resident. Returning
// it once loading is done lowered the steady peak RSS of an fp16 MONAI UNet (4.8 M parameters)
// from 61 to 56 MiB.
void release_load_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace

void Session::Impl::init(const std::string& name, const SessionOptions& opt,
                         const std::function<CompiledModel(const CompileOptions&)>& compile) {
  options = opt;
  if (opt.threads < 1) throw Error("model '" + name + "': threads must be at least 1");
  CompileOptions co;
  co.fp16 = opt.precision == Precision::fp16;
  co.fp32 = opt.precision == Precision::fp32;
  co.optimize = opt.optimize;
  co.stop_after = opt.stop_after_pass;
  co.cpu_kernels = opt.backend == Backend::cpu;
  // bf16 products only where they outrun fp32's (CpuFeatures::bf16_dot_pays).
  co.fpmath = cpu::cpu_features().bf16_dot_pays ? opt.fpmath : FpMath::strict;
  co.winograd = opt.winograd;
  co.input_shapes = opt.input_shapes;
  pool = std::make_unique<ThreadPool>(opt.threads);
  co.pool = pool.get();
  model = compile(co);
  release_load_memory();
  scratch = std::make_unique<RunScratch>(opt.threads);
  inputs = io_infos(model.graph, model.graph.inputs);
  shape_deciding = shape_deciding_inputs(model.graph);
  outputs = io_infos(model.graph, model.graph.outputs);
  // Room for one run's outputs while the caller still holds the previous run's.
  returned = std::make_shared<OutputCache>(2 * outputs.size() + 2);
  // Two free arenas at most, whatever the shapes the plans (up to sixteen cached) were made for.
  // Populated when mapped: a run writes its whole arena, and a first run that faulted its pages
  // in one at a time took 3x a later one (unet3d_bn at 96^3: 423-454 against 133 ms; 317-336
  // populated, the same peak RSS).
  arenas = std::make_unique<ScratchCache>(2, /*populate=*/true);
}

std::shared_ptr<const Plan> Session::Impl::plan_for(
    const std::vector<Shape>& shapes, const std::vector<const Tensor*>& values) const {
  std::vector<std::vector<int64_t>> key_values(values.size());
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i])
      for (size_t k = 0; k < values[i]->nbytes(); ++k)
        key_values[i].push_back(static_cast<const uint8_t*>(values[i]->raw())[k]);
  auto key = std::make_pair(shapes, key_values);
  std::lock_guard<std::mutex> lock(plans_mutex);
  auto it = plans.find(key);
  if (it != plans.end()) return it->second;
  auto plan = std::make_shared<const Plan>(make_plan(model, shapes, values, pool->size()));
  if (plans.size() >= 16) plans.clear();
  plans[key] = plan;
  return plan;
}

std::vector<const Tensor*> Session::Impl::shape_values(const std::vector<NamedTensor>& in) const {
  std::vector<const Tensor*> values(inputs.size(), nullptr);
  for (const NamedTensor& t : in)
    for (size_t k = 0; k < inputs.size(); ++k)
      if (inputs[k].name == t.name && shape_deciding[k] && t.tensor.numel() <= 64)
        values[k] = &t.tensor;
  return values;
}

std::vector<Shape> Session::Impl::input_shapes(const std::vector<NamedTensor>& in) const {
  const ir::Graph& g = model.graph;
  std::vector<Shape> shapes(g.inputs.size());
  std::vector<char> seen(g.inputs.size(), 0);
  for (const NamedTensor& t : in) {
    size_t k = 0;
    while (k < inputs.size() && inputs[k].name != t.name) ++k;
    if (k == inputs.size()) {
      std::string names;
      for (const IoInfo& i : inputs) names += (names.empty() ? "'" : ", '") + i.name + "'";
      throw Error("model '" + g.model_name + "': no input named '" + t.name +
                  "' (inputs: " + names + ")");
    }
    if (t.tensor.dtype() != inputs[k].dtype)
      throw Error(g.where_value(g.inputs[k]) + ": given " +
                  std::string(dtype_name(t.tensor.dtype())) + ", expected " +
                  std::string(dtype_name(inputs[k].dtype)));
    if (!t.tensor.raw() && t.tensor.numel() > 0)
      throw Error(g.where_value(g.inputs[k]) + ": the given tensor has no data");
    shapes[k] = t.tensor.shape();
    seen[k] = 1;
  }
  for (size_t k = 0; k < seen.size(); ++k)
    if (!seen[k]) throw Error(g.where_value(g.inputs[k]) + ": input not given");
  return shapes;
}

namespace {

// VOXRT_WHOLE_BATCH=1: runs whose every step is per item still go as one batch (the comparison
// with groups of items; runtime/batch_split.h).
bool whole_batch() {
  const char* e = std::getenv("VOXRT_WHOLE_BATCH");
  return e && std::string(e) == "1";
}

// Items a group holds where a batch whose every step is per item runs a group at a time
// (execute): one on one thread, where each layer then reads what the layer before wrote for
// the same item, still in cache (unet3d_monai at batch 2, one thread: 48.5-51.1 -> 46.9-49.0 ms,
// faster in 7 of 8 alternations); two a thread on more, where each group's layers still give each
// thread items of its own and the pool's per-layer cost stays shared by two items (on two threads
// one item at a time took unet3d_monai at batch 2 from 29.4-32.7 to 33.1-35.8 ms, two at a time
// at batch 4 from 53.0-55.8 to 54.5-57.7).
int64_t batch_group(const ThreadPool* pool) {
  const int64_t threads = pool ? pool->size() : 1;
  return threads == 1 ? 1 : 2 * threads;
}

}  // namespace

void Session::Impl::execute(const std::vector<NamedTensor>& in, std::vector<Tensor>& out,
                            bool caller_outputs, const ValueObserver* observe, bool split) const {
  const ir::Graph& g = model.graph;
  std::vector<Shape> shapes = input_shapes(in);
  std::shared_ptr<const Plan> plan = plan_for(shapes, shape_values(in));
  std::vector<Tensor> vals(g.values.size());
  for (const auto& [v, t] : g.constants) vals[static_cast<size_t>(v)] = t;
  for (const auto& [v, t] : plan->folded) vals[static_cast<size_t>(v)] = t;
  for (const NamedTensor& t : in)
    for (size_t k = 0; k < inputs.size(); ++k)
      if (inputs[k].name == t.name) vals[static_cast<size_t>(g.inputs[k])] = t.tensor;

  if (caller_outputs) {
    for (size_t k = 0; k < g.outputs.size(); ++k) {
      const Shape& want = plan->shapes[static_cast<size_t>(g.outputs[k])];
      DType dt = *g.values[static_cast<size_t>(g.outputs[k])].dtype;
      if (out[k].shape() != want || out[k].dtype() != dt)
        throw Error(g.where_value(g.outputs[k]) + ": output buffer is " +
                    std::string(dtype_name(out[k].dtype())) + " " + shape_str(out[k].shape()) +
                    ", the run produces " + std::string(dtype_name(dt)) + " " + shape_str(want));
    }
  }
  auto output_slot = [&](int v) -> int {
    for (size_t k = 0; k < g.outputs.size(); ++k)
      if (g.outputs[k] == v) return static_cast<int>(k);
    return -1;
  };

  // Where every step computes each item from its own (runtime/batch_split.h), a batch of more
  // items than a group holds (batch_group) runs a group at a time, each group's plan on views of
  // the inputs' and outputs' items, in the arena of one group; profiled, each group's nodes
  // (NodeProfile::first_item). Not under an observer, which sees the batch's values whole.
  const int64_t group = batch_group(pool.get());
  if (split && plan->batch_items > group && !observe && !whole_batch()) {
    const int64_t items = plan->batch_items;
    if (!caller_outputs) {
      out.clear();
      for (int v : g.outputs)
        out.push_back(returned->tensor(*g.values[static_cast<size_t>(v)].dtype,
                                       plan->shapes[static_cast<size_t>(v)]));
    }
    // Items [i, i + count) of t.
    auto items_of = [&](const Tensor& t, int64_t i, int64_t count) {
      Shape shape = t.shape();
      shape[0] = count;
      const size_t bytes = t.nbytes() / static_cast<size_t>(items);
      return Tensor::view(t.dtype(), shape,
                          static_cast<uint8_t*>(const_cast<void*>(t.raw())) + i * bytes);
    };
    std::vector<NodeProfile> profile;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < items; i += group) {
      const int64_t count = std::min(group, items - i);
      std::vector<NamedTensor> group_in;
      for (const NamedTensor& t : in) group_in.push_back({t.name, items_of(t.tensor, i, count)});
      std::vector<Tensor> group_out;
      for (const Tensor& t : out) group_out.push_back(items_of(t, i, count));
      const double at_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      execute(group_in, group_out, true, nullptr, false);
      if (!options.profiling) continue;
      std::lock_guard<std::mutex> lock(profile_mutex);
      for (NodeProfile& np : last_profile) {
        np.start_ms += at_ms;
        np.first_item = i;
        profile.push_back(std::move(np));
      }
    }
    if (options.profiling) {
      std::lock_guard<std::mutex> lock(profile_mutex);
      last_profile = std::move(profile);
    }
    return;
  }

  std::vector<NodeProfile> profile;
  using clock = std::chrono::steady_clock;
  const RunContext ctx = scratch->context(pool.get());
  auto run_start = clock::now();
  // The run's activation arena (its bytes and a spare cache line), back to the cache when the
  // run ends or throws.
  const ScratchCache::Lease held(*arenas, static_cast<size_t>(plan->arena_bytes) + 64);
  uint8_t* const arena = held.data();
  for (size_t s = 0; s < plan->steps.size(); ++s) {
    int k = plan->steps[s];
    const ir::Node& n = g.nodes[static_cast<size_t>(k)];
    if (plan->skip_step[s]) {
      // A Concat whose producers already wrote into their slices of it, or a Split whose
      // outputs are slices of its input.
      for (int o : n.outputs) {
        vals[static_cast<size_t>(o)] = Tensor::view(
            *g.values[static_cast<size_t>(o)].dtype, plan->shapes[static_cast<size_t>(o)],
            arena + plan->arena_offset[static_cast<size_t>(o)]);
        if (observe)
          (*observe)(n.name, g.values[static_cast<size_t>(o)].name, vals[static_cast<size_t>(o)]);
      }
      continue;
    }
    std::vector<const Tensor*> ins(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0) ins[i] = &vals[static_cast<size_t>(n.inputs[i])];
    std::vector<Tensor> outs;
    for (int o : n.outputs) {
      int slot = o >= 0 ? output_slot(o) : -1;
      DType dt = o >= 0 ? *g.values[static_cast<size_t>(o)].dtype : DType::f32;
      const Shape& shape = o >= 0 ? plan->shapes[static_cast<size_t>(o)] : Shape{};
      int64_t offset = o >= 0 ? plan->arena_offset[static_cast<size_t>(o)] : -1;
      if (slot >= 0 && caller_outputs)
        outs.push_back(Tensor::view(dt, shape, out[static_cast<size_t>(slot)].raw()));
      else if (offset >= 0)
        outs.push_back(Tensor::view(dt, shape, arena + offset));
      else if (slot >= 0)
        outs.push_back(returned->tensor(dt, shape));
      else if (o >= 0)
        outs.push_back(Tensor::empty(dt, shape));
      else
        outs.push_back(Tensor());
    }
    auto t0 = clock::now();
    const Op& op = *model.ops[static_cast<size_t>(k)];
    // Outputs without elements leave nothing to compute, and kernels need not handle them.
    if (std::any_of(outs.begin(), outs.end(), [](const Tensor& t) { return t.numel() > 0; }))
      op.run(ctx, ins, outs);
    if (options.profiling) {
      NodeProfile np;
      np.node = n.name;
      np.op_type = n.op_type;
      np.kernel = op.kernel_name();
      np.start_ms = std::chrono::duration<double, std::milli>(t0 - run_start).count();
      np.milliseconds = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
      std::vector<ValueMeta> metas(n.inputs.size());
      for (size_t i = 0; i < n.inputs.size(); ++i)
        if (ins[i]) {
          metas[i] = ValueMeta{true, ins[i]->dtype(), ins[i]->shape(), nullptr};
          if (!g.is_constant(n.inputs[i])) np.bytes += static_cast<int64_t>(ins[i]->nbytes());
        }
      for (const Tensor& t : outs) {
        np.output_shapes.push_back(t.shape());
        np.bytes += static_cast<int64_t>(t.nbytes());
      }
      np.macs = op.macs(metas, np.output_shapes);
      profile.push_back(std::move(np));
    }
    if (observe)
      for (size_t o = 0; o < n.outputs.size(); ++o)
        if (n.outputs[o] >= 0)
          (*observe)(n.name, g.values[static_cast<size_t>(n.outputs[o])].name, outs[o]);
    for (size_t o = 0; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) vals[static_cast<size_t>(n.outputs[o])] = std::move(outs[o]);
    for (int v : n.inputs)
      if (v >= 0 && plan->last_use[static_cast<size_t>(v)] == static_cast<int>(s) &&
          output_slot(v) < 0)
        vals[static_cast<size_t>(v)] = Tensor();
  }
  if (!caller_outputs) out.assign(g.outputs.size(), Tensor());
  for (size_t k = 0; k < g.outputs.size(); ++k) {
    Tensor& v = vals[static_cast<size_t>(g.outputs[k])];
    if (caller_outputs) {
      if (v.raw() != out[k].raw() && out[k].nbytes())
        std::memcpy(out[k].raw(), v.raw(), out[k].nbytes());
    } else {
      bool borrowed = g.is_constant(g.outputs[k]) || plan->folded.count(g.outputs[k]) ||
                      std::count(g.inputs.begin(), g.inputs.end(), g.outputs[k]);
      out[k] = borrowed ? v.clone() : std::move(v);
    }
  }
  if (options.profiling) {
    std::lock_guard<std::mutex> lock(profile_mutex);
    last_profile = std::move(profile);
  }
}

Session::Session(const std::string& path, const SessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
  std::string name = options.model_name.empty() ? std::filesystem::path(path).filename().string()
                                                : options.model_name;
  const std::string dir = std::filesystem::path(path).parent_path().string();
  impl_->init(name, options, [&](const CompileOptions& co) {
    return compile_model(onnx_io::read_file(path), name, dir, co);
  });
}

Session::Session(const void* bytes, size_t size, const SessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
  const std::string name = options.model_name.empty() ? "<memory>" : options.model_name;
  impl_->init(name, options,
              [&](const CompileOptions& co) { return compile_model(bytes, size, name, "", co); });
}

std::vector<IoInfo> model_inputs(const std::string& path) {
  const ir::Graph g = import_checked(onnx_io::read_file(path),
                                     std::filesystem::path(path).filename().string(),
                                     std::filesystem::path(path).parent_path().string());
  std::vector<IoInfo> inputs = io_infos(g, g.inputs);
  release_load_memory();
  return inputs;
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

const std::vector<IoInfo>& Session::inputs() const {
  return impl_->inputs;
}
const std::vector<IoInfo>& Session::outputs() const {
  return impl_->outputs;
}

std::vector<Tensor> Session::run(const std::vector<NamedTensor>& inputs) const {
  std::vector<Tensor> out;
  impl_->execute(inputs, out, false);
  return out;
}

void Session::run(const std::vector<NamedTensor>& inputs, std::vector<NamedTensor>& outputs) const {
  run(inputs, outputs, ValueObserver());
}

void Session::run(const std::vector<NamedTensor>& inputs, std::vector<NamedTensor>& outputs,
                  const ValueObserver& observe) const {
  const auto& outs = impl_->outputs;
  std::vector<Tensor> buffers(outs.size());
  std::vector<char> seen(outs.size(), 0);
  for (const NamedTensor& o : outputs) {
    size_t k = 0;
    while (k < outs.size() && outs[k].name != o.name) ++k;
    if (k == outs.size())
      throw Error("model '" + impl_->model.graph.model_name + "': no output named '" + o.name +
                  "'");
    buffers[k] = o.tensor;
    seen[k] = 1;
  }
  for (size_t k = 0; k < outs.size(); ++k)
    if (!seen[k])
      throw Error("model '" + impl_->model.graph.model_name + "', output '" + outs[k].name +
                  "': no buffer given for it");
  impl_->execute(inputs, buffers, true, observe ? &observe : nullptr);
}

std::vector<Shape> Session::output_shapes(
    const std::vector<std::pair<std::string, Shape>>& input_shapes) const {
  return summary(input_shapes).output_shapes;
}

ModelSummary Session::summary() const {
  const ir::Graph& g = impl_->model.graph;
  ModelSummary s;
  s.ir_version = g.ir_version;
  s.opset = g.opset;
  for (const ir::Node& n : g.nodes) ++s.op_histogram[n.op_type];
  for (const auto& [v, t] : g.constants) {
    if (is_float(t.dtype())) s.parameters += t.numel();
    if (t.raw()) s.weight_bytes += static_cast<int64_t>(t.nbytes());  // released ones hold none
  }
  for (const auto& op : impl_->model.ops)
    if (const auto* c = dynamic_cast<const cpu::CpuOp*>(op.get()))
      s.weight_bytes += c->packed_bytes();
  return s;
}

ModelSummary Session::summary(
    const std::vector<std::pair<std::string, Shape>>& input_shapes) const {
  const ir::Graph& g = impl_->model.graph;
  std::vector<NamedTensor> named;
  for (const auto& [name, shape] : input_shapes) {
    DType dt = DType::f32;
    for (const IoInfo& i : impl_->inputs)
      if (i.name == name) dt = i.dtype;
    named.push_back({name, Tensor::view(dt, shape, reinterpret_cast<void*>(16))});
  }
  std::shared_ptr<const Plan> plan = impl_->plan_for(impl_->input_shapes(named));
  ModelSummary s = summary();
  s.planned = true;
  s.macs = plan->macs;
  s.activation_bytes = plan->peak_activation_bytes;
  const int64_t group = batch_group(impl_->pool.get());
  if (plan->batch_items > group && !whole_batch()) {
    // Run in groups of `group` items (execute): one group's arena, the whole batch's outputs.
    std::vector<Shape> one = impl_->input_shapes(named);
    for (Shape& shape : one) shape[0] = group;
    s.activation_bytes =
        impl_->plan_for(one)->arena_bytes + plan->peak_activation_bytes - plan->arena_bytes;
  }
  for (int v : g.outputs) s.output_shapes.push_back(plan->shapes[static_cast<size_t>(v)]);
  return s;
}

std::string Session::graph_text(bool before_passes) const {
  return before_passes ? impl_->model.graph_before_passes : graph_to_text(impl_->model.graph);
}

int64_t Session::scratch_peak_bytes() const {
  return static_cast<int64_t>(impl_->scratch->peak_bytes());
}

std::vector<NodeProfile> Session::last_profile() const {
  std::lock_guard<std::mutex> lock(impl_->profile_mutex);
  return impl_->last_profile;
}

CpuInfo cpu_info() {
  const cpu::Isa isa = cpu::max_isa();
  CpuInfo c;
  c.isa = cpu::isa_name(isa);
  c.bf16_products = isa >= cpu::Isa::avx512bf16 && cpu::cpu_features().bf16_dot_pays;
  c.fp16_arithmetic = isa >= cpu::Isa::avx512fp16;
  c.fp16_emulated = c.fp16_arithmetic && cpu::avx512fp16_emulated();
  c.fp16_emulation_asked = cpu::avx512fp16_emulation_asked();
  return c;
}

}  // namespace voxrt
