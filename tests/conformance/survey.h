// Modes of voxrt_conformance that are not gtest: a survey of every conformance case (each in a
// forked child with a time limit, so crashes and hangs are recorded, not fatal) and a dump of the
// operators voxrt's reference backend registers.
#pragma once

#include <filesystem>
#include <string>

namespace conformance {

/// The four suites of ONNX's backend test data that the survey walks, in order.
inline constexpr const char* kSuites[] = {"node", "pytorch-converted", "pytorch-operator",
                                          "simple"};

struct SurveyOptions {
  std::filesystem::path data_dir;
  std::filesystem::path out;  // TSV; "-" for stdout
  std::string filter = "*";   // glob on "suite/test"
  int jobs = 2;
  int timeout_s = 20;
  int64_t max_dir_mb = 50;  // bigger test folders are skipped
};

/// Writes one TSV row per case: suite, test, opset, ops, io_dtypes, status, detail. Returns 0.
int run_survey(const SurveyOptions& o);

/// Writes "op_type<TAB>min_opset<TAB>max_opset" for every registered schema row. Returns 0.
int list_ops(const std::filesystem::path& out);

}  // namespace conformance
