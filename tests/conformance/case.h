// One ONNX backend conformance case (a folder with model.onnx and test_data_set_*/), run through
// voxrt's public API and compared the way ONNX's backend runner compares.
//
//   conformance::CaseResult r = conformance::run_case(data_dir / "node" / "test_relu",
//   "node/test_relu"); if (r.status != conformance::Status::pass) std::cerr << r.message << "\n";
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace conformance {

/// skip: the case needs values voxrt has no tensor for (sequences, optionals, strings).
enum class Status { pass, fail, load_refused, skip };
/// "pass", "fail", "load-refused", "skip": the survey's spelling.
const char* status_name(Status s);

struct CaseResult {
  Status status = Status::fail;
  std::string message;
};

/// What a model uses, read from its protobuf: op types ("Relu", or "domain:Op" outside the
/// default domain, nested graphs included), the default-domain opset, and the element types of
/// its graph inputs and outputs ("float", "int64"...).
struct ModelSummary {
  std::vector<std::string> ops;
  int opset = 0;
  std::vector<std::string> io_dtypes;
};

/// Throws std::runtime_error if the model cannot be read or parsed.
ModelSummary summarize_model(const std::filesystem::path& case_dir);

/// Loads the model from bytes into a voxrt::Session, feeds every test_data_set_* and compares
/// each output with rtol 1e-3 and atol 1e-7 (NaN equals NaN; integers and bools exact; dtype and
/// shape exact). Never throws: every problem becomes a failing result with a one-line reason first.
CaseResult run_case(const std::filesystem::path& case_dir, const std::string& name);

/// ONNX's tolerances for backend node tests.
inline constexpr double kRtol = 1e-3;
inline constexpr double kAtol = 1e-7;

}  // namespace conformance
