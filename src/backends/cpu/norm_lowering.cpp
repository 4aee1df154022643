#include "backends/cpu/cpu_op.h"

namespace voxrt::cpu {

void register_norm_lowerings(CpuRegistry&) {}

}  // namespace voxrt::cpu
