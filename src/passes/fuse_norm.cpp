#include "passes/passes.h"

namespace voxrt {

void fuse_norm_activation(ir::Graph&) {}

}  // namespace voxrt
