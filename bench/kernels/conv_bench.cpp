// Convolutions of 3D UNets through the CPU backend's lowering (gemm kernels), per ISA cap this CPU
// allows, dtype and thread count; reports FLOP/s (2 per multiply-accumulate).
//
//   build/bench/conv_bench --benchmark_filter='conv3x3x3_32to32_96/f32/avx512/t1'
//   build/bench/conv_bench --benchmark_filter='32to32_96/f16/.*/t2' --benchmark_repetitions=5
//   build/bench/conv_bench --benchmark_filter='96/f32/avx512(bf16_bf16math)?/t1'  (bf16 products)
//   build/bench/conv_bench --benchmark_filter='64to64_48/f32/avx512(_direct)?/t1'  (Winograd's
//   form, where it applies, against the direct one)
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "backends/ref/tensor_math.h"
#include "runtime/scratch.h"
#include "runtime/thread_pool.h"

namespace voxrt::cpu {
namespace {

struct ConvCase {
  std::string name;
  std::string op;  // Conv or ConvTranspose
  Shape x, w;
  std::vector<int64_t> pads, strides, output_padding;
};

std::vector<ConvCase> cases() {
  auto cube = [](int64_t n, int64_t c) { return Shape{1, c, n, n, n}; };
  auto k3 = [](int64_t m, int64_t c) { return Shape{m, c, 3, 3, 3}; };
  std::vector<int64_t> p1 = {1, 1, 1, 1, 1, 1};
  return {
      {"conv3x3x3_128to128_24", "Conv", cube(24, 128), k3(128, 128), p1, {}, {}},
      {"conv3x3x3_64to64_48", "Conv", cube(48, 64), k3(64, 64), p1, {}, {}},
      {"conv3x3x3_32to32_48", "Conv", cube(48, 32), k3(32, 32), p1, {}, {}},
      {"conv3x3x3_32to32_96", "Conv", cube(96, 32), k3(32, 32), p1, {}, {}},
      {"conv3x3x3_16to16_96", "Conv", cube(96, 16), k3(16, 16), p1, {}, {}},
      {"conv3x3x3_8to8_96", "Conv", cube(96, 8), k3(8, 8), p1, {}, {}},
      {"conv3x3x3_6to6_96", "Conv", cube(96, 6), k3(6, 6), p1, {}, {}},
      {"conv3x3x3_12to12_48", "Conv", cube(48, 12), k3(12, 12), p1, {}, {}},
      // unet3d_resize's last decoder layer: the upsampled 12 channels and the skip's 6 in.
      {"conv3x3x3_18to6_96", "Conv", cube(96, 18), k3(6, 18), p1, {}, {}},
      {"conv3x3x3_64to64_24", "Conv", cube(24, 64), k3(64, 64), p1, {}, {}},
      // The deep levels of MONAI's UNet at the spleen bundle's size (channels 16 to 256).
      {"conv3x3x3_64to64_12", "Conv", cube(12, 64), k3(64, 64), p1, {}, {}},
      {"conv3x3x3_256to256_6", "Conv", cube(6, 256), k3(256, 256), p1, {}, {}},
      {"conv3x3x3_128to128_12", "Conv", cube(12, 128), k3(128, 128), p1, {}, {}},
      // nnU-Net's two deepest stages at 128^3 (320 channels at 8^3 and 4^3).
      {"conv3x3x3_320to320_8", "Conv", cube(8, 320), k3(320, 320), p1, {}, {}},
      {"conv3x3x3_320to320_4", "Conv", cube(4, 320), k3(320, 320), p1, {}, {}},
      // nnU-Net's full-resolution stage on anisotropic scans (thin slabs of wide planes).
      {"conv3x3x3_32to32_20x256x224", "Conv", Shape{1, 32, 20, 256, 224}, k3(32, 32), p1, {}, {}},
      // 3.3-6.5 MB of padded planes in a kernel's reach, where whole planes measured faster than
      // bands of rows (conv_direct.cpp, kBandsAbove).
      {"conv3x3x3_32to32_128", "Conv", cube(128, 32), k3(32, 32), p1, {}, {}},
      // MONAI's SegResNet for BraTS: its full-resolution blocks, 16 channels at 128^3.
      {"conv3x3x3_16to16_128", "Conv", cube(128, 16), k3(16, 16), p1, {}, {}},
      {"conv3x3x3_64to64_64", "Conv", cube(64, 64), k3(64, 64), p1, {}, {}},
      {"conv3x3x3_1to16_96_first", "Conv", cube(96, 1), k3(16, 1), p1, {}, {}},
      {"conv3x3x3_4to32_96_first", "Conv", cube(96, 4), k3(32, 4), p1, {}, {}},
      {"conv3x3x3_s2_1to8_96_first", "Conv", cube(96, 1), k3(8, 1), p1, {2, 2, 2}, {}},  // MONAI
      {"conv3x3x3_s2_8to16_96", "Conv", cube(96, 8), k3(16, 8), p1, {2, 2, 2}, {}},      // nnU-Net
      {"conv3x3x3_s2_16to32_96", "Conv", cube(96, 16), k3(32, 16), p1, {2, 2, 2}, {}},
      {"conv3x3x3_s2_32to64_48", "Conv", cube(48, 32), k3(64, 32), p1, {2, 2, 2}, {}},
      // unet3d_monai's second level: a stride-2 conv from 48^3, then 16 -> 16 at 24^3.
      {"conv3x3x3_s2_8to16_48", "Conv", cube(48, 8), k3(16, 8), p1, {2, 2, 2}, {}},
      {"conv3x3x3_16to16_24", "Conv", cube(24, 16), k3(16, 16), p1, {}, {}},
      // Its third level: a stride-2 conv from 24^3 (12 output planes).
      {"conv3x3x3_s2_16to32_24", "Conv", cube(24, 16), k3(32, 16), p1, {2, 2, 2}, {}},
      {"conv2x2x2_s2_16to32_96", "Conv", cube(96, 16), Shape{32, 16, 2, 2, 2}, {}, {2, 2, 2}, {}},
      {"conv1x1x1_32to3_96", "Conv", cube(96, 32), Shape{3, 32, 1, 1, 1}, {}, {}, {}},
      {"conv3x3x3_3to3_96_head", "Conv", cube(96, 3), k3(3, 3), p1, {}, {}},  // MONAI UNet's last
      {"conv3x3x3_2to2_96_head", "Conv", cube(96, 2), k3(2, 2), p1, {}, {}},  // the spleen bundle's
      {"conv3x3_32to32_256",
       "Conv",
       Shape{1, 32, 256, 256},
       Shape{32, 32, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      {"conv3x3_24to8_256",
       "Conv",
       Shape{1, 24, 256, 256},
       Shape{8, 24, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      {"conv3x3_8to8_256", "Conv", Shape{1, 8, 256, 256}, Shape{8, 8, 3, 3}, {1, 1, 1, 1}, {}, {}},
      // unet2d's first layer and its head.
      {"conv3x3_1to8_256_first",
       "Conv",
       Shape{1, 1, 256, 256},
       Shape{8, 1, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      {"conv1x1_8to3_256_head", "Conv", Shape{1, 8, 256, 256}, Shape{3, 8, 1, 1}, {}, {}, {}},
      // unet2d's second level's first layer (after a max pool).
      {"conv3x3_8to16_128",
       "Conv",
       Shape{1, 8, 128, 128},
       Shape{16, 8, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      // nnU-Net's 2d configuration at a 512x512 patch (32 to 512 channels, eight stages): its
      // full-resolution layers, a 512-channel layer, and the decoder's first convolutions after
      // the skip Concat (1024 channels in).
      {"conv3x3_32to32_512",
       "Conv",
       Shape{1, 32, 512, 512},
       Shape{32, 32, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      {"conv3x3_64to32_512",
       "Conv",
       Shape{1, 64, 512, 512},
       Shape{32, 64, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      {"conv3x3_64to64_256",
       "Conv",
       Shape{1, 64, 256, 256},
       Shape{64, 64, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      {"conv3x3_512to512_32",
       "Conv",
       Shape{1, 512, 32, 32},
       Shape{512, 512, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      {"conv3x3_1024to512_32",
       "Conv",
       Shape{1, 1024, 32, 32},
       Shape{512, 1024, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      {"conv3x3_1024to512_16",
       "Conv",
       Shape{1, 1024, 16, 16},
       Shape{512, 1024, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      {"conv3x3_256to256_64",
       "Conv",
       Shape{1, 256, 64, 64},
       Shape{256, 256, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      {"conv3x3_128to128_128",
       "Conv",
       Shape{1, 128, 128, 128},
       Shape{128, 128, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      {"conv3x3_512to512_8",
       "Conv",
       Shape{1, 512, 8, 8},
       Shape{512, 512, 3, 3},
       {1, 1, 1, 1},
       {},
       {}},
      // nnU-Net 2d's last up-convolution: 64 -> 32 channels, 256x256 -> 512x512.
      {"convtranspose2x2_s2_64to32_256",
       "ConvTranspose",
       Shape{1, 64, 256, 256},
       Shape{64, 32, 2, 2},
       {},
       {2, 2},
       {}},
      // The 2D UNet fixture's first up-convolution: 32 -> 16 channels, 64x64 -> 128x128 (a few
      // tiles of input positions against two threads).
      {"convtranspose2x2_s2_32to16_64",
       "ConvTranspose",
       Shape{1, 32, 64, 64},
       Shape{32, 16, 2, 2},
       {},
       {2, 2},
       {}},
      {"convtranspose2x2x2_s2_32to16_48",
       "ConvTranspose",
       cube(48, 32),
       Shape{32, 16, 2, 2, 2},
       {},
       {2, 2, 2},
       {}},
      // MONAI UNet's up-convolutions: kernel 3, stride 2, output padding 1 (overlapping taps).
      {"convtranspose3x3x3_s2_32to16_24",
       "ConvTranspose",
       cube(24, 32),
       Shape{32, 16, 3, 3, 3},
       p1,
       {2, 2, 2},
       {1, 1, 1}},
      {"convtranspose3x3x3_s2_16to3_48",
       "ConvTranspose",
       cube(48, 16),
       Shape{16, 3, 3, 3, 3},
       p1,
       {2, 2, 2},
       {1, 1, 1}},
      {"convtranspose3x3x3_s2_32to2_48",  // the spleen bundle's last upsampling
       "ConvTranspose",
       cube(48, 32),
       Shape{32, 2, 3, 3, 3},
       p1,
       {2, 2, 2},
       {1, 1, 1}},
  };
}

struct Lowered {
  ir::Graph graph;
  std::unique_ptr<Op> op;
  Tensor x, w, b, y;
  int64_t macs = 0;
};

std::unique_ptr<Lowered> lower(const ConvCase& c, DType t, Isa isa, FpMath fpmath, bool winograd) {
  auto l = std::make_unique<Lowered>();
  std::mt19937 rng(1);
  std::uniform_real_distribution<double> d(-1, 1);
  auto random = [&](const Shape& s) {
    Tensor r = Tensor::empty(t, s);
    for (int64_t i = 0; i < r.numel(); ++i) ref::store(r, i, d(rng));
    return r;
  };
  ir::Graph& g = l->graph;
  g.model_name = "conv_bench.onnx";
  g.opset = 17;
  auto value = [&](const std::string& n) {
    int v = g.add_value(n);
    g.values[static_cast<size_t>(v)].dtype = t;
    return v;
  };
  l->x = random(c.x);
  l->w = random(c.w);
  int64_t m = c.op == "Conv" ? c.w[0] : c.w[1];
  l->b = random({m});
  ir::Node n;
  n.name = c.name;
  n.op_type = c.op;
  n.opset = 17;
  n.inputs = {value("x"), value("w"), value("b")};
  n.outputs = {value("y")};
  g.constants[n.inputs[1]] = l->w;
  g.constants[n.inputs[2]] = l->b;
  auto ints = [&](const std::string& name, const std::vector<int64_t>& v) {
    if (v.empty()) return;
    n.attrs.items[name].kind = ir::Attribute::Kind::is;
    n.attrs.items[name].is = v;
  };
  ints("pads", c.pads);
  ints("strides", c.strides);
  ints("output_padding", c.output_padding);
  n.attrs.where = g.where(n);
  g.nodes.push_back(n);
  l->op = CpuRegistry::instance().lower(n, g, OpRegistry::instance().create(n, g), isa, fpmath,
                                        winograd);
  std::vector<ValueMeta> meta = {
      {true, t, c.x, nullptr}, {true, t, c.w, &l->w}, {true, t, {m}, &l->b}};
  Shape ys = l->op->infer_shapes(meta)[0];
  l->y = Tensor::empty(t, ys);
  l->macs = l->op->macs(meta, {ys});
  return l;
}

void run_case(benchmark::State& state, const ConvCase& c, DType t, Isa isa, FpMath fpmath,
              bool winograd, int threads) {
  std::unique_ptr<Lowered> l = lower(c, t, isa, fpmath, winograd);
  ThreadPool pool(threads);
  std::vector<const Tensor*> in = {&l->x, &l->w, &l->b};
  std::vector<Tensor> out = {l->y};
  // Scratch kept between runs, as a Session keeps it: without caches every slab and panel block
  // was mapped afresh each call (32 -> 32 channels at 128^3: 44 k page faults a run, 80 GFLOP/s
  // against 176 at 96^3).
  const RunScratch scratch(threads);
  const RunContext ctx = scratch.context(&pool);
  // First touch of the output outside the timing: a large output's page faults (113 MB at 32
  // channels of 96^3) otherwise count in the first iterations, of which a layer this large has
  // only one or two.
  l->op->run(ctx, in, out);
  for (auto _ : state) {
    l->op->run(ctx, in, out);
    benchmark::ClobberMemory();
  }
  state.SetLabel(l->op->kernel_name());
  state.counters["FLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(l->macs),
                                                benchmark::Counter::kIsIterationInvariantRate);
}

const bool registered = [] {
  for (const ConvCase& c : cases())
    for (DType t : {DType::f32, DType::f16})
      for (auto [isa, fpmath] :
           {std::pair{Isa::avx512fp16, FpMath::strict}, std::pair{Isa::avx512bf16, FpMath::bf16},
            std::pair{Isa::avx512, FpMath::strict}, std::pair{Isa::avx2, FpMath::strict}}) {
        if (cpu_features().detected < isa) continue;
        if (isa == Isa::avx512fp16 && t == DType::f32) continue;  // same kernel as avx512
        // "_direct": SessionOptions::winograd off, where the layer would take Winograd's form.
        const bool winograd_applies = fpmath == FpMath::strict && isa != Isa::avx512fp16 &&
                                      c.op == "Conv" && c.strides.empty() && c.w[0] >= 16 &&
                                      c.w[1] >= 16 && c.w[2] == 3;
        for (bool winograd : {true, false})
          for (int threads : {1, 2}) {
            if (!winograd && !winograd_applies) continue;
            std::string name = c.name + "/" + std::string(t == DType::f32 ? "f32" : "f16") + "/" +
                               isa_name(isa) + (fpmath == FpMath::bf16 ? "_bf16math" : "") +
                               (winograd ? "" : "_direct") + "/t" + std::to_string(threads);
            auto* b = benchmark::RegisterBenchmark(
                name.c_str(),
                [c, t, isa = isa, fpmath = fpmath, winograd, threads](benchmark::State& s) {
                  run_case(s, c, t, isa, fpmath, winograd, threads);
                });
            b->Unit(benchmark::kMillisecond);
            // One thread: rates from its CPU time, which a busy machine disturbs least. Two: from
            // wall time, the only measure of the speed-up (run those on a quiet machine).
            if (threads > 1) b->UseRealTime();
          }
      }
  return true;
}();

}  // namespace
}  // namespace voxrt::cpu
