// The CPU backend's Conv, voxrt.FusedConv and ConvTranspose (gemm drivers) against the reference
// ops on random shapes and attributes, for f32 and f16, under every ISA cap this CPU allows, with
// and without bf16 products (FpMath::bf16).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/conv/conv_gemm.h"
#include "backends/cpu/cpu_op.h"
#include "conv_cases.h"
#include "runtime/thread_pool.h"

namespace voxrt::cpu::conv_cases {
namespace {

TEST_P(ConvLoweringTest, UNetShapesMatchReference) {
  ThreadPool pool(3);
  std::mt19937 rng(11);
  int k = 0;
  for (const ConvCase& c : unet_cases())
    for (DType t : {DType::f32, DType::f16})
      check(c, t, GetParam(), ++k % 2 ? &pool : nullptr, rng);
}

// fp16 convolutions whose fp32 output is a fused Cast's (the last layer of an fp16 model that
// keeps fp32 outputs): every path (1x1 pointwise tiles, the direct path in place and through
// scratch tiles across short rows, the packed path at width stride 3), with the residual and the
// activation. Held to the fp32 bound, which an output rounded to fp16 on the way misses.
TEST_P(ConvLoweringTest, FusedCastToFp32MatchesReference) {
  ThreadPool pool(2);
  std::mt19937 rng(13);
  std::vector<ConvCase> cases;
  auto add = [&](Shape x, Shape w) -> ConvCase& {
    return add_case(cases, "FusedConv", std::move(x), std::move(w)).i(kFusedCastTo, 1);
  };
  add({1, 16, 7, 8, 9}, {3, 16, 1, 1, 1}).activation = "Relu";
  add({2, 8, 6, 7, 9}, {3, 8, 3, 3, 3}).ints("pads", {1, 1, 1, 1, 1, 1}).residual = true;
  add({1, 8, 6, 7, 9}, {12, 8, 3, 3, 3})
      .ints("pads", {1, 1, 1, 1, 1, 1})
      .i(kResidualAfterActivation, 1)
      .activation = "LeakyRelu";
  add({1, 5, 5, 4, 3}, {7, 5, 3, 3, 3}).ints("pads", {1, 1, 1, 1, 1, 1}).residual = true;
  add({1, 4, 9, 10, 13}, {6, 4, 3, 3, 3}).ints("strides", {1, 1, 3}).activation = "Relu";
  add({1, 6, 20, 23}, {3, 6, 3, 3}).ints("pads", {1, 1, 1, 1});
  int k = 0;
  for (const ConvCase& c : cases) check(c, DType::f16, GetParam(), ++k % 2 ? &pool : nullptr, rng);
}

// FusedConvs with a 1x1 head (and softmax over its channels) on every path: the direct path's
// strips in 3D (owned depth ranges, and a shared ring at depths too few to own) and in 2D, rows
// short enough for strips across rows (scratch tiles), several blocks of MR output channels
// before the head, a residual, parts of X, a fused Cast to fp32, and the paths that run the
// convolution into a tensor of its own first (1x1 pointwise tiles; the packed path at width
// stride 9). The fp16 reference rounds the M channels to fp16 before the head; the fused op
// keeps them in fp32 (within the fp16 bound).
TEST_P(ConvLoweringTest, FusedHeadMatchesReference) {
  ThreadPool pool(2);
  std::mt19937 rng(23);
  std::vector<ConvCase> cases;
  const std::vector<int64_t> pads3 = {1, 1, 1, 1, 1, 1};
  auto add = [&](Shape x, Shape w, int64_t head) -> ConvCase& {
    ConvCase& c = add_case(cases, "FusedConv", std::move(x), std::move(w));
    c.head = head;
    return c;
  };
  add({1, 8, 9, 10, 11}, {8, 8, 3, 3, 3}, 3).ints("pads", pads3).activation = "Relu";
  add({1, 8, 5, 12, 13}, {8, 8, 3, 3, 3}, 3).ints("pads", pads3).head_softmax = true;
  ConvCase& res = add({2, 6, 9, 7, 6}, {5, 6, 3, 3, 3}, 4).ints("pads", pads3);
  res.residual = true;
  res.activation = "LeakyRelu";
  res.head_bias = false;
  res.head_softmax = true;
  add({1, 8, 10, 9, 8}, {20, 8, 3, 3, 3}, 3).ints("pads", pads3).activation = "Relu";
  add({1, 8, 8, 6, 7}, {6, 8, 3, 3, 3}, 2).ints("pads", pads3).x_parts = {3, 5};
  add({2, 6, 20, 23}, {5, 6, 3, 3}, 3).ints("pads", {1, 1, 1, 1}).head_softmax = true;
  add({1, 4, 30, 7}, {8, 4, 3, 3}, 2).ints("pads", {1, 1, 1, 1}).activation = "Relu";
  add({1, 16, 7, 8, 9}, {8, 16, 1, 1, 1}, 3).head_softmax = true;
  add({1, 4, 5, 6, 130}, {6, 4, 3, 3, 3}, 2).ints("strides", {1, 1, 9}).activation = "Relu";
  add({1, 8, 6, 7, 9}, {8, 8, 3, 3, 3}, 3).ints("pads", pads3).i(kFusedCastTo, 1).head_softmax =
      true;
  int k = 0;
  for (const ConvCase& c : cases)
    for (DType t : {DType::f32, DType::f16}) {
      if (c.attrs.count(kFusedCastTo) && t == DType::f32) continue;  // fp16 storage only
      check(c, t, GetParam(), ++k % 2 ? &pool : nullptr, rng);
    }
}

// Parts of X read upsampled by 2 (a Resize fused into the convolution, x_upsample), stored at odd
// sizes, against the reference on X made whole: the direct path in 3D and 2D with a plain part
// beside (a UNet decoder's Concat), nearest and the three linear modes (corner-aligned and
// asymmetric through the width's tables, also on an axis of one input), one and two threads (bands
// of rows, each band's rows made on the thread that copies them), width stride 2 (phases of
// upsampled rows), a tap pair's channel (bf16 products from one input channel), and the paths that
// read X joined: 1x1 tiles and the packed path (width stride 9); and parts resized to the others'
// size (below).
TEST_P(ConvLoweringTest, UpsampledPartsMatchReference) {
  ThreadPool pool(2);
  std::mt19937 rng(37);
  std::vector<ConvCase> cases;
  const std::vector<int64_t> pads3 = {1, 1, 1, 1, 1, 1};
  auto add = [&](Shape x, Shape w, std::vector<int64_t> parts,
                 std::vector<int64_t> modes) -> ConvCase& {
    ConvCase& c = add_case(cases, "FusedConv", std::move(x), std::move(w));
    c.x_parts = std::move(parts);
    c.x_upsample = std::move(modes);
    return c;
  };
  add({1, 7, 10, 14, 18}, {6, 7, 3, 3, 3}, {4, 3}, {2, 0}).ints("pads", pads3).activation = "Relu";
  add({2, 5, 6, 10, 22}, {4, 5, 3, 3, 3}, {2, 3}, {0, 1}).ints("pads", pads3);
  add({1, 5, 8, 10, 26}, {4, 5, 3, 3, 3}, {3, 2}, {3, 4}).ints("pads", pads3);  // tables
  add({1, 4, 2, 16, 40}, {6, 4, 3, 3, 3}, {4}, {3}).ints("pads", pads3);        // one input plane
  add({1, 3, 8, 12, 14}, {9, 3, 3, 3, 3}, {3}, {2}).ints("pads", pads3).residual = true;
  add({1, 6, 34, 50}, {5, 6, 3, 3}, {5, 1}, {2, 1}).ints("pads", {1, 1, 1, 1});
  add({1, 4, 12, 18, 20}, {8, 4, 3, 3, 3}, {2, 2}, {2, 2})
      .ints("pads", pads3)
      .ints("strides", {2, 2, 2});
  add({1, 1, 8, 10, 98}, {8, 1, 3, 3, 3}, {1}, {2}).ints("pads", pads3);  // one channel: tap pairs
  add({1, 6, 6, 8, 10}, {5, 6, 1, 1, 1}, {3, 3}, {1, 2});                 // 1x1
  add({1, 4, 4, 6, 130}, {6, 4, 3, 3, 3}, {2, 2}, {0, 2}).ints("strides", {1, 1, 9});  // packed
  // Resized to the plain part's size from about 3/5 of it (a Resize given sizes, `_sized`): every
  // interpolation through the tables, a part beside each, 3D and 2D, a ratio of one on an axis of
  // two, the bands of two threads, width stride 2, and the joined paths.
  add({1, 7, 10, 14, 18}, {6, 7, 3, 3, 3}, {4, 3}, {6, 0}).ints("pads", pads3).activation = "Relu";
  add({2, 5, 2, 10, 21}, {4, 5, 3, 3, 3}, {2, 3}, {0, 5}).ints("pads", pads3);
  add({1, 6, 8, 11, 26}, {4, 6, 3, 3, 3}, {3, 2, 1}, {7, 8, 0}).ints("pads", pads3);
  add({1, 6, 34, 51}, {5, 6, 3, 3}, {1, 5}, {0, 6}).ints("pads", {1, 1, 1, 1});
  add({1, 4, 12, 18, 20}, {8, 4, 3, 3, 3}, {2, 2}, {0, 5})
      .ints("pads", pads3)
      .ints("strides", {2, 2, 2});
  add({1, 6, 6, 8, 10}, {5, 6, 1, 1, 1}, {3, 3}, {0, 6});                              // 1x1
  add({1, 4, 4, 6, 130}, {6, 4, 3, 3, 3}, {2, 2}, {7, 0}).ints("strides", {1, 1, 9});  // packed
  int k = 0;
  for (const ConvCase& c : cases)
    for (DType t : {DType::f32, DType::f16})
      check(c, t, GetParam(), ++k % 2 ? &pool : nullptr, rng);
}

// A part of X that a ConvTranspose of kernel and stride 2 makes (x_transposed: the up-convolution
// fused into the convolution after it), against the reference on X made whole: the direct path
// in 3D with the skip before or after it (each thread its depths, and a shared ring at depths too
// few to own), batch 2, no bias, more up channels than a micro-panel's rows, the part alone with
// a residual, a head after the convolution, width stride 2, 2D, and the paths that read X joined
// (1x1 tiles, the packed path at width stride 9); one and two threads.
TEST_P(ConvLoweringTest, TransposedPartsMatchReference) {
  ThreadPool pool(2);
  std::mt19937 rng(41);
  std::vector<ConvCase> cases;
  const std::vector<int64_t> pads3 = {1, 1, 1, 1, 1, 1};
  auto add = [&](Shape x, Shape w, std::vector<int64_t> parts, int64_t transposed) -> ConvCase& {
    ConvCase& c = add_case(cases, "FusedConv", std::move(x), std::move(w));
    c.x_parts = std::move(parts);
    c.x_transposed = transposed;
    return c;
  };
  add({1, 7, 12, 14, 18}, {6, 7, 3, 3, 3}, {4, 3}, 1).ints("pads", pads3).activation = "Relu";
  ConvCase& first = add({2, 5, 6, 10, 22}, {4, 5, 3, 3, 3}, {3, 2}, 0).ints("pads", pads3);
  first.transposed_bias = false;
  first.transposed_in = 9;
  add({1, 6, 4, 30, 34}, {5, 6, 3, 3, 3}, {3, 3}, 1).ints("pads", pads3);    // shared ring
  add({1, 22, 6, 8, 10}, {6, 22, 3, 3, 3}, {2, 20}, 1).ints("pads", pads3);  // 20 up channels
  add({1, 4, 8, 6, 12}, {4, 4, 3, 3, 3}, {4}, 0).ints("pads", pads3).residual = true;
  add({1, 8, 8, 6, 8}, {6, 8, 3, 3, 3}, {3, 5}, 1).ints("pads", pads3).head = 2;
  add({1, 4, 12, 18, 20}, {8, 4, 3, 3, 3}, {2, 2}, 0)
      .ints("pads", pads3)
      .ints("strides", {2, 2, 2});
  add({1, 6, 34, 50}, {5, 6, 3, 3}, {2, 4}, 1).ints("pads", {1, 1, 1, 1}).activation = "Relu";
  add({2, 5, 20, 26}, {4, 5, 3, 3}, {3, 2}, 0).ints("pads", {1, 1, 1, 1});
  add({1, 6, 6, 8, 10}, {5, 6, 1, 1, 1}, {3, 3}, 1);                              // 1x1
  add({1, 4, 4, 6, 130}, {6, 4, 3, 3, 3}, {2, 2}, 1).ints("strides", {1, 1, 9});  // packed
  int k = 0;
  for (const ConvCase& c : cases)
    for (DType t : {DType::f32, DType::f16})
      check(c, t, GetParam(), ++k % 2 ? &pool : nullptr, rng);
}

// Each output channel's own LeakyRelu slope (a FusedConv computing sibling convolutions,
// passes/fuse_sibling_convs.cpp) on every path: the direct one in 3D at unit and width stride 2
// (MONAI's residual unit from one and from eight channels), in 2D bands, several MR blocks with
// the slopes' pattern crossing them, grouped, with a residual; 1x1 tiles; the packed path.
TEST_P(ConvLoweringTest, ChannelSlopesMatchReference) {
  ThreadPool pool(2);
  std::mt19937 rng(29);
  std::vector<ConvCase> cases;
  const std::vector<int64_t> pads3 = {1, 1, 1, 1, 1, 1};
  auto add = [&](Shape x, Shape w) -> ConvCase& {
    ConvCase& c = add_case(cases, "FusedConv", std::move(x), std::move(w));
    c.slopes = true;
    return c;
  };
  add({1, 1, 12, 14, 16}, {16, 1, 3, 3, 3}).ints("pads", pads3).ints("strides", {2, 2, 2});
  add({1, 8, 10, 9, 12}, {32, 8, 3, 3, 3}).ints("pads", pads3).ints("strides", {2, 2, 2});
  add({2, 6, 7, 8, 9}, {13, 6, 3, 3, 3}).ints("pads", pads3);
  add({1, 6, 20, 23}, {10, 6, 3, 3}).ints("pads", {1, 1, 1, 1});
  add({1, 8, 6, 7, 8}, {12, 4, 3, 3, 3}).ints("pads", pads3).i("group", 2);
  add({1, 16, 7, 8, 9}, {11, 16, 1, 1, 1});
  add({1, 4, 5, 6, 130}, {6, 4, 3, 3, 3}).ints("strides", {1, 1, 9});
  add({1, 5, 6, 7, 8}, {9, 5, 3, 3, 3}).ints("pads", pads3).residual = true;
  int k = 0;
  for (const ConvCase& c : cases)
    for (DType t : {DType::f32, DType::f16})
      check(c, t, GetParam(), ++k % 2 ? &pool : nullptr, rng);
}

// The packed path's two ways of packing im2col panels (conv_gemm.cpp): rows longer than
// kShortRow at a width stride the direct path leaves to it, packed in runs from X; short rows
// (a deep layer at 4^3, strided or dilated small planes), gathered from a zero-padded copy.
TEST_P(ConvLoweringTest, PackedPathsMatchReference) {
  ThreadPool pool(2);
  std::mt19937 rng(19);
  std::vector<ConvCase> cases;
  auto add = [&](Shape x, Shape w) -> ConvCase& {
    return add_case(cases, "Conv", std::move(x), std::move(w));
  };
  add({1, 3, 5, 200}, {4, 3, 3, 3}).ints("strides", {1, 9}).ints("pads", {1, 1, 1, 1});
  add({1, 3, 4, 150}, {5, 3, 1, 3}).ints("strides", {1, 10}).ints("dilations", {1, 2});
  add({1, 2, 7, 6, 130}, {3, 2, 2, 3, 3})
      .ints("strides", {2, 1, 9})
      .ints("dilations", {2, 2, 1})
      .ints("pads", {1, 2, 1, 0, 1, 2});
  add({1, 20, 4, 4, 4}, {24, 20, 3, 3, 3}).ints("pads", {1, 1, 1, 1, 1, 1});
  add({2, 9, 7, 6, 5}, {10, 9, 3, 3, 3})
      .ints("strides", {2, 2, 2})
      .ints("pads", {1, 0, 1, 1, 1, 0});
  add({1, 1, 6, 5, 7}, {8, 1, 3, 3, 3})
      .ints("dilations", {2, 1, 2})
      .ints("pads", {2, 1, 2, 2, 1, 2});
  int k = 0;
  for (const ConvCase& c : cases)
    for (DType t : {DType::f32, DType::f16})
      check(c, t, GetParam(), ++k % 2 ? &pool : nullptr, rng);
}

// Windows no UNet has, found by fuzz/: an input with no elements whose padding still makes an
// output (every output is the bias; ConvTranspose's tiling divided by the zero columns it had to
// tile), and a ConvTranspose whose width stride is far wider than its output (its accumulator
// rows held stride-many phases: 8 GiB for a stride of 2^31 - 1).
TEST_P(ConvLoweringTest, DegenerateWindowsMatchReference) {
  std::mt19937 rng(17);
  std::vector<ConvCase> cases;
  auto add = [&](const char* op, Shape x, Shape w) -> ConvCase& {
    return add_case(cases, op, std::move(x), std::move(w));
  };
  add("Conv", {1, 2, 0, 5}, {3, 2, 1, 1}).ints("pads", {1, 0, 1, 0});
  add("Conv", {1, 3, 0, 2, 2}, {4, 3, 3, 3, 3}).ints("pads", {2, 1, 1, 2, 1, 1});
  add("ConvTranspose", {1, 2, 0}, {2, 3, 3});
  add("ConvTranspose", {1, 2, 0, 2, 2}, {2, 2, 3, 3, 3});
  add("ConvTranspose", {1, 2, 0, 2, 2}, {2, 2, 3, 3, 3}).ints("strides", {2, 2, 2});
  add("ConvTranspose", {1, 3, 7, 0}, {3, 4, 3, 3}).ints("dilations", {1, 2});  // scatter form
  add("ConvTranspose", {2, 4, 1}, {4, 4, 5}).ints("strides", {2147483647}).ints("pads", {2, 2});
  add("ConvTranspose", {1, 3, 2, 2}, {3, 2, 1, 3})
      .ints("strides", {1, 9})
      .ints("pads", {0, 2, 0, 3});
  for (const ConvCase& c : cases)
    for (DType t : {DType::f32, DType::f16}) check(c, t, GetParam(), nullptr, rng);
}

TEST_P(ConvLoweringTest, RandomConvAttributesMatchReference) {
  check_random_cases(60, 5, GetParam(), [](std::mt19937& rng, int attempt) {
    ConvCase c = random_conv(rng, 1 + attempt % 3);
    if (attempt % 4 == 3) {
      c.op = "FusedConv";
      c.residual = attempt % 8 == 3;
      if (attempt % 16 == 11) c.i(kResidualAfterActivation, 1);
      c.activation = attempt % 3 == 0 ? "Relu" : "LeakyRelu";
    }
    // X in parts (a fused Concat), cut at odd places so bf16 channel pairs straddle them.
    if (attempt % 2 == 1 && c.x[1] >= 2) {
      if (c.op == "Conv") c.op = "FusedConv";
      int64_t first = std::uniform_int_distribution<int64_t>(1, c.x[1] - 1)(rng);
      c.x_parts = {first, c.x[1] - first};
      if (c.x_parts[1] >= 2 && attempt % 3 == 0) c.x_parts = {first, 1, c.x[1] - first - 1};
      if (attempt % 5 == 1) {
        // Parts read upsampled (a fused Resize): X's spatial axes even, each part's mode random,
        // the first upsampled.
        for (size_t d = 2; d < c.x.size(); ++d) c.x[d] += c.x[d] % 2;
        for (size_t p = 0; p < c.x_parts.size(); ++p)
          c.x_upsample.push_back(p == 0 ? 1 + attempt / 5 % 4
                                        : std::uniform_int_distribution<int64_t>(0, 4)(rng));
      }
    } else if (attempt % 4 == 2 || (attempt % 8 == 3 && c.residual)) {
      // X and the residual read from wider tensors (a Split's outputs read in place), from
      // channel 0, 1 or 2 on: odd ones put bf16 channel pairs across a batch item's planes.
      if (c.op == "Conv") c.op = "FusedConv";
      c.x_from = attempt % 3;
      if (c.residual) c.residual_from = (attempt / 3) % 3;
    }
    return c;
  });
}

TEST_P(ConvLoweringTest, RandomConvTransposeAttributesMatchReference) {
  check_random_cases(40, 9, GetParam(), [](std::mt19937& rng, int attempt) {
    ConvCase c = random_conv_transpose(rng, 1 + attempt % 3);
    if (attempt % 4 == 1) {
      c.op = "FusedConvTranspose";
      c.activation = attempt % 8 == 1 ? "Relu" : "LeakyRelu";
    }
    // X in parts (a fused Concat: MONAI's up-convolutions), cut at odd places.
    if (attempt % 3 == 2 && c.x[1] >= 2) {
      c.op = "FusedConvTranspose";
      int64_t first = std::uniform_int_distribution<int64_t>(1, c.x[1] - 1)(rng);
      c.x_parts = {first, c.x[1] - first};
    }
    return c;
  });
}

// Overlapping transposed convolutions on large planes, in blocks of output planes. The scatter
// form (groups or dilation) sums blocks within one work item's budget: MONAI's 3x3x3 stride-2
// up-convolution made grouped, and an odd stride with dilation (blocks at both ends of the depth
// drop taps). The gather form pads slabs of input planes within its budget: MONAI's up-conv on
// planes large enough for several slabs (with bf16 pairs), a 2D one, and MONAI's up-conv deep
// enough for each of two threads to take its own range of planes through its own slab (its X in
// two parts, a fused Concat).
TEST_P(ConvLoweringTest, ConvTransposeBlocksMatchReference) {
  ThreadPool pool(2);
  std::mt19937 rng(17);
  std::vector<ConvCase> v(5);
  for (ConvCase& c : v) c.op = "ConvTranspose";
  v[0].op = "FusedConvTranspose";  // MONAI's up-conv, then PReLU as LeakyRelu
  v[0].activation = "LeakyRelu";
  v[0].x = {1, 6, 11, 40, 37};
  v[0].w = {6, 7, 3, 3, 3};
  v[0].ints("strides", {2, 2, 2}).ints("pads", {1, 1, 1, 1, 1, 1}).i("group", 2);
  v[0].ints("output_padding", {1, 1, 1});
  v[1].x = {1, 4, 9, 31, 30};
  v[1].w = {4, 6, 3, 2, 3};
  v[1].ints("strides", {3, 1, 3}).ints("dilations", {2, 1, 1}).ints("pads", {2, 1, 0, 1, 0, 1});
  v[2].op = "FusedConvTranspose";
  v[2].activation = "Relu";
  v[2].x = {1, 1, 12, 160, 161};  // two slabs of bf16 pairs (1 MiB budget)
  v[2].w = {1, 1, 3, 3, 3};
  v[2].ints("strides", {2, 2, 2}).ints("pads", {1, 1, 1, 1, 1, 1});
  v[2].ints("output_padding", {1, 1, 0});
  v[3].x = {2, 3, 150, 161};
  v[3].w = {3, 4, 3, 3};
  v[3].ints("strides", {2, 2}).ints("pads", {1, 0, 1, 1});
  v[4].op = "FusedConvTranspose";
  v[4].activation = "LeakyRelu";
  v[4].x = {2, 5, 11, 14, 13};
  v[4].w = {5, 4, 3, 3, 3};
  v[4].ints("strides", {2, 2, 2}).ints("pads", {1, 1, 1, 1, 1, 1});
  v[4].ints("output_padding", {1, 0, 1});
  v[4].x_parts = {2, 3};  // a fused Concat, read in place on each thread's own range
  v[0].x_parts = {2, 4};  // the scatter form reads a joined copy
  int k = 0;
  for (const ConvCase& c : v) {
    ++k;
    if (k == 5) {  // on the pool only: with two threads, ranges of their own
      check(c, DType::f32, GetParam(), &pool, rng);
      check(c, DType::f16, GetParam(), &pool, rng);
      continue;
    }
    if (k == 3) {  // the large one once, where it takes several slabs
      if (GetParam().fpmath == FpMath::bf16) check(c, DType::f16, GetParam(), &pool, rng);
      continue;
    }
    check(c, k % 2 ? DType::f32 : DType::f16, GetParam(), k % 3 ? &pool : nullptr, rng);
    check(c, k % 2 ? DType::f16 : DType::f32, GetParam(), k % 3 ? nullptr : &pool, rng);
  }
}

// Kernel-equals-stride up-convolutions (nnU-Net's) with kernel 2 along the width interleave their
// two width taps into the output with non-temporal stores where the output exceeds
// streams_output's threshold: here every output does. Output rows of 16 elements (every one
// aligned), 14, 26 and 18 (some), fp32 and fp16, on the pool and off it.
TEST_P(ConvLoweringTest, StreamedConvTransposeMatchesReference) {
  const test::ScopedSetting<int64_t, &set_stream_above> streamed(0);  // every output streamed
  ThreadPool pool(2);
  std::mt19937 rng(23);
  std::vector<ConvCase> cases;
  add_case(cases, "ConvTranspose", {1, 8, 4, 5, 8}, {8, 6, 2, 2, 2}).ints("strides", {2, 2, 2});
  add_case(cases, "ConvTranspose", {2, 3, 3, 4, 7}, {3, 5, 2, 2, 2}).ints("strides", {2, 2, 2});
  add_case(cases, "ConvTranspose", {1, 4, 9, 13}, {4, 3, 2, 2}).ints("strides", {2, 2});
  ConvCase& fused = add_case(cases, "FusedConvTranspose", {1, 5, 3, 6, 9}, {5, 4, 1, 2, 2})
                        .ints("strides", {1, 2, 2});
  fused.activation = "Relu";
  int k = 0;
  for (const ConvCase& c : cases)
    for (DType t : {DType::f32, DType::f16})
      check(c, t, GetParam(), ++k % 2 ? &pool : nullptr, rng);
}

// Rows with fp16 storage keep their panels as fp16 between runs and widen them as they go: to
// fp32 for fp32 arithmetic (F16C), to fp16 pairs for AVX512-FP16 (emulated where the CPU lacks it).
// With a budget of a few hundred bytes every convolution here widens them block by block (the
// direct path per slab and block, the packed path per item and block), which only layers with
// megabytes of weights do at the default budget; the outputs stay the reference's. ConvTranspose's
// gather form widens a block of MR output channels (every phase) at a time, its other forms whole
// panels. The panels held take half the bytes of the same layer's fp32 row.
TEST_P(ConvLoweringTest, Fp16PanelsWidenedInBlocksMatchReference) {
  if (GetParam().fpmath == FpMath::bf16)
    GTEST_SKIP() << "bf16 products keep their panels in their own layout";
  const test::ScopedSetting<size_t, &APanels::set_widen_budget> budget(512);
  ThreadPool pool(2);
  std::mt19937 rng(17);
  int k = 0;
  for (const ConvCase& c : unet_cases())
    check(c, DType::f16, GetParam(), ++k % 2 ? &pool : nullptr, rng);
  // MONAI's up-convolution (gather form) to more output channels than any row's MR, and not a
  // multiple of it: several blocks, the last one partial.
  ConvCase up;
  up.op = "ConvTranspose";
  up.x = {2, 5, 4, 5, 6};
  up.w = {5, 21, 3, 3, 3};
  up.ints("strides", {2, 2, 2}).ints("pads", {1, 1, 1, 1, 1, 1});
  up.ints("output_padding", {1, 1, 1});
  check(up, DType::f16, GetParam(), &pool, rng);
  check(up, DType::f16, GetParam(), nullptr, rng);
  check_random_cases(20, 19, GetParam(), [](std::mt19937& r, int attempt) {
    return attempt % 3 == 2 ? random_conv_transpose(r, 3) : random_conv(r, 1 + attempt % 3);
  });

  // 16 input and 24 output channels: W is (M, C, k...) for Conv, (C, M, k...) for ConvTranspose.
  for (const char* op : {"Conv", "ConvTranspose"}) {
    ConvCase c;
    c.op = op;
    c.x = {1, 16, 6, 7, 8};
    c.w = std::string(op) == "Conv" ? Shape{24, 16, 3, 3, 3} : Shape{16, 24, 3, 3, 3};
    int64_t bytes[2] = {0, 0};
    for (DType t : {DType::f32, DType::f16}) {
      Built b;
      ASSERT_TRUE(build(c, t, rng, b));
      const ir::Node& n = b.graph.nodes[0];
      // The direct form's panels (Winograd's transformed weights are not fp16 values widened).
      std::unique_ptr<Op> fast =
          CpuRegistry::instance().lower(n, b.graph, OpRegistry::instance().create(n, b.graph),
                                        GetParam().isa, GetParam().fpmath, false);
      const auto* cpu = dynamic_cast<const cpu::CpuOp*>(fast.get());
      ASSERT_NE(cpu, nullptr) << op;
      bytes[t == DType::f16] = cpu->packed_bytes();
    }
    // Panels p and the 24 fp32 bias values b: fp32 2p + b, fp16 p + b.
    EXPECT_GT(bytes[0], bytes[1]) << op;
    EXPECT_EQ(2 * bytes[1] - bytes[0], 24 * 4) << op << ": fp16 panels held, against fp32 ones";
  }
}

INSTANTIATE_TEST_SUITE_P(Path, ConvLoweringTest, ::testing::ValuesIn(kPaths), path_name);

// One lowered op serves concurrent runs (a Session's concurrent Run calls): scratch is per call.
TEST(ConvLowering, ConcurrentRunsOfOneOpAgree) {
  std::mt19937 rng(4);
  ConvCase c;
  c.x = {1, 6, 9, 10, 11};
  c.w = {10, 6, 3, 3, 3};
  c.ints("pads", {1, 1, 1, 1, 1, 1});
  Built b;
  ASSERT_TRUE(build(c, DType::f32, rng, b));
  const ir::Node& n = b.graph.nodes[0];
  std::unique_ptr<Op> fast = CpuRegistry::instance().lower(
      n, b.graph, OpRegistry::instance().create(n, b.graph), cpu_features().detected);
  std::vector<const Tensor*> in = {&b.x, &b.w, &b.b};
  std::vector<Tensor> want = {Tensor::zeros(DType::f32, b.y)};
  fast->run(RunContext{}, in, want);
  ThreadPool pool(2);
  std::vector<std::vector<Tensor>> got(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    got[i] = {Tensor::zeros(DType::f32, b.y)};
    threads.emplace_back([&, i] {
      for (int rep = 0; rep < 5; ++rep) fast->run(RunContext{i % 2 ? &pool : nullptr}, in, got[i]);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(std::memcmp(g[0].raw(), want[0].raw(), want[0].nbytes()), 0);
}

TEST(ConvLowering, DeclinesWhatTheKernelsDoNotCover) {
  std::mt19937 rng(1);
  auto lowered_name = [&](const ConvCase& c, DType t, bool constant_w) {
    Built b;
    EXPECT_TRUE(build(c, t, rng, b)) << c.str();
    if (!constant_w) b.graph.constants.erase(b.graph.nodes[0].inputs[1]);
    const ir::Node& n = b.graph.nodes[0];
    return CpuRegistry::instance()
        .lower(n, b.graph, OpRegistry::instance().create(n, b.graph), Isa::scalar)
        ->kernel_name();
  };
  ConvCase c;
  c.x = {1, 2, 5, 5};
  c.w = {3, 2, 3, 3};
  EXPECT_NE(lowered_name(c, DType::f32, true), "ref");
  EXPECT_EQ(lowered_name(c, DType::f64, true), "ref");
  EXPECT_EQ(lowered_name(c, DType::bf16, true), "ref");
  EXPECT_EQ(lowered_name(c, DType::f32, false), "ref");
  ConvCase t;
  t.op = "ConvTranspose";
  t.x = {1, 2, 4, 4};
  t.w = {2, 3, 2, 2};
  t.ints("output_shape", {8, 8}).ints("strides", {2, 2});
  EXPECT_EQ(lowered_name(t, DType::f32, true), "ref");
}

// Window attributes the fused ops refuse, naming the node: a negative first channel, a window of
// X in parts, residual_from without a residual, windows on a FusedGroupNorm.
TEST(ConvLowering, RefusesBadWindows) {
  std::mt19937 rng(2);
  ConvCase c;
  c.op = "FusedConv";
  c.x = {1, 2, 5, 5};
  c.w = {3, 2, 3, 3};
  Built b;
  ASSERT_TRUE(build(c, DType::f32, rng, b));
  auto refusal = [&](const ir::Node& n) -> std::string {
    try {
      OpRegistry::instance().create(n, b.graph);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  ir::Node n = b.graph.nodes[0];
  n.attrs.set_int(kFusedXFrom, -2);
  EXPECT_NE(refusal(n).find("x_from -2"), std::string::npos) << refusal(n);
  EXPECT_NE(refusal(n).find("n0"), std::string::npos) << refusal(n);
  n.attrs.set_int(kFusedXFrom, 1);
  n.attrs.set_int("x_parts", 2);
  n.inputs = {n.inputs[0], n.inputs[1], n.inputs[2], -1, n.inputs[0]};
  EXPECT_NE(refusal(n).find("one part"), std::string::npos) << refusal(n);
  n = b.graph.nodes[0];
  n.attrs.set_int(kFusedResidualFrom, 0);
  EXPECT_NE(refusal(n).find("without a residual"), std::string::npos) << refusal(n);
  n = b.graph.nodes[0];
  n.attrs.set_int(kFusedXFrom, 0);
  EXPECT_EQ(refusal(n), "");  // a window from channel 0 stands
  n.op_type = "FusedGroupNorm";
  n.opset = 21;
  n.attrs.items.clear();
  n.attrs.set_int("num_groups", 1);
  n.attrs.set_int(kFusedXFrom, 0);
  EXPECT_NE(refusal(n).find("FusedBatchNorm and FusedInstanceNorm"), std::string::npos)
      << refusal(n);
}

}  // namespace
}  // namespace voxrt::cpu::conv_cases
