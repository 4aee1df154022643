// Whether a run may go a few batch items at a time: the plan at batch N, and every step computes
// each item from that item alone. The executor then runs groups of items (one on one thread,
// two a thread on more) through their own plan, on views of the inputs and outputs
// (runtime/session.cpp, batch_group), so a batch costs the arena of one group.
#pragma once

#include "runtime/plan.h"

namespace voxrt {

/// N (2 or more) where every graph input carries N batch items along its first axis and every
/// step of the plan is an op that computes each item from that item alone (convolutions,
/// normalizations over channels and space, pooling, Resize, channel Concat and Split, channel
/// Softmax, elementwise ops between such activations and per-item constants), producing N items
/// along its outputs' first axis; else 0. Conservative: any other op, attribute or shape gives 0.
int64_t separable_batch(const ir::Graph& g, const Plan& p);

}  // namespace voxrt
