// The direct convolution's slabs, rings and bands under small budgets and several threads, where
// each thread may own a range of planes or rows (conv_direct.cpp), against the reference ops on
// every ISA path this CPU allows.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "backends/cpu/conv/conv_gemm.h"
#include "backends/cpu/cpu_features.h"
#include "conv_cases.h"
#include "runtime/scratch.h"
#include "runtime/thread_pool.h"

namespace voxrt::cpu::conv_cases {
namespace {

class ConvRangesTest : public ConvLoweringTest {};

// The direct path's shared slab as a ring of input planes (conv_direct.cpp): with a budget of a
// few planes, every layer's slabs cycle through the ring, output planes read slots that wrap
// past its end, and each slab copies only the planes the one before lacked. Budgets of one byte
// (a slab of one output plane, the ring as deep as the kernel's reach) and of a few KiB (a few
// output planes a slab), with strides, dilations and both thread counts.
TEST_P(ConvRangesTest, SlabRingsMatchReference) {
  for (int64_t budget : {int64_t{1}, int64_t{6} << 10}) {
    const SlabBudget scoped(budget);
    ThreadPool pool(2);
    std::mt19937 rng(23);
    int k = 0;
    for (const ConvCase& c : unet_cases())
      if (c.op != "ConvTranspose")
        for (DType t : {DType::f32, DType::f16})
          check(c, t, GetParam(), ++k % 2 ? &pool : nullptr, rng);
    check_random_cases(20, 29, GetParam(), [](std::mt19937& r, int attempt) {
      return random_conv(r, 3 - attempt % 2);
    });
  }
}

// A random 3D convolution 16 to 40 input planes deep, mostly of depth stride 1 (planes enough for
// three threads' ranges), every other one fused with LeakyRelu and at times a residual.
ConvCase deep_random_conv(std::mt19937& rng, int attempt) {
  ConvCase c = random_conv(rng, 3);
  c.x[2] = std::uniform_int_distribution<int64_t>(16, 40)(rng);
  if (attempt % 3 != 0) c.attrs["strides"].is[0] = 1;
  if (attempt % 2 == 1) {
    c.op = "FusedConv";
    c.residual = attempt % 4 == 1;
    c.activation = "LeakyRelu";
  }
  return c;
}

// With planes enough, each thread takes its own range of output planes through a ring of its
// own (conv_direct.cpp, `owned`): inputs 16 to 40 planes deep on two and three threads, with
// budgets from the default (slabs of many planes) down to a few KiB (rings of the kernel's
// reach, one output plane a slab, that wrap every plane), random attributes, batches, groups,
// activations and residuals.
TEST_P(ConvRangesTest, ThreadRangesMatchReference) {
  for (int64_t budget : {int64_t{2} << 20, int64_t{24} << 10, int64_t{8} << 10, int64_t{3} << 10}) {
    const SlabBudget scoped(budget);
    for (int threads : {2, 3})
      check_random_cases(
          10, 37 + static_cast<uint32_t>(threads), GetParam(),
          deep_random_conv, threads, true);
  }
}

// A thread done with its own range takes slabs off the end of another's (ThreadPool::
// parallel_ranges): with the workers starting each job late (the pool's test seam), the caller
// takes over part of their ranges and rings start and stop mid-range. The owned rings at budgets
// of one output plane a slab (three threads too) and of a few, a layer wide enough for bands,
// and the gather ConvTranspose's owned slabs.
TEST_P(ConvRangesTest, RangesTakenOverMatchReference) {
  using std::chrono::microseconds;
  for (microseconds delay : {microseconds(100), microseconds(1500)}) {
    for (int64_t budget : {int64_t{3} << 10, int64_t{24} << 10}) {
      const SlabBudget scoped(budget);
      for (int threads : {2, 3})
        check_random_cases(
            4, 41 + static_cast<uint32_t>(threads), GetParam(),
            deep_random_conv, threads, true, delay);
    }
    ThreadPool pool(2);
    pool.delay_workers_for_tests(delay);
    std::mt19937 rng(43);
    {
      const SlabBudget scoped(int64_t{24} << 10);
      ConvCase wide;
      wide.x = {1, 3, 22, 60, 58};
      wide.w = {5, 3, 3, 3, 3};
      wide.ints("pads", {1, 1, 1, 1, 1, 1});
      for (DType t : {DType::f32, DType::f16}) check(wide, t, GetParam(), &pool, rng);
    }
    ConvCase up;  // owned gather slabs, three a range of 12 planes
    up.op = "ConvTranspose";
    up.x = {1, 16, 24, 64, 64};
    up.w = {16, 2, 2, 2, 2};
    up.ints("strides", {2, 2, 2});
    check(up, DType::f32, GetParam(), &pool, rng);
  }
}

// Fewer items than threads: a 2D layer of one output row at batch 2 (two items, two
// per-thread buffers) on three threads, whose third thread finds nothing to take and must not
// take a buffer either; the workers late or not.
TEST_P(ConvRangesTest, FewerItemsThanThreadsMatchReference) {
  std::mt19937 rng(47);
  ConvCase c;
  c.x = {2, 32, 1, 96};  // items long enough for the three threads to meet in them
  c.w = {32, 32, 3, 3};
  c.ints("pads", {1, 1, 1, 1});
  for (std::chrono::microseconds delay :
       {std::chrono::microseconds(0), std::chrono::microseconds(300)}) {
    ThreadPool three(3);
    three.delay_workers_for_tests(delay);
    for (int rep = 0; rep < 20; ++rep)
      for (DType t : {DType::f32, DType::f16}) check(c, t, GetParam(), &three, rng);
  }
}

// 3D layers whose planes are wide against the per-thread slab budget (their reach of planes past
// four budgets, or past one on several threads) run band by band, each band's planes through
// the ring: shared by the threads, or at 24 and 32 KiB one per thread. Even and uneven bands,
// strides, dilation, groups, a batch and a residual; fp32 and fp16, on pools of two and three
// threads and on none; the last case's reach (64.9 KB) lies between one and four budgets, so it
// keeps whole planes on one thread and runs in bands on two.
TEST_P(ConvRangesTest, WidePlanesInBandsMatchReference) {
  if (GetParam().isa == Isa::scalar) GTEST_SKIP() << "the band logic is ISA-independent";
  std::vector<ConvCase> v(6);
  v[0].x = {1, 3, 20, 60, 58};
  v[0].w = {5, 3, 3, 3, 3};
  v[0].ints("pads", {1, 1, 1, 1, 1, 1});
  v[1].x = {2, 2, 18, 64, 50};
  v[1].w = {4, 2, 3, 3, 3};
  v[1].ints("pads", {1, 1, 1, 1, 1, 1}).ints("strides", {1, 2, 1});
  v[2].x = {1, 4, 17, 49, 61};
  v[2].w = {6, 2, 3, 3, 3};
  v[2].ints("pads", {1, 2, 2, 1, 2, 2}).ints("dilations", {1, 2, 2}).i("group", 2);
  v[3].op = "FusedConv";
  v[3].residual = true;
  v[3].activation = "Relu";
  v[3].x = {1, 3, 24, 70, 45};
  v[3].w = {7, 3, 3, 3, 3};
  v[3].ints("pads", {1, 1, 1, 1, 1, 1});
  v[4].x = {1, 2, 30, 56, 56};
  v[4].w = {3, 2, 3, 3, 3};
  v[4].ints("pads", {1, 1, 1, 1, 1, 1}).ints("strides", {2, 2, 2});
  v[5].x = {1, 2, 12, 49, 51};
  v[5].w = {4, 2, 3, 3, 3};
  v[5].ints("pads", {1, 1, 1, 1, 1, 1});
  std::mt19937 rng(71);
  ThreadPool two(2), three(3);
  for (int64_t budget : {int64_t{16} << 10, int64_t{24} << 10, int64_t{32} << 10}) {
    const SlabBudget scoped(budget);
    int k = 0;
    for (const ConvCase& c : v) {
      ThreadPool* pool = k % 3 == 0 ? &two : k % 3 == 1 ? &three : nullptr;
      check(c, k % 2 ? DType::f16 : DType::f32, GetParam(), pool, rng);
      check(c, k % 2 ? DType::f32 : DType::f16, GetParam(), pool ? pool : &two, rng);
      ++k;
    }
  }
}

// Planes of a kernel one deep larger than the direct path's band budget (512 KiB of padded
// input) are computed in bands of output rows, each thread its own: even and uneven bands,
// strides, dilation, a 3D kernel one deep, batches, and rows so wide (24 channels of 1001
// columns) that the budget holds fewer than the four a band keeps (kMinBandRowsCopied). Few
// channels keep the reference cheap.
TEST_P(ConvRangesTest, LargePlanesInBandsMatchReference) {
  if (GetParam().isa == Isa::scalar) GTEST_SKIP() << "the band logic is ISA-independent";
  ThreadPool pool(2);
  std::mt19937 rng(13);
  std::vector<ConvCase> v(5);
  v[0].x = {1, 1, 730, 720};
  v[0].w = {5, 1, 3, 3};
  v[0].ints("pads", {1, 1, 1, 1});
  v[1].x = {1, 2, 600, 611};
  v[1].w = {3, 2, 3, 3};
  v[1].ints("pads", {1, 0, 1, 1}).ints("strides", {2, 2});
  v[2].x = {2, 1, 801, 677};
  v[2].w = {4, 1, 3, 3};
  v[2].ints("pads", {2, 2, 2, 2}).ints("dilations", {2, 2});
  v[3].x = {1, 2, 3, 500, 523};
  v[3].w = {4, 2, 1, 3, 3};
  v[3].ints("pads", {0, 1, 1, 0, 1, 1});
  v[4].x = {1, 24, 21, 1001};
  v[4].w = {5, 24, 3, 3};
  v[4].ints("pads", {1, 1, 1, 1});
  int k = 0;
  for (const ConvCase& c : v) {
    ++k;
    check(c, k % 2 ? DType::f32 : DType::f16, GetParam(), k % 3 ? &pool : nullptr, rng);
  }
}

// 2D layers whose panels exceed kWideA (conv_direct.cpp) compute a band one block of output
// channels at a time over all its strips, in bands of up to 2 MiB of padded input, and on
// several threads split each band's blocks into parts (a thread taking consecutive parts of a
// band fills it once). With the threshold at 0 every 2D layer does: random ones (groups,
// strides, dilation, several blocks of output channels, fused activations, residuals, X in
// parts), on two threads and on three whose workers start late (parts taken over), fp16 panels
// widened a block at a time, rows long enough for several bands, and short ones whose strips
// cross rows (scratch tiles). And one layer past the default threshold (1.1 MB of fp32 panels:
// 240 x 128 x 3 x 3), as it comes.
TEST_P(ConvRangesTest, WidePanelsBlockByBlockMatchReference) {
  std::mt19937 rng(53);
  ThreadPool pool(2);
  {
    const WidePanelsAbove scoped(0);
    check_random_cases(24, 59, GetParam(), [](std::mt19937& r, int attempt) {
      ConvCase c = random_conv(r, 2);
      c.w[0] = c.x[1] / c.w[1] * 19;  // 19 output channels a group: blocks, the last partial
      if (attempt % 2 == 1) {
        c.op = "FusedConv";
        c.residual = attempt % 4 == 1;
        c.activation = attempt % 3 == 0 ? "Relu" : "LeakyRelu";
        if (attempt % 3 == 2 && c.x[1] >= 2 && c.x[1] == c.w[1]) c.x_parts = {1, c.x[1] - 1};
      }
      return c;
    });
    auto many_blocks = [](std::mt19937& r, int) {
      ConvCase c = random_conv(r, 2);
      c.w[0] = c.x[1] / c.w[1] * 43;  // blocks enough to split, the last partial
      return c;
    };
    check_random_cases(8, 61, GetParam(), many_blocks, 3, true, std::chrono::microseconds(300));
    if (GetParam().fpmath != FpMath::bf16) {
      // fp16-kept panels widened a block at a time within each part.
      const test::ScopedSetting<size_t, &APanels::set_widen_budget> widen(512);
      check_random_cases(6, 67, GetParam(), many_blocks, 2, true);
    }
    ConvCase rows;
    rows.op = "FusedConv";
    rows.residual = true;
    rows.activation = "Relu";
    rows.x = {1, 3, 70, 41};  // 70 rows: bands of 8 or more rows, several per thread
    rows.w = {21, 3, 3, 3};
    rows.ints("pads", {1, 1, 1, 1});
    ConvCase short_rows;
    short_rows.x = {2, 4, 30, 11};  // 11-wide rows: strips across rows
    short_rows.w = {17, 4, 3, 3};
    short_rows.ints("pads", {1, 1, 1, 1});
    for (const ConvCase* c : {&rows, &short_rows})
      for (DType t : {DType::f32, DType::f16}) {
        check(*c, t, GetParam(), &pool, rng);
        check(*c, t, GetParam(), nullptr, rng);
      }
  }
  ConvCase wide;
  wide.x = {1, 128, 12, 13};
  wide.w = {240, 128, 3, 3};
  wide.ints("pads", {1, 1, 1, 1});
  check(wide, DType::f32, GetParam(), &pool, rng);
  check(wide, DType::f16, GetParam(), nullptr, rng);
}

// A thread's own rings (the direct conv's owned rings, a 2D layer's band buffers, the gather
// ConvTranspose's owned slabs) come from its own scratch cache, RunContext::own_scratch, none
// from the shared one (fp32 panels, kept whole, take no scratch either): on two threads the
// threads' caches have held blocks (which thread gets items is the scheduler's) and the shared
// cache nothing, and the outputs match the reference. The mapping falls back to the shared
// cache for threads without a cache of their own.
TEST(ConvOwnScratch, ThreadsRingsComeFromTheirOwnCaches) {
  ThreadPool pool(2);
  std::mt19937 rng(31);
  std::vector<ConvCase> v(3);
  v[0].x = {1, 4, 20, 11, 13};  // depth enough for two owned ranges
  v[0].w = {8, 4, 3, 3, 3};
  v[0].ints("pads", {1, 1, 1, 1, 1, 1});
  v[1].x = {1, 3, 40, 37};  // a 2D layer: each thread its bands
  v[1].w = {8, 3, 3, 3};
  v[1].ints("pads", {1, 1, 1, 1});
  v[2].op = "ConvTranspose";  // kernel 3, stride 2: the gather form
  v[2].x = {1, 4, 12, 7, 9};
  v[2].w = {4, 3, 3, 3, 3};
  v[2].ints("strides", {2, 2, 2})
      .ints("pads", {1, 1, 1, 1, 1, 1})
      .ints("output_padding", {1, 1, 1});
  for (const ConvCase& c : v) {
    Built b;
    ASSERT_TRUE(build(c, DType::f32, rng, b)) << c.str();
    const ir::Node& n = b.graph.nodes[0];
    std::vector<const Tensor*> in = {&b.x, &b.w, c.bias ? &b.b : nullptr};
    std::vector<Tensor> want = {Tensor::zeros(DType::f32, b.y)};
    OpRegistry::instance().create(n, b.graph)->compute(in, want);
    std::unique_ptr<Op> fast =
        CpuRegistry::instance().lower(n, b.graph, OpRegistry::instance().create(n, b.graph),
                                      std::min(Isa::avx512, usable_isa()), FpMath::strict);
    ScratchCache shared, own[2];
    const RunContext ctx{&pool, &shared, nullptr, own, 2};
    EXPECT_EQ(ctx.own_scratch(0), &own[0]);
    EXPECT_EQ(ctx.own_scratch(1), &own[1]);
    EXPECT_EQ(ctx.own_scratch(2), &shared);
    EXPECT_EQ(ctx.own_scratch(-1), &shared);
    std::vector<Tensor> got = {Tensor::empty(DType::f32, b.y)};
    fast->run(ctx, in, got);
    EXPECT_LT(rel_l2(got[0], want[0]), 1e-5) << fast->kernel_name() << " " << c.str();
    EXPECT_GT(own[0].peak_bytes() + own[1].peak_bytes(), 0u)
        << c.str() << ": the threads' rings from their own caches";
    EXPECT_EQ(shared.peak_bytes(), 0u) << c.str() << ": no ring from the shared cache";
  }
}

INSTANTIATE_TEST_SUITE_P(Path, ConvRangesTest, ::testing::ValuesIn(kPaths), path_name);

}  // namespace
}  // namespace voxrt::cpu::conv_cases
