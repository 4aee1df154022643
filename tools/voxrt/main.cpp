// voxrt: run, inspect, time and convert ONNX models from the command line.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli_common.h"
#include "profile.h"
#include "volume_commands.h"

int main(int argc, char** argv) {
  using namespace voxrt::cli;
  CLI::App app{"voxrt: an inference engine for 3D segmentation networks"};
  app.require_subcommand(1);

  std::string model, precision = "model";
  std::vector<std::string> shapes, inputs, outputs;
  bool passes = false;
  int threads = 1, runs = 10, warmup = 2;

  CLI::App* info = app.add_subcommand("info",
                                      "Inputs, outputs, opset, op histogram, parameters, MACs "
                                      "and activation memory.\nExample: voxrt info unet.onnx "
                                      "--shape input=1x1x96x96x96 --passes");
  info->add_option("model", model, "ONNX model")->required()->check(CLI::ExistingFile);
  info->add_option("--shape", shapes,
                   "input shape, name=1x1x96x96x96 (symbolic dims default to 1)");
  info->add_flag("--passes", passes, "print the graph before and after the graph passes");
  info->add_option("--precision", precision, kPrecisionHelp)
      ->check(CLI::IsMember(precision_names()));
  info->add_option("--threads", threads,
                   "worker threads the activation memory is planned for (more than one may "
                   "take more: docs/ARCHITECTURE.md, the thread pool)")
      ->check(CLI::Range(1, 256));

  CLI::App* run =
      app.add_subcommand("run",
                         "Run a model on .npy inputs and write .npy outputs.\n"
                         "Example: voxrt run unet.onnx --input input=x.npy --output y.npy");
  run->add_option("model", model, "ONNX model")->required()->check(CLI::ExistingFile);
  run->add_option("--input", inputs, "name=file.npy (the name may be left out for one input)")
      ->required();
  run->add_option("--output", outputs, "name=file.npy (or file.npy for the first output)");
  run->add_option("--precision", precision, kPrecisionHelp)
      ->check(CLI::IsMember(precision_names()));
  run->add_option("--threads", threads, "worker threads")->check(CLI::Range(1, 256));

  CLI::App* bench = app.add_subcommand("bench",
                                       "Time a model: warm-up, then median and min ms, GFLOP/s "
                                       "and peak memory.\nExample: voxrt bench unet.onnx "
                                       "--shape input=1x1x96x96x96 --precision fp16 --runs 10");
  bench->add_option("model", model, "ONNX model")->required()->check(CLI::ExistingFile);
  bench->add_option("--shape", shapes, "input shape, name=1x1x96x96x96");
  bench->add_option("--precision", precision, kPrecisionHelp)
      ->check(CLI::IsMember(precision_names()));
  bench->add_option("--threads", threads, "worker threads")->check(CLI::Range(1, 256));
  bench->add_option("--runs", runs, "timed runs")->check(CLI::Range(1, 100000));
  bench->add_option("--warmup", warmup, "untimed runs first")->check(CLI::Range(0, 1000));
  std::string profile_path;
  bench->add_option("--profile", profile_path,
                    "write per-node times of the timed runs to this file, "
                    "Chrome trace format (ui.perfetto.dev, chrome://tracing)");

  std::vector<std::string> compare{"model"};
  CLI::App* profile = app.add_subcommand("profile",
                                         "Per-node median ms, GFLOP/s, GB/s, share and kernel, and "
                                         "the speedup of one precision over another.\nExample: "
                                         "voxrt profile unet.onnx --shape input=1x1x96x96x96 "
                                         "--compare fp32,fp16,fp16+bf16");
  profile->add_option("model", model, "ONNX model")->required()->check(CLI::ExistingFile);
  profile->add_option("--shape", shapes, "input shape, name=1x1x96x96x96 (random inputs)");
  profile->add_option("--input", inputs,
                      "name=file.npy instead of random inputs (the name may be left out for one "
                      "input): the output comparison then measures real data");
  profile
      ->add_option("--compare", compare,
                   std::string("precisions to run, the first the baseline: ") + kPrecisionHelp)
      ->delimiter(',')
      ->check(CLI::IsMember(precision_names()));
  profile->add_option("--threads", threads, "worker threads")->check(CLI::Range(1, 256));
  profile->add_option("--runs", runs, "profiled runs per precision")->check(CLI::Range(1, 100000));
  profile->add_option("--warmup", warmup, "untimed runs first")->check(CLI::Range(0, 1000));

  std::string in_path, out_path, block_ops;
  bool fp16 = false, keep_io = false;
  CLI::App* convert = app.add_subcommand("convert",
                                         "Write an fp16 model from an fp32 one.\nExample: "
                                         "voxrt convert --fp16 --keep-io-types in.onnx out.onnx");
  convert->add_flag("--fp16", fp16, "convert float32 weights and activations to float16")
      ->required();
  convert->add_flag("--keep-io-types", keep_io,
                    "keep float32 graph inputs and outputs (Casts at the edge)");
  convert->add_option("--block-ops", block_ops, "comma-separated op types kept in float32");
  convert->add_option("input", in_path, "fp32 ONNX model")->required()->check(CLI::ExistingFile);
  convert->add_option("output", out_path, "where to write the fp16 model")->required();

  SegmentArgs segment_args;
  CLI::App* segment = add_segment_command(app, segment_args);
  DiceArgs dice_args;
  CLI::App* dice = add_dice_command(app, dice_args);

  CLI11_PARSE(app, argc, argv);
  try {
    if (*info) return cmd_info(model, shapes, passes, precision, threads);
    if (*run) return cmd_run(model, inputs, outputs, precision, threads);
    if (*bench) return cmd_bench(model, shapes, precision, threads, runs, warmup, profile_path);
    if (*profile) return cmd_profile(model, shapes, inputs, compare, threads, runs, warmup);
    if (*convert) return cmd_convert(in_path, out_path, fp16, keep_io, block_ops);
    if (*segment) return cmd_segment(segment_args);
    if (*dice) return cmd_dice(dice_args);
  } catch (const voxrt::Error& e) {
    std::cerr << "voxrt: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "voxrt: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
