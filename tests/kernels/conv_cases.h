// What the CPU convolution tests share (conv_test.cpp, conv_ranges_test.cpp): the cases, their
// random shapes and attributes, the check of a lowered op against the reference ops, and the ISA
// paths (with and without bf16 products) every test runs under.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/conv/conv_gemm.h"
#include "backends/cpu/cpu_op.h"
#include "backends/cpu/kernels/gemm/gemm.h"
#include "backends/ref/ops/fused.h"
#include "backends/ref/tensor_math.h"
#include "core/half.h"
#include "runtime/thread_pool.h"
#include "support/attr_setters.h"
#include "support/emulated_isa.h"
#include "support/rel_l2.h"
#include "support/scoped_setting.h"

namespace voxrt::cpu::conv_cases {

struct ConvCase : test::AttrSetters<ConvCase> {
  std::string op = "Conv";  // Conv, FusedConv, ConvTranspose or FusedConvTranspose
  Shape x, w;
  bool bias = true;
  bool residual = false;         // FusedConv only
  std::string activation;        // Fused* only: "", Relu, LeakyRelu
  std::vector<int64_t> x_parts;  // Fused* only: channels of each part of X (empty: one part)
  // FusedConv with x_parts only: each part's Upsample mode (0 none, 1 nearest, 2 linear); an
  // upsampled part is stored at half X's spatial size (x's spatial axes even) and read doubled.
  std::vector<int64_t> x_upsample;
  // FusedConv with x_parts only: the part that is the output of a ConvTranspose of kernel and
  // stride 2 (x_transposed) from `transposed_in` channels at half X's spatial size; -1: none.
  int64_t x_transposed = -1, transposed_in = 5;
  bool transposed_bias = true;
  int64_t head = 0;              // FusedConv only: a 1x1 head of this many channels (0: none)
  bool head_bias = true;
  bool head_softmax = false;
  bool slopes = false;  // FusedConv only, no activation: a LeakyRelu slope per output channel
  // FusedConv only: X (with one part) and the residual read from these channels on of tensors
  // with two channels more than they take (a Split's outputs read in place); -1: whole.
  int64_t x_from = -1, residual_from = -1;

  std::string str() const {
    std::string t = op + " x" + shape_str(x) + " w" + shape_str(w) + (bias ? " bias" : "") +
                    (residual ? " residual" : "") + (activation.empty() ? "" : " " + activation);
    if (!x_parts.empty()) t += " x_parts" + shape_str(x_parts);
    if (!x_upsample.empty()) t += " x_upsample" + shape_str(x_upsample);
    if (x_transposed >= 0)
      t += " x_transposed=" + std::to_string(x_transposed) + " from " +
           std::to_string(transposed_in) + (transposed_bias ? " with bias" : "");
    if (head > 0)
      t += " head " + std::to_string(head) + (head_bias ? " with bias" : "") +
           (head_softmax ? " softmax" : "");
    if (slopes) t += " slopes";
    if (x_from >= 0) t += " x_from=" + std::to_string(x_from);
    if (residual_from >= 0) t += " residual_from=" + std::to_string(residual_from);
    for (const auto& [name, a] : attrs) {
      t += " " + name + "=";
      if (a.kind == ir::Attribute::Kind::is)
        for (size_t k = 0; k < a.is.size(); ++k) t += (k ? "," : "") + std::to_string(a.is[k]);
      else if (a.kind == ir::Attribute::Kind::i)
        t += std::to_string(a.i);
      else
        t += a.s;
    }
    return t;
  }
};

inline Tensor random_tensor(DType t, const Shape& shape, std::mt19937& rng, double lo, double hi) {
  Tensor x = Tensor::empty(t, shape);
  std::uniform_real_distribution<double> d(lo, hi);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = d(rng);
    ref::store(x, i, v == 0 ? 0.5 : v);
  }
  return x;
}

// A one-node graph with W and B as constants, the reference op for it, and its output shape.
struct Built {
  ir::Graph graph;
  Tensor x, w, b, residual, head_w, head_b, up_w, up_b;
  std::vector<Tensor> parts;  // X cut along channels as the case's x_parts say
  Tensor x_wide, residual_wide;  // X and the residual inside tensors of more channels
  Shape y;
};

