// Every row of the gemm table against the family's reference (gemm_reference) on the same packed
// panels: sizes equal to the tile, multiples, smaller, larger and prime, random data, each
// epilogue; rows whose ISA this CPU lacks are skipped with a message.
#include "backends/cpu/kernels/gemm/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "core/half.h"
#include "support/emulated_isa.h"

namespace voxrt::cpu {
namespace {

struct Problem {
  int64_t m, n, k;
  Activation act;
  bool bias, residual, f32_out;
  bool b_rows;  // B read as rows of a wider matrix (b_offsets s * ld) instead of packed panels
  bool residual_after_act = false;
  bool f16_b = false;  // B as rows of fp16 values through GemmKernel::ukernel_f16_b
  bool slopes = false;  // with leaky_relu, a slope per row (GemmParams::slopes)
};

// Row i's LeakyRelu slope where a Problem asks for one a row: identity (1), ReLU (0) and others
// (within [-1, 1], so the sums' error bound holds after them).
float row_slope(int64_t i) {
  const float s[] = {1.0f, 0.0f, 0.3f, -0.5f, 0.75f};
  return s[i % 5];
}

// Storage-dtype values in [lo, hi), never exactly zero.
std::vector<uint8_t> random_storage(DType t, int64_t count, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<uint8_t> out(static_cast<size_t>(count) * dtype_size(t));
  for (int64_t i = 0; i < count; ++i) {
    float v = d(rng);
    if (v == 0) v = 0.5f;
    if (t == DType::f16)
      reinterpret_cast<uint16_t*>(out.data())[i] = float_to_half(v);
    else
      reinterpret_cast<float*>(out.data())[i] = v;
  }
  return out;
}

double load(DType t, const uint8_t* base, int64_t i) {
  if (t == DType::f16) return half_to_float(reinterpret_cast<const uint16_t*>(base)[i]);
  return reinterpret_cast<const float*>(base)[i];
}

// Runs `fn` (a row's ukernel or the reference for that row) over the whole m x n product tile by
// tile, as a driver would, into c (row stride ldc). `b_at(j0)` is the B base of columns j0...
template <class BAt, class Fn>
void run_tiles(const GemmKernel& g, const Problem& pr, const uint8_t* a, BAt b_at,
               const int64_t* b_offsets, const std::vector<float>& bias,
               const std::vector<uint8_t>& residual, uint8_t* c, int64_t ldc, Fn fn) {
  size_t ab = panel_type_bytes(g.a_panel);
  size_t cb = pr.f32_out ? 4 : dtype_size(g.storage);
  const int64_t k = packed_steps(g, pr.k);
  std::vector<float> slopes(static_cast<size_t>(pr.m));
  for (int64_t i = 0; i < pr.m; ++i) slopes[static_cast<size_t>(i)] = row_slope(i);
  for (int64_t i0 = 0; i0 < pr.m; i0 += g.mr)
    for (int64_t j0 = 0; j0 < pr.n; j0 += g.nr) {
      GemmParams p;
      p.bias = pr.bias ? bias.data() + i0 : nullptr;
      p.residual =
          pr.residual ? residual.data() + (i0 * ldc + j0) * dtype_size(g.storage) : nullptr;
      p.act = pr.act;
      p.alpha = 0.125f;
      p.slopes = pr.slopes ? slopes.data() + i0 : nullptr;
      p.residual_after_act = pr.residual_after_act;
      p.f32_out = pr.f32_out;
      fn(static_cast<size_t>(std::min<int64_t>(g.mr, pr.m - i0)),
         static_cast<size_t>(std::min<int64_t>(g.nr, pr.n - j0)), static_cast<size_t>(k),
         a + i0 * k * ab, b_at(j0), b_offsets, c + (i0 * ldc + j0) * cb, static_cast<size_t>(ldc),
         p);
    }
}

void check_row(const GemmKernel& g, const Problem& pr, std::mt19937& rng) {
  std::string what =
      std::string(g.name) + " m=" + std::to_string(pr.m) + " n=" + std::to_string(pr.n) +
      " k=" + std::to_string(pr.k) + " act=" + std::to_string(static_cast<int>(pr.act)) +
      (pr.bias ? " bias" : "") + (pr.residual ? " residual" : "") +
      (pr.residual_after_act ? " after act" : "") + (pr.f32_out ? " f32_out" : "") +
      (pr.b_rows ? " b_rows" : "") + (pr.f16_b ? " f16_b" : "") + (pr.slopes ? " slopes" : "");
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> a(static_cast<size_t>(pr.m * pr.k));
  for (float& v : a) {
    v = d(rng);
    if (v == 0) v = 0.25f;
  }
  std::vector<uint8_t> b = random_storage(g.storage, pr.k * pr.n, rng, -1, 1);
  std::vector<float> bias(static_cast<size_t>(pr.m + g.mr));
  for (float& v : bias) v = d(rng);
  const int64_t ldc = pr.n + 3;
  std::vector<uint8_t> residual = random_storage(g.storage, pr.m * ldc, rng, -2, 2);

  std::vector<uint8_t> ap(packed_a_bytes(g, pr.m, pr.k));
  pack_a(g, a.data(), pr.k, 1, pr.m, pr.k, ap.data());
  // B as packed micro-panels, or as the rows of a wider matrix of panel elements whose columns
  // past n hold other (finite) data; a row of packed elements holds k_pack steps, the steps past
  // k zero.
  const size_t bb = panel_type_bytes(g.b_panel), member = bb / static_cast<size_t>(g.k_pack);
  const int64_t elems = packed_steps(g, pr.k);
  std::vector<uint8_t> bp;
  std::vector<int64_t> offsets;
  const int64_t ldb = pr.n + g.nr + 5;
  if (pr.f16_b) {
    // The storage's fp16 rows as they are, with other (finite) values past column n.
    std::vector<uint8_t> extra = random_storage(g.storage, ldb, rng, -1, 1);
    bp.assign(static_cast<size_t>(pr.k * ldb) * 2, 0);
    for (int64_t s = 0; s < pr.k; ++s) {
      std::memcpy(bp.data() + s * ldb * 2, b.data() + s * pr.n * 2, static_cast<size_t>(pr.n) * 2);
      std::memcpy(bp.data() + (s * ldb + pr.n) * 2, extra.data(),
                  static_cast<size_t>(ldb - pr.n) * 2);
    }
    for (int64_t s = 0; s < pr.k; ++s) offsets.push_back(s * ldb);
  } else if (pr.b_rows) {
    std::vector<uint8_t> extra = random_storage(g.storage, ldb, rng, -1, 1);
    bp.assign(static_cast<size_t>(elems * ldb) * bb, 0);
    for (int64_t s = 0; s < pr.k; ++s) {
      uint8_t* row = bp.data() + s / g.k_pack * ldb * bb + s % g.k_pack * member;
      g.to_panel(b.data() + s * pr.n * dtype_size(g.storage), row, static_cast<size_t>(pr.n));
      g.to_panel(extra.data(), row + pr.n * bb, static_cast<size_t>(ldb - pr.n));
    }
    for (int64_t e = 0; e < elems; ++e) offsets.push_back(e * ldb);
  } else {
    bp.resize(packed_b_bytes(g, pr.k, pr.n));
    pack_b(g, b.data(), pr.n, pr.k, pr.n, bp.data());
    offsets = panel_offsets(g, pr.k);
  }
  auto b_at = [&](int64_t j0) {
    if (pr.f16_b) return bp.data() + j0 * 2;
    return bp.data() + (pr.b_rows ? j0 : j0 * elems) * static_cast<int64_t>(bb);
  };

  DType out_t = pr.f32_out ? DType::f32 : g.storage;
  size_t cb = dtype_size(out_t);
  // Poisoned with a pattern, to see writes outside [m, n) and the row padding.
  std::vector<uint8_t> got(static_cast<size_t>(pr.m * ldc) * cb, 0x7b), want = got;
  run_tiles(g, pr, ap.data(), b_at, offsets.data(), bias, residual, got.data(), ldc,
            pr.f16_b ? g.ukernel_f16_b : g.ukernel);
  run_tiles(g, pr, ap.data(), b_at, offsets.data(), bias, residual, want.data(), ldc,
            [&](size_t mr, size_t nc, size_t k, const void* pa, const void* pb, const int64_t* off,
                void* c, size_t l, const GemmParams& p) {
              gemm_reference(g, mr, nc, k, pa, pb, off, c, l, p, pr.f16_b);
            });

  // Error bounds: fp32 sums are within (k + 2) * 2^-24 of the sum of magnitudes; fp16 stores
  // within half an fp16 ulp (both sides round, so one ulp apart); fp16 arithmetic is emulated
  // step by step by the reference, so only the epilogue's order differs.
  const double u32 = std::ldexp(1.0, -24);
  for (int64_t i = 0; i < pr.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      int64_t at = i * ldc + j;
      if (j >= pr.n) {
        ASSERT_EQ(got[static_cast<size_t>(at * cb)], 0x7b) << what << ": wrote past column n";
        continue;
      }
      double scale = 1;
      for (int64_t s = 0; s < pr.k; ++s)
        scale += std::fabs(a[static_cast<size_t>(i * pr.k + s)] *
                           load(g.storage, b.data(), s * pr.n + j));
      double w = load(out_t, want.data(), at), v = load(out_t, got.data(), at);
      double tol = (pr.k + 4) * u32 * scale;
      if (out_t == DType::f16) tol += std::ldexp(std::fabs(w), -10);
      // An emulated row's sums are the reference's own, step for step; the hardware's fp16
      // multiply-adds may round a tie through fp32 differently.
      if (g.k_carry > 0 && !g.emulated) tol += std::ldexp(scale, -11);
      ASSERT_NEAR(v, w, tol) << what << ", element (" << i << ", " << j << ")";
    }
}

class GemmRowTest : public ::testing::TestWithParam<const GemmKernel*> {};

TEST_P(GemmRowTest, MatchesReferenceOnTileEdgeAndPrimeSizes) {
  const GemmKernel& g = *GetParam();
  if (cpu_features().detected < runs_on(g))
    GTEST_SKIP() << "this CPU has no " << isa_name(runs_on(g)) << ", so " << g.name
                 << " is not run";
  std::mt19937 rng(7);
  const int64_t mr = g.mr, nr = g.nr;
  std::vector<int64_t> ms = {1, mr - 1, mr, mr + 1, 2 * mr, 3 * mr + 5, 13};
  std::vector<int64_t> ns = {1, nr - 1, nr, nr + 1, 2 * nr, 3 * nr + 7, 97};
  std::vector<int64_t> ks = {1, 2, 7, 27, 64, 97, 300};
  if (g.k_carry > 0)
    ks.insert(ks.end(), {g.k_carry - 1, g.k_carry, g.k_carry + 1, 2 * g.k_carry + 3});
  const Activation acts[] = {Activation::none, Activation::relu, Activation::leaky_relu};
  int variant = 0;
  for (int64_t m : ms)
    for (int64_t n : ns)
      for (int64_t k : ks) {
        if (m < 1) continue;
        ++variant;
        Problem p{m,
                  n,
                  k,
                  acts[variant % 3],
                  variant % 2 == 0,
                  variant % 5 < 2,
                  variant % 7 == 0,
                  variant % 4 == 1,
                  variant % 10 == 1};
        p.slopes = p.act == Activation::leaky_relu && variant % 4 != 3;
        check_row(g, p, rng);
        if (HasFatalFailure()) return;
      }
  // Rows with an fp16-B form: it against the reference reading the same fp16 rows.
  if (g.ukernel_f16_b) {
    ASSERT_EQ(g.storage, DType::f16) << g.name;
    for (int64_t k : {1, 7, 27, 300})
      for (int64_t n : {nr - 1, nr, 2 * nr + 5}) {
        Problem p{2 * mr - 1, n, k, acts[k % 3], k % 2 == 1, n % 2 == 0, false, false};
        p.f16_b = true;
        check_row(g, p, rng);
        if (HasFatalFailure()) return;
      }
  }
  // A tile short of rows computes only those it stores: every short count, after a full tile.
  for (int64_t r = 1; r < mr; ++r) {
    Problem p{mr + r, nr + 3, 27, acts[r % 3], r % 2 == 0, true, r % 3 == 0, false, false};
    check_row(g, p, rng);
    if (HasFatalFailure()) return;
    // Each row's own slope, rows of both tiles.
    p.act = Activation::leaky_relu;
    p.slopes = true;
    check_row(g, p, rng);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Table, GemmRowTest, ::testing::ValuesIn([] {
                           std::vector<const GemmKernel*> rows;
                           for (const GemmKernel& g : gemm_kernels()) rows.push_back(&g);
                           return rows;
                         }()),
                         [](const ::testing::TestParamInfo<const GemmKernel*>& info) {
                           std::string name;
                           for (const char* c = info.param->name; *c; ++c)
                             if (*c != '_' || c[1] != '_') name += *c;
                           return name;
                         });

TEST(GemmTable, EveryStorageDtypeHasAPortableRowAndNamesAreUnique) {
  for (DType t : {DType::f32, DType::f16}) {
    const GemmKernel* g = find_gemm_kernel(Isa::scalar, t);
    ASSERT_NE(g, nullptr) << dtype_name(t);
    EXPECT_EQ(g->isa, Isa::scalar);
  }
  for (const GemmKernel& a : gemm_kernels()) {
    EXPECT_EQ(find_gemm_kernel(a.name), &a) << a.name;
    EXPECT_NE(std::string(a.name).find(std::string("__") + isa_name(a.isa)), std::string::npos)
        << a.name << " does not end in its ISA";
  }
  EXPECT_EQ(find_gemm_kernel(Isa::amx, DType::f64), nullptr);
}

// The pair converts against two member converts: the same elements, whatever n's tail; a null
// second row gives zero high members. Poisoned past n, to see writes outside it.
TEST(GemmTable, PairConvertMatchesTwoMemberConverts) {
  std::mt19937 rng(23);
  int rows = 0;
  for (const GemmKernel& g : gemm_kernels()) {
    if (!g.to_panel_pair) continue;
    ASSERT_EQ(g.k_pack, 2) << g.name;
    if (cpu_features().detected < runs_on(g)) continue;
    ++rows;
    const size_t eb = panel_type_bytes(g.b_panel);
    for (size_t n : {1, 7, 16, 17, 48, 95, 130}) {
      std::vector<uint8_t> first = random_storage(g.storage, static_cast<int64_t>(n), rng, -3, 3);
      std::vector<uint8_t> second = random_storage(g.storage, static_cast<int64_t>(n), rng, -3, 3);
      for (bool with_second : {true, false}) {
        std::vector<uint8_t> got((n + 4) * eb, 0x5a), want = got;
        g.to_panel_pair(first.data(), with_second ? second.data() : nullptr, got.data(), n);
        std::fill_n(want.begin(), n * eb, 0);
        g.to_panel(first.data(), want.data(), n);
        if (with_second) g.to_panel(second.data(), want.data() + eb / 2, n);
        EXPECT_EQ(got, want) << g.name << " n=" << n << (with_second ? "" : " no second row");
      }
    }
  }
  if (rows == 0) GTEST_SKIP() << "no row with pair converts runs on this CPU";
}

// The consecutive-values convert against rounding each value alone (to nearest even), whatever
// n's tail against the 32 values a step converts. Poisoned past n, to see writes outside it.
TEST(GemmTable, ValuesConvertRoundsEachValueInPlace) {
  std::mt19937 rng(31);
  int rows = 0;
  for (const GemmKernel& g : gemm_kernels()) {
    if (!g.to_bf16_values) continue;
    ASSERT_EQ(g.b_panel, PanelType::bf16_pair) << g.name;
    if (cpu_features().detected < runs_on(g)) continue;
    ++rows;
    for (size_t n : {1, 15, 16, 17, 31, 32, 33, 49, 100}) {
      std::vector<uint8_t> src = random_storage(g.storage, static_cast<int64_t>(n), rng, -3, 3);
      std::vector<uint16_t> got(n + 5, 0x5a5a), want = got;
      for (size_t i = 0; i < n; ++i)
        want[i] =
            float_to_bf16(static_cast<float>(load(g.storage, src.data(), static_cast<int64_t>(i))));
      g.to_bf16_values(src.data(), got.data(), n);
      EXPECT_EQ(got, want) << g.name << " n=" << n;
    }
  }
  if (rows == 0) GTEST_SKIP() << "no row with the values convert runs on this CPU";
}

// The stride-2 split converts against the pair converts of the gathered even and odd columns.
TEST(GemmTable, PairSplitMatchesPairConvertsOfEvenAndOddColumns) {
  std::mt19937 rng(29);
  int rows = 0;
  for (const GemmKernel& g : gemm_kernels()) {
    if (!g.to_panel_pair_split) continue;
    ASSERT_NE(g.to_panel_pair, nullptr) << g.name;
    if (cpu_features().detected < runs_on(g)) continue;
    ++rows;
    const size_t eb = panel_type_bytes(g.b_panel), sb = dtype_size(g.storage);
    for (size_t n : {1, 7, 8, 9, 16, 17, 24, 48, 49, 130}) {
      std::vector<uint8_t> first =
          random_storage(g.storage, static_cast<int64_t>(2 * n), rng, -3, 3);
      std::vector<uint8_t> second =
          random_storage(g.storage, static_cast<int64_t>(2 * n), rng, -3, 3);
      // Column parity p of a row, gathered.
      auto columns = [&](const std::vector<uint8_t>& row, size_t p) {
        std::vector<uint8_t> out(n * sb);
        for (size_t j = 0; j < n; ++j) std::memcpy(&out[j * sb], &row[(2 * j + p) * sb], sb);
        return out;
      };
      for (bool with_second : {true, false}) {
        std::vector<uint8_t> even((n + 4) * eb, 0x5a), odd = even, want_even = even,
                                                       want_odd = even;
        g.to_panel_pair_split(first.data(), with_second ? second.data() : nullptr, even.data(),
                              odd.data(), n);
        for (size_t p : {0, 1}) {
          std::vector<uint8_t> a = columns(first, p), b = columns(second, p);
          g.to_panel_pair(a.data(), with_second ? b.data() : nullptr,
                          (p ? want_odd : want_even).data(), n);
        }
        EXPECT_EQ(even, want_even) << g.name << " n=" << n << (with_second ? "" : " no second row");
        EXPECT_EQ(odd, want_odd) << g.name << " n=" << n << (with_second ? "" : " no second row");
      }
    }
  }
  if (rows == 0) GTEST_SKIP() << "no row with split converts runs on this CPU";
}

// The stride-2 split converts of one-step rows against the converts of the gathered even and
// odd values, whatever n's tail; every such row has one (copy_rows' one-pass split). Poisoned
// past n, to see writes outside it.
TEST(GemmTable, SplitMatchesConvertsOfEvenAndOddValues) {
  std::mt19937 rng(37);
  int rows = 0;
  for (const GemmKernel& g : gemm_kernels()) {
    if (g.k_pack != 1) continue;
    ASSERT_NE(g.to_panel_split, nullptr) << g.name;
    if (cpu_features().detected < runs_on(g)) continue;
    ++rows;
    const size_t eb = panel_type_bytes(g.b_panel), sb = dtype_size(g.storage);
    for (size_t n : {1, 5, 7, 8, 9, 15, 16, 17, 24, 31, 48, 49, 130}) {
      std::vector<uint8_t> src = random_storage(g.storage, static_cast<int64_t>(2 * n), rng, -3, 3);
      std::vector<uint8_t> even((n + 4) * eb, 0x5a), odd = even, want_even = even, want_odd = even;
      g.to_panel_split(src.data(), even.data(), odd.data(), n);
      for (size_t p : {0, 1}) {
        std::vector<uint8_t> values(n * sb);
        for (size_t j = 0; j < n; ++j) std::memcpy(&values[j * sb], &src[(2 * j + p) * sb], sb);
        g.to_panel(values.data(), (p ? want_odd : want_even).data(), n);
      }
      EXPECT_EQ(even, want_even) << g.name << " n=" << n;
      EXPECT_EQ(odd, want_odd) << g.name << " n=" << n;
    }
  }
  if (rows == 0) GTEST_SKIP() << "no one-step row runs on this CPU";
}

// The AVX512-FP16 rows' stand-ins are chosen exactly where the level is emulated, and never
// mixed with the instructions' rows as siblings.
TEST(GemmTable, EmulatedRowsStandInOnlyWhereAvx512Fp16IsEmulated) {
  for (bool on : {false, true}) {
    const test::EmulateAvx512Fp16 scope(on);
    const bool emulated = avx512fp16_emulated();
    if (!on) {
      EXPECT_FALSE(emulated);
    } else if (cpu_features().detected == Isa::avx512bf16) {
      EXPECT_TRUE(emulated);
    }
    EXPECT_EQ(usable_isa() == Isa::avx512fp16,
              emulated || cpu_features().detected == Isa::avx512fp16);
    const GemmKernel* g = find_gemm_kernel(Isa::avx512fp16, DType::f16, 16);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->emulated, emulated) << g->name << (on ? " with" : " without") << " emulation";
    EXPECT_GT(g->k_carry, 0) << g->name;
    for (const GemmKernel* s : gemm_siblings(*g)) EXPECT_EQ(s->emulated, g->emulated) << s->name;
  }
}

TEST(GemmTable, Bf16ProductsOnlyWhenAllowed) {
  for (DType t : {DType::f32, DType::f16})
    for (Isa isa : {Isa::avx2, Isa::avx512, Isa::avx512bf16, Isa::avx512fp16, Isa::amx}) {
      const GemmKernel* strict = find_gemm_kernel(isa, t, 16);
      ASSERT_NE(strict, nullptr);
      EXPECT_FALSE(bf16_dot(*strict)) << strict->name << " chosen without FpMath::bf16";
      const GemmKernel* allowed = find_gemm_kernel(isa, t, 16, true);
      ASSERT_NE(allowed, nullptr);
      // On AVX512-FP16 an fp16 model keeps its fp16 arithmetic, as fast and more precise.
      const bool want_bf16 = isa >= Isa::avx512bf16 && !(t == DType::f16 && isa >= Isa::avx512fp16);
      EXPECT_EQ(bf16_dot(*allowed), want_bf16) << allowed->name << " at " << isa_name(isa);
      EXPECT_EQ(allowed->k_pack, bf16_dot(*allowed) ? 2 : 1) << allowed->name;
    }
}

// Relative L2 error of one MR x NR tile over k steps on UNet-like data (non-negative activations
// in the row's storage dtype, zero-mean weights scaled by 1/sqrt(k)): `tile` computes it from the
// packed panels (a row's ukernel, or the reference), against the exact product of the weights
// as `exact_weight` gives them and the activations.
template <class Tile, class Weight>
double unet_like_tile_error(const GemmKernel& g, int64_t k, std::mt19937& rng, Tile tile,
                            Weight exact_weight) {
  const int64_t m = g.mr, n = g.nr;
  std::normal_distribution<float> wd(0, 1 / std::sqrt(static_cast<float>(k)));
  std::vector<float> w(static_cast<size_t>(m * k));
  for (float& v : w) v = wd(rng);
  std::vector<uint8_t> x = random_storage(g.storage, k * n, rng, 0, 2);
  std::vector<uint8_t> ap(packed_a_bytes(g, m, k)), bp(packed_b_bytes(g, k, n));
  pack_a(g, w.data(), k, 1, m, k, ap.data());
  pack_b(g, x.data(), n, k, n, bp.data());
  std::vector<float> got(static_cast<size_t>(m * n));
  GemmParams p;
  p.f32_out = true;
  std::vector<int64_t> offsets = panel_offsets(g, k);
  tile(static_cast<size_t>(m), static_cast<size_t>(n), static_cast<size_t>(packed_steps(g, k)),
       ap.data(), bp.data(), offsets.data(), got.data(), static_cast<size_t>(n), p);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double exact = 0;
      for (int64_t s = 0; s < k; ++s)
        exact +=
            exact_weight(w[static_cast<size_t>(i * k + s)]) * load(g.storage, x.data(), s * n + j);
      double e = got[static_cast<size_t>(i * n + j)] - exact;
      err += e * e;
      norm += exact * exact;
    }
  return std::sqrt(err / norm);
}

// What bf16 products cost in accuracy on UNet-like data: operands rounded to 8 significant bits,
// exact products, fp32 sums, against the exact product of the unrounded operands.
TEST(GemmBf16Products, RelativeL2ErrorWellUnderOnePercent) {
  const GemmKernel* g = find_gemm_kernel(Isa::avx512bf16, DType::f32, 0, true);
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(bf16_dot(*g)) << g->name;
  if (cpu_features().detected < g->isa)
    GTEST_SKIP() << "this CPU has no " << isa_name(g->isa) << " to pack B for " << g->name;
  std::mt19937 rng(5);
  for (int64_t k : {27, 431, 864, 3456}) {
    double rel = unet_like_tile_error(*g, k, rng, g->ukernel,
                                      [](float w) { return static_cast<double>(w); });
    EXPECT_LT(rel, 5e-3) << "k=" << k;
    EXPECT_GT(rel, 1e-5) << "k=" << k << ": no bf16 rounding seen; is the row computing in fp32?";
    RecordProperty("rel_l2_k" + std::to_string(k), std::to_string(rel));
  }
}

// The fp16-arithmetic design (fp16 fused multiply-adds, carried into fp32 every k_carry steps)
// on UNet-like data, against the exact product of the fp16 operands. Uses the emulating
// reference, so it holds on every CPU; the hardware row matches the reference above.
TEST(GemmF16Arithmetic, CarryKeepsRelativeL2ErrorWellUnderOnePercent) {
  const GemmKernel* g = find_gemm_kernel(Isa::avx512fp16, DType::f16);
  ASSERT_NE(g, nullptr);
  ASSERT_GT(g->k_carry, 0) << g->name;
  std::mt19937 rng(3);
  auto reference = [&](size_t mr, size_t nc, size_t k, const void* a, const void* b,
                       const int64_t* off, void* c, size_t ldc, const GemmParams& p) {
    gemm_reference(*g, mr, nc, k, a, b, off, c, ldc, p);
  };
  for (int64_t k : {27, 432, 864, 1728, 3456}) {
    double rel = unet_like_tile_error(*g, k, rng, reference, [](float w) {
      return static_cast<double>(half_to_float(float_to_half(w)));
    });
    EXPECT_LT(rel, 3e-3) << "k=" << k;
    RecordProperty("rel_l2_k" + std::to_string(k), std::to_string(rel));
  }
}

}  // namespace
}  // namespace voxrt::cpu
