// Whole-volume segmentation: read a NIfTI scan, run a Session over overlapping patches, blend the
// patch predictions with Gaussian (or constant) weights, and write labels with the scan's geometry.
//
//   voxrt::Session net("unet.onnx");
//   voxrt::NiftiImage scan = voxrt::read_nifti("scan.nii.gz");
//   voxrt::SegmentOptions opt;
//   opt.patch = {96, 96, 96};
//   opt.mirror_axes = {0, 1, 2};
//   voxrt::SegmentResult r = voxrt::segment_volume(net, scan.data, opt);
//   voxrt::write_nifti("labels.nii.gz", r.labels, scan);
//
// Volumes are tensors {channels, d0, d1, d2} in the NIfTI file's own memory order: d0 = k
// (slowest), d1 = j, d2 = i (fastest). The network's spatial axes are d0, d1, d2 in that order; a
// network trained on arrays indexed (i, j, k), as nibabel and MONAI load them, wants
// reverse_spatial_axes() before and after.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "voxrt/error.h"
#include "voxrt/session.h"
#include "voxrt/tensor.h"

namespace voxrt {

/// The geometry and bookkeeping of a NIfTI header, kept so that outputs overlay their input.
struct NiftiHeader;

struct NiftiImage {
  /// f32 {channels, nz, ny, nx}: the voxel values with scl_slope and scl_inter applied; channels is
  /// the file's 4th dimension (1 for a 3D file).
  Tensor data;
  std::shared_ptr<const NiftiHeader> header;
  int version = 1;                  ///< 1 or 2
  std::string stored_type;          ///< on disk: "uint8", "int16", "float32", ...
  std::array<double, 3> spacing{};  ///< pixdim of i, j, k
};

/// Reads a NIfTI-1 or NIfTI-2 file (.nii, .nii.gz, or a .hdr/.img pair) of uint8, int8, uint16,
/// int16, uint32, int32, int64, uint64, float32 or float64 voxels, with up to 4 dimensions.
/// A file that is not NIfTI, is truncated, or whose header disagrees with its size throws Error.
NiftiImage read_nifti(const std::string& path);

/// Writes `data` ({nz, ny, nx} or {channels, nz, ny, nx}; uint8, uint16, int16, int32, float32 or
/// float64) with the dimensions, pixdim, qform, sform and units of `like`, in like's NIfTI version.
/// A path ending in .gz is compressed. Integer data is marked as labels (intent
/// NIFTI_INTENT_LABEL).
void write_nifti(const std::string& path, const Tensor& data, const NiftiImage& like);

/// {c, a, b, d} -> {c, d, b, a} (or {a, b, d} -> {d, b, a}), any dtype: between the file's
/// (k, j, i) order and (i, j, k) order.
Tensor reverse_spatial_axes(const Tensor& volume);

enum class Blend { gaussian, constant };
/// How a volume smaller than the patch is padded (as torch.nn.functional.pad names the modes).
enum class PadMode { constant, reflect, replicate, circular };
enum class Normalization {
  none,
  zscore,  ///< per channel: (x - mean) / std over the whole volume
  ct,      ///< clip to [clip_low, clip_high], then (x - mean) / std with the given mean and std
};
/// What turns the blended network outputs into probabilities.
enum class Activation {
  automatic,  ///< none when every voxel's outputs already lie in [0, 1] and sum to 1, else softmax
              ///< (sigmoid for a one-channel output)
  none,
  softmax,
  sigmoid,
};

struct IntensityOptions {
  Normalization mode = Normalization::none;
  double clip_low = -std::numeric_limits<double>::infinity();
  double clip_high = std::numeric_limits<double>::infinity();
  double mean = 0;
  double std = 1;
};

struct SegmentProgress {
  int64_t done = 0;  ///< network inputs (patches times mirror variants) finished
  int64_t total = 0;
  double seconds = 0;  ///< since segment_volume started
};

struct SegmentOptions {
  /// Patch size in the network's spatial axes (3 for a 3D network, 2 for a 2D one); empty takes the
  /// model's fixed input dims.
  std::vector<int64_t> patch;
  /// Fraction of the patch shared by neighbours, in [0, 1): one value, or one per network axis.
  std::vector<double> overlap{0.5};
  /// Network inputs per run. A model with a fixed batch dimension needs exactly that many.
  int batch = 1;
  Blend blend = Blend::gaussian;
  /// Gaussian sigma as a fraction of the patch: one value, or one per network axis.
  std::vector<double> sigma_scale{0.125};
  PadMode pad_mode = PadMode::constant;
  float pad_value = 0;
  /// Volume axes (0, 1, 2 of d0, d1, d2) to mirror at test time: every subset of them is predicted
  /// on the flipped patch, flipped back, and the predictions averaged, as nnU-Net does.
  std::vector<int> mirror_axes;
  IntensityOptions intensity;
  /// 2D networks: the volume axis (0, 1 or 2) cut into slices.
  int slice_axis = 0;
  /// Keep the blended per-class probabilities in the result.
  bool probabilities = false;
  Activation activation = Activation::automatic;
  DType label_dtype = DType::u8;  ///< u8 or u16
  /// Which model input and output; empty takes the first.
  std::string input_name;
  std::string output_name;
  /// Called from the calling thread after every network run.
  std::function<void(const SegmentProgress&)> progress;
};

struct SegmentStats {
  std::array<int64_t, 3> patch{};  ///< as cut from the volume (1 along the slice axis of a 2D net)
  int64_t patches = 0;
  int64_t network_inputs = 0;  ///< patches times mirror variants
  int64_t network_runs = 0;
  int batch = 0;
  int64_t classes = 0;
  double total_seconds = 0;
  double network_seconds = 0;      ///< inside Session::run
  double cut_seconds = 0;          ///< cutting patches (a producer thread, overlapping the network)
  double blend_seconds = 0;        ///< weighting and accumulating (a consumer thread, likewise)
  double prepare_seconds = 0;      ///< intensity statistics and buffers, before the first patch
  double finish_seconds = 0;       ///< normalization by the weight sum, activation, argmax
  int64_t accumulation_bytes = 0;  ///< float32 class sums plus weight sums
  Activation activation = Activation::none;  ///< what was applied to make probabilities
};

struct SegmentResult {
  Tensor labels;  ///< {d0, d1, d2}, u8 or u16: the argmax class (or sigmoid > 0.5 for one class)
  Tensor probabilities;  ///< f32 {classes, d0, d1, d2} when asked for, else undefined
  SegmentStats stats;
};

/// Segments `volume` (f32 {channels, d0, d1, d2}) with the network in `session`: a sliding window
/// as MONAI's sliding_window_inference defines it (scan interval int(patch * (1 - overlap)), the
/// last window flush with the end, padding split half before and half after, Gaussian importance
/// map exp(-x^2 / (2 (sigma_scale * patch)^2)) per axis clamped below at max(min, 1e-3), sums
/// divided by the weight sums). Patches are batched through the Session while the next batch is
/// cut on another thread and the previous one blended on a third.
SegmentResult segment_volume(const Session& session, const Tensor& volume,
                             const SegmentOptions& options);

struct DiceScore {
  int64_t label = 0;
  double dice = 0;
  int64_t count_a = 0;
  int64_t count_b = 0;
};

/// Dice 2|A n B| / (|A| + |B|) of every non-zero label present in either volume (float32 tensors of
/// one shape, as read_nifti returns them; values are rounded to integer labels), ascending by
/// label.
std::vector<DiceScore> dice_scores(const Tensor& a, const Tensor& b);

}  // namespace voxrt
