// Load-time pipeline: ONNX bytes to a graph whose every node has a reference Op, with dtypes
// inferred, optional fp16 conversion and the portable passes applied.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/ref/op.h"
#include "ir/graph.h"
#include "voxrt/session.h"

namespace voxrt {

class ThreadPool;

namespace onnx_io {
class FileBytes;
}  // namespace onnx_io

struct CompileOptions {
  bool fp16 = false;               // convert float weights and activations to fp16, keep fp32 I/O
  bool fp32 = false;               // widen fp16 weights and activations to fp32, keep the I/O types
  bool optimize = true;            // run the portable passes
  std::string stop_after;          // stop the pass list after the pass of this name
  bool cpu_kernels = true;         // lower nodes to optimized CPU kernels where one applies
  FpMath fpmath = FpMath::strict;  // arithmetic the CPU kernels may use
  bool winograd = true;            // convolutions may take Winograd's form (SessionOptions)
  /// The inputs' expected shapes (SessionOptions::input_shapes): lowerings see their nodes'
  /// output shapes for them. Empty: none.
  std::vector<std::pair<std::string, Shape>> input_shapes;
  /// Lowers (and so packs the weights of) several nodes at once on this pool's threads; null:
  /// the calling thread alone, node by node.
  ThreadPool* pool = nullptr;
};

struct CompiledModel {
  ir::Graph graph;
  std::vector<std::unique_ptr<Op>> ops;  // one per graph.nodes entry
  std::string graph_before_passes;       // text form, for `voxrt info --passes`
};

/// Parses, imports and checks a model; throws voxrt::Error naming the model/node on failure.
CompiledModel compile_model(const void* bytes, size_t size, const std::string& model_name,
                            const std::string& model_dir, const CompileOptions& options);
/// The same from a file's bytes, which it releases once parsed; each weight's bytes then move
/// from protobuf into the graph's constants, so loading holds about one copy of a large model at a
/// time.
CompiledModel compile_model(onnx_io::FileBytes&& bytes, const std::string& model_name,
                            const std::string& model_dir, const CompileOptions& options);
/// The steps after import: precision conversion, passes, ops, CPU lowering.
CompiledModel compile_graph(ir::Graph graph, const CompileOptions& options);

/// Imports and checks a model without passes (for converters); dtypes are inferred.
ir::Graph import_checked(const void* bytes, size_t size, const std::string& model_name,
                         const std::string& model_dir);
ir::Graph import_checked(onnx_io::FileBytes&& bytes, const std::string& model_name,
                         const std::string& model_dir);

/// Creates every node's Op (refusing unsupported ops and attributes) and infers the dtype of
/// every value into graph.values[v].dtype.
std::vector<std::unique_ptr<Op>> build_ops(ir::Graph& g);

/// Human-readable listing of a graph, one node per line.
std::string graph_to_text(const ir::Graph& g);

}  // namespace voxrt
