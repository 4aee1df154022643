#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>

#include "volume/patches.h"
#include "volume/pipeline.h"
#include "voxrt/volume.h"

namespace voxrt {

namespace {

using volume::Index3;
using volume::PatchPlan;
using volume::Pipeline;
using Clock = std::chrono::steady_clock;

// 512^3: far past any network's patch; refuses a typo before it allocates the batch buffers.
constexpr int64_t kMaxPatchVoxels = int64_t{1} << 27;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

[[noreturn]] void fail(const std::string& what) {
  throw Error("segment_volume: " + what);
}

std::string dims_str(const Shape& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += 'x';
    r += s[i] < 0 ? std::string("?") : std::to_string(s[i]);
  }
  return r;
}

size_t pick(const std::vector<IoInfo>& list, const std::string& name, const char* what) {
  if (name.empty()) return 0;
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].name == name) return i;
  fail(std::string("the model has no ") + what + " named '" + name + "'");
}

std::vector<double> per_axis(const std::vector<double>& v, size_t n, const char* what) {
  if (v.size() == 1) return std::vector<double>(n, v[0]);
  if (v.size() != n)
    fail(std::string(what) + " needs one value or " + std::to_string(n) +
         " (one per network axis), got " + std::to_string(v.size()));
  return v;
}

// A float32 tensor of zeros for the blend's sums, written by a few threads at once: the class
// sums of a 512x512x300 volume are 1.2 GB, whose first writes (page faults and the kernel's
// zeroing included) took one thread 1.2-2.2 s before the first patch ran; two threads, 0.5-0.7.
Tensor parallel_zeros(const Shape& shape) {
  Tensor t = Tensor::empty(DType::f32, shape);
  uint8_t* base = static_cast<uint8_t*>(t.raw());
  const size_t bytes = t.nbytes();
  const size_t parts = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
  const size_t per = (bytes / parts + 4095) / 4096 * 4096;  // whole pages each
  std::vector<std::thread> threads;
  for (size_t i = 1; i < parts && i * per < bytes; ++i)
    threads.emplace_back([=] { std::memset(base + i * per, 0, std::min(per, bytes - i * per)); });
  std::memset(base, 0, std::min(per, bytes));
  for (std::thread& th : threads) th.join();
  return t;
}

struct Slot {
  Tensor input;
  std::vector<Tensor> outputs;  // every model output, full batch (zero-copy runs)
  Tensor result;                // the chosen output of the last run
  int64_t first = 0, count = 0;
};

// Are the blended outputs probabilities already (in [0, 1], summing to 1 over classes)?
bool looks_like_probabilities(const float* p, int64_t classes, int64_t voxels) {
  for (int64_t v = 0; v < voxels; ++v) {
    double sum = 0;
    for (int64_t k = 0; k < classes; ++k) {
      float x = p[k * voxels + v];
      if (!(x >= -1e-3f && x <= 1.001f)) return false;
      sum += x;
    }
    if (classes > 1 && std::abs(sum - 1.0) > 1e-2) return false;
  }
  return true;
}

void apply_activation(Activation a, float* p, int64_t classes, int64_t voxels) {
  if (a == Activation::sigmoid) {
    for (int64_t i = 0; i < classes * voxels; ++i) p[i] = 1.0f / (1.0f + std::exp(-p[i]));
  } else if (a == Activation::softmax) {
    for (int64_t v = 0; v < voxels; ++v) {
      float m = p[v];
      for (int64_t k = 1; k < classes; ++k) m = std::max(m, p[k * voxels + v]);
      float sum = 0;
      for (int64_t k = 0; k < classes; ++k)
        sum += (p[k * voxels + v] = std::exp(p[k * voxels + v] - m));
      for (int64_t k = 0; k < classes; ++k) p[k * voxels + v] /= sum;
    }
  }
}

template <class L>
void argmax_labels(const float* s, int64_t classes, int64_t voxels, L* labels, float threshold) {
  if (classes == 1) {
    for (int64_t v = 0; v < voxels; ++v) labels[v] = s[v] > threshold ? 1 : 0;
    return;
  }
  for (int64_t v = 0; v < voxels; ++v) {
    int64_t best = 0;
    float bv = s[v];
    for (int64_t k = 1; k < classes; ++k)
      if (s[k * voxels + v] > bv) bv = s[k * voxels + v], best = k;
    labels[v] = static_cast<L>(best);
  }
}

