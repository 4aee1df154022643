#include "backends/ref/op.h"

namespace voxrt {

void register_resize_ops(OpRegistry&) {}

}  // namespace voxrt
