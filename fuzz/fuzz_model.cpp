// libFuzzer target: any bytes as an ONNX model, loaded and, where it loads, run on small inputs.
//
// What the project promises of bad input: a voxrt::Error naming what was wrong, never a crash,
// a hang, undefined behaviour or an unbounded allocation. Any other exception escapes and the
// fuzzer reports it, as it reports sanitizer findings. Built by scripts/fuzz.sh (clang).
//
// Built with VOXRT_FUZZ_DIFFERENTIAL (fuzz_model_differential), the inputs whose length picks
// float32 also run on the reference backend without the passes, and a float32 output that
// differs from the reference's by more than kMaxRelativeL2 aborts: wrong results, which a crash
// fuzzer cannot see (a pass that matches a pattern the mutator bent, a kernel's edge case).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "voxrt/voxrt.h"

#ifdef VOXRT_FUZZ_DIFFERENTIAL
#include <onnx/onnx.pb.h>
#endif

namespace {

constexpr int64_t kMaxInputElements = 1 << 12;
constexpr int64_t kMaxActivationBytes = int64_t{64} << 20;
// Runs of more multiply-adds are skipped: a Conv padded by 65536 planes is legitimate work of a
// second in Release but tens under the sanitizers (and the reference backend, in the
// differential target), and each such timeout stopped the fuzzer.
constexpr int64_t kMaxMacs = int64_t{1} << 27;

// Deterministic values, mostly non-zero, as the bytes of any dtype (small integers where the
// dtype is an integer, so that shape-like inputs stay small).
void fill(voxrt::Tensor& t) {
  auto* p = static_cast<uint8_t*>(t.raw());
  const size_t width = voxrt::dtype_size(t.dtype());
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint8_t* e = p + static_cast<size_t>(i) * width;
    const float v = static_cast<float>(i % 7) * 0.25f - 0.75f;  // -0.75 .. 0.75
    if (t.dtype() == voxrt::DType::f32) {
      std::memcpy(e, &v, sizeof v);
    } else if (t.dtype() == voxrt::DType::f64) {
      const double d = v;
      std::memcpy(e, &d, sizeof d);
    } else if (t.dtype() == voxrt::DType::f16) {
      const uint16_t h = static_cast<uint16_t>(0x3800 + (i % 5) * 0x100);  // 0.5 .. 1.5
      std::memcpy(e, &h, sizeof h);
    } else if (t.dtype() == voxrt::DType::bf16) {
      uint32_t bits;
      std::memcpy(&bits, &v, sizeof v);
      const uint16_t b = static_cast<uint16_t>(bits >> 16);  // exact: v has few significant bits
      std::memcpy(e, &b, sizeof b);
    } else {
      std::memset(e, 0, width);
      e[0] = static_cast<uint8_t>(1 + i % 3);
    }
  }
}

#ifdef VOXRT_FUZZ_DIFFERENTIAL
// Far above float32 reordering (1e-6) and far below a wrong result. Skipped, where rounding or
// IEEE corner cases are no signal: runs where the reference meets a float value beyond
// kMaxMagnitude anywhere (its squares and sums leave float32's range in the kernels, as in any
// float32 engine: an InstanceNorm of 7e28 values); models with a NaN or infinite constant (a
// NaN weight on a tap over padding: the kernels multiply it by the padding's zero, NaN, the
// reference skips the tap); outputs that are non-finite or near zero.
constexpr double kMaxRelativeL2 = 1e-3;
constexpr double kMaxMagnitude = 1e4;

// Whether a float tensor of the model holds a NaN or an infinity (any exponent of all ones).
bool non_finite(const onnx::TensorProto& t) {
  for (float v : t.float_data())
    if (!std::isfinite(v)) return true;
  for (double v : t.double_data())
    if (!std::isfinite(v)) return true;
  const std::string& raw = t.raw_data();
  auto any = [&](size_t width, uint64_t exponent) {
    for (size_t i = 0; i + width <= raw.size(); i += width) {
      uint64_t bits = 0;
      std::memcpy(&bits, raw.data() + i, width);
      if ((bits & exponent) == exponent) return true;
    }
    return false;
  };
  // fp16 and bf16 without raw data keep their bit patterns in int32_data.
  auto any_int32 = [&](uint32_t exponent) {
    for (int32_t v : t.int32_data())
      if ((static_cast<uint32_t>(v) & exponent) == exponent) return true;
    return false;
  };
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: return any(4, 0x7F800000u);
    case onnx::TensorProto::DOUBLE: return any(8, 0x7FF0000000000000u);
    case onnx::TensorProto::FLOAT16: return any(2, 0x7C00u) || any_int32(0x7C00u);
    case onnx::TensorProto::BFLOAT16: return any(2, 0x7F80u) || any_int32(0x7F80u);
    default: return false;
  }
}

