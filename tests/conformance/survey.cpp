#include "survey.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <vector>

#include "backends/ref/op.h"
#include "case.h"

namespace conformance {
namespace fs = std::filesystem;

namespace {

struct Entry {
  std::string suite;
  std::string test;
  fs::path dir;
  ModelSummary summary;
  std::string status;  // filled in before the run only when the case is not run
  std::string detail;
};

struct Child {
  size_t entry;
  int fd;
};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

// One line, no tabs, bounded: the TSV stays one row per case.
std::string one_line(std::string s) {
  s = s.substr(0, s.find('\n'));
  std::replace(s.begin(), s.end(), '\t', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  if (s.size() > 400) s = s.substr(0, 400) + "...";
  return s;
}

int64_t dir_bytes(const fs::path& dir) {
  int64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) n += static_cast<int64_t>(e.file_size());
  return n;
}

std::vector<Entry> collect(const SurveyOptions& o) {
  std::vector<Entry> entries;
  for (const char* suite : kSuites) {
    fs::path sdir = o.data_dir / suite;
    if (!fs::is_directory(sdir)) {
      std::cerr << "voxrt_conformance: no suite folder " << sdir << "\n";
      continue;
    }
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(sdir))
      if (e.is_directory()) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& d : dirs) {
      Entry e{suite, d.filename().string(), d, {}, {}, {}};
      std::string key = e.suite + "/" + e.test;
      if (fnmatch(o.filter.c_str(), key.c_str(), 0) != 0) continue;
      try {
        e.summary = summarize_model(d);
      } catch (const std::exception& ex) {
        e.status = "fail";
        e.detail = ex.what();
      }
      int64_t mb = dir_bytes(d) >> 20;
      if (e.status.empty() && mb > o.max_dir_mb) {
        e.status = "skip";
        e.detail = "test folder holds " + std::to_string(mb) + " MB, over the survey's " +
                   std::to_string(o.max_dir_mb) + " MB cap";
      }
      entries.push_back(std::move(e));
    }
  }
  return entries;
}

[[noreturn]] void child_main(const Entry& e, int fd, int timeout_s) {
  int devnull = open("/dev/null", O_WRONLY);
  if (devnull >= 0) {
    dup2(devnull, 1);
    dup2(devnull, 2);
  }
#if !defined(__SANITIZE_ADDRESS__)
  rlimit lim{size_t{4} << 30, size_t{4} << 30};  // a runaway allocation fails instead of swapping
  setrlimit(RLIMIT_AS, &lim);
#endif
  alarm(static_cast<unsigned>(timeout_s));
  CaseResult r = run_case(e.dir, e.suite + "/" + e.test);
  std::string line = std::string(status_name(r.status)) + "\t" + one_line(r.message);
  size_t off = 0;
  while (off < line.size()) {
    ssize_t w = write(fd, line.data() + off, line.size() - off);
    if (w <= 0) break;
    off += static_cast<size_t>(w);
  }
  _exit(0);
}

std::string drain(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  close(fd);
  return s;
}

void record_exit(Entry& e, int wstatus, const std::string& text, int timeout_s) {
  if (WIFSIGNALED(wstatus)) {
    int sig = WTERMSIG(wstatus);
    if (sig == SIGALRM) {
      e.status = "timeout";
      e.detail = "no result after " + std::to_string(timeout_s) + " s";
    } else {
      e.status = "crash";
      e.detail = std::string("killed by signal ") + strsignal(sig);
    }
    return;
  }
  size_t tab = text.find('\t');
  if (tab == std::string::npos) {
    e.status = "crash";
    e.detail = "exited with status " + std::to_string(WEXITSTATUS(wstatus)) + " without a result";
    return;
  }
  e.status = text.substr(0, tab);
  e.detail = text.substr(tab + 1);
}

void run_all(std::vector<Entry>& entries, const SurveyOptions& o) {
  std::map<pid_t, Child> running;
  size_t next = 0, done = 0;
  auto start_next = [&] {
    while (next < entries.size() && !entries[next].status.empty()) ++next;
    if (next == entries.size()) return false;
    int p[2];
    if (pipe(p) != 0) {
      perror("pipe");
      std::exit(2);
    }
    std::cout.flush();
    std::cerr.flush();
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      std::exit(2);
    }
    if (pid == 0) {
      close(p[0]);
      child_main(entries[next], p[1], o.timeout_s);
    }
    close(p[1]);
    running[pid] = Child{next, p[0]};
    ++next;
    return true;
  };
  for (;;) {
    while (static_cast<int>(running.size()) < std::max(1, o.jobs) && start_next()) {
    }
    if (running.empty()) break;
    int ws = 0;
    pid_t pid = waitpid(-1, &ws, 0);
    if (pid < 0) {
      perror("waitpid");
      std::exit(2);
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    // Results are a few hundred bytes, under the pipe's buffer, so the child never blocks on write.
    std::string text = drain(it->second.fd);
    record_exit(entries[it->second.entry], ws, text, o.timeout_s);
    running.erase(it);
    if (++done % 100 == 0) std::cerr << "voxrt_conformance: " << done << " cases run\n";
  }
}

}  // namespace

int run_survey(const SurveyOptions& o) {
  std::vector<Entry> entries = collect(o);
  if (entries.empty()) {
    std::cerr << "voxrt_conformance: no case under " << o.data_dir << " matches '" << o.filter
              << "' (set VOXRT_ONNX_TESTDATA to the folder holding the suites)\n";
    return 2;
  }
  run_all(entries, o);
  std::ofstream file;
  if (o.out != "-") {
    file.open(o.out);
    if (!file) {
      std::cerr << "voxrt_conformance: cannot write " << o.out << "\n";
      return 2;
    }
  }
  std::ostream& out = o.out == "-" ? std::cout : file;
  out << "suite\ttest\topset\tops\tio_dtypes\tstatus\tdetail\n";
  std::map<std::string, std::map<std::string, int>> counts;
  for (const Entry& e : entries) {
    out << e.suite << '\t' << e.test << '\t' << e.summary.opset << '\t' << join(e.summary.ops)
        << '\t' << join(e.summary.io_dtypes) << '\t' << e.status << '\t' << one_line(e.detail)
        << '\n';
    ++counts[e.suite][e.status];
  }
  for (const auto& [suite, by_status] : counts) {
    std::cerr << suite << ":";
    for (const auto& [status, n] : by_status) std::cerr << " " << status << " " << n;
    std::cerr << "\n";
  }
  return 0;
}

int list_ops(const fs::path& out_path) {
  std::ofstream file;
  if (out_path != "-") file.open(out_path);
  std::ostream& out = out_path == "-" ? std::cout : file;
  if (!out) {
    std::cerr << "voxrt_conformance: cannot write " << out_path << "\n";
    return 2;
  }
  out << "op\tmin_opset\tmax_opset\n";
  for (const voxrt::OpSchema* s : voxrt::OpRegistry::instance().all())
    out << s->op_type << '\t' << s->min_opset << '\t' << s->max_opset << '\n';
  return 0;
}

}  // namespace conformance
