// ONNX ModelProto to ir::Graph, and back.
#pragma once

#include <onnx/onnx.pb.h>

#include <string>

#include "ir/graph.h"

namespace voxrt::onnx_io {

/// Imports the main graph. `model_dir` is where external data may live; `model_name` appears in
/// every error message. Throws voxrt::Error on anything malformed or unsupported at this level
/// (IR version, opset, element types, subgraph-bearing nodes are refused later by the registry).
ir::Graph import_model(const onnx::ModelProto& model, const std::string& model_name,
                       const std::string& model_dir);
/// The same, releasing each initializer's bytes in `model` once it is imported, so that a large
/// model is not held twice while it loads.
ir::Graph import_model(onnx::ModelProto&& model, const std::string& model_name,
                       const std::string& model_dir);

/// Writes a graph as a ModelProto (weights inline), keeping its opset and IR version.
onnx::ModelProto export_model(const ir::Graph& graph);

}  // namespace voxrt::onnx_io
