// The contract every operator implements, and the registry that maps an ONNX op type and opset to
// one. An Op is built once at load from its node (parsing and checking attributes there), infers
// output dtypes at load and output shapes per run, and computes in plain reference code.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "voxrt/error.h"
#include "voxrt/tensor.h"

namespace voxrt {

class ThreadPool;
class ScratchCache;

/// What a run hands every op: the Session's threads, and the scratch memory its ops reuse from
/// run to run (either may be null: inline, and plain allocations). `panels` holds the weights a
/// layer widens for its kernels (a few blocks of one size, apart from the other scratch, whose
/// sizes they would otherwise mix with); null: `scratch`. `own`: one cache per pool thread
/// (`own_count` of them), for buffers a thread alone fills and reads (own_scratch).
struct RunContext {
  ThreadPool* pool = nullptr;
  ScratchCache* scratch = nullptr;
  ScratchCache* panels = nullptr;
  ScratchCache* own = nullptr;
  int own_count = 0;

  /// The scratch of pool thread `thread` (RangeCursor::thread()): its own cache, so that the
  /// buffers it takes layer after layer lie on lines its own core wrote, or `scratch` where
  /// there are none.
  ScratchCache* own_scratch(int thread) const;
};

/// What shape inference knows about one input: dtype, shape, and its values when they are known
/// before running (constants, or shapes once bound). `present` is false for an omitted optional
/// input.
struct ValueMeta {
  bool present = false;
  DType dtype = DType::f32;
  Shape shape;
  const Tensor* value = nullptr;
};

class Op {
 public:
  virtual ~Op() = default;

  /// Output dtypes from input dtypes (an omitted input has no entry meaning: see `present`).
  /// Throws voxrt::Error if a dtype is not supported. Default: every output takes input 0's dtype.
  virtual std::vector<DType> infer_types(const std::vector<ValueMeta>& in) const;
  /// Output shapes for inputs of these shapes (and, where the op needs them, values).
  virtual std::vector<Shape> infer_shapes(const std::vector<ValueMeta>& in) const = 0;
  /// Computes `out`, already allocated with the inferred dtypes and shapes. Null `in` entries are
  /// omitted optional inputs.
  virtual void compute(const std::vector<const Tensor*>& in, std::vector<Tensor>& out) const = 0;
  /// Runs the op; optimized ops override this to use the threads and their packed weights.
  /// The default computes with the reference code.
  virtual void run(const RunContext& ctx, const std::vector<const Tensor*>& in,
                   std::vector<Tensor>& out) const {
    (void)ctx;
    compute(in, out);
  }
  /// Which kernel runs this node, e.g. "f32_conv3d_gemm_6x64__avx512"; "ref" for the reference.
  virtual std::string kernel_name() const { return "ref"; }
  /// Whether output 0 may take input 0's bytes: run reads every element of input 0 it needs
  /// before writing the output element in its place. Where input 0 is not read after this node,
  /// the planner then stores both in one place (runtime/arena.cpp).
  virtual bool may_overwrite_input() const { return false; }
  /// Multiply-accumulates for the given shapes, for reports (0 where not meaningful).
  virtual int64_t macs(const std::vector<ValueMeta>& in, const std::vector<Shape>& out) const;

  /// "model 'm.onnx', node 'Conv_3' (Conv)"; set by the registry.
  std::string where;
  int num_outputs = 1;

 protected:
  [[noreturn]] void fail(const std::string& what) const;
  /// Throws unless `t` is one of `allowed`; `role` names the input ("input 0", "X").
  void require_dtype(DType t, std::initializer_list<DType> allowed, const std::string& role) const;
  /// Throws unless a value the op needs before running (shape, axes, sizes...) is known.
  const Tensor& need_value(const ValueMeta& m, const std::string& role) const;
};

/// Computes the outputs of node `n` (run by `op`, its inputs `in`, outputs of `shapes` and
/// `types`) where they depend on shapes only: `n` is a Shape or Size node (whose inputs' data it
/// never reads), or every present input's value is known; and each output holds at most
/// `max_elements`. Returns the outputs, or nothing where they do not fold. What a plan computes
/// once per input signature (runtime/plan.cpp), and the shape probes of the passes.
std::optional<std::vector<Tensor>> fold_shape_only(const Op& op, const ir::Node& n,
                                                   const std::vector<ValueMeta>& in,
                                                   const std::vector<Shape>& shapes,
                                                   const std::vector<DType>& types,
                                                   int64_t max_elements);

/// Value v's bytes where known before running: a constant's (one whose bytes a lowered op packed
/// and released has none: release_packed_constants in runtime/compile.cpp), or one folded into
/// `folded` (fold_shape_only); nullptr otherwise.
const Tensor* known_value(const ir::Graph& g, const std::map<int, Tensor>& folded, int v);

/// Values an op factory sees: the node, and the constant values of its inputs (nullptr if not
/// constant at load).
struct OpContext {
  const ir::Node& node;
  const ir::Graph& graph;
  int opset;
  std::string where;
  const Tensor* constant_input(int i) const {
    return node.has_input(i) ? graph.constant(node.inputs[static_cast<size_t>(i)]) : nullptr;
  }
  [[noreturn]] void fail(const std::string& what) const { throw Error(where + ": " + what); }
};

/// Domain of the nodes voxrt's passes create (registered as "voxrt.<OpType>").
inline constexpr const char* kInternalDomain = "voxrt";

using OpFactory = std::function<std::unique_ptr<Op>(const OpContext&)>;

struct OpSchema {
  std::string op_type;
  int min_opset;  // the earliest default-domain opset whose definition the factory handles
  int max_opset;  // the latest
  OpFactory make;
};

class OpRegistry {
 public:
  static const OpRegistry& instance();

  void add(std::string op_type, int min_opset, int max_opset, OpFactory make);
  /// The schema for this op at this opset, or nullptr.
  const OpSchema* find(const std::string& op_type, int opset) const;
  /// Every registered schema, sorted by op type.
  std::vector<const OpSchema*> all() const;
  /// Builds the op for `node`, or throws naming the node and what is unsupported.
  std::unique_ptr<Op> create(const ir::Node& node, const ir::Graph& graph) const;

 private:
  std::vector<OpSchema> schemas_;
};

// One registration function per op family file under backends/ref/ops/.
void register_activation_ops(OpRegistry& r);
void register_elementwise_ops(OpRegistry& r);
void register_conv_ops(OpRegistry& r);
void register_norm_ops(OpRegistry& r);
void register_pool_ops(OpRegistry& r);
void register_reduce_ops(OpRegistry& r);
void register_shape_ops(OpRegistry& r);
void register_tensor_ops(OpRegistry& r);
void register_resize_ops(OpRegistry& r);
void register_matmul_ops(OpRegistry& r);
void register_fused_ops(OpRegistry& r);
void register_fused_norm_ops(OpRegistry& r);

}  // namespace voxrt
