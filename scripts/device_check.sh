#!/usr/bin/env bash
# The checks that need a CPU this machine lacks, prepared for a lent machine (the `device` tool of
# the workplace: a GPU host whose CPU may have AVX512-FP16 and AMX, which nothing can be installed
# on and nothing outside it reached from).
#
#   scripts/device_check.sh bundle   here: builds, then copies the binaries, the pattern models and
#                                    every shared library they load (the loader and glibc too)
#                                    into build/device/ (about 30 MB)
#   scripts/device_check.sh run      there, from the repository root, with build/device carried:
#                                    the CPU's flags, peak_bench's ceilings, the unit, model and
#                                    pattern tests on every ISA path the CPU has, conv_bench's
#                                    3x3x3 layers on each path, and the fixtures' fp32 and fp16
#                                    models alternated on one and two threads (medians, ratios,
#                                    peak RSS); what it prints goes to device_report.txt, and the
#                                    unit tests' whole log to device_unit_tests.log, in $OUT (the
#                                    device tool's folder that comes back) or else /tmp.
#
# Each binary runs through the bundled loader with the bundled libraries, so the lent machine's
# own glibc (older or newer) does not matter. The tests find the tree through VOXRT_SOURCE_DIR and
# VOXRT_PATTERN_DIR (tests/support/paths.h). About three minutes on this 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/.."
dev=build/device

