#include <algorithm>
#include <map>
#include <tuple>

#include "runtime/plan.h"

namespace voxrt {

namespace {

constexpr int64_t kAlign = 64;

int64_t bytes_of(const ir::Graph& g, const Plan& p, int v) {
  int64_t b = shape_numel(p.shapes[static_cast<size_t>(v)]) *
              static_cast<int64_t>(dtype_size(*g.values[static_cast<size_t>(v)].dtype));
  return (b + kAlign - 1) / kAlign * kAlign;
}

// A value's class for the regions plan_arena keeps with threads (plan.h): the bytes of one
// channel of one batch item (the dims past N and C times the element size) for values of rank 3
// and more, else 0.
int64_t thread_class(const ir::Graph& g, const Plan& p, int v) {
  const Shape& s = p.shapes[static_cast<size_t>(v)];
  if (s.size() < 3) return 0;
  int64_t n = 1;
  for (size_t d = 2; d < s.size(); ++d) n *= s[d];
  return n * static_cast<int64_t>(dtype_size(*g.values[static_cast<size_t>(v)].dtype));
}

struct Block {
  int value;
  int first, last;  // steps, inclusive
  int64_t bytes;
};

}  // namespace

void plan_arena(const ir::Graph& g, Plan& p, const std::vector<char>& overwrite, int64_t threads) {
  size_t nv = g.values.size();
  p.arena_offset.assign(nv, -1);
  p.skip_step.assign(p.steps.size(), 0);
  std::vector<int> def(nv, -1);
  for (size_t s = 0; s < p.steps.size(); ++s)
    for (int o : g.nodes[static_cast<size_t>(p.steps[s])].outputs)
      if (o >= 0) def[static_cast<size_t>(o)] = static_cast<int>(s);
  auto is_graph_output = [&](int v) {
    return std::count(g.outputs.begin(), g.outputs.end(), v) > 0;
  };
  // Values the arena may hold: produced by a step, not a graph output (those go to the caller or
  // to tensors that outlive the run).
  auto arena_candidate = [&](int v) {
    return v >= 0 && def[static_cast<size_t>(v)] >= 0 && !is_graph_output(v);
  };
  int last_step = static_cast<int>(p.steps.size()) - 1;
  auto last_of = [&](int v) {
    int l = p.last_use[static_cast<size_t>(v)];
    return std::max(l, def[static_cast<size_t>(v)]);
  };

  // Values that are slices of another: a batch-1 channel Concat's inputs of its output (its
  // producers write into their slices), and a batch-1 channel Split's outputs of its input
  // (fuse-sibling-convs' joint convolutions end in one); either node is then skipped. Batch 1:
  // every dim before the axis is 1. The parts are distinct arena values of the whole's rank, none
  // already a slice or a whole; Concats are taken first.
  std::map<int, std::pair<int, int64_t>> alias;  // slice value -> (whole value, byte offset)
  std::vector<char> aliased_out(nv, 0);          // a whole
  std::vector<char> split_slice(nv, 0);          // a slice of a Split's input
  auto take_slices = [&](size_t s, int whole, const std::vector<int>& parts, int64_t axis,
                         bool split) {
    if (!arena_candidate(whole) || alias.count(whole) || aliased_out[static_cast<size_t>(whole)])
      return;
    const Shape& ws = p.shapes[static_cast<size_t>(whole)];
    if (axis < 0) axis += static_cast<int64_t>(ws.size());
    bool ok = axis >= 0 && axis < static_cast<int64_t>(ws.size());
    for (int64_t d = 0; ok && d < axis; ++d) ok = ws[static_cast<size_t>(d)] == 1;
    std::vector<int> sorted(parts);
    std::sort(sorted.begin(), sorted.end());
    ok = ok && std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
    for (int v : parts)
      ok = ok && arena_candidate(v) && !alias.count(v) && !aliased_out[static_cast<size_t>(v)] &&
           p.shapes[static_cast<size_t>(v)].size() == ws.size();
    if (!ok) return;
    int64_t off = 0;
    for (int v : parts) {
      alias[v] = {whole, off};
      split_slice[static_cast<size_t>(v)] = split;
      off += shape_numel(p.shapes[static_cast<size_t>(v)]) *
             static_cast<int64_t>(dtype_size(*g.values[static_cast<size_t>(v)].dtype));
    }
    aliased_out[static_cast<size_t>(whole)] = 1;
    p.skip_step[s] = 1;
  };
  for (bool split : {false, true})
    for (size_t s = 0; s < p.steps.size(); ++s) {
      const ir::Node& n = g.nodes[static_cast<size_t>(p.steps[s])];
      if (!n.domain.empty()) continue;
      if (!split && n.op_type == "Concat" && n.outputs.size() == 1)
        take_slices(s, n.outputs[0], n.inputs, n.attrs.get_int("axis", 1), false);
      if (split && n.op_type == "Split" && !n.inputs.empty())
        take_slices(s, n.inputs[0], n.outputs, n.attrs.get_int("axis", 0), true);
    }

  // Outputs written over their dying input 0 (normalizations, activations): the output takes
  // the input's bytes, the value that first owned them (or whose slice they are) is the root,
  // and its block lives on.
  // Writing lines already in cache instead of fresh ones: the ten InstanceNorms of nnunet3d at
  // 96^3, one thread, 18.1-18.9 -> 8.5-8.8 ms fp32, 6.9-7.0 -> 5.8-6.3 ms fp16 (`voxrt profile`).
  // Output value -> (root value whose bytes it takes, byte offset in them).
  std::map<int, std::pair<int, int64_t>> over;
  auto exact_bytes = [&](int v) {
    return shape_numel(p.shapes[static_cast<size_t>(v)]) *
           static_cast<int64_t>(dtype_size(*g.values[static_cast<size_t>(v)].dtype));
  };
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const size_t k = static_cast<size_t>(p.steps[s]);
    const ir::Node& n = g.nodes[k];
    if (k >= overwrite.size() || !overwrite[k] || n.inputs.empty() || n.outputs.empty()) continue;
    const int in = n.inputs[0], out = n.outputs[0];
    // A slice of a Split's input may be written over once nothing reads that input whole; a
    // Concat's input may not (the Concat's output holds it).
    const bool sliced = in >= 0 && split_slice[static_cast<size_t>(in)] &&
                        p.last_use[static_cast<size_t>(alias.at(in).first)] <= static_cast<int>(s);
    if (!arena_candidate(in) || !arena_candidate(out) || (alias.count(in) && !sliced) ||
        alias.count(out) || aliased_out[static_cast<size_t>(in)] ||
        aliased_out[static_cast<size_t>(out)] ||
        p.last_use[static_cast<size_t>(in)] != static_cast<int>(s) ||
        exact_bytes(in) != exact_bytes(out) ||
        std::count(n.inputs.begin(), n.inputs.end(), in) != 1)
      continue;
    over[out] = over.count(in) ? over[in] : sliced ? alias.at(in) : std::make_pair(in, int64_t{0});
  }

