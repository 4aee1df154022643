#include "backends/cpu/cpu_op.h"

namespace voxrt::cpu {

void register_data_lowerings(CpuRegistry&) {}

}  // namespace voxrt::cpu