bundle() {
  scripts/build.sh build -DVOXRT_BUILD_TESTS=ON -DVOXRT_BUILD_BENCH=ON
  rm -rf "$dev"
  mkdir -p "$dev/bin" "$dev/lib"
  local bins=(build/voxrt build/tests/voxrt_tests build/tests/voxrt_model_tests
    build/tests/voxrt_pattern_tests build/bench/conv_bench build/bench/peak_bench)
  cp "${bins[@]}" "$dev/bin/"
  cp -r build/tests/pattern_models "$dev/pattern_models"
  local b lib
  for b in "${bins[@]}"; do
    # "name => /path (addr)" and the loader's "/path (addr)"; the vDSO has no file.
    for lib in $(ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
      cp -L "$lib" "$dev/lib/"
    done
  done
  [ -f "$dev/lib/ld-linux-x86-64.so.2" ] || { echo "no loader in $dev/lib" >&2; exit 1; }
  du -sh "$dev"
}

run() {
  [ -d "$dev/bin" ] || { echo "no $dev: run 'scripts/device_check.sh bundle' and carry it" >&2; exit 1; }
  export VOXRT_SOURCE_DIR=$PWD VOXRT_PATTERN_DIR=$PWD/$dev/pattern_models
  x() { "$dev/lib/ld-linux-x86-64.so.2" --library-path "$dev/lib" "$dev/bin/$1" "${@:2}"; }
  local failed=0
  step() { echo; echo "== $* ($(date +%T))"; }

  step "the CPU"
  grep -m1 'model name' /proc/cpuinfo || true
  echo "cpus $(nproc), flags of note:" \
    $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|f16c|avx512f|avx512bw|avx512_bf16|avx512_fp16|amx_tile|amx_bf16)$' | sort)

  step "ceilings (peak_bench)"
  x peak_bench --benchmark_min_time=0.2 2>&1 | grep -E 'FLOP/s|B/s|ERROR|round trip' || failed=1

  step "unit tests, every ISA path the CPU has against the reference kernels"
  # The summary, any failure, and why tests were skipped (an ISA the CPU lacks), counted.
  local log=$reports/device_unit_tests.log
  x voxrt_tests --gtest_brief=1 > "$log" 2>&1 || failed=1
  grep -E '^\[ *(PASSED|FAILED|SKIPPED) *\]|^\[==========\]|Failure' "$log" || true
  grep -E '^this CPU lacks|^no [A-Za-z0-9-]+ ' "$log" | sort | uniq -c || true
  step "model fixtures against torch (the widest path, then capped to AVX-512 and AVX2)"
  for isa in "" avx512 avx2; do
    echo "-- VOXRT_MAX_ISA=${isa:-(not set)}"
    VOXRT_MAX_ISA=$isa x voxrt_model_tests --gtest_brief=1 2>&1 |
      grep -E '^\[ *(PASSED|FAILED|SKIPPED) *\]|^\[==========\]|Failure|_op17_fp16_b1 ' || failed=1
  done
  step "pattern models (opsets 7-21, fp32 and both fp16 forms) against the reference backend"
  x voxrt_pattern_tests --gtest_brief=1 2>&1 |
    grep -E '^\[ *(PASSED|FAILED|SKIPPED) *\]|^\[==========\]|Failure' || failed=1

  step "3x3x3 convolutions on each path, one and two threads (conv_bench)"
  x conv_bench --benchmark_min_time=0.2 \
    --benchmark_filter='^(conv3x3x3_32to32_96|conv3x3x3_8to8_96|conv3x3x3_64to64_24)/' \
    2>&1 | grep -E 'FLOP/s|ERROR' || failed=1

  step "fixtures: fp32 and fp16 models alternated, three rounds (voxrt bench, medians of 5 runs after 1)"
  local fam shape t form round ms out file
  printf '%-14s %-8s %-9s %9s %9s %9s %10s %s\n' model threads form "ms r1" "ms r2" "ms r3" \
    "fp32/form" "peak RSS"
  for fam in unet3d_bn nnunet3d unet3d_resize unet3d_gn unet3d_monai unet2d; do
    shape=1x1x96x96x96
    [ $fam = unet2d ] && shape=1x1x256x256
    for t in 1 2; do
      declare -A med=() rss=()
      for round in 1 2 3; do
        for form in fp32 fp16 fp16io32; do
          file=tests/fixtures/${fam}_op17.onnx
          [ $form = fp32 ] || file=tests/fixtures/${fam}_op17_$form.onnx
          out=$(x voxrt bench $file --shape $shape --threads $t --runs 5 --warmup 1 2>&1) ||
            { echo "$out"; failed=1; continue; }
          ms=$(echo "$out" | awk '{for (i = 1; i < NF; ++i) if ($i == "median") print $(i + 1)}')
          med[$form]="${med[$form]:-} $ms"
          rss[$form]=$(echo "$out" | awk '{for (i = 1; i < NF - 1; ++i) if ($i == "RSS") print $(i + 1) $(i + 2)}')
        done
      done
      for form in fp32 fp16 fp16io32; do
        # The median of the three rounds' medians: fp32's over this form's.
        echo "$fam $t $form ${med[$form]:-0 0 0} ${med[fp32]:-0 0 0} ${rss[$form]:-}" | awk '
          function mid(a, b, c) { return a + b + c - (a < b ? (a < c ? a : c) : (b < c ? b : c)) - (a > b ? (a > c ? a : c) : (b > c ? b : c)) }
          { m = mid($4, $5, $6); printf "%-14s %-8s %-9s %9s %9s %9s %10.2f %s\n", $1, $2, $3, $4, $5, $6, (m > 0 ? mid($7, $8, $9) / m : 0), $10 }'
      done
      unset med rss
    done
  done

  step "per layer: unet3d_bn, fp32 against fp16 (voxrt profile --compare)"
  x voxrt profile tests/fixtures/unet3d_bn_op17.onnx --shape 1x1x96x96x96 --threads 1 --runs 5 \
    --compare fp32,fp16 2>&1 | tail -n 12 || failed=1

  step "done, failures: $failed"
  return $failed
}

case "${1:-}" in
  bundle) bundle ;;
  run)
    reports=${OUT:-/tmp}
    run 2>&1 | tee "$reports/device_report.txt"
    ;;
  *) echo "usage: $0 bundle|run" >&2; exit 2 ;;
esac
