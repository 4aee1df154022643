// voxrt_conformance: ONNX's backend conformance cases (Debian's libonnx-testdata) through voxrt's
// public API. Modes:
//   voxrt_conformance [gtest flags]            the cases in allowlist.txt, one gtest test each
//   voxrt_conformance --run node/test_relu     one case in this process, full message
//   voxrt_conformance --survey out.tsv [--jobs N] [--timeout S] [--max-mb M] [--filter GLOB]
//   voxrt_conformance --list-ops out.tsv       the reference backend's registered schema rows
// VOXRT_ONNX_TESTDATA overrides the data folder, VOXRT_CONFORMANCE_ALLOWLIST the allowlist.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "case.h"
#include "survey.h"

namespace fs = std::filesystem;

namespace {

fs::path data_dir() {
  const char* env = std::getenv("VOXRT_ONNX_TESTDATA");
  return env && *env ? fs::path(env) : fs::path("/usr/share/libonnx-testdata/data");
}

fs::path allowlist_path() {
  const char* env = std::getenv("VOXRT_CONFORMANCE_ALLOWLIST");
  return env && *env ? fs::path(env) : fs::path(VOXRT_CONFORMANCE_ALLOWLIST);
}

struct Listed {
  std::string key;  // "node/test_relu"
  int line = 0;
};

struct Allowlist {
  std::vector<Listed> cases;
  std::vector<std::string> problems;
};

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return {};
  size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

Allowlist read_allowlist(const fs::path& p) {
  Allowlist a;
  std::ifstream f(p);
  if (!f) {
    a.problems.push_back("cannot open " + p.string());
    return a;
  }
  std::set<std::string> seen;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    std::string s = trim(line.substr(0, line.find('#')));
    if (s.empty()) continue;
    size_t slash = s.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == s.size() ||
        s.find_first_of("/ \t", slash + 1) != std::string::npos) {
      a.problems.push_back(p.string() + ":" + std::to_string(n) + ": '" + s +
                           "' is not of the form suite/test_name");
      continue;
    }
    if (!seen.insert(s).second) {
      a.problems.push_back(p.string() + ":" + std::to_string(n) + ": '" + s + "' is listed twice");
      continue;
    }
    a.cases.push_back({s, n});
  }
  return a;
}

// gtest names allow letters, digits and '_': "pytorch-converted/test_Conv2d" ->
// "pytorch_converted_test_Conv2d".
std::string gtest_name(const std::string& key) {
  std::string s = key;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

class ConformanceCase : public testing::Test {
 public:
  explicit ConformanceCase(std::string key) : key_(std::move(key)) {}
  void TestBody() override {
    conformance::CaseResult r = conformance::run_case(data_dir() / key_, key_);
    if (r.status != conformance::Status::pass)
      FAIL() << key_ << ": " << r.message << "\n  repro: voxrt_conformance --run " << key_;
  }

 private:
  std::string key_;
};

class AllowlistCheck : public testing::Test {
 public:
  explicit AllowlistCheck(std::vector<std::string> problems) : problems_(std::move(problems)) {}
  void TestBody() override {
    for (const std::string& p : problems_) ADD_FAILURE() << p;
  }

 private:
  std::vector<std::string> problems_;
};

void register_cases(const Allowlist& a) {
  testing::RegisterTest("Allowlist", "well_formed", nullptr, nullptr, __FILE__, __LINE__,
                        [p = a.problems]() -> testing::Test* { return new AllowlistCheck(p); });
  for (const Listed& c : a.cases)
    testing::RegisterTest("Conformance", gtest_name(c.key).c_str(), nullptr, nullptr,
                          allowlist_path().c_str(), c.line,
                          [key = c.key]() -> testing::Test* { return new ConformanceCase(key); });
}

int run_one(const std::string& key) {
  conformance::CaseResult r = conformance::run_case(data_dir() / key, key);
  std::cout << key << ": " << conformance::status_name(r.status);
  if (!r.message.empty()) std::cout << "\n" << r.message;
  std::cout << "\n";
  return r.status == conformance::Status::pass ? 0 : 1;
}

int usage() {
  std::cerr << "usage: voxrt_conformance [gtest flags]\n"
               "       voxrt_conformance --run suite/test_name\n"
               "       voxrt_conformance --survey OUT.tsv [--jobs N] [--timeout S] [--max-mb M] "
               "[--filter GLOB]\n"
               "       voxrt_conformance --list-ops OUT.tsv\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "--run") return args.size() == 2 ? run_one(args[1]) : usage();
  if (!args.empty() && args[0] == "--list-ops")
    return args.size() == 2 ? conformance::list_ops(args[1]) : usage();
  if (!args.empty() && args[0] == "--survey") {
    if (args.size() < 2 || args.size() % 2) return usage();
    conformance::SurveyOptions o;
    o.data_dir = data_dir();
    o.out = args[1];
    try {
      for (size_t i = 2; i + 1 < args.size(); i += 2) {
        const std::string& k = args[i];
        const std::string& v = args[i + 1];
        if (k == "--jobs")
          o.jobs = std::stoi(v);
        else if (k == "--timeout")
          o.timeout_s = std::stoi(v);
        else if (k == "--max-mb")
          o.max_dir_mb = std::stoll(v);
        else if (k == "--filter")
          o.filter = v;
        else
          return usage();
      }
    } catch (const std::exception&) {
      return usage();
    }
    return conformance::run_survey(o);
  }
  testing::InitGoogleTest(&argc, argv);
  register_cases(read_allowlist(allowlist_path()));
  return RUN_ALL_TESTS();
}
