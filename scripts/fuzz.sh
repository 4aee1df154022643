#!/usr/bin/env bash
# Fuzzes model loading and running (fuzz/): builds the targets with clang, libFuzzer, ASan and
# UBSan into build-fuzz/, seeds a corpus with ONNX's backend test models and small UNet pieces
# (tools/make_pattern_models.py), and runs.
#
#   scripts/fuzz.sh [SECONDS] [structured|bytes|differential]     (default 600 structured)
#
# `structured` edits the ONNX message (fuzz/onnx_mutator.cpp), so that mutants reach the passes
# and kernels; `bytes` takes libFuzzer's byte mutations, which mostly exercise the parser;
# `differential` is `structured` that also compares float32 outputs with the reference
# backend's (wrong results, not only crashes). A
# finding stops the run and is written to build-fuzz/artifacts/; replay it with
# `build-fuzz/fuzz/fuzz_model build-fuzz/artifacts/FILE`. Not part of CI: a fuzzer finds new
# inputs on each run. A fixed finding goes into tests/fuzz_findings/ under a name that says what
# it was (its length unchanged: it picks the precision), where ctest's Fuzz.FindingsStayFixed
# replays it, beside a unit test of the defect.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
kind="${2:-structured}"
case "$kind" in
  structured) target=fuzz_model_structured ;;
  bytes) target=fuzz_model ;;
  differential) target=fuzz_model_differential ;;
  *) echo "usage: scripts/fuzz.sh [SECONDS] [structured|bytes|differential]" >&2; exit 2 ;;
esac
packages=(clang libclang-rt-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
scripts/install_deps.sh
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
CXX=clang++ scripts/build.sh build-fuzz -DVOXRT_FUZZ=ON -DVOXRT_BUILD_TESTS=OFF \
  -DVOXRT_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
seed=build-fuzz/seed corpus=build-fuzz/corpus-$kind artifacts=build-fuzz/artifacts
mkdir -p "$seed" "$corpus" "$artifacts"
if [ -z "$(ls -A "$seed")" ]; then
  # ONNX's small backend test models: every op, most attribute forms.
  find /usr/share/libonnx-testdata/data -name model.onnx -size -64k | while read -r f; do
    cp "$f" "$seed/$(echo "$f" | md5sum | cut -c1-16).onnx"
  done
fi
# Small UNet pieces of several nodes, fp32 and fp16, so that mutants reach the graph passes.
ls "$seed"/voxrt_*.onnx >/dev/null 2>&1 || /usr/bin/python3 tools/make_pattern_models.py "$seed"
build-fuzz/fuzz/$target "$corpus" "$seed" -max_total_time="$seconds" -max_len=65536 \
  -rss_limit_mb=3072 -timeout=20 -artifact_prefix="$artifacts/" -print_final_stats=1
