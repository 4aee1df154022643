// Runs one batch item at a time (runtime/batch_split.h): which plans may, and that such runs give
// what the whole batch gives, into the caller's buffers and into returned ones, with one item's
// arena.
#include "runtime/batch_split.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

#include "model_builder.h"
#include "passes_test_util.h"
#include "runtime/compile.h"
#include "voxrt/voxrt.h"

namespace voxrt::test {
namespace {

// x (N x 4 x 6 x 7, N free unless `fixed`) -> Conv -> InstanceNormalization -> LeakyRelu ->
// MaxPool -> Resize x2 -> Concat with the conv's output -> Conv -> `tail` -> y.
std::string model(const std::function<void(ModelBuilder&)>& tail = {}, bool fixed = false) {
  ModelBuilder b(17);
  if (fixed)
    b.input("x", onnx::TensorProto::FLOAT, {int64_t{3}, int64_t{4}, int64_t{6}, int64_t{8}});
  else
    b.input("x", onnx::TensorProto::FLOAT, {std::string("N"), int64_t{4}, int64_t{6}, int64_t{8}});
  b.initializer("w1", {5, 4, 3, 3}, pattern(180, 1));
  b.initializer("w2", {3, 10, 3, 3}, pattern(270, 2));
  b.initializer("scale", {5}, pattern(5, 3));
  b.initializer("bias", {5}, pattern(5, 4));
  b.initializer("scales", {4}, {1.0f, 1.0f, 2.0f, 2.0f});
  ModelBuilder::attr_ints(b.node("Conv", {"x", "w1"}, {"c1"}), "pads", {1, 1, 1, 1});
  b.node("InstanceNormalization", {"c1", "scale", "bias"}, {"n1"});
  ModelBuilder::attr_float(b.node("LeakyRelu", {"n1"}, {"a1"}), "alpha", 0.1f);
  auto& pool = b.node("MaxPool", {"a1"}, {"p"});
  ModelBuilder::attr_ints(pool, "kernel_shape", {2, 2});
  ModelBuilder::attr_ints(pool, "strides", {2, 2});
  b.node("Resize", {"p", "", "scales"}, {"u"});
  ModelBuilder::attr_int(b.node("Concat", {"u", "c1"}, {"cat"}), "axis", 1);
  ModelBuilder::attr_ints(b.node("Conv", {"cat", "w2"}, {tail ? "c2" : "y"}), "pads", {1, 1, 1, 1});
  if (tail) tail(b);
  b.output("y", onnx::TensorProto::FLOAT);
  return b.bytes();
}

int64_t items_of(const std::string& bytes, const Shape& shape) {
  CompiledModel m = compile_model(bytes.data(), bytes.size(), "split", "", CompileOptions{});
  return make_plan(m, {shape}).batch_items;
}

// A UNet's ops, and a channel Softmax after them: item by item from batch 2 on.
TEST(BatchSplit, UNetOpsGoItemByItem) {
  EXPECT_EQ(items_of(model(), {3, 4, 6, 8}), 3);
  EXPECT_EQ(items_of(model(), {1, 4, 6, 8}), 0);
  const auto softmax = [](ModelBuilder& b) {
    ModelBuilder::attr_int(b.node("Softmax", {"c2"}, {"y"}), "axis", 1);
  };
  EXPECT_EQ(items_of(model(softmax), {2, 4, 6, 8}), 2);
}

// Whole: a fixed batch axis, and ops that mix items or move the batch axis.
TEST(BatchSplit, OpsAcrossItemsKeepTheBatchWhole) {
  EXPECT_EQ(items_of(model({}, true), {3, 4, 6, 8}), 0);
  const std::vector<std::pair<const char*, std::function<void(ModelBuilder&)>>> tails = {
      {"Softmax over the batch axis",
       [](ModelBuilder& b) {
         ModelBuilder::attr_int(b.node("Softmax", {"c2"}, {"y"}), "axis", 0);
       }},
      {"ReduceMean over the batch, added back",
       [](ModelBuilder& b) {
         auto& r = b.node("ReduceMean", {"c2"}, {"m"});
         ModelBuilder::attr_ints(r, "axes", {0});
         b.node("Add", {"c2", "m"}, {"y"});
       }},
      {"a constant with a row per item",
       [](ModelBuilder& b) {
         b.initializer("rows", {3, 3, 6, 8}, pattern(3 * 3 * 6 * 8, 9));
         b.node("Mul", {"c2", "rows"}, {"y"});
       }},
      {"Concat along the batch axis",
       [](ModelBuilder& b) {
         ModelBuilder::attr_int(b.node("Concat", {"c2", "c2"}, {"y"}), "axis", 0);
       }},
      {"Transpose", [](ModelBuilder& b) {
         ModelBuilder::attr_ints(b.node("Transpose", {"c2"}, {"y"}), "perm", {1, 0, 2, 3});
       }}};
  for (const auto& [what, tail] : tails) EXPECT_EQ(items_of(model(tail), {3, 4, 6, 8}), 0) << what;
}

// Item by item on one thread, and on two threads a batch of five in groups of four and one,
// against the whole batch (VOXRT_WHOLE_BATCH=1) and the reference backend, into returned tensors
// and into the caller's buffers; the arena of one group instead of the whole batch's.
TEST(BatchSplit, ItemByItemMatchesTheWholeBatch) {
  const std::string bytes = model();
  const Tensor x = random_input({5, 4, 6, 8}, 5);
  SessionOptions ref_options;
  ref_options.backend = Backend::reference;
  ref_options.optimize = false;
  Session ref(bytes.data(), bytes.size(), ref_options);
  const Tensor want = ref.run({{"x", x}})[0];
  for (int threads : {1, 2}) {
    SessionOptions o;
    o.threads = threads;
    Session s(bytes.data(), bytes.size(), o);
    Tensor split = s.run({{"x", x}})[0];
    std::vector<float> buffer(static_cast<size_t>(split.numel()), 7.0f);
    std::vector<NamedTensor> outs = {{"y", Tensor::view(DType::f32, split.shape(), buffer.data())}};
    s.run({{"x", x}}, outs);
    const int64_t split_bytes = s.summary({{"x", Shape{5, 4, 6, 8}}}).activation_bytes;
    setenv("VOXRT_WHOLE_BATCH", "1", 1);
    Tensor whole = s.run({{"x", x}})[0];
    const int64_t whole_bytes = s.summary({{"x", Shape{5, 4, 6, 8}}}).activation_bytes;
    unsetenv("VOXRT_WHOLE_BATCH");
    EXPECT_LT(rel_l2(split, want), 1e-5) << threads << " threads";
    EXPECT_LT(rel_l2(outs[0].tensor, want), 1e-5) << threads << " threads, the caller's buffer";
    EXPECT_LT(rel_l2(whole, want), 1e-5) << threads << " threads, whole";
    // One group's arena (one item, or four) and the batch's output, against five items' arena.
    EXPECT_LT(split_bytes, threads == 1 ? whole_bytes / 2 : whole_bytes)
        << threads << " threads: " << split_bytes << " against " << whole_bytes;
  }
}

// Profiled, a batch of three on one thread lists each node once an item, in order, the item's
// first batch item marked; the groups' MACs add up to the whole batch's.
TEST(BatchSplit, ProfileListsEachGroupsNodes) {
  const std::string bytes = model();
  SessionOptions o;
  o.profiling = true;
  Session s(bytes.data(), bytes.size(), o);
  const Tensor x = random_input({3, 4, 6, 8}, 6);
  s.run({{"x", x}});
  const std::vector<NodeProfile> groups = s.last_profile();
  setenv("VOXRT_WHOLE_BATCH", "1", 1);
  s.run({{"x", x}});
  unsetenv("VOXRT_WHOLE_BATCH");
  const std::vector<NodeProfile> whole = s.last_profile();
  ASSERT_FALSE(whole.empty());
  ASSERT_EQ(groups.size(), 3 * whole.size());
  int64_t group_macs = 0, whole_macs = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const NodeProfile& n = groups[i];
    EXPECT_EQ(n.node, whole[i % whole.size()].node);
    EXPECT_EQ(n.first_item, static_cast<int64_t>(i / whole.size()));
    ASSERT_FALSE(n.output_shapes.empty());
    EXPECT_EQ(n.output_shapes[0][0], 1);
    if (i > 0) {
      EXPECT_GE(n.start_ms, groups[i - 1].start_ms);
    }
    group_macs += n.macs;
  }
  for (const NodeProfile& n : whole) {
    EXPECT_EQ(n.first_item, 0);
    whole_macs += n.macs;
  }
  EXPECT_EQ(group_macs, whole_macs);
  EXPECT_GT(whole_macs, 0);
}

}  // namespace
}  // namespace voxrt::test
