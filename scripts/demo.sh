#!/usr/bin/env bash
# The newcomer's first command: install what is missing, build, and run voxrt on the bundled
# 3D UNet in fp32 and fp16.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh build -DVOXRT_BUILD_TESTS=OFF
model=tests/fixtures/unet3d_bn_op17.onnx
./build/voxrt info "$model" --shape input=2x1x16x16x16
for p in fp32 fp16; do
  ./build/voxrt bench "$model" --shape input=2x1x16x16x16 --precision $p --runs 5 --warmup 1
done