// Returns false when the case's shapes are invalid (the reference refuses them).
inline bool build(const ConvCase& c, DType t, std::mt19937& rng, Built& out) {
  ir::Graph& g = out.graph;
  g.model_name = "conv_test.onnx";
  g.opset = 17;
  auto value = [&](const std::string& name) {
    int v = g.add_value(name);
    g.values[static_cast<size_t>(v)].dtype = t;
    return v;
  };
  out.x = random_tensor(t, c.x, rng, -1, 1);
  double wscale = 1.0 / std::sqrt(static_cast<double>(shape_numel(c.w) / c.w[0]));
  out.w = random_tensor(t, c.w, rng, -2 * wscale, 2 * wscale);
  const bool transposed = c.op == "ConvTranspose" || c.op == "FusedConvTranspose";
  const bool fused = c.op == "FusedConv" || c.op == "FusedConvTranspose";
  int64_t m = transposed ? c.w[1] * (c.attrs.count("group") ? c.attrs.at("group").i : 1) : c.w[0];
  out.b = random_tensor(t, {m}, rng, -0.5, 0.5);
  ir::Node n;
  n.name = "n0";
  n.op_type = c.op;
  n.domain = fused ? kInternalDomain : "";
  n.opset = 17;
  int xv = value("x"), wv = value("w"), bv = c.bias ? value("b") : -1;
  g.inputs.push_back(xv);
  g.constants[wv] = out.w;
  if (bv >= 0) g.constants[bv] = out.b;
  n.inputs = {xv, wv, bv};
  n.outputs = {value("y")};
  if (c.attrs.count(kFusedCastTo)) g.values[static_cast<size_t>(n.outputs[0])].dtype = DType::f32;
  n.attrs.items = c.attrs;
  if (fused) {
    n.attrs.items["activation"].kind = ir::Attribute::Kind::s;
    n.attrs.items["activation"].s = c.activation;
    n.attrs.items["alpha"].kind = ir::Attribute::Kind::f;
    n.attrs.items["alpha"].f = 0.2f;
  }
  if (c.slopes) {
    // Identity, ReLU and leaky slopes, channel by channel.
    const float pattern[] = {1.0f, 0.0f, 0.3f, -0.5f, 0.75f, 0.1f, 1.0f};
    ir::Attribute& a = n.attrs.items[kFusedSlopes];
    a.kind = ir::Attribute::Kind::fs;
    for (int64_t i = 0; i < m; ++i) a.fs.push_back(pattern[i % 7]);
  }
  n.attrs.where = g.where(n);
  std::vector<ValueMeta> meta = {{true, t, c.x, nullptr}, {true, t, c.w, &out.w}, {}};
  if (c.bias) meta[2] = {true, t, {m}, &out.b};
  try {
    ir::Node conv = n;
    conv.op_type = transposed ? "ConvTranspose" : "Conv";
    conv.domain.clear();
    conv.attrs.items.erase("activation");
    conv.attrs.items.erase("alpha");
    conv.attrs.items.erase(kResidualAfterActivation);
    conv.attrs.items.erase(kFusedCastTo);
    conv.attrs.items.erase(kFusedSlopes);
    out.y = OpRegistry::instance().create(conv, g)->infer_shapes(meta)[0];
  } catch (const Error&) {
    return false;
  }
  if (shape_numel(out.y) == 0) return false;
  if (c.residual) {
    out.residual = random_tensor(t, out.y, rng, -1, 1);
    n.inputs.push_back(value("r"));
  }
  // t's channels at `from` of a random tensor with two channels more, the attribute `name` set.
  auto widen = [&](const Tensor& t, int64_t from, const char* name) {
    Shape ws = t.shape();
    ws[1] += 2;
    Tensor wide = random_tensor(t.dtype(), ws, rng, -1, 1);
    const int64_t plane = shape_numel(ws) / (ws[0] * ws[1]);
    for (int64_t b = 0; b < ws[0]; ++b)
      for (int64_t i = 0; i < t.dim(1) * plane; ++i)
        ref::store(wide, (b * ws[1] + from) * plane + i, ref::load(t, b * t.dim(1) * plane + i));
    n.attrs.items[name].kind = ir::Attribute::Kind::i;
    n.attrs.items[name].i = from;
    return wide;
  };
  if (c.x_from >= 0) out.x_wide = widen(out.x, c.x_from, kFusedXFrom);
  if (c.residual_from >= 0)
    out.residual_wide = widen(out.residual, c.residual_from, kFusedResidualFrom);
  if (!c.x_parts.empty()) {
    // Part 0 is input 0; the others follow the residual slot.
    n.inputs.resize(std::max<size_t>(n.inputs.size(), 4), -1);
    const int64_t plane = shape_numel(c.x) / (c.x[0] * c.x[1]);
    int64_t c0 = 0;
    for (size_t p = 0; p < c.x_parts.size(); ++p) {
      Shape ps = c.x;
      ps[1] = c.x_parts[p];
      Tensor part = Tensor::empty(t, ps);
      const Upsample up =
          p < c.x_upsample.size() ? static_cast<Upsample>(c.x_upsample[p]) : Upsample::none;
      if (static_cast<int64_t>(p) == c.x_transposed) {
        // Stored at half size with transposed_in channels; X (which the reference reads) holds
        // the reference ConvTranspose of it.
        Shape low = ps;
        low[1] = c.transposed_in;
        for (size_t d = 2; d < low.size(); ++d) low[d] = ps[d] / 2;
        part = random_tensor(t, low, rng, -1, 1);
        Shape uw(ps.size(), 2);
        uw[0] = c.transposed_in;
        uw[1] = ps[1];
        out.up_w = random_tensor(t, uw, rng, -0.5, 0.5);
        out.up_b = random_tensor(t, {ps[1]}, rng, -0.5, 0.5);
        ir::Node ct;
        ct.op_type = "ConvTranspose";
        ct.opset = 17;
        ct.inputs = {value("ct_x"), value("ct_w"), value("ct_b")};
        ct.outputs = {value("ct_y")};
        ct.attrs.items["strides"].kind = ir::Attribute::Kind::is;
        ct.attrs.items["strides"].is = std::vector<int64_t>(ps.size() - 2, 2);
        std::vector<Tensor> read = {Tensor::empty(t, ps)};
        OpRegistry::instance().create(ct, g)->compute(
            {&part, &out.up_w, c.transposed_bias ? &out.up_b : nullptr}, read);
        for (int64_t b = 0; b < c.x[0]; ++b)
          for (int64_t i = 0; i < ps[1] * plane; ++i)
            ref::store(out.x, (b * c.x[1] + c0) * plane + i,
                       ref::load(read[0], b * ps[1] * plane + i));
      } else if (up != Upsample::none) {
        // Stored at half size, or resized to X's size (`_sized`) from about 3/5 of it; X (which
        // the reference reads) holds it upsampled.
        Shape low = ps;
        for (size_t d = 2; d < low.size(); ++d)
          low[d] = sized(up) ? (3 * low[d] + 4) / 5 : low[d] / 2;
        part = random_tensor(t, low, rng, -1, 1);
        const Tensor read =
            sized(up) ? resize_to(part, up, Shape(ps.begin() + 2, ps.end())) : upsample2(part, up);
        for (int64_t b = 0; b < c.x[0]; ++b)
          for (int64_t i = 0; i < ps[1] * plane; ++i)
            ref::store(out.x, (b * c.x[1] + c0) * plane + i,
                       ref::load(read, b * ps[1] * plane + i));
      } else {
        for (int64_t b = 0; b < c.x[0]; ++b)
          for (int64_t i = 0; i < ps[1] * plane; ++i)
            ref::store(part, b * ps[1] * plane + i,
                       ref::load(out.x, (b * c.x[1] + c0) * plane + i));
      }
      c0 += ps[1];
      out.parts.push_back(std::move(part));
      if (p > 0) n.inputs.push_back(value("x" + std::to_string(p)));
    }
    n.attrs.items["x_parts"].kind = ir::Attribute::Kind::i;
    n.attrs.items["x_parts"].i = static_cast<int64_t>(c.x_parts.size());
    if (!c.x_upsample.empty()) {
      n.attrs.items[kFusedXUpsample].kind = ir::Attribute::Kind::is;
      n.attrs.items[kFusedXUpsample].is = c.x_upsample;
    }
  }
  // Two constant inputs of the node (weights, and a bias or none) from input `at` on.
  auto add_constants = [&](int at, const char* w_name, const Tensor& w, const char* b_name,
                           const Tensor* b) {
    n.inputs.resize(static_cast<size_t>(at), -1);
    const int wv = value(w_name), bv = b ? value(b_name) : -1;
    g.constants[wv] = w;
    if (bv >= 0) g.constants[bv] = *b;
    n.inputs.push_back(wv);
    n.inputs.push_back(bv);
  };
  if (c.head > 0) {
    // Its weights (Mh, M, 1...) and bias follow X's parts; Y has Mh channels.
    Shape hw(c.w.size(), 1);
    hw[0] = c.head;
    hw[1] = m;
    out.head_w = random_tensor(t, hw, rng, -1, 1);
    out.head_b = random_tensor(t, {c.head}, rng, -0.5, 0.5);
    add_constants(fused_head_input(n), "head_w", out.head_w, "head_b",
                  c.head_bias ? &out.head_b : nullptr);
    n.attrs.items[kFusedHead].kind = ir::Attribute::Kind::i;
    n.attrs.items[kFusedHead].i = 1;
    if (c.head_softmax) {
      n.attrs.items[kFusedHeadSoftmax].kind = ir::Attribute::Kind::i;
      n.attrs.items[kFusedHeadSoftmax].i = 1;
    }
    out.y[1] = c.head;
  }
  if (c.x_transposed >= 0) {
    // Its weights and bias after X's parts and the head's.
    n.attrs.items[kFusedXTransposed].kind = ir::Attribute::Kind::i;
    n.attrs.items[kFusedXTransposed].i = c.x_transposed;
    add_constants(fused_transposed_input(n), "up_w", out.up_w, "up_b",
                  c.transposed_bias ? &out.up_b : nullptr);
  }
  g.nodes.push_back(n);
  return true;
}