  // One block per arena value that is not a slice of another; a Concat's block lives from its
  // first input's definition to the last use of it or of any input.
  std::vector<Block> blocks;
  std::map<int, size_t> block_of;
  for (size_t v = 0; v < nv; ++v) {
    int id = static_cast<int>(v);
    if (!arena_candidate(id) || alias.count(id) || over.count(id)) continue;
    block_of[id] = blocks.size();
    blocks.push_back(Block{id, def[v], last_of(id), bytes_of(g, p, id)});
  }
  for (const auto& [in, target] : alias) {
    Block& b = blocks[block_of.at(target.first)];
    b.first = std::min(b.first, def[static_cast<size_t>(in)]);
    b.last = std::max(b.last, last_of(in));
  }
  for (const auto& [out, root] : over) {
    Block& b = blocks[block_of.at(root.first)];
    b.last = std::max(b.last, last_of(out));
  }
  (void)last_step;

  // Greedy: largest blocks first, each at the lowest offset that overlaps no placed block whose
  // lifetime intersects its own; with threads and a compact arena of at most
  // kThreadClassesMaxBytes, the same within each class and the classes' regions one after
  // another.
  std::vector<size_t> order(blocks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return blocks[a].bytes != blocks[b].bytes ? blocks[a].bytes > blocks[b].bytes : a < b;
  });
  auto place = [&](const std::vector<int64_t>& cls) {
    std::vector<int64_t> at(blocks.size(), 0);
    std::map<int64_t, int64_t> top;  // class -> bytes its blocks reach
    std::vector<size_t> placed;
    for (size_t i : order) {
      const Block& b = blocks[i];
      std::vector<std::pair<int64_t, int64_t>> busy;
      for (size_t j : placed) {
        const Block& o = blocks[j];
        if (cls[j] == cls[i] && o.first <= b.last && b.first <= o.last)
          busy.emplace_back(at[j], at[j] + o.bytes);
      }
      std::sort(busy.begin(), busy.end());
      int64_t off = 0;
      for (const auto& [lo, hi] : busy) {
        if (off + b.bytes <= lo) break;
        off = std::max(off, hi);
      }
      placed.push_back(i);
      at[i] = off;
      top[cls[i]] = std::max(top[cls[i]], off + b.bytes);
    }
    // The classes' regions one after another.
    std::map<int64_t, int64_t> base;
    int64_t bytes = 0;
    for (const auto& [c, reach] : top) {
      base[c] = bytes;
      bytes += reach;
    }
    for (size_t i = 0; i < blocks.size(); ++i) at[i] += base[cls[i]];
    return std::make_pair(at, bytes);
  };
  auto [at, bytes] = place(std::vector<int64_t>(blocks.size(), 0));
  // The batch items the plan runs at once (the graph inputs' first dimension): with as many as
  // the threads or more each thread owns whole items, and the regions buy nothing (plan.h).
  int64_t items = 1;
  for (int v : g.inputs) {
    const Shape& s = p.shapes[static_cast<size_t>(v)];
    if (s.size() >= 3) items = std::max(items, s[0]);
  }
  if (threads > 1 && items < threads && bytes <= kThreadClassesMaxBytes) {
    std::vector<int64_t> cls(blocks.size());
    for (size_t i = 0; i < blocks.size(); ++i) cls[i] = thread_class(g, p, blocks[i].value);
    std::tie(at, bytes) = place(cls);
  }
  for (size_t i = 0; i < blocks.size(); ++i)
    p.arena_offset[static_cast<size_t>(blocks[i].value)] = at[i];
  p.arena_bytes = bytes;
  for (const auto& [in, target] : alias)
    p.arena_offset[static_cast<size_t>(in)] =
        p.arena_offset[static_cast<size_t>(target.first)] + target.second;
  for (const auto& [out, root] : over)
    p.arena_offset[static_cast<size_t>(out)] =
        p.arena_offset[static_cast<size_t>(root.first)] + root.second;

  p.peak_activation_bytes = p.arena_bytes;
  for (int v : g.outputs)
    if (def[static_cast<size_t>(v)] >= 0) p.peak_activation_bytes += bytes_of(g, p, v);
}

}  // namespace voxrt
