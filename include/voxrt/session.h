// Load an ONNX model once, run it many times.
//
//   voxrt::SessionOptions opt;
//   opt.precision = voxrt::Precision::fp16;   // run an fp32 model with fp16 activations
//   voxrt::Session s("unet.onnx", opt);
//   voxrt::Tensor x = voxrt::Tensor::zeros(voxrt::DType::f32, {2, 1, 64, 64, 64});
//   std::vector<voxrt::Tensor> y = s.run({{"input", x}});
//
// Symbolic dimensions (a dynamic batch axis) are bound from the inputs of each run: one Session
// serves any shape the model's ops allow. run() may be called from several threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "voxrt/dtype.h"
#include "voxrt/error.h"
#include "voxrt/tensor.h"

namespace voxrt {

enum class Precision {
  as_model,  ///< compute in the model's own types
  fp32,      ///< float32 throughout: an fp16 model's weights and activations widen at load
             ///< (graph inputs and outputs keep their types); fp32 models run as they are
  fp16,      ///< store float activations and weights in fp16, accumulate in fp32
};

/// Arithmetic the kernels may use below the storage precision (what oneDNN calls fpmath mode).
enum class FpMath {
  strict,  ///< products in the storage precision: fp32 with fp32 sums, or fp16 (on AVX512-FP16
           ///< fp16 sums carried into fp32 every 64 steps; elsewhere widened to fp32)
  bf16,    ///< convolutions may round their operands to bfloat16 and sum the exact products in
           ///< fp32, where the CPU has bf16 dot products (AVX512-BF16) that outrun its fp32
           ///< multiply-adds (Zen 4 and 5, not Intel's cores with AVX512-FP16); strict elsewhere
};

enum class Backend {
  cpu,        ///< optimized CPU kernels where they apply, the reference elsewhere
  reference,  ///< the plain reference implementation only (the oracle)
};

struct SessionOptions {
  Precision precision = Precision::as_model;
  FpMath fpmath = FpMath::strict;
  Backend backend = Backend::cpu;
  /// 3x3x3 and 3x3 convolutions of stride 1, one group, 16 channels a side or more (at least 16 x
  /// 32 channel pairs, 64 x 64 in 2D; 16 x 16 and 32 x 32 on AVX2 and Zen 4; at most 512 x 1024)
  /// and fp32 products (not bf16 products, not fp16 arithmetic) in Winograd's F(2, 3) form, fp16
  /// storage's layers of up to 256 x 256 pairs in 2D and 32 x 64 in 3D (on AVX2 and Zen 4 from 8
  /// channels a side and 8 x 16 pairs in 2D, 6 and 8 x 8 in 3D; 32 x 32 elsewhere) in F(4, 3),
  /// with bf16 products or fp16 arithmetic too (on fp32 arithmetic, from 16 x 16 pairs in 3D and
  /// 64 x 64 in 2D): at 64 channels and more about twice as fast as the direct form, their
  /// packed weights 2.4 (3D) or 1.8 (2D; F(4, 3) 4 and 8) times as many bytes (fp16 storage: fp32
  /// ones, but past 256 x 256 pairs, 2D's F(4, 3) 128 x 128). A fused 1x1 output head after at
  /// most 32 channels is mixed from the form's rows. Off: the direct form everywhere (the `voxrt`
  /// commands: VOXRT_WINOGRAD=0).
  bool winograd = true;
  /// The shapes the inputs will have, where they are known when the Session is created (a sliding
  /// window's patch, `voxrt segment --patch`; `voxrt bench --shape`): kernels are then chosen for
  /// them where a choice weighs a layer's packed weights against its activations (fp16 storage's 3D
  /// layers of 32 x 64 to 64 x 128 channel pairs take Winograd's F(4, 3), whose transformed weights
  /// take 864 bytes a pair, where their output takes at least twice those bytes). Empty: the
  /// inputs' declared shapes where none has a symbolic dim, else kernels for any shape. The Session
  /// runs inputs of any shape either way. A name may be empty where the model has one input;
  /// inputs not named take their declared shapes (none is told where one of those has symbolic
  /// dims). A name that is no input, or a shape that does not fit the model, is an Error.
  std::vector<std::pair<std::string, Shape>> input_shapes;
  int threads = 1;
  bool profiling = false;
  /// Run the portable graph passes (constant folding, BatchNorm folding, ...).
  bool optimize = true;
  /// Stop the pass list after the pass of this name (for bisecting a pass bug).
  std::string stop_after_pass;
  /// Name used in error messages; defaults to the file name.
  std::string model_name;
};

/// A graph input or output as the caller sees it. Symbolic dims are -1, named in `dim_names`.
struct IoInfo {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<std::string> dim_names;
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// Time spent in one node during the last profiled run.
struct NodeProfile {
  std::string node;
  std::string op_type;
  std::string kernel;   ///< the kernel that ran it ("ref" for the reference)
  double start_ms = 0;  ///< since the run began
  double milliseconds = 0;
  int64_t macs = 0;
  /// Activation bytes the node read and wrote: its non-constant inputs and its outputs at their
  /// storage dtypes (weights and other constants excluded). Over `milliseconds`, how close the
  /// node came to the memory bandwidth.
  int64_t bytes = 0;
  std::vector<Shape> output_shapes;
  /// A batch that runs a group of items at a time (where every node computes each item on its
  /// own) lists each node once a group: the first batch item of the group this entry timed.
  int64_t first_item = 0;
};

/// What a model is and costs at given input shapes.
struct ModelSummary {
  int64_t ir_version = 0;
  int opset = 0;
  std::map<std::string, int> op_histogram;  // after passes
  int64_t parameters = 0;                   // elements of float constants
  int64_t weight_bytes = 0;  // constants held, and the weights ops packed in their own form
  // At given input shapes only (planned is true):
  bool planned = false;
  int64_t macs = 0;              // multiply-accumulates of one run
  int64_t activation_bytes = 0;  // peak of simultaneously live activations
  std::vector<Shape> output_shapes;
};

class Session {
 public:
  Session(const std::string& path, const SessionOptions& options = {});
  Session(const void* bytes, size_t size, const SessionOptions& options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  const std::vector<IoInfo>& inputs() const;
  const std::vector<IoInfo>& outputs() const;

  /// Runs on the given inputs; the Session allocates and returns every output, in graph order.
  std::vector<Tensor> run(const std::vector<NamedTensor>& inputs) const;
  /// Runs into caller-owned outputs (zero copy): each tensor must have the exact dtype and shape.
  void run(const std::vector<NamedTensor>& inputs, std::vector<NamedTensor>& outputs) const;
  /// Sees each value a node wrote, as the run goes: the node's name, the value's name (both after
  /// the graph passes) and the tensor, valid only during the call.
  using ValueObserver =
      std::function<void(const std::string& node, const std::string& value, const Tensor& t)>;
  /// run(inputs, outputs) calling `observe` after each node (for accuracy studies: the
  /// intermediate values of two precisions side by side).
  void run(const std::vector<NamedTensor>& inputs, std::vector<NamedTensor>& outputs,
           const ValueObserver& observe) const;
  /// Output shapes a run on inputs of these shapes would produce, without computing them.
  std::vector<Shape> output_shapes(
      const std::vector<std::pair<std::string, Shape>>& input_shapes) const;

  /// What does not depend on input shapes: versions, op histogram, parameters, weight bytes.
  ModelSummary summary() const;
  /// Summary at the given input shapes (every graph input named).
  ModelSummary summary(const std::vector<std::pair<std::string, Shape>>& input_shapes) const;
  /// The graph as text: after the passes, or as imported (before them).
  std::string graph_text(bool before_passes = false) const;

  /// Per-node times of the most recent run, when options.profiling is on.
  std::vector<NodeProfile> last_profile() const;
  /// The most bytes of scratch (padded slabs, packed panels) the ops have held at once in the
  /// runs so far; the Session keeps them between runs.
  int64_t scratch_peak_bytes() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// The inputs a model file declares, as Session::inputs() lists them, read without compiling the
/// model: to choose SessionOptions::input_shapes (a sliding window's patch in the model's axes)
/// before the one Session is created. A file that is no model is an Error, as for Session.
std::vector<IoInfo> model_inputs(const std::string& path);

/// What the CPU kernels can use on this machine (CPUID and XCR0, capped by VOXRT_MAX_ISA).
struct CpuInfo {
  std::string isa;  ///< scalar, avx2, avx512, avx512bf16, avx512fp16 or amx
  /// FpMath::bf16 takes effect: AVX512-BF16, on a CPU whose bf16 dot products outrun fp32's
  /// multiply-adds (not Intel's with AVX512-FP16, where they run at half the rate).
  bool bf16_products = false;
  bool fp16_arithmetic = false;  ///< fp16 models compute in fp16 (AVX512-FP16)
  /// The fp16 arithmetic runs on software stand-ins, about a tenth of fp32's speed
  /// (VOXRT_EMULATE_AVX512FP16=1 on a CPU with AVX512-BF16 but not AVX512-FP16): for checking
  /// what fp16 arithmetic does to a model's outputs, not for speed.
  bool fp16_emulated = false;
  /// VOXRT_EMULATE_AVX512FP16 asks for that emulation (whether or not this CPU can give it).
  bool fp16_emulation_asked = false;
};
/// Read once per process; VOXRT_MAX_ISA is read at each call.
CpuInfo cpu_info();

}  // namespace voxrt