// A copy of `t` (same dtype) with every value rounded to bfloat16, as the bf16 rows read it.
inline Tensor bf16_rounded(const Tensor& t) {
  Tensor r = Tensor::empty(t.dtype(), t.shape());
  for (int64_t i = 0; i < t.numel(); ++i)
    ref::store(r, i, bf16_to_float(float_to_bf16(static_cast<float>(ref::load(t, i)))));
  return r;
}

// What a case runs under: the ISA cap and the session's fpmath.
struct Path {
  Isa isa;
  FpMath fpmath;
};

inline void PrintTo(const Path& p, std::ostream* os) {
  *os << isa_name(p.isa) << (p.fpmath == FpMath::bf16 ? " with bf16 products" : "");
}

// Lowers the case on `path`, runs it on `pool` (may be null), and compares with the reference.
// Rows with bf16 products are held to the fp32 (or fp16 storage) bound against the reference
// run on bf16-rounded X and W, and to the reduced-precision bound against the exact reference.
// `output_shape`: the expected output shape the lowering is told (SessionOptions::input_shapes),
// or null.
inline void check(const ConvCase& c, DType t, Path path, ThreadPool* pool, std::mt19937& rng,
                  const Shape* output_shape = nullptr) {
  Built b;
  ASSERT_TRUE(build(c, t, rng, b)) << "invalid test case: " << c.str();
  const ir::Node& n = b.graph.nodes[0];
  // The reference runs the node on X whole; with parts, the optimized op reads them.
  ir::Node whole = n;
  whole.inputs.resize(std::min<size_t>(whole.inputs.size(), 4));
  whole.attrs.items.erase("x_parts");
  whole.attrs.items.erase(kFusedXUpsample);
  whole.attrs.items.erase(kFusedXTransposed);
  whole.attrs.items.erase(kFusedXFrom);
  whole.attrs.items.erase(kFusedResidualFrom);
  std::vector<const Tensor*> in = {&b.x, &b.w, c.bias ? &b.b : nullptr};
  if (c.residual) in.push_back(&b.residual);
  // A head's weights and bias: the two inputs after X's parts, after the residual slot here.
  const Tensor* head_b = c.head_bias ? &b.head_b : nullptr;
  if (c.head > 0) {
    const size_t at = static_cast<size_t>(fused_head_input(n));
    whole.inputs.resize(4, -1);
    whole.inputs.push_back(n.inputs[at]);
    whole.inputs.push_back(n.inputs[at + 1]);
    in.resize(4, nullptr);
    in.push_back(&b.head_w);
    in.push_back(head_b);
  }
  // A fused Cast to fp32 (`to`): Y is fp32, never rounded to X's dtype, so the fp32 bound holds.
  const bool f32_out = c.attrs.count(kFusedCastTo) > 0;
  const DType yt = f32_out ? DType::f32 : t;
  std::vector<Tensor> want = {Tensor::zeros(yt, b.y)};
  OpRegistry::instance().create(whole, b.graph)->compute(in, want);
  std::vector<const Tensor*> fast_in = in;
  if (!b.parts.empty()) {
    fast_in[0] = &b.parts[0];
    fast_in.resize(4, nullptr);
    for (size_t p = 1; p < b.parts.size(); ++p) fast_in.push_back(&b.parts[p]);
    if (c.head > 0) {
      fast_in.push_back(&b.head_w);
      fast_in.push_back(head_b);
    }
    if (c.x_transposed >= 0) {
      fast_in.push_back(&b.up_w);
      fast_in.push_back(c.transposed_bias ? &b.up_b : nullptr);
    }
  }

  // Windows: X and the residual inside wider tensors.
  if (c.x_from >= 0) fast_in[0] = &b.x_wide;
  if (c.residual_from >= 0) fast_in[3] = &b.residual_wide;

  std::unique_ptr<Op> fast =
      CpuRegistry::instance().lower(n, b.graph, OpRegistry::instance().create(n, b.graph), path.isa,
                                    path.fpmath, true, output_shape);
  int64_t group = c.attrs.count("group") ? c.attrs.at("group").i : 1;
  const bool conv = c.op == "Conv" || c.op == "FusedConv";
  // One input channel a group at width stride > 1 keeps fp32 products, except at stride 2
  // without dilation (see accept()).
  const int64_t width_stride = c.attrs.count("strides") ? c.attrs.at("strides").is.back() : 1;
  const bool width_dilated = c.attrs.count("dilations") && c.attrs.at("dilations").is.back() != 1;
  const bool strided_single =
      conv && c.w[1] == 1 && width_stride > 1 && (width_stride != 2 || width_dilated);
  // A ConvTranspose in its gather form runs convolutions to its M output channels (C, M, k...).
  const bool gather = fast->kernel_name().find(" gather") != std::string::npos;
  const GemmKernel* row = find_gemm_kernel(path.isa, t,
                                           conv     ? c.w[0] / group
                                           : gather ? c.w[1]
                                                    : 0,
                                           path.fpmath == FpMath::bf16 && !strided_single);
  // Where the row's products are faster than fp32's, fp16 storage's F(4, 3) layers run in
  // Winograd's form on the fp32-arithmetic row (conv_lowering.cpp, winograd_row).
  if (conv && (row->a_panel != PanelType::f32 || row->k_carry != 0) &&
      fast->kernel_name().find("_winograd_f43__") != std::string::npos)
    row = find_gemm_kernel(std::min(path.isa, Isa::avx512bf16), t, c.w[0] / group, false);
  // The row's name, then any sibling tiles the direct path may take ("...__avx512+6x48").
  ASSERT_EQ(fast->kernel_name().rfind(row->name, 0), 0u) << c.str() << ": the lowering declined";
  // NaN everywhere: every element must be written.
  std::vector<Tensor> got = {Tensor::empty(yt, b.y)};
  std::memset(got[0].raw(), 0xff, got[0].nbytes());
  fast->run(RunContext{pool}, fast_in, got);
  const std::string what = std::string(row->name) + " " + std::string(dtype_name(t)) + " " +
                           c.str() + (pool ? " threads=" + std::to_string(pool->size()) : "");
  // With a head, the reference rounds the convolution's M channels to X's dtype before it (as the
  // unfused graph does), which the fused op does not: fp16 storage then keeps the fp16 bound.
  // Rows with fp16 arithmetic (k_carry) sum in fp16 whatever Y's dtype: the fp16 bound.
  const double tol =
      (t == DType::f32 || (f32_out && c.head == 0)) && row->k_carry == 0 ? 1e-5 : 1e-2;
  if (!bf16_dot(*row)) {
    EXPECT_LT(rel_l2(got[0], want[0]), tol) << what;
    return;
  }
  EXPECT_LT(rel_l2(got[0], want[0]), 1e-2) << what << " against the exact reference";
  Tensor x = bf16_rounded(b.x), w = bf16_rounded(b.w);
  std::vector<const Tensor*> rounded = in;
  rounded[0] = &x;
  rounded[1] = &w;
  std::vector<Tensor> want_rounded = {Tensor::zeros(yt, b.y)};
  OpRegistry::instance().create(whole, b.graph)->compute(rounded, want_rounded);
  // Linearly upsampled parts are sums the kernel makes in fp32 and the reference in double: an
  // element one fp32 ulp apart can round to the neighbouring bf16 value (2^-8 off), so the
  // bf16-rounded reference holds them to 1e-3 (rel_l2 6.9e-5 seen).
  const bool interpolated = std::any_of(c.x_upsample.begin(), c.x_upsample.end(), [](int64_t u) {
    const Upsample m = static_cast<Upsample>(u);
    return m != Upsample::none && interpolation(m) != Upsample::nearest;  // every linear mode
  });
  // A transposed part's own products are bf16 ones, which rounding X's values after the fact
  // does not reproduce: held to the reduced-precision bound only (above).
  if (c.x_transposed >= 0) return;
  EXPECT_LT(rel_l2(got[0], want_rounded[0]), interpolated ? 1e-3 : tol)
      << what << " against bf16-rounded X and W";
}

