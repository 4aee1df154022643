// Helpers shared by the voxrt subcommands.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "voxrt/voxrt.h"

namespace voxrt::cli {

/// "input=1x1x96x96x96" or "1x1x96x96x96" (the only input) into (name, shape).
std::pair<std::string, Shape> parse_shape_arg(const std::string& arg, const Session& s);
/// The same before a Session exists: an empty name where the argument gives none.
std::pair<std::string, Shape> parse_shape_arg(const std::string& arg);
/// --shape arguments as SessionOptions::input_shapes (kernels chosen for them).
std::vector<std::pair<std::string, Shape>> expected_shapes(const std::vector<std::string>& args);
/// Shapes for every input: given ones, else the declared shape with symbolic dims set to 1
/// (those inputs' names are added to `defaulted` when given).
std::vector<std::pair<std::string, Shape>> resolve_shapes(
    const std::vector<std::string>& args, const Session& s,
    std::vector<std::string>* defaulted = nullptr);
/// What --precision accepts: model (the model's own types), fp32 (Precision::fp32: an fp16 model
/// widened), fp16 (Precision::fp16), and each with "+bf16": convolutions then use bf16 products
/// where the CPU has AVX512-BF16 (FpMath::bf16).
std::vector<std::string> precision_names();
inline constexpr const char* kPrecisionHelp =
    "model (the model's own types), fp32 (an fp16 model widened to float32), fp16 (a float32 "
    "model stored in float16); +bf16: convolutions with bf16 products on CPUs with AVX512-BF16";
/// Sets opt.precision and opt.fpmath from a precision_names() entry.
void apply_precision(const std::string& p, SessionOptions& opt);
/// Tensor of this dtype and shape filled with reproducible values in [-1, 1).
Tensor random_tensor(DType dtype, const Shape& shape, uint32_t seed);
/// A reproducible random tensor for every input, in the input's dtype, at the bound shapes.
std::vector<NamedTensor> random_inputs(const std::vector<std::pair<std::string, Shape>>& bound,
                                       const Session& s);
/// One buffer per graph output, for runs into caller-owned outputs (as the volume pipeline runs):
/// `voxrt profile` reuses them, so the node that writes an output is not charged for faulting in
/// a fresh buffer (1,900 page faults a run for MONAI's 5 MiB output when the allocator had given
/// the freed one back to the system: its last conv took 9.3 ms instead of 5.2).
std::vector<NamedTensor> output_buffers(const std::vector<std::pair<std::string, Shape>>& bound,
                                        const Session& s);
/// Peak resident memory of this program in bytes (since its exec).
int64_t peak_rss_bytes();
/// Physical cores this process may run on: the CPUs of its affinity mask, SMT siblings counted
/// once (Linux's sysfs topology), or the mask's CPUs where the topology cannot be read; at most
/// its cgroup's CPU quota, rounded up. At least 1.
int physical_cores();
/// Resident pages of files mapped into this process (its code and the libraries'), in bytes;
/// -1 where the system does not say (Linux's /proc/self/status RssFile). They are the same
/// whatever the model's precision: 7 MiB of the 28 in an fp16 MONAI UNet's peak.
int64_t file_rss_bytes();
/// Resident anonymous memory in huge pages (arenas and packed weights from map_pages), in bytes;
/// -1 where the system does not say (Linux's /proc/self/smaps_rollup AnonHugePages).
int64_t huge_rss_bytes();

int cmd_info(const std::string& model, const std::vector<std::string>& shapes, bool passes,
             const std::string& precision, int threads);
/// The model's inputs from `name=file.npy` arguments (the name may be left out for a model with
/// one input), each checked against the input's dtype.
std::vector<NamedTensor> read_inputs(const std::vector<std::string>& inputs, const Session& s);
int cmd_run(const std::string& model, const std::vector<std::string>& inputs,
            const std::vector<std::string>& outputs, const std::string& precision, int threads);
/// With a non-empty profile_path, the timed runs are profiled and written there as a Chrome trace.
int cmd_bench(const std::string& model, const std::vector<std::string>& shapes,
              const std::string& precision, int threads, int runs, int warmup,
              const std::string& profile_path = "");
int cmd_convert(const std::string& in, const std::string& out, bool fp16, bool keep_io,
                const std::string& block_ops);

}  // namespace voxrt::cli
