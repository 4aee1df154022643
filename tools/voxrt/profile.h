// Per-node profiles: Chrome trace files for `voxrt bench --profile` and the per-layer table of
// `voxrt profile`.
#pragma once

#include <string>
#include <vector>

#include "voxrt/voxrt.h"

namespace voxrt::cli {

/// One profiled run, `offset_ms` after the first, as it goes into a trace.
struct ProfiledRun {
  double offset_ms = 0;
  double milliseconds = 0;
  std::vector<NodeProfile> nodes;
};

/// Writes runs as a Chrome trace ("traceEvents", complete events with microsecond times) that
/// Perfetto and chrome://tracing open: one event per run enclosing one per node (name = node,
/// cat = op type, args = kernel, output shapes, MACs, GFLOP/s). Throws voxrt::Error when the
/// file cannot be written.
void write_chrome_trace(const std::string& path, const std::string& title,
                        const std::vector<ProfiledRun>& runs);

/// `voxrt profile`: runs the model at each precision (warm-up, then `runs` profiled runs) and
/// prints per node the median milliseconds, GFLOP/s, share of the total and kernel, with the
/// speedup of each later precision over the first, then each precision's outputs against the
/// first's. The inputs are random at `shapes`, or read from .npy files (`inputs`, name=file.npy).
int cmd_profile(const std::string& model, const std::vector<std::string>& shapes,
                const std::vector<std::string>& inputs, const std::vector<std::string>& precisions,
                int threads, int runs, int warmup);

}  // namespace voxrt::cli
