#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "cli_common.h"
#include "core/half.h"
#include "npy.h"
#include "volume_commands.h"
#include "voxrt/volume.h"

namespace voxrt::cli {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<double> parse_numbers(const std::string& s, const std::string& option) {
  std::vector<double> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) {
    try {
      size_t used = 0;
      out.push_back(std::stod(part, &used));
      if (used != part.size()) throw std::invalid_argument(part);
    } catch (const std::exception&) {
      throw Error(option + " '" + s + "': '" + part + "' is not a number");
    }
  }
  if (out.empty()) throw Error(option + " is empty");
  return out;
}

std::vector<int64_t> parse_patch(const std::string& s, size_t spatial) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, 'x');) {
    try {
      size_t used = 0;
      long long v = std::stoll(part, &used);
      if (used != part.size() || v < 1) throw std::invalid_argument(part);
      out.push_back(v);
    } catch (const std::exception&) {
      throw Error("--patch '" + s + "': '" + part +
                  "' is not a positive size (expected e.g. 96x96x96 or 96)");
    }
  }
  if (out.size() == 1) out.assign(spatial, out[0]);
  return out;
}

// Volume tensor axis of a NIfTI axis letter: the tensor is {k, j, i} as read, {i, j, k} reversed.
int tensor_axis(char letter, bool ijk, const std::string& option) {
  int a = letter == 'i' ? 0 : letter == 'j' ? 1 : letter == 'k' ? 2 : -1;
  if (a < 0)
    throw Error(option + ": '" + std::string(1, letter) + "' is not a NIfTI axis (i, j or k)");
  return ijk ? a : 2 - a;
}

template <class T>
T lookup(const std::string& v, std::initializer_list<std::pair<const char*, T>> table,
         const std::string& option) {
  std::string names;
  for (const auto& [name, value] : table) {
    if (v == name) return value;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw Error(option + " '" + v + "' is not one of " + names);
}

std::string human_mib(int64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / 1048576.0);
  return buf;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void draw_progress(const SegmentProgress& p, const char* unit) {
  const int width = 30;
  double frac = p.total ? static_cast<double>(p.done) / static_cast<double>(p.total) : 1.0;
  int fill = static_cast<int>(frac * width);
  double rate = p.seconds > 0 ? static_cast<double>(p.done) / p.seconds : 0;
  double left = rate > 0 ? static_cast<double>(p.total - p.done) / rate : 0;
  std::fprintf(stderr, "\r[%.*s%*s] %lld/%lld %s  %.2f/s  %.0f s left ", fill,
               "==============================", width - fill, "", static_cast<long long>(p.done),
               static_cast<long long>(p.total), unit, rate, left);
  std::fflush(stderr);
}

void write_probabilities(const std::string& path, const Tensor& probs, const std::string& dtype,
                         const NiftiImage& like, bool ijk) {
  if (ends_with(path, ".npy")) {
    if (dtype == "float32") return write_npy(path, probs);
    Tensor h = Tensor::empty(DType::f16, probs.shape());
    for (int64_t i = 0; i < probs.numel(); ++i)
      h.data<uint16_t>()[i] = float_to_half(probs.data<float>()[i]);
    return write_npy(path, h);
  }
  if (dtype != "float32")
    throw Error("--probabilities '" + path +
                "': NIfTI has no float16 voxel type; write float16 to a .npy file");
  write_nifti(path, ijk ? reverse_spatial_axes(probs) : probs, like);
}

}  // namespace

