#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the whole suite in a Release build, then
# again under AddressSanitizer and UndefinedBehaviorSanitizer in a Debug build (the model
# fixtures there too: they are the real graphs every fused path runs on, about 40 s), less the
# model and pattern tests' reruns with AVX512-FP16 emulated (label `emulated`: about three
# minutes more in Debug at -O0; the conv lowering tests run that path under the sanitizers). The Release
# build's ctest includes the thread pool's tests under ThreadSanitizer (`tsan.*`). The sanitized
# build compiles at -O1 (assertions kept), as the sanitizers' own documentation advises: on the
# Zen 4 VM its ctest took 212 s against 714 at -O0, its cold build 642 s against 313.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh build -DVOXRT_BUILD_TESTS=ON
(cd build && ctest --output-on-failure -j2)
scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" \
  -DVOXRT_SANITIZE=ON -DVOXRT_BUILD_BENCH=OFF
(cd build-asan && ctest --output-on-failure -j2 -LE emulated)
