#!/usr/bin/env bash
# Whole-volume segmentation benchmarks (issue 4); results and this command go to docs/PERFORMANCE.md.
#   1. a 256x256x160 volume, 96^3 patches, overlap 0.5, the BatchNorm 3D UNet fixture, fp32:
#      time outside the network passes (read, cut, blend, finish, write) against the total
#   2. the same end to end in fp16 and in fp16 with bf16 products (fp16+bf16, where the CPU has
#      AVX512-BF16): ratio to fp32; and the demo's mean Dice in each against fp32
#   3. a 512x512x300 volume, 3 classes: peak resident memory
#
#   bench/segment_volume.sh [--scale S] [--threads N] [--batch N] [--memory-model tiny|fixture]
#
# --scale S multiplies every length of 1 and 2 (volume and patch) by S: the same 75 patches, S^3
# of the work (0.5 runs them on 128x128x80 with 48^3 patches). Item 3 runs at full size; its
# network is by default a 1x1x1 convolution to 3 classes (tiny), since the memory measured is the
# volume pipeline's (input, float32 class sums, weight sums, labels), which does not depend on the
# network; --memory-model fixture runs the UNet fixture there too (600 patches of 96^3).
set -euo pipefail
cd "$(dirname "$0")/.."
scale=1 threads=1 batch=2 memory_model=tiny
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --memory-model) memory_model=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
build=${VOXRT_BUILD:-build}
[ -x "$build/voxrt" ] || scripts/build.sh "$build" -DVOXRT_BUILD_TESTS=OFF
voxrt="$build/voxrt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
len() { $py -c "print(max(1, round($1 * $scale)))"; }
total_of() { awk '/^total /{print $2}' "$1"; }

nz=$(len 160) ny=$(len 256) nx=$(len 256) patch=$(len 96)
model=tests/fixtures/unet3d_bn_op17.onnx
echo "voxrt $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, threads $threads, batch $batch"
$py tools/make_demo_volume.py --shape ${nz}x${ny}x${nx} --seed 5 --out "$tmp" --name bench >/dev/null
precisions="fp32 fp16 fp16+bf16"
for p in $precisions; do
  echo
  echo "== $p: ${nx}x${ny}x${nz} volume, ${patch}^3 patches, overlap 0.5, $model"
  "$voxrt" segment $model --input "$tmp/bench_volume.nii.gz" --output "$tmp/labels_$p.nii.gz" --patch $patch \
    --overlap 0.5 --batch $batch --threads $threads --normalize zscore --precision $p | tee "$tmp/seg_$p.txt"
done
t32=$(total_of "$tmp/seg_fp32.txt")
echo
for p in fp16 fp16+bf16; do
  t=$(total_of "$tmp/seg_$p.txt")
  echo "$p / fp32 end to end: $($py -c "print(f'{$t / $t32:.3f}')") ($t s / $t32 s)"
done

demo=models/demo
[ -f $demo/demo_volume.nii.gz ] || $py tools/make_demo_volume.py >/dev/null
for p in $precisions; do
  "$voxrt" segment $demo/demo_unet.onnx --input $demo/demo_volume.nii.gz --output "$tmp/demo_$p.nii.gz" \
    --patch 64 --batch 2 --threads $threads --normalize zscore --precision $p --quiet
  "$voxrt" dice "$tmp/demo_$p.nii.gz" $demo/demo_truth.nii.gz > "$tmp/dice_$p.txt"
done
d32=$(awk '/^mean/{print $2}' "$tmp/dice_fp32.txt")
for p in fp16 fp16+bf16; do
  d=$(awk '/^mean/{print $2}' "$tmp/dice_$p.txt")
  echo "demo mean Dice: fp32 $d32, $p $d, difference $($py -c "print(f'{abs($d - $d32):.4f}')")"
done

echo
echo "== memory: 512x512x300 volume, 3 classes, 96^3 patches, overlap 0.5 ($memory_model network)"
$py tools/make_demo_volume.py --shape 300x512x512 --seed 6 --out "$tmp" --name big >/dev/null
rm -f "$tmp"/bench_* "$tmp"/labels_*
if [ "$memory_model" = fixture ]; then
  big_model=$model
else
  big_model="$tmp/conv1x1_3classes.onnx"
  $py - "$big_model" <<'PY'
import sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
dims = ["batch", 1, "d", "h", "w"]
out_dims = ["batch", 3, "d", "h", "w"]
w = numpy_helper.from_array(np.array([1.0, -1.0, 0.5], np.float32).reshape(3, 1, 1, 1, 1), "w")
b = numpy_helper.from_array(np.array([0.0, 0.1, -0.1], np.float32), "b")
g = helper.make_graph([helper.make_node("Conv", ["input", "w", "b"], ["output"])], "conv1x1",
                      [helper.make_tensor_value_info("input", TensorProto.FLOAT, dims)],
                      [helper.make_tensor_value_info("output", TensorProto.FLOAT, out_dims)], [w, b])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
fi
"$voxrt" segment "$big_model" --input "$tmp/big_volume.nii.gz" --output "$tmp/big_labels.nii.gz" --patch 96 \
  --overlap 0.5 --batch $batch --threads $threads --normalize zscore
"$voxrt" dice "$tmp/big_labels.nii.gz" "$tmp/big_truth.nii.gz" | tail -1 | sed "s/^/(labels of the $memory_model network against the truth, for the record; neither was trained for this volume) /"
