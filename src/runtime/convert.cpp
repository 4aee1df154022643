#include "voxrt/convert.h"

#include <filesystem>
#include <fstream>

#include "onnx/importer.h"
#include "onnx/proto_io.h"
#include "passes/passes.h"
#include "runtime/compile.h"

namespace voxrt {

Fp16ConvertReport convert_to_fp16(const std::string& in_path, const std::string& out_path,
                                  const Fp16ConvertOptions& options) {
  std::filesystem::path p(in_path);
  const onnx_io::FileBytes bytes = onnx_io::read_file(in_path);
  ir::Graph g = import_checked(bytes.data(), bytes.size(), p.filename().string(),
                               p.parent_path().string());
  Fp16Options o;
  o.keep_io_types = options.keep_io_types;
  o.block_ops = options.block_ops;
  Fp16Report r = convert_fp16(g, o);
  build_ops(g);  // checks the converted graph types through
  onnx::ModelProto m = onnx_io::export_model(g);
  std::ofstream out(out_path, std::ios::binary);
  if (!out || !m.SerializeToOstream(&out)) throw Error("cannot write '" + out_path + "'");
  return Fp16ConvertReport{r.converted, r.clamped, r.flushed};
}

}  // namespace voxrt
