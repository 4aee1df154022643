// Convolutions in Winograd's F(2, 3) form, and fp16 storage's in F(4, 3) (up to 256 x 256 pairs in
// 2D, 32 x 64 in 3D; backends/cpu/conv/conv_winograd.cpp, the transforms in kernels/winograd/),
// against the reference ops, on every ISA path with fp32 products: 3D and 2D,
// sizes that leave tiles and blocks partial, X smaller than a tile or one column wide, pads of 0
// to 2, batches whose blocks cross items, more output channels than a chunk, tile rows longer
// than one transform call takes, 3D and 2D layers of few channels in F(4, 3), and the FusedConv
// epilogue (residual before and after the activation, per-channel slopes, parts of X, upsampled or
// transposed parts made where they are read, a window of X's channels, an fp32 output from fp16
// storage, a head mixing the output channels with and without its softmax and bias).
#include "backends/cpu/conv/conv_winograd.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "conv_cases.h"
#include "runtime/thread_pool.h"

namespace voxrt::cpu::conv_cases {
namespace {

// The op the lowering makes of `c` in dtype t on `path` (null for an invalid case), told the
// expected output shape where `output_shape` is given.
std::unique_ptr<Op> lowered(const ConvCase& c, DType t, Path path, bool winograd = true,
                            const Shape* output_shape = nullptr) {
  Built b;
  std::mt19937 rng(1);
  if (!build(c, t, rng, b)) return nullptr;
  const ir::Node& n = b.graph.nodes[0];
  return CpuRegistry::instance().lower(n, b.graph, OpRegistry::instance().create(n, b.graph),
                                       path.isa, path.fpmath, winograd, output_shape);
}

// The kernel the lowering picks for `c` in dtype t on `path`.
std::string lowered_kernel(const ConvCase& c, DType t, Path path, bool winograd = true,
                           const Shape* output_shape = nullptr) {
  const std::unique_ptr<Op> op = lowered(c, t, path, winograd, output_shape);
  return op ? op->kernel_name() : "invalid case";
}

// ConvWinograd::fp16_kept_from set for a scope.
class Fp16KeptFrom {
 public:
  explicit Fp16KeptFrom(int64_t pairs) : before_(ConvWinograd::set_fp16_kept_from(pairs)) {}
  ~Fp16KeptFrom() { ConvWinograd::set_fp16_kept_from(before_); }
  Fp16KeptFrom(const Fp16KeptFrom&) = delete;
  Fp16KeptFrom& operator=(const Fp16KeptFrom&) = delete;

