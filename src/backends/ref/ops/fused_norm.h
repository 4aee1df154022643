// Normalization followed by its activation, fused by the fuse-norm-activation pass into one
// internal op (domain "voxrt"): voxrt.FusedBatchNorm, voxrt.FusedInstanceNorm and
// voxrt.FusedGroupNorm keep the normalization's inputs and attributes and add the activation's
// ("activation": "Relu", "LeakyRelu" or none, "alpha"). With "residual" = 1 one more input
// follows the normalization's: a tensor of the output's shape and dtype added to the normalized
// values before the activation (a residual block's norm -> Add -> activation: nnU-Net's ResEnc),
// or after it with "residual_after_activation" = 1 (kResidualAfterActivation, as FusedConv's:
// MONAI's residual units end in norm -> activation -> Add).
// FusedBatchNorm and FusedInstanceNorm take FusedConv's `x_from` and `residual_from`
// (backends/ref/ops/fused.h): X is the C channels (scale's) of input 0 from channel x_from on, the
// residual C channels of the last input from channel residual_from on (a Split's outputs read in
// place, passes/read_split_in_place.cpp: MONAI's residual units with InstanceNorm).
#pragma once

#include <string>

#include "ir/graph.h"

namespace voxrt {

/// Fused*Norm's int attribute: the last input is a residual (see above).
inline constexpr const char* kNormResidual = "residual";

/// The internal op type fusing the normalization `norm_op` ("InstanceNormalization"), or ""
/// when it has none.
std::string fused_norm_op_type(const std::string& norm_op);
/// The plain normalization node inside a fused one (its inputs less the residual, the
/// normalization's attributes, default domain).
ir::Node fused_norm_inner_node(const ir::Node& fused);

}  // namespace voxrt