bool has_non_finite_constant(const uint8_t* data, size_t size) {
  onnx::ModelProto m;
  if (!m.ParseFromArray(data, static_cast<int>(size))) return true;
  for (const onnx::TensorProto& t : m.graph().initializer())
    if (non_finite(t)) return true;
  for (const onnx::NodeProto& n : m.graph().node())
    for (const onnx::AttributeProto& a : n.attribute())
      if (a.has_t() && non_finite(a.t())) return true;
  return false;
}

double max_magnitude(const voxrt::Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = 0;
    if (t.dtype() == voxrt::DType::f32)
      v = t.data<float>()[i];
    else if (t.dtype() == voxrt::DType::f64)
      v = t.data<double>()[i];
    else
      return 0;
    if (!std::isfinite(v)) return INFINITY;
    m = std::max(m, std::abs(v));
  }
  return m;
}

void compare_with_reference(const uint8_t* data, size_t size, voxrt::SessionOptions opt,
                            const std::vector<voxrt::NamedTensor>& in,
                            const std::vector<voxrt::Tensor>& got) {
  if (has_non_finite_constant(data, size)) return;
  opt.backend = voxrt::Backend::reference;
  opt.optimize = false;
  opt.threads = 1;
  std::vector<voxrt::NamedTensor> want;
  double largest = 0;
  try {
    voxrt::Session ref(data, size, opt);
    std::vector<std::pair<std::string, voxrt::Shape>> shapes;
    for (const voxrt::NamedTensor& t : in) shapes.emplace_back(t.name, t.tensor.shape());
    const std::vector<voxrt::Shape> out_shapes = ref.output_shapes(shapes);
    for (size_t o = 0; o < out_shapes.size(); ++o)
      want.push_back(
          {ref.outputs()[o].name, voxrt::Tensor::empty(ref.outputs()[o].dtype, out_shapes[o])});
    ref.run(in, want, [&](const std::string&, const std::string&, const voxrt::Tensor& t) {
      largest = std::max(largest, max_magnitude(t));
    });
  } catch (const voxrt::Error&) {
    return;  // the reference refuses what the optimized session ran: its checks differ
  }
  if (!(largest <= kMaxMagnitude)) return;
  for (size_t o = 0; o < want.size() && o < got.size(); ++o) {
    const voxrt::Tensor &w = want[o].tensor, &g = got[o];
    if (w.dtype() != voxrt::DType::f32 || g.dtype() != voxrt::DType::f32 || w.shape() != g.shape())
      continue;
    double num = 0, den = 0;
    bool finite = true;
    for (int64_t i = 0; i < w.numel() && finite; ++i) {
      const double a = w.data<float>()[i], b = g.data<float>()[i];
      finite = std::isfinite(a) && std::isfinite(b);
      num += (a - b) * (a - b);
      den += a * a;
    }
    if (!finite || den < 1e-12) continue;
    const double rel = std::sqrt(num / den);
    if (rel > kMaxRelativeL2) {
      std::fprintf(stderr, "output %zu differs from the reference's: relative L2 %.3g\n", o, rel);
      std::abort();
    }
  }
}
#endif

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  voxrt::SessionOptions opt;
  opt.model_name = "fuzz.onnx";
  // The precision options from the input's length, so that each input always runs alike: the
  // model's own types, fp16 conversion, fp32 conversion, fp16 with bf16 products.
  switch (size % 4) {
    case 1: opt.precision = voxrt::Precision::fp16; break;
    case 2: opt.precision = voxrt::Precision::fp32; break;
    case 3:
      opt.precision = voxrt::Precision::fp16;
      opt.fpmath = voxrt::FpMath::bf16;
      break;
    default: break;
  }
  opt.threads = 1 + static_cast<int>(size / 4 % 2);  // the drivers' splits over two threads too
  try {
    voxrt::Session s(data, size, opt);
    std::vector<voxrt::NamedTensor> in;
    std::vector<std::pair<std::string, voxrt::Shape>> shapes;
    for (const voxrt::IoInfo& io : s.inputs()) {
      voxrt::Shape shape = io.shape;
      int64_t n = 1;
      for (int64_t& d : shape) {
        if (d < 0) d = 2;  // a symbolic dimension
        if (d > kMaxInputElements) return 0;
        n *= d;
        if (n > kMaxInputElements) return 0;
      }
      voxrt::Tensor t = voxrt::Tensor::empty(io.dtype, shape);
      fill(t);
      in.push_back({io.name, t});
      shapes.emplace_back(io.name, shape);
    }
    const voxrt::ModelSummary summary = s.summary(shapes);
    if (summary.activation_bytes > kMaxActivationBytes || summary.macs > kMaxMacs) return 0;
    const std::vector<voxrt::Tensor> out = s.run(in);
#ifdef VOXRT_FUZZ_DIFFERENTIAL
    if (opt.precision == voxrt::Precision::fp32) compare_with_reference(data, size, opt, in, out);
#endif
  } catch (const voxrt::Error&) {
  }
  return 0;
}