inline ConvCase random_conv(std::mt19937& rng, int rank) {
  auto pick = [&](std::vector<int64_t> v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  ConvCase c;
  int64_t group = pick({1, 1, 1, 2, 3}), cg = pick({1, 2, 3, 5}), mg = pick({1, 2, 4, 7, 9, 17});
  c.x = {pick({1, 2}), group * cg};
  c.w = {group * mg, cg};
  std::vector<int64_t> strides, dilations, pads(2 * static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    int64_t k = pick({1, 2, 3, 3});
    c.w.push_back(k);
    c.x.push_back(rank == 3 ? pick({3, 5, 6, 9}) : pick({4, 7, 12, 19, 50}));
    strides.push_back(pick({1, 1, 2}));
    dilations.push_back(pick({1, 1, 2}));
    pads[static_cast<size_t>(d)] = std::uniform_int_distribution<int64_t>(0, k - 1)(rng);
    pads[static_cast<size_t>(d + rank)] = std::uniform_int_distribution<int64_t>(0, k - 1)(rng);
  }
  c.ints("strides", strides).ints("dilations", dilations);
  if (group > 1) c.i("group", group);
  int mode = static_cast<int>(pick({0, 0, 1, 2, 3}));
  if (mode == 0)
    c.ints("pads", pads);
  else
    c.s("auto_pad", mode == 1 ? "SAME_UPPER" : mode == 2 ? "SAME_LOWER" : "VALID");
  c.bias = pick({0, 1}) == 1;
  return c;
}

inline ConvCase random_conv_transpose(std::mt19937& rng, int rank) {
  auto pick = [&](std::vector<int64_t> v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  ConvCase c;
  c.op = "ConvTranspose";
  int64_t group = pick({1, 1, 2}), cg = pick({1, 3, 8}), mg = pick({1, 2, 5, 9});
  c.x = {pick({1, 2}), group * cg};
  c.w = {group * cg, mg};
  std::vector<int64_t> strides, dilations, pads(2 * static_cast<size_t>(rank)), extra;
  for (int d = 0; d < rank; ++d) {
    int64_t k = pick({1, 2, 3}), s = pick({1, 2, 3}), dil = pick({1, 1, 2});
    c.w.push_back(k);
    c.x.push_back(rank == 3 ? pick({2, 3, 5}) : pick({3, 6, 11}));
    strides.push_back(s);
    dilations.push_back(dil);
    pads[static_cast<size_t>(d)] = std::uniform_int_distribution<int64_t>(0, k - 1)(rng);
    pads[static_cast<size_t>(d + rank)] = std::uniform_int_distribution<int64_t>(0, k - 1)(rng);
    extra.push_back(std::uniform_int_distribution<int64_t>(0, std::max(s, dil) - 1)(rng));
  }
  c.ints("strides", strides).ints("dilations", dilations).ints("pads", pads);
  c.ints("output_padding", extra);
  if (group > 1) c.i("group", group);
  c.bias = pick({0, 1}) == 1;
  return c;
}

// Appends a case of `op` with X and W of these shapes to `cases`; returns it, for attributes.
inline ConvCase& add_case(std::vector<ConvCase>& cases, const char* op, Shape x, Shape w) {
  ConvCase c;
  c.op = op;
  c.x = std::move(x);
  c.w = std::move(w);
  cases.push_back(std::move(c));
  return cases.back();
}

// Shapes that UNets use, including the tile edges of every kernel row.
inline std::vector<ConvCase> unet_cases() {
  std::vector<ConvCase> v;
  auto conv = [&](Shape x, Shape w) {
    ConvCase c;
    c.x = std::move(x);
    c.w = std::move(w);
    v.push_back(c);
    return &v.back();
  };
  conv({1, 8, 10, 9, 11}, {8, 8, 3, 3, 3})->ints("pads", {1, 1, 1, 1, 1, 1});
  conv({2, 1, 12, 12, 12}, {8, 1, 3, 3, 3})->ints("pads", {1, 1, 1, 1, 1, 1});
  // One input channel at width stride 2 (MONAI's first layer): bf16 pairs of width columns.
  conv({1, 1, 13, 14, 15}, {8, 1, 3, 3, 3})
      ->ints("pads", {1, 1, 1, 1, 1, 1})
      .ints("strides", {2, 2, 2});
  conv({2, 1, 9, 17}, {5, 1, 2, 4})->ints("pads", {0, 2, 1, 1}).ints("strides", {1, 2});
  conv({1, 4, 9, 10, 13}, {16, 4, 3, 3, 3})->ints("pads", {1, 1, 1, 1, 1, 1});
  conv({1, 16, 7, 8, 9}, {3, 16, 1, 1, 1})->bias = false;
  conv({1, 8, 11, 10, 9}, {16, 8, 3, 3, 3})
      ->ints("pads", {1, 1, 1, 1, 1, 1})
      .ints("strides", {2, 2, 2});
  conv({1, 8, 10, 10, 10}, {16, 8, 2, 2, 2})->ints("strides", {2, 2, 2});
  conv({1, 6, 20, 23}, {10, 6, 3, 3})->ints("pads", {1, 1, 1, 1});
  conv({2, 3, 50}, {5, 3, 5})->ints("pads", {2, 2});
  conv({1, 2, 5, 6, 7}, {50, 2, 3, 3, 3})->ints("pads", {1, 1, 1, 1, 1, 1});
  for (const char* act : {"", "Relu", "LeakyRelu"})
    for (int residual : {0, 1, 2}) {  // none, before the activation, after it
      ConvCase* c = conv({1, 8, 6, 7, 9}, {12, 8, 3, 3, 3});
      c->op = "FusedConv";
      c->activation = act;
      c->residual = residual > 0;
      if (residual == 2) c->i(kResidualAfterActivation, 1);
      c->ints("pads", {1, 1, 1, 1, 1, 1});
    }
  // A MONAI residual unit's second convolution at batch 2: X and the residual read in place from
  // the joint first convolution's output (a Split's outputs), the residual after the activation.
  ConvCase* unit = conv({2, 8, 6, 7, 9}, {8, 8, 3, 3, 3});
  unit->op = "FusedConv";
  unit->activation = "LeakyRelu";
  unit->residual = true;
  unit->i(kResidualAfterActivation, 1).ints("pads", {1, 1, 1, 1, 1, 1});
  unit->x_from = 0;
  unit->residual_from = 2;
  // Rows of 32, 64 and 30 outputs: 8-row tiles take 32-lane strips in place (the 8x48 row's
  // 8x32 sibling), the last of each row of 30 two lanes short; at batch 2, with a residual.
  conv({1, 3, 5, 4, 32}, {16, 3, 3, 3, 3})->ints("pads", {1, 1, 1, 1, 1, 1});
  conv({2, 5, 7, 64}, {8, 5, 3, 3})->ints("pads", {1, 1, 1, 1});
  ConvCase* rows30 = conv({2, 4, 6, 30}, {16, 4, 3, 3});
  rows30->op = "FusedConv";
  rows30->activation = "Relu";
  rows30->residual = true;
  rows30->ints("pads", {1, 1, 1, 1});
  auto up = [&](Shape x, Shape w) {
    ConvCase c;
    c.op = "ConvTranspose";
    c.x = std::move(x);
    c.w = std::move(w);
    v.push_back(c);
    return &v.back();
  };
  up({1, 16, 5, 6, 7}, {16, 8, 2, 2, 2})->ints("strides", {2, 2, 2});
  up({2, 8, 9, 10}, {8, 4, 2, 2})->ints("strides", {2, 2});
  up({1, 6, 4, 5, 3}, {6, 3, 3, 3, 3})
      ->ints("strides", {2, 2, 2})
      .ints("pads", {1, 1, 1, 1, 1, 1})
      .ints("output_padding", {1, 1, 1});
  up({1, 4, 5, 5, 5}, {4, 6, 2, 2, 2});
  up({1, 4, 6, 7}, {4, 3, 3, 3})->i("group", 2).ints("dilations", {2, 2}).bias = false;
  // Pads at or past the kernel crop whole phases' first inputs (the gather form reads from
  // input 1 or 2 on); stride 3 along the width.
  up({2, 3, 6, 7, 5}, {3, 4, 3, 3, 4})
      ->ints("strides", {2, 2, 3})
      .ints("pads", {3, 2, 4, 4, 3, 3})
      .ints("output_padding", {1, 0, 2});
  return v;
}

inline const Path kPaths[] = {{Isa::scalar, FpMath::strict},     {Isa::avx2, FpMath::strict},
                              {Isa::avx512, FpMath::strict},     {Isa::avx512bf16, FpMath::bf16},
                              {Isa::avx512fp16, FpMath::strict}, {Isa::avx512fp16, FpMath::bf16}};

// Paths at AVX512-FP16 run on its stand-ins where the CPU lacks it (the kernels' own code then
// runs only where the CPU has it: the gemm row test compares both forms with the reference).
class ConvLoweringTest : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    if (usable_isa() < GetParam().isa)
      GTEST_SKIP() << "this CPU has no " << isa_name(GetParam().isa) << "; its kernels are not run";
  }

 private:
  test::EmulateAvx512Fp16 emulate_{true};
};

