// Runs fuzz_model's target on every file in the folders given, without libFuzzer: how CI (GCC,
// and the ASan/UBSan pass) keeps each finding of scripts/fuzz.sh fixed (tests/fuzz_findings/).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  int files = 0;
  for (int a = 1; a < argc; ++a) {
    std::vector<std::filesystem::path> paths;
    for (const auto& e : std::filesystem::directory_iterator(argv[a]))
      if (e.is_regular_file()) paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    for (const auto& p : paths) {
      std::ifstream f(p, std::ios::binary);
      const std::string bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
      std::printf("%s (%zu bytes)\n", p.filename().c_str(), bytes.size());
      std::fflush(stdout);
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++files;
    }
  }
  std::printf("%d inputs ran without a crash, a sanitizer report or an escaping exception\n",
              files);
  return files > 0 ? 0 : 1;
}
