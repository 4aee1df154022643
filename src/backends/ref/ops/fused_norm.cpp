#include "backends/ref/op.h"

namespace voxrt {

void register_fused_norm_ops(OpRegistry&) {}

}  // namespace voxrt
