// A plan binds a compiled model to concrete input shapes: every value's shape, the nodes left to
// run once shape-only computations are folded, and each value's last use. Built once per input
// signature and shared by every run with that signature.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/compile.h"

namespace voxrt {

struct Plan {
  std::vector<Shape> shapes;     // per value id
  std::vector<char> known;       // per value id: shape is bound
  std::map<int, Tensor> folded;  // values computed while planning (Shape chains)
  std::vector<int> steps;        // node indices to run, in order
  std::vector<int> last_use;     // per value id: last step reading it, -1 if none
  int64_t macs = 0;
  int64_t peak_activation_bytes = 0;  // arena plus graph outputs

  // Memory: every intermediate activation lives at an offset in one arena per run.
  std::vector<int64_t> arena_offset;  // per value id: byte offset, -1 if not in the arena
  int64_t arena_bytes = 0;
  std::vector<char> skip_step;  // per step: a Concat or Split whose values are slices (arena)
  // N where every step is per item, so the run may go a group of items at a time, each group on
  // its own plan, else 0 (runtime/batch_split.h).
  int64_t batch_items = 0;
};

/// Places intermediate activations in one arena by lifetime (values whose lifetimes overlap never
/// share bytes), and lets producers of a channel Concat with batch 1 write straight into their
/// slice of its output, so the Concat costs no copy. A node whose op may overwrite its input
/// (`overwrite`, one entry per graph node) writes its output over input 0 where that input is
/// read by nothing after it.
void plan_arena(const ir::Graph& g, Plan& p, const std::vector<char>& overwrite = {});

/// Binds `input_shapes` (one per graph input, in order) and infers everything else. Small integer
/// inputs whose values decide shapes (axes, sizes) may be given in `input_values` (nullptr where
/// not known); the plan then holds for those values only. Throws voxrt::Error naming the input or
/// node whose shape does not fit.
Plan make_plan(const CompiledModel& m, const std::vector<Shape>& input_shapes,
               const std::vector<const Tensor*>& input_values = {});

/// Per graph input: whether its values may decide shapes, so that small tensors given for it join
/// the plan key. Integer inputs do; float inputs do when an op reads them as sizes (Resize and
/// Upsample scales, Range bounds).
std::vector<char> shape_deciding_inputs(const ir::Graph& g);
/// Largest tensor a plan may allocate; larger ones are refused naming the node.
constexpr int64_t kMaxTensorBytes = int64_t{16} << 30;

}  // namespace voxrt