// Sums to labels (and probabilities): divide by the weight sums, pick the activation, argmax.
void finish(Tensor& sums, const Tensor& weight_sums, const SegmentOptions& o, SegmentResult& r) {
  int64_t classes = sums.dim(0), voxels = weight_sums.numel();
  float* s = sums.data<float>();
  const float* w = weight_sums.data<float>();
  bool normalize = o.probabilities || classes == 1;
  if (normalize)
    for (int64_t k = 0; k < classes; ++k)
      for (int64_t v = 0; v < voxels; ++v) s[k * voxels + v] /= w[v];
  Activation act = o.activation;
  if (act == Activation::automatic)
    act = normalize && looks_like_probabilities(s, classes, voxels)
              ? Activation::none
              : (classes == 1 ? Activation::sigmoid : Activation::softmax);
  r.stats.activation = act;
  float threshold = act == Activation::none ? 0.5f : 0.0f;
  if (r.labels.dtype() == DType::u16)
    argmax_labels(s, classes, voxels, r.labels.data<uint16_t>(), threshold);
  else
    argmax_labels(s, classes, voxels, r.labels.data<uint8_t>(), threshold);
  if (o.probabilities) {
    apply_activation(act, s, classes, voxels);
    r.probabilities = sums;
  }
}

}  // namespace

