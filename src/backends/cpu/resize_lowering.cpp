#include "backends/cpu/cpu_op.h"

namespace voxrt::cpu {

void register_resize_lowerings(CpuRegistry&) {}

}  // namespace voxrt::cpu
