// Shapes a graph's values take whatever its inputs' unknown dims, as far as two probes show
// them: passes that rewrite a node only where a shape relation holds for every input size.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace voxrt {

/// Every value's shape with the graph inputs' unknown dims bound to probe values, and the values
/// of the small shape-only chains folded from them (Shape, Slice, Concat... as runtime/plan.cpp
/// folds them for real shapes). Values whose shapes cannot be inferred stay unknown.
struct ShapeProbe {
  std::vector<std::optional<Shape>> shapes;  // per value id
  std::map<int, Tensor> folded;              // small integer values computed from shapes
  /// Value v's elements where it folded to integers, else nullopt.
  std::optional<std::vector<int64_t>> int_values(int v) const;
};

/// Two probes of `g`, the inputs' unknown dims bound to different odd values (one per symbol; a
/// dim with neither value nor symbol its own): a relation between shapes that holds in both
/// holds for the model's real sizes, short of shapes built to coincide at those values.
std::pair<ShapeProbe, ShapeProbe> probe_shapes(const ir::Graph& g);

}  // namespace voxrt
