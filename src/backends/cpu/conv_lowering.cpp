#include "backends/cpu/cpu_op.h"

namespace voxrt::cpu {

void register_conv_lowerings(CpuRegistry&) {}

}  // namespace voxrt::cpu