CLI::App* add_segment_command(CLI::App& app, SegmentArgs& a) {
  CLI::App* c = app.add_subcommand(
      "segment",
      "Segment a NIfTI volume with a sliding window: batched patches, Gaussian blending, optional "
      "mirroring; writes labels (and probabilities) with the input's geometry.\nExample: voxrt "
      "segment "
      "unet.onnx --input scan.nii.gz --output labels.nii.gz --patch 96 --mirror ijk --precision "
      "fp16");
  c->add_option("model", a.model,
                "ONNX segmentation network (N x C x D x H x W, or N x C x H x W for 2D)")
      ->required()
      ->check(CLI::ExistingFile);
  c->add_option("--input,-i", a.input, "NIfTI scan (.nii, .nii.gz; a 4th dimension holds channels)")
      ->required()
      ->check(CLI::ExistingFile);
  c->add_option("--output,-o", a.output, "labels to write (.nii or .nii.gz)")->required();
  c->add_option(
      "--patch", a.patch,
      "patch in the network's axes, e.g. 96x96x96 or 96 (default: the model's fixed dims)");
  c->add_option("--overlap", a.overlap,
                "overlap fraction in [0, 1): one value or one per network axis, e.g. 0.5,0.5,0.25");
  c->add_option("--batch", a.batch, "network inputs per run")->check(CLI::Range(1, 4096));
  c->add_option("--blend", a.blend, "gaussian or constant");
  c->add_option("--sigma", a.sigma,
                "Gaussian sigma as a fraction of the patch: one value or one per axis");
  c->add_option(
      "--pad", a.pad,
      "padding where the volume is smaller than the patch: constant, reflect, replicate, circular");
  c->add_option("--pad-value", a.pad_value, "value of constant padding (after normalization)");
  c->add_option("--mirror", a.mirror, "test-time mirroring along these NIfTI axes, e.g. ijk or ij");
  c->add_option("--precision", a.precision, kPrecisionHelp)
      ->check(CLI::IsMember(precision_names()));
  c->add_option("--threads", a.threads,
                "worker threads of the network (default: one per physical core this process may "
                "run on)")
      ->check(CLI::Range(1, 256));
  c->add_option("--labels-dtype", a.labels_dtype, "uint8 or uint16");
  c->add_option("--probabilities", a.probabilities,
                "also write per-class probabilities: a 4D .nii/.nii.gz (float32), or .npy "
                "{classes, volume axes}");
  c->add_option("--probabilities-dtype", a.probabilities_dtype, "float32 or float16 (.npy only)");
  c->add_option("--activation", a.activation,
                "making probabilities: auto, softmax, sigmoid or none");
  c->add_option("--normalize", a.normalize, "intensity normalization: none, zscore or ct");
  c->add_option("--ct-clip", a.ct_clip, "ct: clip bounds LOW,HIGH");
  c->add_option("--ct-mean", a.ct_mean, "ct: mean subtracted after clipping");
  c->add_option("--ct-std", a.ct_std, "ct: standard deviation divided by");
  c->add_option("--slice-axis", a.slice_axis,
                "2D networks: the NIfTI axis cut into slices (i, j or k)");
  c->add_option(
      "--axis-order", a.axis_order,
      "network axes: kji (the file's memory order, as SimpleITK/nnU-Net present it) or ijk "
      "(as nibabel/MONAI present it)");
  c->add_flag("--quiet,-q", a.quiet, "no progress bar and no summary");
  return c;
}

