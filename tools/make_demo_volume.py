#!/usr/bin/python3
"""Synthetic MR-like volumes with known labels, for voxrt's demo and benchmarks (numpy only).

    /usr/bin/python3 tools/make_demo_volume.py                       # models/demo/demo_volume.nii.gz, demo_truth.nii.gz
    /usr/bin/python3 tools/make_demo_volume.py --shape 160x256x256 --seed 3 --out /tmp/big

Background tissue (about 100) holds bright spheres (label 1, about 170) and dark rotated ellipsoids
(label 2, about 45), under a smooth multiplicative bias field (0.8 to 1.2), a smooth additive
offset and Gaussian noise. Stored as int16 with scl_slope 0.5 (so readers must apply it), spacing
1 x 1 x 1.5 mm, a slightly rotated qform and sform. --shape is nz x ny x nx (the array's C order).
tools/train_demo.py trains the demo network on volumes from synthetic_case() below.
"""

import argparse
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nifti_min  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_DIR = os.path.join(REPO_ROOT, "models", "demo")
LEVELS = (100.0, 170.0, 45.0)
OBJECT_VOXELS = 9000  # one object per this many voxels
SPACING = (1.0, 1.0, 1.5)  # i, j, k


def smooth_field(rng, shape, spacing=24.0):
    """A random field varying over about `spacing` voxels: a coarse grid, linearly interpolated."""
    coarse = [max(2, int(round(s / spacing)) + 1) for s in shape]
    field = rng.standard_normal(coarse).astype(np.float32)
    for axis, size in enumerate(shape):
        x = np.linspace(0, coarse[axis] - 1, size)
        weights = np.maximum(0, 1 - np.abs(x[:, None] - np.arange(coarse[axis])[None, :])).astype(np.float32)
        field = np.moveaxis(np.tensordot(weights, field, axes=([1], [axis])), 0, axis)
    return field


def synthetic_case(rng, shape):
    """(image float32, labels uint8) of the given (nz, ny, nx) shape."""
    labels = np.zeros(shape, dtype=np.uint8)
    count = max(2, int(round(np.prod(shape) / OBJECT_VOXELS)))
    for _ in range(count):
        cls = 1 + int(rng.integers(0, 2))
        center = rng.uniform(0.08, 0.92, 3) * np.array(shape)
        if cls == 1:
            axes = np.full(3, rng.uniform(4.0, 9.0))
        else:
            axes = np.array([rng.uniform(3.0, 5.0), rng.uniform(5.0, 9.0), rng.uniform(9.0, 15.0)])
        rotation, _ = np.linalg.qr(rng.standard_normal((3, 3)))
        lo = np.maximum(np.floor(center - axes.max() - 1).astype(int), 0)
        hi = np.minimum(np.ceil(center + axes.max() + 1).astype(int), shape)
        box = tuple(slice(a, b) for a, b in zip(lo, hi))
        grid = np.stack(np.meshgrid(*[np.arange(a, b, dtype=np.float32) + 0.5 for a, b in zip(lo, hi)],
                                    indexing="ij"), -1)
        local = (grid - center) @ rotation
        labels[box][((local / axes) ** 2).sum(-1) <= 1.0] = cls
    image = np.array(LEVELS, dtype=np.float32)[labels]
    image *= 1.0 + 0.2 * np.tanh(smooth_field(rng, shape))
    image += 8.0 * smooth_field(rng, shape, 40.0)
    image += 10.0 * rng.standard_normal(shape, dtype=np.float32)
    return image, labels


def write_case(out_dir, image, labels, name="demo"):
    rot = np.array([[math.cos(0.05), -math.sin(0.05), 0.0], [math.sin(0.05), math.cos(0.05), 0.0], [0, 0, 1.0]])
    offset = (-0.5 * image.shape[2], -0.5 * image.shape[1], -0.75 * image.shape[0])
    stored = np.clip(np.round(image * 2.0), -32768, 32767).astype(np.int16)
    os.makedirs(out_dir, exist_ok=True)
    vol = os.path.join(out_dir, f"{name}_volume.nii.gz")
    truth = os.path.join(out_dir, f"{name}_truth.nii.gz")
    nifti_min.write_nifti(vol, stored, spacing=SPACING, rotation=rot, offset=offset, scl_slope=0.5)
    nifti_min.write_nifti(truth, labels, spacing=SPACING, rotation=rot, offset=offset)
    return vol, truth


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", default="64x96x96", help="nz x ny x nx")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--out", default=DEMO_DIR)
    parser.add_argument("--name", default="demo")
    args = parser.parse_args()
    shape = tuple(int(s) for s in args.shape.split("x"))
    image, labels = synthetic_case(np.random.default_rng(args.seed), shape)
    vol, truth = write_case(args.out, image, labels, args.name)
    counts = np.bincount(labels.ravel(), minlength=3)
    print(f"wrote {vol} and {truth}: {shape[2]}x{shape[1]}x{shape[0]} (i x j x k), label voxels {counts.tolist()}")


if __name__ == "__main__":
    main()
