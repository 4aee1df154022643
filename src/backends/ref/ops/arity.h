// Input and output count checks for reference op factories.
#pragma once

#include <string>

#include "backends/ref/op.h"

namespace voxrt::ref {

/// Refuses a node whose inputs 0..required-1 are not all given, or that has more than `max_in`
/// inputs or `max_out` outputs.
inline void check_arity(const OpContext& ctx, int required, int max_in, int max_out) {
  const ir::Node& n = ctx.node;
  for (int i = 0; i < required; ++i)
    if (!n.has_input(i))
      ctx.fail("input " + std::to_string(i) + " is missing; expected at least " +
               std::to_string(required) + " inputs");
  if (n.num_inputs() > max_in)
    ctx.fail("node has " + std::to_string(n.num_inputs()) + " inputs, expected at most " +
             std::to_string(max_in));
  if (n.outputs.empty() || static_cast<int>(n.outputs.size()) > max_out || n.outputs[0] < 0)
    ctx.fail("node has " + std::to_string(n.outputs.size()) + " outputs, expected output 0" +
             (max_out > 1 ? " and at most " + std::to_string(max_out) : std::string(" only")));
}

}  // namespace voxrt::ref
