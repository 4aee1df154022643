#!/usr/bin/env bash
# The newcomer's first command: install what is missing, build, run voxrt on the bundled 3D UNet
# in fp32 and fp16, then segment the demo volume with the demo network in fp32, fp16 and fp16 with
# bf16 products (fp16+bf16: AVX512-BF16 CPUs; others run it as fp16), each with its time and its
# Dice against the ground truth.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# A fresh build skips the tests; an existing build/ keeps its options (turning its tests off
# would leave `ctest` running stale test binaries after the next change).
if [ -f build/CMakeCache.txt ]; then scripts/build.sh build; else scripts/build.sh build -DVOXRT_BUILD_TESTS=OFF; fi
model=tests/fixtures/unet3d_bn_op17.onnx
./build/voxrt info "$model" --shape input=2x1x16x16x16
for p in fp32 fp16; do
  ./build/voxrt bench "$model" --shape input=2x1x16x16x16 --precision $p --runs 5 --warmup 1
done

# models/demo: demo_unet.onnx (trained by tools/train_demo.py); the volume and its truth are
# made here by tools/make_demo_volume.py (numpy, a second) when missing.
demo=models/demo
[ -f $demo/demo_volume.nii.gz ] && [ -f $demo/demo_truth.nii.gz ] || /usr/bin/python3 tools/make_demo_volume.py
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for p in fp32 fp16 fp16+bf16; do
  echo
  echo "== voxrt segment, $p: $demo/demo_volume.nii.gz (96x96x64) with $demo/demo_unet.onnx"
  ./build/voxrt segment $demo/demo_unet.onnx --input $demo/demo_volume.nii.gz --output "$out/labels_$p.nii.gz" \
    --patch 64 --overlap 0.5 --batch 2 --normalize zscore --precision $p
  ./build/voxrt dice "$out/labels_$p.nii.gz" $demo/demo_truth.nii.gz
done
