// Session internals, shared with the model summary.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "runtime/compile.h"
#include "runtime/output_cache.h"
#include "runtime/plan.h"
#include "runtime/scratch.h"
#include "runtime/thread_pool.h"
#include "voxrt/session.h"

namespace voxrt {

struct Session::Impl {
  SessionOptions options;
  CompiledModel model;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<RunScratch> scratch;    // the ops' scratch, kept between runs
  std::shared_ptr<OutputCache> returned;  // storage of the tensors run(inputs) returns
  // Activation arenas, shared by every plan: the smallest free one that holds a run's plan.
  std::unique_ptr<ScratchCache> arenas;
  std::vector<IoInfo> inputs, outputs;
  std::vector<char> shape_deciding;  // per input, see shape_deciding_inputs
  mutable std::mutex plans_mutex;
  // Keyed by input shapes plus the values of small integer inputs (see shape_deciding_inputs).
  mutable std::map<std::pair<std::vector<Shape>, std::vector<std::vector<int64_t>>>,
                   std::shared_ptr<const Plan>>
      plans;
  mutable std::mutex profile_mutex;
  mutable std::vector<NodeProfile> last_profile;

  /// Checks the options, then builds the model with `compile` and the threads.
  void init(const std::string& name, const SessionOptions& opt,
            const std::function<CompiledModel(const CompileOptions&)>& compile);
  std::shared_ptr<const Plan> plan_for(const std::vector<Shape>& shapes,
                                       const std::vector<const Tensor*>& values = {}) const;
  std::vector<Shape> input_shapes(const std::vector<NamedTensor>& in) const;
  /// Per graph input: the tensor if its values join the plan key, else nullptr.
  std::vector<const Tensor*> shape_values(const std::vector<NamedTensor>& in) const;
  /// With `split`, a batch whose every step is per item (runtime/batch_split.h) runs a group of
  /// items at a time (one item on one thread, two a thread on more).
  void execute(const std::vector<NamedTensor>& in, std::vector<Tensor>& out, bool caller_outputs,
               const ValueObserver* observe = nullptr, bool split = true) const;
};

}  // namespace voxrt