SegmentResult segment_volume(const Session& session, const Tensor& volume,
                             const SegmentOptions& o) {
  Clock::time_point t0 = Clock::now();
  if (volume.dtype() != DType::f32 || volume.rank() != 4)
    fail("the volume must be float32 {channels, d0, d1, d2}, got " +
         std::string(dtype_name(volume.dtype())) + " " + shape_str(volume.shape()));
  if (session.inputs().size() != 1)
    fail("the model takes " + std::to_string(session.inputs().size()) +
         " inputs; a segmentation network takes one");
  const IoInfo& in = session.inputs()[pick(session.inputs(), o.input_name, "input")];
  size_t out_index = pick(session.outputs(), o.output_name, "output");
  const size_t rank = in.shape.size();
  if (rank != 5 && rank != 4)
    fail("input '" + in.name + "' has shape " + dims_str(in.shape) +
         "; expected N x C x D x H x W (3D network) or N x C x H x W (2D network, run slice by "
         "slice)");
  if (in.dtype != DType::f32 && in.dtype != DType::f16)
    fail("input '" + in.name + "' takes " + std::string(dtype_name(in.dtype)) +
         "; expected float or float16");
  for (int64_t d : volume.shape())
    if (d < 1) fail("the volume " + shape_str(volume.shape()) + " is empty");
  const int64_t channels = volume.dim(0);
  if (in.shape[1] >= 0 && in.shape[1] != channels)
    fail("input '" + in.name + "' takes " + std::to_string(in.shape[1]) +
         " channels, the volume has " + std::to_string(channels));
  const size_t spatial = rank - 2;

  std::vector<int64_t> patch = o.patch;
  if (patch.empty()) {
    for (size_t j = 0; j < spatial; ++j)
      if (in.shape[2 + j] < 0)
        fail("input '" + in.name + "' has dynamic spatial dims (" + dims_str(in.shape) +
             "): give a patch size");
    patch.assign(in.shape.begin() + 2, in.shape.end());
  }
  if (patch.size() != spatial)
    fail("the patch has " + std::to_string(patch.size()) + " dims, the network " +
         std::to_string(spatial));
  for (size_t j = 0; j < spatial; ++j) {
    if (patch[j] < 1) fail("patch dims must be positive, got " + dims_str(patch));
    if (in.shape[2 + j] >= 0 && in.shape[2 + j] != patch[j])
      fail("input '" + in.name + "' is fixed at " + dims_str(in.shape) + "; the patch " +
           dims_str(patch) + " does not fit it");
  }
  int64_t patch_voxels = 1;
  for (int64_t p : patch) {
    if (p > kMaxPatchVoxels / patch_voxels)
      fail("the patch " + dims_str(patch) + " is larger than " + std::to_string(kMaxPatchVoxels) +
           " voxels");
    patch_voxels *= p;
  }
  std::vector<double> overlap = per_axis(o.overlap, spatial, "overlap");
  std::vector<double> sigma = per_axis(o.sigma_scale, spatial, "sigma_scale");
  for (double v : overlap)
    if (!(v >= 0 && v < 1)) fail("overlap must lie in [0, 1), got " + std::to_string(v));
  for (double v : sigma)
    if (!(v > 0)) fail("sigma_scale must be positive, got " + std::to_string(v));

  if (spatial == 2 && (o.slice_axis < 0 || o.slice_axis > 2))
    fail("slice_axis must be 0, 1 or 2, got " + std::to_string(o.slice_axis));
  std::vector<size_t> net_axes;  // volume axis of each network spatial axis
  for (size_t a = 0; a < 3; ++a)
    if (spatial == 3 || static_cast<int>(a) != o.slice_axis) net_axes.push_back(a);
  Index3 patch3{1, 1, 1};
  std::array<double, 3> overlap3{0, 0, 0}, sigma3{1, 1, 1};
  for (size_t j = 0; j < spatial; ++j) {
    patch3[net_axes[j]] = patch[j];
    overlap3[net_axes[j]] = overlap[j];
    sigma3[net_axes[j]] = sigma[j];
  }

  int64_t batch = o.batch;
  if (in.shape[0] >= 0) {
    if (o.batch != 1 && o.batch != in.shape[0])
      fail("input '" + in.name + "' has a fixed batch of " + std::to_string(in.shape[0]) +
           ", not " + std::to_string(o.batch));
    batch = in.shape[0];
  }
  if (batch < 1) fail("batch must be at least 1, got " + std::to_string(batch));

  unsigned mirror = 0;
  for (int a : o.mirror_axes) {
    if (a < 0 || a > 2) fail("mirror axes are volume axes 0, 1 and 2, got " + std::to_string(a));
    if (spatial == 2 && a == o.slice_axis)
      fail("a 2D network cannot mirror along its slice axis " + std::to_string(a));
    mirror |= 1u << a;
  }

  PatchPlan plan;
  for (unsigned m = 0; m < 8; ++m)
    if ((m & ~mirror) == 0) plan.variants.push_back(m);
  Shape in_shape{batch, channels};
  in_shape.insert(in_shape.end(), patch.begin(), patch.end());
  std::vector<Shape> out_shapes = session.output_shapes({{in.name, in_shape}});
  const IoInfo& out = session.outputs()[out_index];
  const Shape& os = out_shapes[out_index];
  if (os.size() != rank || os[0] != batch ||
      !std::equal(os.begin() + 2, os.end(), in_shape.begin() + 2))
    fail("output '" + out.name + "' has shape " + dims_str(os) + " for input " +
         dims_str(in_shape) + "; expected N x classes x the patch");
  if (out.dtype != DType::f32 && out.dtype != DType::f16)
    fail("output '" + out.name + "' is " + std::string(dtype_name(out.dtype)) +
         "; expected float or float16");
  plan.classes = os[1];
  if (o.label_dtype != DType::u8 && o.label_dtype != DType::u16) fail("labels are uint8 or uint16");
  if (o.label_dtype == DType::u8 && plan.classes > 256)
    fail("the model has " + std::to_string(plan.classes) +
         " classes, more than uint8 labels hold: ask for uint16");

  Index3 size{volume.dim(1), volume.dim(2), volume.dim(3)};
  plan.grid = volume::plan_windows(size, patch3, overlap3);
  plan.weights = volume::importance_map(patch3, o.blend, sigma3);
  plan.channels = channels;
  plan.pad_mode = o.pad_mode;
  plan.pad_value = o.pad_value;
  plan.norm = volume::channel_norms(volume, o.intensity);

  SegmentResult r;
  Tensor sums = parallel_zeros({plan.classes, size[0], size[1], size[2]});
  Tensor weight_sums = parallel_zeros({size[0], size[1], size[2]});
  r.labels = Tensor::empty(o.label_dtype, {size[0], size[1], size[2]});
  SegmentStats& st = r.stats;
  st.patch = patch3;
  st.patches = plan.grid.count();
  st.network_inputs = plan.items();
  st.batch = static_cast<int>(batch);
  st.classes = plan.classes;
  st.accumulation_bytes = static_cast<int64_t>(sums.nbytes() + weight_sums.nbytes());

  std::vector<Slot> slots(3);
  for (Slot& s : slots) {
    s.input = Tensor::zeros(in.dtype, in_shape);
    for (size_t k = 0; k < out_shapes.size(); ++k)
      s.outputs.push_back(Tensor::empty(session.outputs()[k].dtype, out_shapes[k]));
  }
  const int64_t total = plan.items();
  const int64_t runs = (total + batch - 1) / batch;
  const size_t in_item_bytes =
      static_cast<size_t>(channels * plan.patch_voxels()) * dtype_size(in.dtype);
  const size_t out_item_bytes =
      static_cast<size_t>(plan.classes * plan.patch_voxels()) * dtype_size(out.dtype);
  const bool fixed_batch = in.shape[0] >= 0;
  st.prepare_seconds = seconds_since(t0);

  Pipeline pipe;
  for (int s = 0; s < static_cast<int>(slots.size()); ++s) pipe.push(Pipeline::free_slots, s);
  std::thread cutter([&] {
    try {
      for (int64_t run = 0; run < runs; ++run) {
        std::optional<int> s = pipe.pop(Pipeline::free_slots);
        if (!s) return;
        Clock::time_point t = Clock::now();
        Slot& slot = slots[static_cast<size_t>(*s)];
        slot.first = run * batch;
        slot.count = std::min(batch, total - slot.first);
        auto* dst = static_cast<unsigned char*>(slot.input.raw());
        for (int64_t b = 0; b < slot.count; ++b)
          volume::cut_patch(plan, volume.data<float>(), slot.first + b, in.dtype,
                            dst + b * in_item_bytes);
        st.cut_seconds += seconds_since(t);
        pipe.push(Pipeline::cut, *s);
      }
      pipe.close(Pipeline::cut);
    } catch (...) {
      pipe.fail(std::current_exception());
    }
  });
  std::thread blender([&] {
    try {
      while (std::optional<int> s = pipe.pop(Pipeline::computed)) {
        Clock::time_point t = Clock::now();
        Slot& slot = slots[static_cast<size_t>(*s)];
        const auto* src = static_cast<const unsigned char*>(slot.result.raw());
        for (int64_t b = 0; b < slot.count; ++b)
          volume::blend_patch(plan, slot.first + b, out.dtype, src + b * out_item_bytes,
                              sums.data<float>(), weight_sums.data<float>());
        st.blend_seconds += seconds_since(t);
        pipe.push(Pipeline::free_slots, *s);
      }
    } catch (...) {
      pipe.fail(std::current_exception());
    }
  });
  try {
    int64_t done = 0;
    while (std::optional<int> s = pipe.pop(Pipeline::cut)) {
      Slot& slot = slots[static_cast<size_t>(*s)];
      Clock::time_point t = Clock::now();
      if (slot.count == batch || fixed_batch) {
        std::vector<NamedTensor> outs;
        for (size_t k = 0; k < slot.outputs.size(); ++k)
          outs.push_back({session.outputs()[k].name, slot.outputs[k]});
        session.run({{in.name, slot.input}}, outs);
        slot.result = slot.outputs[out_index];
      } else {
        Shape part = in_shape;
        part[0] = slot.count;
        slot.result =
            session.run({{in.name, Tensor::view(in.dtype, part, slot.input.raw())}})[out_index];
      }
      st.network_seconds += seconds_since(t);
      ++st.network_runs;
      done += slot.count;
      pipe.push(Pipeline::computed, *s);
      if (o.progress) o.progress({done, total, seconds_since(t0)});
    }
    pipe.close(Pipeline::computed);
  } catch (...) {
    pipe.fail(std::current_exception());
  }
  cutter.join();
  blender.join();
  pipe.rethrow();

  Clock::time_point tf = Clock::now();
  finish(sums, weight_sums, o, r);
  st.finish_seconds = seconds_since(tf);
  st.total_seconds = seconds_since(t0);
  return r;
}