 private:
  int64_t before_;
};

TEST_P(ConvLoweringTest, WinogradMatchesReference) {
  ThreadPool pool(2);
  std::mt19937 rng(43);
  std::vector<ConvCase> cases;
  const std::vector<int64_t> pads3 = {1, 1, 1, 1, 1, 1};
  auto add = [&](const char* op, Shape x, Shape w) -> ConvCase& {
    return add_case(cases, op, std::move(x), std::move(w));
  };
  add("Conv", {1, 16, 7, 9, 11}, {32, 16, 3, 3, 3}).ints("pads", pads3);
  add("Conv", {1, 40, 6, 5, 7}, {64, 40, 3, 3, 3}).ints("pads", pads3);  // F(2, 3) in fp16 too
  // F(2, 3) on fp16 products (AVX512-FP16) from 64 x 64 pairs, 3D and 2D past F(4, 3)'s pairs.
  add("Conv", {1, 64, 5, 6, 7}, {64, 64, 3, 3, 3}).ints("pads", pads3);
  add("FusedConv", {2, 72, 4, 5, 3}, {72, 72, 3, 3, 3}).ints("pads", pads3).residual = true;
  add("Conv", {1, 288, 5, 7}, {288, 288, 3, 3}).ints("pads", {1, 1, 1, 1});
  add("Conv", {2, 20, 6, 5, 8}, {27, 20, 3, 3, 3});  // no padding; blocks cross the batch items
  add("Conv", {1, 18, 5, 6, 7}, {70, 18, 3, 3, 3}).ints("pads", {2, 1, 0, 0, 1, 2}).bias = false;
  add("Conv", {1, 32, 4, 3, 2}, {16, 32, 3, 3, 3}).ints("pads", pads3);  // one block, one tile row
  add("Conv", {2, 32, 1, 2, 1}, {16, 32, 3, 3, 3}).ints("pads", pads3);  // X smaller than a tile
  add("Conv", {1, 16, 3, 4, 40}, {32, 16, 3, 3, 3}).ints("pads", {2, 2, 2, 2, 2, 2});  // pads 2
  add("FusedConv", {2, 24, 6, 7, 5}, {23, 24, 3, 3, 3}).ints("pads", pads3).residual = true;
  add("FusedConv", {1, 16, 5, 8, 9}, {33, 16, 3, 3, 3})
      .ints("pads", pads3)
      .i(kResidualAfterActivation, 1)
      .activation = "LeakyRelu";
  add("FusedConv", {1, 16, 6, 6, 6}, {40, 16, 3, 3, 3}).ints("pads", pads3).slopes = true;
  add("FusedConv", {1, 28, 5, 6, 7}, {20, 28, 3, 3, 3}).ints("pads", pads3).x_parts = {12, 16};
  add("FusedConv", {1, 16, 5, 5, 6}, {32, 16, 3, 3, 3}).ints("pads", pads3).x_from = 1;
  add("FusedConv", {1, 16, 6, 5, 9}, {32, 16, 3, 3, 3})
      .ints("pads", pads3)
      .i(kFusedCastTo, 1)
      .activation = "Relu";
  // A head: 3D and 2D, in both forms, after a residual, with an fp32 output, blocks crossing the
  // batch items and tile rows.
  auto headed = [&](Shape x, Shape w, int64_t channels) -> ConvCase& {
    ConvCase& c = add("FusedConv", std::move(x), std::move(w));
    c.ints("pads", std::vector<int64_t>(2 * (c.x.size() - 2), 1)).head = channels;
    return c;
  };
  headed({1, 32, 6, 7, 9}, {32, 32, 3, 3, 3}, 3).activation = "Relu";
  headed({2, 16, 5, 6, 7}, {16, 16, 3, 3, 3}, 2).head_softmax = true;
  headed({1, 8, 9, 6, 10}, {8, 8, 3, 3, 3}, 3).activation = "LeakyRelu";  // F(4, 3) in fp16
  headed({1, 24, 5, 4, 6}, {20, 24, 3, 3, 3}, 5).residual = true;
  headed({2, 128, 3, 4, 5}, {32, 128, 3, 3, 3}, 3).head_softmax = true;  // fp16 products: F(2, 3)
  headed({2, 32, 6, 11}, {32, 32, 3, 3}, 4).head_bias = false;
  headed({1, 16, 7, 5, 6}, {24, 16, 3, 3, 3}, 3).i(kFusedCastTo, 1).head_softmax = true;
  add("Conv", {1, 64, 5, 300}, {64, 64, 3, 3}).ints("pads", {1, 1, 1, 1});  // 150 tiles a row
  add("FusedConv", {2, 64, 6, 9}, {65, 64, 3, 3}).ints("pads", {0, 1, 2, 1}).residual = true;
  add("Conv", {1, 64, 7, 1}, {64, 64, 3, 3}).ints("pads", {1, 1, 1, 1});  // one column
  // Parts of X made where they are read: upsampled (nearest, the linear modes) or resized to the
  // others' size, a transposed convolution's output; batches whose blocks cross items, planes of
  // one tile (a block reads many).
  auto made = [&](Shape x, Shape w, std::vector<int64_t> parts) -> ConvCase& {
    ConvCase& c = add("FusedConv", std::move(x), std::move(w));
    c.ints("pads", std::vector<int64_t>(2 * (c.x.size() - 2), 1)).x_parts = std::move(parts);
    return c;
  };
  made({1, 24, 6, 8, 10}, {32, 24, 3, 3, 3}, {16, 8}).x_upsample = {1, 0};
  made({2, 24, 8, 6, 4}, {32, 24, 3, 3, 3}, {12, 12}).x_upsample = {0, 2};
  made({1, 32, 10, 4, 4}, {16, 32, 3, 3, 3}, {16, 16}).x_upsample = {2, 1};
  made({1, 24, 8, 6, 10}, {32, 24, 3, 3, 3}, {12, 12}).x_upsample = {3, 4};  // width tables
  // Resized to the stored part's size (`_sized`: a Resize given sizes).
  made({1, 24, 7, 9, 11}, {32, 24, 3, 3, 3}, {16, 8}).x_upsample = {6, 0};
  made({2, 32, 5, 6, 8}, {16, 32, 3, 3, 3}, {8, 16, 8}).x_upsample = {5, 7, 0};
  made({1, 64, 9, 11}, {64, 64, 3, 3}, {32, 32}).x_upsample = {8, 0};
  made({1, 24, 6, 8, 6}, {32, 24, 3, 3, 3}, {16, 8}).x_transposed = 0;
  made({2, 40, 4, 4, 6}, {16, 40, 3, 3, 3}, {8, 32}).x_transposed = 1;
  made({2, 64, 6, 10}, {64, 64, 3, 3}, {32, 32}).x_upsample = {1, 0};
  made({1, 64, 8, 6}, {64, 64, 3, 3}, {32, 32}).x_transposed = 1;
  // Few channels: 3D's F(4, 3) from 6 (fp16 storage on narrow rows), the direct form elsewhere.
  add("Conv", {1, 6, 7, 9, 11}, {12, 6, 3, 3, 3}).ints("pads", pads3);
  made({1, 18, 8, 6, 10}, {6, 18, 3, 3, 3}, {12, 6}).x_upsample = {2, 0};
  made({1, 16, 6, 8, 8}, {8, 16, 3, 3, 3}, {8, 8}).x_transposed = 0;
  // 2D's F(4, 3) from 8 channels (fp16 storage on narrow rows): a decoder's 24 -> 8 reading an
  // up-convolution, an encoder's 8 -> 16.
  made({1, 24, 10, 14}, {8, 24, 3, 3}, {16, 8}).x_transposed = 0;
  add("Conv", {2, 8, 9, 13}, {16, 8, 3, 3}).ints("pads", {1, 1, 1, 1});
  int k = 0;
  for (const ConvCase& c : cases)
    for (DType t : {DType::f32, DType::f16}) {
      // Winograd's form wherever the row has fp32 products (f32 panels), else the direct one.
      const GemmKernel* row =
          find_gemm_kernel(GetParam().isa, t, c.w[0], GetParam().fpmath == FpMath::bf16);
      // Where ConvWinograd::applies says (tested above: its channel and pair counts depend on the
      // row and the CPU).
      const size_t dims = c.w.size() - 2;
      const bool f32_products =
          row->a_panel == PanelType::f32 && row->k_carry == 0 &&
          ConvWinograd::applies(std::vector<int64_t>(dims, 3), {}, {}, 1, c.w[0], c.w[1], *row);
      // Rows of faster products (bf16 pairs, fp16 arithmetic) give fp16 storage's F(4, 3)
      // layers to the fp32-arithmetic row where pays_over_fast says (no output shape here).
      const bool fast = row->a_panel != PanelType::f32 || row->k_carry != 0;
      const bool over_fast =
          fast && t == DType::f16 && ConvWinograd::f43(t, dims, c.w[0], c.w[1]) &&
          ConvWinograd::pays_over_fast(dims, c.w[0], c.w[1], !bf16_dot(*row), nullptr) &&
          ConvWinograd::applies(
              std::vector<int64_t>(dims, 3), {}, {}, 1, c.w[0], c.w[1],
              *find_gemm_kernel(std::min(GetParam().isa, Isa::avx512bf16), t, c.w[0], false));
      // Else, fp16 products (AVX512-FP16) take F(2, 3) where applies says so.
      const bool fp16_products =
          !over_fast && ConvWinograd::fp16_products(*row) &&
          ConvWinograd::applies(std::vector<int64_t>(dims, 3), {}, {}, 1, c.w[0], c.w[1], *row);
      const std::string kernel = lowered_kernel(c, t, GetParam());
      if (fp16_products)
        EXPECT_NE(kernel.find("f16acc_gemm_8x96__avx512fp16 f16_winograd__"), std::string::npos)
            << c.str() << ": " << kernel;
      EXPECT_EQ(kernel.find("_winograd") != std::string::npos,
                f32_products || over_fast || fp16_products)
          << c.str() << " " << dtype_name(t) << ": " << kernel;
      // F(4, 3) for fp16 storage (every 2D case here, and the 3D ones up to 32 x 64 pairs),
      // F(2, 3) elsewhere.
      if (f32_products) {
        EXPECT_EQ(kernel.find("_winograd_f43__") != std::string::npos,
                  t == DType::f16 && c.w[0] * c.w[1] <= (c.w.size() == 4 ? 256 * 256 : 32 * 64))
            << c.str() << " " << dtype_name(t) << ": " << kernel;
      }
      EXPECT_EQ(lowered_kernel(c, t, GetParam(), false).find("winograd"), std::string::npos)
          << c.str() << ": SessionOptions::winograd off";
      check(c, t, GetParam(), ++k % 2 ? &pool : nullptr, rng);
    }
}

// The deep layers of fp16 storage keep their transformed weights in fp16, widened a chunk of output
// channels at a time: with the threshold lowered so that small layers take that path, within the
// fp16 bound of the reference (3D in F(2, 3), 2D in F(4, 3), more output channels than a chunk, a
// residual), in about half the bytes; a 2D layer past F(4, 3)'s pairs, in F(2, 3), kept in fp16
// at the default threshold; 3D's F(4, 3) never.
TEST_P(ConvLoweringTest, WinogradKeepsDeepLayersWeightsInFp16) {
  ThreadPool pool(2);
  std::mt19937 rng(44);
  std::vector<ConvCase> cases;
  add_case(cases, "Conv", {1, 48, 5, 6, 7}, {70, 48, 3, 3, 3}).ints("pads", {1, 1, 1, 1, 1, 1});
  add_case(cases, "Conv", {1, 16, 5, 6, 7}, {40, 16, 3, 3, 3}).ints("pads", {1, 1, 1, 1, 1, 1});
  add_case(cases, "FusedConv", {2, 64, 6, 9}, {65, 64, 3, 3}).ints("pads", {0, 1, 2, 1}).residual =
      true;
  add_case(cases, "Conv", {1, 272, 3, 5}, {256, 272, 3, 3}).ints("pads", {1, 1, 1, 1});
  auto bytes = [](const ConvCase& c, Path path) {
    const std::unique_ptr<Op> op = lowered(c, DType::f16, path);
    const auto* cpu = dynamic_cast<const CpuOp*>(op.get());
    EXPECT_NE(cpu, nullptr) << c.str();
    return cpu ? cpu->packed_bytes() : 0;
  };
  int k = 0;
  for (const ConvCase& c : cases) {
    const bool depth = c.w.size() == 5;
    const bool f43 = ConvWinograd::f43(DType::f16, c.w.size() - 2, c.w[0], c.w[1]);
    EXPECT_EQ(f43, c.w[0] == 40 || c.w[0] == 65) << c.str();
    const bool kept = ConvWinograd::keeps_fp16(DType::f16, c.w[0], c.w[1], f43, depth);
    EXPECT_EQ(kept, c.w[0] == 256) << c.str();
    const int64_t before = bytes(c, GetParam());
    const Fp16KeptFrom all(0);
    const bool kept_now = ConvWinograd::keeps_fp16(DType::f16, c.w[0], c.w[1], f43, depth);
    EXPECT_EQ(kept_now, !(f43 && depth)) << c.str();
    const int64_t after = bytes(c, GetParam());
    if (lowered_kernel(c, DType::f16, GetParam()).find("_winograd") != std::string::npos) {
      if (kept || !kept_now)
        EXPECT_EQ(after, before) << c.str();
      else
        EXPECT_LT(after, before * 6 / 10) << c.str();
    }
    check(c, DType::f16, GetParam(), ++k % 2 ? &pool : nullptr, rng);
  }
}

// fp16 storage's 3D layers past 32 x 64 pairs (up to 64 x 128) take F(4, 3) where the lowering
// is told an expected output at least twice its transformed weights' bytes, F(2, 3) without one
// or for a small one; fp32 stays in F(2, 3) either way. Within the fp16 bound of the reference,
// with more output channels than a chunk.
TEST_P(ConvLoweringTest, WinogradWideF43ForLargeExpectedOutputs) {
  ThreadPool pool(2);
  std::mt19937 rng(45);
  std::vector<ConvCase> cases;
  add_case(cases, "Conv", {1, 64, 5, 6, 7}, {64, 64, 3, 3, 3}).ints("pads", {1, 1, 1, 1, 1, 1});
  add_case(cases, "FusedConv", {1, 128, 6, 5, 4}, {64, 128, 3, 3, 3})
      .ints("pads", {1, 1, 1, 1, 1, 1})
      .residual = true;
  add_case(cases, "Conv", {1, 128, 4, 4, 4}, {128, 128, 3, 3, 3}).ints("pads", {1, 1, 1, 1, 1, 1});
  int k = 0;
  for (const ConvCase& c : cases) {
    const int64_t pairs = c.w[0] * c.w[1];
    // At least 2 x 864 bytes a pair in fp16 outputs of M channels: 864 pairs' worth of voxels.
    const Shape big = {1, c.w[0], 24, 24, pairs * 864 / (c.w[0] * 24 * 24) + 1};
    const Shape small = {1, c.w[0], 12, 12, 12};
    const std::string plain = lowered_kernel(c, DType::f16, GetParam());
    const std::string told = lowered_kernel(c, DType::f16, GetParam(), true, &big);
    const std::string told_small = lowered_kernel(c, DType::f16, GetParam(), true, &small);
    // Rows of faster products (bf16 pairs, fp16 arithmetic) run these layers direct untold, and
    // told take F(4, 3) on the fp32-arithmetic row, as every row does.
    EXPECT_EQ(plain.find("_f43"), std::string::npos) << c.str() << ": " << plain;
    EXPECT_EQ(told_small.find("_f43"), std::string::npos) << c.str() << ": " << told_small;
    EXPECT_EQ(told.find("_f43") != std::string::npos, pairs <= ConvWinograd::kF43MaxPairs3dWide)
        << c.str() << ": " << told;
    EXPECT_EQ(lowered_kernel(c, DType::f32, GetParam(), true, &big).find("_f43"), std::string::npos)
        << c.str();
    check(c, DType::f16, GetParam(), ++k % 2 ? &pool : nullptr, rng, &big);
  }
}

// Where the direct form stays: fewer than 16 channels on either side or fewer pairs than
// min_pairs, more than 512 x 1024 pairs, strides, dilations, groups, kernels other than 3, 1D,
// a head after more than kMaxFusedHeadChannels channels.
TEST(ConvWinograd, AppliesOnlyWhereItShould) {
  EXPECT_EQ(ConvWinograd::min_pairs(3, false), 16 * 32);
  EXPECT_EQ(ConvWinograd::min_pairs(2, false), 64 * 64);
  EXPECT_EQ(ConvWinograd::min_pairs(3, true), 16 * 16);
  EXPECT_EQ(ConvWinograd::min_pairs(2, true), 32 * 32);
  // The scalar row's multiply-adds are few a cycle (narrow).
  const GemmKernel& g = *find_gemm_kernel(Isa::scalar, DType::f32);
  ASSERT_TRUE(ConvWinograd::narrow_fma(g));
  EXPECT_TRUE(ConvWinograd::applies({3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1, 16, 32, g));
  EXPECT_TRUE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 16, 16, g));
  EXPECT_TRUE(ConvWinograd::applies({3, 3}, {}, {}, 1, 32, 32, g));
  EXPECT_FALSE(ConvWinograd::applies({3, 3}, {}, {}, 1, 16, 32, g));
  EXPECT_TRUE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 320, 320, g));
  EXPECT_TRUE(ConvWinograd::applies({3, 3}, {}, {}, 1, 512, 1024, g));
  EXPECT_FALSE(ConvWinograd::applies({3, 3}, {}, {}, 1, 1024, 1024, g));
  const GemmKernel& h = *find_gemm_kernel(Isa::scalar, DType::f16);
  EXPECT_TRUE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 320, 320, h));
  EXPECT_TRUE(ConvWinograd::applies({3, 3}, {}, {}, 1, 16, 16, h));
  EXPECT_FALSE(ConvWinograd::applies({3, 3}, {}, {}, 1, 16, 16, g));
  // fp16 storage keeps the deep layers' transformed weights in fp16.
  EXPECT_FALSE(ConvWinograd::keeps_fp16(DType::f16, 256, 256));
  EXPECT_TRUE(ConvWinograd::keeps_fp16(DType::f16, 320, 256));
  EXPECT_FALSE(ConvWinograd::keeps_fp16(DType::f32, 320, 256));
  // F(4, 3) for fp16 storage's 2D layers up to 256 x 256 pairs and 3D ones up to 32 x 64, from 16
  // x 16 (32 x 32 on rows that are not narrow), its weights kept in fp16 past 128 x 128 in 2D,
  // never in 3D.
  EXPECT_TRUE(ConvWinograd::f43(DType::f16, 2, 256, 256));
  EXPECT_FALSE(ConvWinograd::f43(DType::f16, 2, 320, 256));
  EXPECT_FALSE(ConvWinograd::f43(DType::f32, 2, 64, 64));
  EXPECT_TRUE(ConvWinograd::f43(DType::f16, 3, 32, 64));
  EXPECT_FALSE(ConvWinograd::f43(DType::f16, 3, 64, 64));
  EXPECT_FALSE(ConvWinograd::keeps_fp16(DType::f16, 512, 512, true, true));
  EXPECT_EQ(ConvWinograd::min_pairs(2, true, true), 8 * 16);
  EXPECT_EQ(ConvWinograd::min_pairs(2, false, true), 32 * 32);
  EXPECT_FALSE(ConvWinograd::keeps_fp16(DType::f16, 128, 128, true));
  EXPECT_TRUE(ConvWinograd::keeps_fp16(DType::f16, 136, 128, true));
  // 3D's F(4, 3) from 6 channels and 8 x 8 pairs on narrow rows (32 x 32 on others).
  EXPECT_EQ(ConvWinograd::min_pairs(3, true, true), 8 * 8);
  EXPECT_EQ(ConvWinograd::min_pairs(3, false, true), 32 * 32);
  EXPECT_TRUE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 12, 6, h));
  EXPECT_TRUE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 8, 8, h));
  EXPECT_FALSE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 6, 6, h));
  EXPECT_FALSE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 5, 16, h));
  // fp16 products take F(2, 3) from 64 x 64 pairs (bf16 pairs never).
  const GemmKernel& fp16 = *find_gemm_kernel("f16_f16acc_gemm_8x96__avx512fp16");
  ASSERT_TRUE(ConvWinograd::fp16_products(fp16));
  EXPECT_FALSE(ConvWinograd::fp16_products(h));
  EXPECT_TRUE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 64, 64, fp16));
  EXPECT_TRUE(ConvWinograd::applies({3, 3}, {}, {}, 1, 512, 512, fp16));
  EXPECT_FALSE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 32, 64, fp16));
  EXPECT_FALSE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 64, 64,
                                     *find_gemm_kernel("f16_bf16dot_gemm_8x48__avx512bf16")));
  // ... where it pays for its transformed weights: 64 x 64 pairs from 24^3 positions.
  const Shape at12{1, 64, 12, 12, 12}, at8{1, 320, 8, 8, 8}, at64_2d{1, 64, 64, 64};
  EXPECT_TRUE(ConvWinograd::fp16_f23_pays(3, 64, 64, nullptr));
  EXPECT_FALSE(ConvWinograd::fp16_f23_pays(3, 64, 64, &at12));
  EXPECT_TRUE(ConvWinograd::fp16_f23_pays(3, 320, 320, &at8));
  EXPECT_TRUE(ConvWinograd::fp16_f23_pays(2, 64, 64, &at64_2d));
  // Over faster products: bf16 pairs from 16 x 16 pairs in 3D and 64 x 64 in 2D; AVX512-FP16's
  // from 32 x 64, and where the output's size is known not below 24^3 positions (2D: 32^2).
  EXPECT_TRUE(ConvWinograd::pays_over_fast(3, 16, 16, false, nullptr));
  EXPECT_FALSE(ConvWinograd::pays_over_fast(2, 32, 64, false, nullptr));
  EXPECT_FALSE(ConvWinograd::pays_over_fast(3, 32, 32, true, nullptr));
  EXPECT_TRUE(ConvWinograd::pays_over_fast(3, 32, 64, true, nullptr));
  const Shape at24{1, 64, 24, 24, 24}, at48{2, 64, 48, 48, 48};
  EXPECT_FALSE(ConvWinograd::pays_over_fast(3, 32, 32, true, &at48));
  EXPECT_TRUE(ConvWinograd::pays_over_fast(3, 64, 32, true, &at24));
  const Shape at16{1, 64, 16, 16, 16}, at16_2d{1, 64, 16, 16}, at32_2d{1, 64, 32, 32};
  EXPECT_FALSE(ConvWinograd::pays_over_fast(3, 64, 64, true, &at16));
  EXPECT_FALSE(ConvWinograd::pays_over_fast(2, 256, 256, true, &at16_2d));
  EXPECT_TRUE(ConvWinograd::pays_over_fast(2, 64, 64, true, &at32_2d));
  EXPECT_FALSE(ConvWinograd::pays_over_fast(2, 32, 64, true, &at32_2d));
  // 2D's F(4, 3) from 8 channels and 8 x 16 pairs on narrow rows.
  EXPECT_TRUE(ConvWinograd::applies({3, 3}, {}, {}, 1, 12, 12, h));
  EXPECT_TRUE(ConvWinograd::applies({3, 3}, {}, {}, 1, 8, 16, h));
  EXPECT_FALSE(ConvWinograd::applies({3, 3}, {}, {}, 1, 8, 8, h));
  EXPECT_FALSE(ConvWinograd::applies({3, 3}, {}, {}, 1, 7, 32, h));
  EXPECT_FALSE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 12, 12, g));
  EXPECT_FALSE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 15, 64, g));
  EXPECT_FALSE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 64, 8, g));
  EXPECT_FALSE(ConvWinograd::applies({3, 3, 3}, {1, 1, 2}, {}, 1, 32, 32, g));
  EXPECT_FALSE(ConvWinograd::applies({3, 3, 3}, {}, {2, 1, 1}, 1, 32, 32, g));
  EXPECT_FALSE(ConvWinograd::applies({3, 3, 3}, {}, {}, 2, 64, 32, g));
  EXPECT_FALSE(ConvWinograd::applies({3, 3, 1}, {}, {}, 1, 32, 32, g));
  EXPECT_FALSE(ConvWinograd::applies({3}, {}, {}, 1, 32, 32, g));
  // AVX-512 rows are narrow only where the CPU splits 512-bit operations (Zen 4).
  if (const GemmKernel* w = find_gemm_kernel(Isa::avx512, DType::f32);
      w && runs_on(*w) == Isa::avx512) {
    const bool narrow = cpu_features().avx512_split;
    EXPECT_EQ(ConvWinograd::narrow_fma(*w), narrow);
    EXPECT_EQ(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 16, 16, *w), narrow);
    EXPECT_EQ(ConvWinograd::applies({3, 3}, {}, {}, 1, 32, 64, *w), narrow);
    EXPECT_TRUE(ConvWinograd::applies({3, 3}, {}, {}, 1, 64, 64, *w));
    EXPECT_FALSE(ConvWinograd::applies({3, 3}, {}, {}, 1, 16, 32, *w));
  }
  const GemmKernel* bf16 = find_gemm_kernel(Isa::avx512bf16, DType::f32, 32, true);
  if (bf16 && bf16_dot(*bf16)) {
    EXPECT_FALSE(ConvWinograd::applies({3, 3, 3}, {}, {}, 1, 32, 32, *bf16)) << "bf16 products";
  }
  ConvCase head;
  head.op = "FusedConv";
  head.x = {1, 32, 5, 6, 7};
  head.w = {32, 32, 3, 3, 3};
  head.ints("pads", {1, 1, 1, 1, 1, 1}).head = 2;
  EXPECT_NE(lowered_kernel(head, DType::f32, {Isa::scalar, FpMath::strict}).find("winograd"),
            std::string::npos);
  EXPECT_NE(lowered_kernel(head, DType::f32, {Isa::scalar, FpMath::strict}).find("+head"),
            std::string::npos);
  head.x[1] = 40;
  head.w = {40, 40, 3, 3, 3};
  static_assert(kMaxFusedHeadChannels < 40);
  EXPECT_EQ(lowered_kernel(head, DType::f32, {Isa::scalar, FpMath::strict}).find("winograd"),
            std::string::npos);
}

}  // namespace
}  // namespace voxrt::cpu::conv_cases
