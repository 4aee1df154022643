#include "backends/ref/op.h"

namespace voxrt {

void register_tensor_ops(OpRegistry&) {}

}  // namespace voxrt
