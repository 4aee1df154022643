// Model conversion: write an fp16 ONNX model from an fp32 one.
//
//   voxrt::Fp16ConvertOptions opt;
//   opt.keep_io_types = true;            // inputs and outputs stay float32
//   opt.block_ops = {"Resize"};          // these ops stay float32, with Casts around them
//   voxrt::Fp16ConvertReport r = voxrt::convert_to_fp16("in.onnx", "out.onnx", opt);
#pragma once

#include <cstdint>
#include <set>
#include <string>

namespace voxrt {

struct Fp16ConvertOptions {
  bool keep_io_types = false;
  std::set<std::string> block_ops;
};

struct Fp16ConvertReport {
  int64_t converted = 0;  // constant elements converted to fp16
  int64_t clamped = 0;    // of those, elements beyond +-65504, clamped to it
  int64_t flushed = 0;    // nonzero elements below fp16's smallest subnormal, now zero
};

/// Reads an ONNX model, converts it and writes `out_path`; throws voxrt::Error on failure.
Fp16ConvertReport convert_to_fp16(const std::string& in_path, const std::string& out_path,
                                  const Fp16ConvertOptions& options);

}  // namespace voxrt
