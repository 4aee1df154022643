// Normalization followed by its activation, fused by the fuse-norm-activation pass into one
// internal op (domain "voxrt"): voxrt.FusedBatchNorm, voxrt.FusedInstanceNorm and
// voxrt.FusedGroupNorm keep the normalization's inputs and attributes and add the activation's
// ("activation": "Relu" or "LeakyRelu", "alpha").
#pragma once

#include <string>

#include "ir/graph.h"

namespace voxrt {

/// The internal op type fusing the normalization `norm_op` ("InstanceNormalization"), or ""
/// when it has none.
std::string fused_norm_op_type(const std::string& norm_op);
/// The plain normalization node inside a fused one (same inputs, the normalization's
/// attributes, default domain).
ir::Node fused_norm_inner_node(const ir::Node& fused);

}  // namespace voxrt
