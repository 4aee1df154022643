// voxrt segment and voxrt dice: whole NIfTI volumes (include/voxrt/volume.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace voxrt::cli {

struct SegmentArgs {
  std::string model, input, output;
  std::string patch, overlap = "0.5", sigma = "0.125", mirror;
  int batch = 1;
  int threads = 0;  // 0: one per physical core (physical_cores())
  std::string blend = "gaussian", pad = "constant";
  float pad_value = 0;
  std::string precision = "model";
  std::string labels_dtype = "uint8", probabilities, probabilities_dtype = "float32";
  std::string activation = "auto";
  std::string normalize = "none", ct_clip;
  double ct_mean = 0, ct_std = 1;
  std::string slice_axis = "k", axis_order = "kji";
  bool quiet = false;
};

CLI::App* add_segment_command(CLI::App& app, SegmentArgs& a);
int cmd_segment(const SegmentArgs& a);

struct DiceArgs {
  std::string a, b;
  std::vector<int> labels;
};

CLI::App* add_dice_command(CLI::App& app, DiceArgs& a);
int cmd_dice(const DiceArgs& a);

}  // namespace voxrt::cli