// The direct path's per-thread slab budget for a scope.
using SlabBudget = test::ScopedSetting<int64_t, &ConvGemm::set_slab_budget>;
// The panel bytes past which 2D bands go a block of output channels at a time, for a scope.
using WidePanelsAbove = test::ScopedSetting<int64_t, &ConvGemm::set_wide_panels_above>;

// Checks `count` valid cases from make(rng, attempt) in f32 and f16, alternating a pool of
// `threads` with none, or with `always_pool` on the pool every time; the pool's workers start
// each parallel_ranges job `worker_delay` late (ThreadPool::delay_workers_for_tests).
template <class Make>
inline void check_random_cases(int count, uint32_t seed, Path path, Make make, int threads = 2,
                               bool always_pool = false,
                               std::chrono::microseconds worker_delay = {}) {
  ThreadPool pool(threads);
  pool.delay_workers_for_tests(worker_delay);
  std::mt19937 rng(seed);
  int done = 0;
  for (int attempt = 0; done < count && attempt < 1000; ++attempt) {
    ConvCase c = make(rng, attempt);
    Built probe;
    std::mt19937 probe_rng(1);
    if (!build(c, DType::f32, probe_rng, probe)) continue;
    ++done;
    for (DType t : {DType::f32, DType::f16})
      check(c, t, path, always_pool || done % 2 ? &pool : nullptr, rng);
  }
  EXPECT_EQ(done, count);
}

// The instantiation's test names: the ISA, with "_bf16math" for bf16 products.
inline std::string path_name(const ::testing::TestParamInfo<Path>& info) {
  return std::string(isa_name(info.param.isa)) +
         (info.param.fpmath == FpMath::bf16 ? "_bf16math" : "");
}

}  // namespace voxrt::cpu::conv_cases