int cmd_segment(const SegmentArgs& a) {
  bool ijk = lookup<bool>(a.axis_order, {{"kji", false}, {"ijk", true}}, "--axis-order");
  SessionOptions so;
  apply_precision(a.precision, so);
  so.threads = a.threads > 0 ? a.threads : physical_cores();
  Clock::time_point t_load = Clock::now();
  // A --patch is read against the model's declared inputs first (their rank, and for a model of
  // symbolic dims the patch is told to its one Session, SessionOptions::input_shapes, so that its
  // kernels are chosen for that patch: fp16 storage's wider 3D layers take Winograd's F(4, 3)
  // where the patch's activations outweigh its weights). Without one the file is read once.
  const std::vector<IoInfo> inputs =
      a.patch.empty() ? std::vector<IoInfo>() : model_inputs(a.model);
  SegmentOptions o;
  size_t rank = inputs.empty() ? 0 : inputs[0].shape.size();
  size_t spatial = rank == 4 ? 2 : 3;
  if (!a.patch.empty()) o.patch = parse_patch(a.patch, spatial);
  if (!o.patch.empty() && inputs.size() == 1 && rank == o.patch.size() + 2) {
    const IoInfo& in = inputs[0];
    const bool symbolic =
        std::any_of(in.shape.begin() + 2, in.shape.end(), [](int64_t d) { return d < 0; });
    if (symbolic && in.shape[1] > 0) {
      Shape expected = {1, in.shape[1]};
      expected.insert(expected.end(), o.patch.begin(), o.patch.end());
      so.input_shapes = {{in.name, expected}};
    }
  }
  const Session session(a.model, so);
  const double load_s = seconds_since(t_load);
  o.overlap = parse_numbers(a.overlap, "--overlap");
  o.sigma_scale = parse_numbers(a.sigma, "--sigma");
  o.batch = a.batch;
  o.blend = lookup<Blend>(a.blend, {{"gaussian", Blend::gaussian}, {"constant", Blend::constant}},
                          "--blend");
  o.pad_mode = lookup<PadMode>(a.pad,
                               {{"constant", PadMode::constant},
                                {"reflect", PadMode::reflect},
                                {"replicate", PadMode::replicate},
                                {"circular", PadMode::circular}},
                               "--pad");
  o.pad_value = a.pad_value;
  for (char ch : a.mirror)
    if (ch != ',') o.mirror_axes.push_back(tensor_axis(ch, ijk, "--mirror"));
  if (a.slice_axis.size() != 1) throw Error("--slice-axis '" + a.slice_axis + "' is not i, j or k");
  o.slice_axis = tensor_axis(a.slice_axis[0], ijk, "--slice-axis");
  o.label_dtype = lookup<DType>(a.labels_dtype, {{"uint8", DType::u8}, {"uint16", DType::u16}},
                                "--labels-dtype");
  lookup<int>(a.probabilities_dtype, {{"float32", 0}, {"float16", 1}}, "--probabilities-dtype");
  if (a.probabilities_dtype == "float16" && !a.probabilities.empty() &&
      !ends_with(a.probabilities, ".npy"))
    throw Error("--probabilities '" + a.probabilities +
                "': NIfTI has no float16 voxel type; write float16 to a .npy file");
  o.probabilities = !a.probabilities.empty();
  o.activation = lookup<Activation>(a.activation,
                                    {{"auto", Activation::automatic},
                                     {"softmax", Activation::softmax},
                                     {"sigmoid", Activation::sigmoid},
                                     {"none", Activation::none}},
                                    "--activation");
  o.intensity.mode = lookup<Normalization>(
      a.normalize,
      {{"none", Normalization::none}, {"zscore", Normalization::zscore}, {"ct", Normalization::ct}},
      "--normalize");
  if (o.intensity.mode == Normalization::ct) {
    if (a.ct_clip.empty())
      throw Error("--normalize ct needs --ct-clip LOW,HIGH (and --ct-mean, --ct-std)");
    std::vector<double> clip = parse_numbers(a.ct_clip, "--ct-clip");
    if (clip.size() != 2 || !(clip[0] < clip[1]))
      throw Error("--ct-clip '" + a.ct_clip + "': expected LOW,HIGH with LOW < HIGH");
    o.intensity.clip_low = clip[0];
    o.intensity.clip_high = clip[1];
    o.intensity.mean = a.ct_mean;
    if (!(a.ct_std > 0)) throw Error("--ct-std must be positive");
    o.intensity.std = a.ct_std;
  }
  Clock::time_point t0 = Clock::now();
  NiftiImage scan = read_nifti(a.input);
  Tensor volume = ijk ? reverse_spatial_axes(scan.data) : scan.data;
  double read_s = seconds_since(t0);

  const char* unit = o.mirror_axes.empty() ? "patches" : "inputs";
  bool bar = !a.quiet && isatty(STDERR_FILENO);
  if (bar) o.progress = [unit](const SegmentProgress& p) { draw_progress(p, unit); };

  SegmentResult r = segment_volume(session, volume, o);
  if (bar) std::fprintf(stderr, "\n");

  Clock::time_point tw = Clock::now();
  write_nifti(a.output, ijk ? reverse_spatial_axes(r.labels) : r.labels, scan);
  if (o.probabilities)
    write_probabilities(a.probabilities, r.probabilities, a.probabilities_dtype, scan, ijk);
  double write_s = seconds_since(tw);

  if (a.quiet) return 0;
  const SegmentStats& s = r.stats;
  double total = seconds_since(t0);
  double outside = total - s.network_seconds;
  std::printf(
      "segmented %s (%lldx%lldx%lld, %lld channel%s, %lld classes): %lld patches of "
      "%lldx%lldx%lld, "
      "%lld network inputs in %lld runs of up to %d on %d network thread%s\n",
      a.input.c_str(), static_cast<long long>(volume.dim(1)), static_cast<long long>(volume.dim(2)),
      static_cast<long long>(volume.dim(3)), static_cast<long long>(volume.dim(0)),
      volume.dim(0) > 1 ? "s" : "", static_cast<long long>(s.classes),
      static_cast<long long>(s.patches), static_cast<long long>(s.patch[0]),
      static_cast<long long>(s.patch[1]), static_cast<long long>(s.patch[2]),
      static_cast<long long>(s.network_inputs), static_cast<long long>(s.network_runs), s.batch,
      so.threads, so.threads > 1 ? "s" : "");
  std::printf(
      "model load %.2f s (not counted); read %.2f s, prepare %.2f s, cut %.2f s and blend %.2f s "
      "(threads beside the network), finish %.2f s, write %.2f s; accumulation buffer %s; peak RSS "
      "%s\n",
      load_s, read_s, s.prepare_seconds, s.cut_seconds, s.blend_seconds, s.finish_seconds, write_s,
      human_mib(s.accumulation_bytes).c_str(), human_mib(peak_rss_bytes()).c_str());
  std::printf("total %.2f s, network %.2f s (%.1f%%), outside the network %.2f s (%.1f%%)\n", total,
              s.network_seconds, 100.0 * s.network_seconds / total, outside,
              100.0 * outside / total);
  return 0;
}

}  // namespace voxrt::cli
