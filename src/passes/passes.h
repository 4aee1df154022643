// Portable graph passes, run in order from one list. Each keeps the graph valid and typed.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace voxrt {

struct Pass {
  const char* name;
  void (*run)(ir::Graph&);
};

/// The portable passes in the order they run.
const std::vector<Pass>& portable_passes();
/// Runs the portable passes, stopping after the one named `stop_after` (all if empty); throws
/// voxrt::Error if `stop_after` names no pass.
void run_passes(ir::Graph& g, const std::string& stop_after);

void fold_constants(ir::Graph& g);
void resize_sizes_as_scales(ir::Graph& g);
void remove_identity(ir::Graph& g);
void fold_batchnorm_into_conv(ir::Graph& g);
void prelu_as_leaky_relu(ir::Graph& g);
void cancel_cast_pairs(ir::Graph& g);
void fuse_cast_islands(ir::Graph& g);
void fold_softmax_transposes(ir::Graph& g);
void fuse_conv_epilogue(ir::Graph& g);
void fuse_group_norm(ir::Graph& g);
void fuse_norm_activation(ir::Graph& g);
void fuse_concat_into_conv(ir::Graph& g);
void fuse_conv_head(ir::Graph& g);
void fuse_sibling_convs(ir::Graph& g);
void fuse_resize_into_conv(ir::Graph& g);
void fuse_conv_transpose_into_conv(ir::Graph& g);
void read_split_in_place(ir::Graph& g);
void fuse_output_cast(ir::Graph& g);

struct Fp16Options {
  bool keep_io_types = true;        // graph inputs and outputs stay float32, with Casts at the edge
  std::set<std::string> block_ops;  // op types kept in float32 between Casts
};

struct Fp16Report {
  int64_t converted = 0;  // constant elements converted
  int64_t clamped = 0;    // elements whose magnitude exceeded fp16's range and were clamped
  int64_t flushed = 0;    // nonzero elements too small for fp16, now zero
};

/// Converts float32 weights and activations to float16 (dtypes must be inferred).
Fp16Report convert_fp16(ir::Graph& g, const Fp16Options& options);

/// Widens float16 weights and activations to float32 (exactly; dtypes must be inferred): an fp16
/// model computed in float32. Graph inputs and outputs keep their types through Casts at the
/// edges; the model's Casts to float16 become Casts to float32. False, and the graph untouched,
/// where nothing is float16 (a float32 model); then dtypes need no new inference.
bool convert_fp32(ir::Graph& g);

/// Removes the nodes whose entry in `drop` (one per node) is nonzero, keeping the others' order.
void erase_nodes(ir::Graph& g, const std::vector<char>& drop);

/// The single consumer of v, or -1 when v has several, none, or is a graph output.
int sole_consumer(const ir::Graph& g, const std::vector<std::vector<int>>& consumers, int v);

/// The operand of Add node `add` other than `v` when a fused op can take it as its residual: an
/// activation (not a broadcast constant; the fused op checks the shapes match when it plans) of
/// v's dtype. -1 otherwise.
int residual_operand(const ir::Graph& g, const ir::Node& add, int v);

/// What a fused op takes after its output: Add(other activation) where residuals are allowed,
/// then Relu or LeakyRelu.
struct EpilogueChain {
  int residual = -1;             // the Add's other operand, or -1
  std::string activation;        // "", "Relu" or "LeakyRelu"
  float alpha = 0.01f;           // LeakyRelu's
  std::vector<size_t> absorbed;  // the nodes taken
  int out = -1;                  // the value the chain ends in
  int next = -1;                 // its consumer the op may still take, or -1
};
/// The chain after value `out`; `free_consumer(v)` is v's sole consumer that no earlier rewrite
/// took, or -1.
EpilogueChain epilogue_chain(const ir::Graph& g, int out, bool take_residual,
                             const std::function<int(int)>& free_consumer);
/// A chain that took an activation and no residual, followed by Add(other activation): takes
/// the Add, its other operand the residual added after the activation (MONAI's residual units),
/// unless `refuse(other, add)`. True when taken.
bool take_residual_after_activation(const ir::Graph& g, EpilogueChain& e,
                                    const std::function<bool(int, int)>& refuse);
/// Sets a fused node's "activation" and "alpha" attributes from `e`.
void set_activation_attrs(ir::Node& n, const EpilogueChain& e);

/// Points every consumer of `from` at `to`; graph outputs named `from` keep their name by
/// renaming, so call only when `from` is not a graph output or `to` has a producer.
void replace_uses(ir::Graph& g, int from, int to);

}  // namespace voxrt
