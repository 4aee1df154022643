#!/usr/bin/env bash
# Converts every fp32 fixture with `voxrt convert --fp16` (with and without --keep-io-types) and
# checks that onnxruntime loads each result and computes torch's function within the fp16 bar.
# Installs onnxruntime-node into bench/node_modules when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d bench/node_modules/onnxruntime-node ] || (cd bench && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund >/dev/null)
[ -x build/voxrt ] || scripts/build.sh build
out=$(mktemp -d)
fail=0
for m in tests/fixtures/*_op1[17].onnx; do
  name=$(basename "$m" .onnx); family=${name%_op*}
  for keep in "" "--keep-io-types"; do
    f="$out/${name}${keep:+_keepio}.onnx"
    build/voxrt convert --fp16 $keep "$m" "$f" >/dev/null
    input=tests/fixtures/$family/input_b1.npy
    [ -z "$keep" ] && input=tests/fixtures/$family/input_b1_fp16.npy
    NODE_PATH=bench/node_modules node tools/ort_check.js "$f" "$input" tests/fixtures/$family/output_b1.npy || fail=1
  done
done
rm -rf "$out"
exit $fail