std::vector<DiceScore> dice_scores(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    throw Error("dice: the label volumes differ in shape: " + shape_str(a.shape()) + " and " +
                shape_str(b.shape()));
  if (a.dtype() != DType::f32 || b.dtype() != DType::f32)
    throw Error("dice: expected float32 label volumes");
  std::map<int64_t, std::array<int64_t, 3>> counts;  // label -> |A|, |B|, |A n B|
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  auto label = [](float v, const char* which) {
    if (!(std::abs(v) < 2147483648.0f))
      throw Error(std::string("dice: volume ") + which + " holds " + std::to_string(v) +
                  ", not a label");
    return static_cast<int64_t>(std::lround(v));
  };
  for (int64_t i = 0; i < a.numel(); ++i) {
    int64_t la = label(pa[i], "a"), lb = label(pb[i], "b");
    if (la != 0) ++counts[la][0];
    if (lb != 0) ++counts[lb][1];
    if (la != 0 && la == lb) ++counts[la][2];
    if (counts.size() > 65536)
      throw Error("dice: more than 65536 distinct values: these are not label volumes");
  }
  std::vector<DiceScore> out;
  for (const auto& [label, c] : counts)
    out.push_back(
        {label, 2.0 * static_cast<double>(c[2]) / static_cast<double>(c[0] + c[1]), c[0], c[1]});
  return out;
}

}  // namespace voxrt
