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
///
/// For a pool of `threads` > 1 whose arena is at most kThreadClassesMaxBytes, values share bytes
/// only with values of their class, the bytes of one channel (the dims past N and C times the
/// element size): each class gets a region of its own. The drivers give thread t the t-th range
/// of depths (or, in 2D, of rows) of every channel, so a value's byte at offset x belongs to the
/// thread that owns x modulo its class within a channel; within a class a core then writes over
/// lines it wrote itself the run before. Across classes half the lines an op writes were last
/// written by the other core, and taking them from its cache costs on a machine whose cores sit
/// apart (this VM's two cores: a line there and back in 440-475 ns). That holds for one batch
/// item. With as many items as threads or more (the graph inputs' first dimension), thread t
/// owns whole items (driver_util.h, SpatialItem), whose bytes in two values of a class need not
/// line up, so the arena keeps one region: Zen 5, unet2d on two threads, `voxrt bench`, three
/// alternations, batch 2 8.77 / 8.42 / 8.70 ms with regions, 8.67 / 8.57 / 8.69 without, peak
/// RSS 32.4 -> 24.3 MiB; batch 4 17.20 / 16.98 / 17.09 -> 16.93 / 16.88 / 17.05 ms, 58.4 -> 42.4
/// MiB.
void plan_arena(const ir::Graph& g, Plan& p, const std::vector<char>& overwrite = {},
                int64_t threads = 1);

/// The largest one-region arena that plan_arena splits by class with threads. Zen 5, two
/// threads, the same binary with either arena, alternated (docs/PERFORMANCE.md): unet2d (8.8 ->
/// 12.8 MiB) and unet3d_monai (27.0 -> 34.4 MiB) 3-4% faster, MONAI's spleen UNet (27.0 -> 40.8
/// MiB) 1-2%, unet3d_bn and unet3d_gn at 96^3
/// (91.1 -> 114.8 MiB) level: activations that outgrow the caches meet the other core's lines in
/// memory either way. So were the fp16 models of nnunet3d and unet3d_bn at 96^3 once their
/// up-convolutions went into the convolutions (30.4 -> 35.4 MiB, 2026-12-03, three alternations:
/// 59.30 / 58.26 / 58.70 ms with regions, 59.35 / 58.55 / 58.58 without; 56.95 / 56.46 / 56.27
/// and 56.38 / 56.52 / 56.98), which took 5 MiB of peak RSS: hence 28 MiB, above MONAI's 27.
constexpr int64_t kThreadClassesMaxBytes = int64_t{28} << 20;

/// Binds `input_shapes` (one per graph input, in order) and infers everything else. Small integer
/// inputs whose values decide shapes (axes, sizes) may be given in `input_values` (nullptr where
/// not known); the plan then holds for those values only. Throws voxrt::Error naming the input or
/// node whose shape does not fit.
/// `threads`: the pool the plan runs on (plan_arena).
Plan make_plan(const CompiledModel& m, const std::vector<Shape>& input_shapes,
               const std::vector<const Tensor*>& input_values = {}, int64_t threads = 1);

/// Per graph input: whether its values may decide shapes, so that small tensors given for it join
/// the plan key. Integer inputs do; float inputs do when an op reads them as sizes (Resize and
/// Upsample scales, Range bounds).
std::vector<char> shape_deciding_inputs(const ir::Graph& g);
/// Largest tensor a plan may allocate; larger ones are refused naming the node.
constexpr int64_t kMaxTensorBytes = int64_t{16} << 30;

}  // namespace voxrt
