// The directories the tests read files from: the ones the build was configured with, unless the
// environment names others, for test binaries run from a copy of the tree in another place
// (scripts/device_check.sh, on a lent machine): VOXRT_SOURCE_DIR (the source tree, whose
// tests/fixtures/ holds the fixtures) and VOXRT_PATTERN_DIR (the pattern models).
#pragma once

#include <cstdlib>
#include <string>

namespace voxrt::test {

inline std::string env_or(const char* name, const std::string& configured) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : configured;
}

#ifdef VOXRT_SOURCE_DIR
inline std::string source_dir() {
  return env_or("VOXRT_SOURCE_DIR", VOXRT_SOURCE_DIR);
}
#endif

#ifdef VOXRT_FIXTURE_DIR
inline std::string fixture_dir() {
  const char* source = std::getenv("VOXRT_SOURCE_DIR");
  return source && *source ? std::string(source) + "/tests/fixtures" : VOXRT_FIXTURE_DIR;
}
#endif

#ifdef VOXRT_PATTERN_DIR
inline std::string pattern_dir() {
  return env_or("VOXRT_PATTERN_DIR", VOXRT_PATTERN_DIR);
}
#endif

}  // namespace voxrt::test
