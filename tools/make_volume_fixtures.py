#!/usr/bin/python3
"""Fixtures for voxrt's whole-volume tests (tests/volume/), with a reference sliding window.

Run with Debian's interpreter (python3-torch, python3-onnx, numpy), CPU only, in a few seconds:

    /usr/bin/python3 tools/make_volume_fixtures.py

reference_sliding_window() below implements MONAI's documented sliding_window_inference (scan
interval int(roi * (1 - overlap)), windows flush with the end, padding split half before and half
after, Gaussian importance map with sigma = sigma_scale * roi per axis clamped below at
max(min, 1e-3), sums divided by the weight sums, padding cropped away) and nnU-Net's test-time
mirroring (the network on every flip combination of the mirror axes, flipped back and averaged), in
torch float32. It runs two tiny randomly initialised networks (a 3D one with 2 input channels and a
2D one, exported to ONNX with dynamic batch and spatial axes) over small volumes of odd sizes, and
stores the blended outputs that voxrt's segment_volume must reproduce. Also written: Gaussian
importance maps, window starts, NIfTI-1/NIfTI-2 files from tools/nifti_min.py (an independent
numpy writer) with their expected voxel values, and two label volumes with their Dice scores.
Everything goes to tests/volume/data/ (about 200 KB), listed in cases.json. Seeded throughout.
"""

import argparse
import itertools
import json
import math
import os
import sys
import warnings

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nifti_min  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO_ROOT, "tests", "volume", "data")


class Tiny3d(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv3d(2, 4, 3, padding=1)
        self.b = nn.Conv3d(4, 3, 3, padding=1)

    def forward(self, x):
        return self.b(F.relu(self.a(x)))


class Tiny2d(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(1, 4, 3, padding=1)
        self.b = nn.Conv2d(4, 3, 3, padding=1)

    def forward(self, x):
        return self.b(F.relu(self.a(x)))


def export(model, example, path):
    spatial = {i: f"s{i}" for i in range(2, example.dim())}
    axes = {0: "batch", **spatial}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example, path, opset_version=17, input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": axes, "output": axes})


def importance_map(roi, mode, sigma_scale):
    if mode == "constant":
        w = torch.ones(roi, dtype=torch.float32)
    else:
        w = None
        for i, (p, s) in enumerate(zip(roi, sigma_scale)):
            sigma = p * s
            x = torch.arange(-(p - 1) / 2.0, (p - 1) / 2.0 + 1, dtype=torch.float32)
            g = torch.exp(x ** 2 / (-2 * sigma ** 2))
            w = g if w is None else w.unsqueeze(-1) * g.reshape((1,) * i + (p,))
    floor = max(float(w.min()), 1e-3)
    return torch.clamp(w, min=floor)


def window_starts(padded, roi, overlap):
    starts, intervals = [], []
    for size, p, ov in zip(padded, roi, overlap):
        interval = p if p == size else max(int(p * (1 - ov)), 1)
        count = next(d for d in range(size + 1) if d * interval + p >= size) + 1
        starts.append([i * interval - max(i * interval + p - size, 0) for i in range(count)])
        intervals.append(interval)
    return starts, intervals


def mirrored(net, mirror_axes):
    """nnU-Net's test-time mirroring: every non-empty combination of the axes, averaged with the plain run."""
    combos = [c for n in range(1, len(mirror_axes) + 1) for c in itertools.combinations(mirror_axes, n)]

    def predict(x):
        y = net(x)
        for axes in combos:
            dims = [a + 2 for a in axes]
            y = y + torch.flip(net(torch.flip(x, dims)), dims)
        return y / (len(combos) + 1)

    return predict


def reference_sliding_window(x, roi, overlap, mode, sigma_scale, predict, pad_mode="constant", cval=0.0):
    """x: (1, C, *spatial) float32. Returns (1, K, *spatial)."""
    nd = len(roi)
    size = list(x.shape[2:])
    pad, before = [], [0] * nd
    for k in reversed(range(nd)):
        diff = max(roi[k] - size[k], 0)
        pad += [diff // 2, diff - diff // 2]
        before[k] = diff // 2
    if max(pad) > 0:
        kwargs = {"value": cval} if pad_mode == "constant" else {}
        x = F.pad(x, pad, mode=pad_mode, **kwargs)
    padded = list(x.shape[2:])
    starts, _ = window_starts(padded, roi, overlap)
    w = importance_map(roi, mode, sigma_scale)
    out, count = None, torch.zeros(padded, dtype=torch.float32)
    for s in itertools.product(*starts):
        region = tuple(slice(a, a + r) for a, r in zip(s, roi))
        y = predict(x[(slice(None), slice(None)) + region])
        if out is None:
            out = torch.zeros([1, y.shape[1]] + padded, dtype=torch.float32)
        out[(slice(None), slice(None)) + region] += w * y
        count[region] += w
    out = out / count
    crop = tuple(slice(b, b + n) for b, n in zip(before, size))
    return out[(slice(None), slice(None)) + crop]


def normalized(volume, spec):
    v = volume.astype(np.float32)
    if spec["mode"] == "zscore":
        out = []
        for c in v:
            mean = np.float32(c.astype(np.float64).mean())
            std = np.float32(max(c.astype(np.float64).std(), 1e-8))
            out.append((c - mean) / std)
        return np.stack(out).astype(np.float32)
    if spec["mode"] == "ct":
        c = np.clip(v, np.float32(spec["clip"][0]), np.float32(spec["clip"][1]))
        return ((c - np.float32(spec["mean"])) / np.float32(spec["std"])).astype(np.float32)
    return v


def run_case(case, nets, volumes):
    vol = normalized(volumes[case["volume"]], case["normalize"])
    net = nets[case["model"]]
    x = torch.from_numpy(vol)[None]
    overlap = case["overlap"] * (len(case["patch"]) if len(case["overlap"]) == 1 else 1)
    sigma = case["sigma"] * (len(case["patch"]) if len(case["sigma"]) == 1 else 1)
    with torch.no_grad():
        if len(case["patch"]) == 3:
            y = reference_sliding_window(x, case["patch"], overlap, case["blend"], sigma,
                                         mirrored(net, case["mirror"]), case["pad"], case["pad_value"])
            return y[0].numpy()
        # A 2D network runs slice by slice along slice_axis; mirror axes are volume axes.
        axis = case["slice_axis"]
        in_plane = [a for a in range(3) if a != axis]
        mirror2d = [in_plane.index(a) for a in case["mirror"]]
        slices = []
        for i in range(x.shape[2 + axis]):
            xs = x.select(2 + axis, i)
            slices.append(reference_sliding_window(xs, case["patch"], overlap, case["blend"], sigma,
                                                   mirrored(net, mirror2d), case["pad"], case["pad_value"]))
        return torch.stack(slices, dim=2 + axis)[0].numpy()


def base_case(name, **kw):
    c = {"name": name, "model": "tiny3d.onnx", "volume": "volume3d.npy", "patch": [7, 5, 9], "overlap": [0.5],
         "batch": 1, "blend": "gaussian", "sigma": [0.125], "pad": "constant", "pad_value": 0.0, "mirror": [],
         "slice_axis": 0, "normalize": {"mode": "none"}}
    c.update(kw)
    c["expected"] = name + ".npy"
    return c


CASES = [
    base_case("gaussian_odd", batch=3),
    base_case("per_axis_even", patch=[6, 4, 10], overlap=[0.25, 0.5, 0.6], sigma=[0.125, 0.25, 0.1], batch=2),
    base_case("constant_blend", overlap=[0.4], blend="constant"),
    base_case("pad_constant", volume="volume3d_small.npy", patch=[7, 12, 9], pad_value=0.5),
    base_case("pad_reflect", volume="volume3d_small.npy", patch=[7, 12, 9], pad="reflect", batch=4),
    base_case("pad_replicate", volume="volume3d_small.npy", patch=[7, 12, 9], pad="replicate"),
    base_case("mirror_0_2", mirror=[0, 2], batch=3),
    base_case("zscore", normalize={"mode": "zscore"}),
    base_case("ct", normalize={"mode": "ct", "clip": [-0.5, 0.8], "mean": 0.1, "std": 0.7}),
    base_case("slices_2d", model="tiny2d.onnx", volume="volume2d.npy", patch=[6, 7], slice_axis=1, mirror=[2],
              batch=5),
]

STARTS = [  # size, patch, overlap
    ([11, 9, 13], [7, 5, 9], [0.5, 0.5, 0.5]),
    ([11, 9, 13], [6, 4, 10], [0.25, 0.5, 0.6]),
    ([5, 9, 13], [7, 12, 9], [0.5, 0.5, 0.5]),
    ([256, 256, 160], [96, 96, 96], [0.5, 0.5, 0.5]),
    ([96, 96, 64], [64, 64, 64], [0.0, 0.0, 0.0]),
    ([100, 17, 3], [10, 17, 1], [0.9, 0.3, 0.5]),
]


def nifti_fixtures(out, rng):
    rot = np.array([[math.cos(0.2), -math.sin(0.2), 0.0], [math.sin(0.2), math.cos(0.2), 0.0], [0.0, 0.0, 1.0]])
    flip = rot @ np.diag([1.0, 1.0, -1.0])  # improper (k axis reversed): qfac -1
    items = []

    def add(name, array, expected, **kw):
        nifti_min.write_nifti(os.path.join(out, name), array, **kw)
        exp = expected if expected.ndim == 4 else expected[None]
        np.save(os.path.join(out, name.split(".")[0] + "_values.npy"), exp.astype(np.float32))
        items.append({"file": name, "values": name.split(".")[0] + "_values.npy",
                      "version": kw.get("version", 1), "spacing": list(kw.get("spacing", (1, 1, 1)))[:3]})

    a = rng.integers(-300, 300, size=(6, 5, 7)).astype(np.int16)
    add("n1_int16_scaled.nii.gz", a, a.astype(np.float64) * 0.5 - 10, spacing=(0.8, 0.9, 2.5), rotation=rot,
        offset=(-10, 20, 5.5), scl_slope=0.5, scl_inter=-10)
    b = rng.standard_normal((2, 4, 3, 5))
    add("n2_f64_4d.nii", b, b, spacing=(1.5, 1.5, 3.0), rotation=flip, offset=(1, 2, 3), version=2)
    c = rng.integers(-100000, 100000, size=(3, 4, 5)).astype(np.int32)
    add("n1_int32_bigendian.nii", c, c.astype(np.float64), byteorder=">", spacing=(2, 2, 2))
    d = rng.integers(0, 255, size=(4, 6, 5)).astype(np.uint8)
    add("n1_uint8.nii", d, d.astype(np.float64), spacing=(0.7, 0.75, 1.25), rotation=rot, offset=(-3, 4, -5))
    e = rng.standard_normal((5, 4, 3)).astype(np.float32)
    add("n2_f32_scaled.nii.gz", e, e.astype(np.float64) * 2 + 1, version=2, scl_slope=2.0, scl_inter=1.0)
    return items


def dice_fixture(out, rng):
    a = rng.integers(0, 3, size=(10, 9, 8)).astype(np.uint8)
    b = a.copy()
    flip = rng.random(a.shape) < 0.2
    b[flip] = rng.integers(0, 4, size=int(flip.sum())).astype(np.uint8)
    nifti_min.write_nifti(os.path.join(out, "labels_a.nii.gz"), a)
    nifti_min.write_nifti(os.path.join(out, "labels_b.nii.gz"), b)
    scores = {}
    for label in sorted(set(np.unique(a)) | set(np.unique(b))):
        if label == 0:
            continue
        inter = np.sum((a == label) & (b == label))
        scores[str(int(label))] = float(2.0 * inter / (np.sum(a == label) + np.sum(b == label)))
    return {"a": "labels_a.nii.gz", "b": "labels_b.nii.gz", "scores": scores}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)

    nets = {"tiny3d.onnx": Tiny3d().eval(), "tiny2d.onnx": Tiny2d().eval()}
    export(nets["tiny3d.onnx"], torch.zeros(1, 2, 7, 5, 9), os.path.join(args.out, "tiny3d.onnx"))
    export(nets["tiny2d.onnx"], torch.zeros(1, 1, 6, 7), os.path.join(args.out, "tiny2d.onnx"))

    volumes = {
        "volume3d.npy": rng.standard_normal((2, 11, 9, 13)).astype(np.float32),
        "volume3d_small.npy": rng.standard_normal((2, 5, 9, 13)).astype(np.float32),
        "volume2d.npy": rng.standard_normal((1, 9, 8, 11)).astype(np.float32),
    }
    for name, v in volumes.items():
        np.save(os.path.join(args.out, name), v)
    for case in CASES:
        np.save(os.path.join(args.out, case["expected"]), run_case(case, nets, volumes).astype(np.float32))

    importance = []
    for patch, sigma in (([7, 5, 9], [0.125] * 3), ([6, 4, 10], [0.125, 0.25, 0.1]), ([15, 16, 17], [0.125] * 3)):
        name = "importance_" + "x".join(map(str, patch)) + ".npy"
        np.save(os.path.join(args.out, name), importance_map(patch, "gaussian", sigma).numpy())
        importance.append({"patch": patch, "sigma": sigma, "weights": name})
    starts = []
    for size, patch, overlap in STARTS:
        padded = [max(s, p) for s, p in zip(size, patch)]
        st, iv = window_starts(padded, patch, overlap)
        starts.append({"size": size, "patch": patch, "overlap": overlap, "interval": iv, "starts": st,
                       "pad_before": [(p - s) // 2 for s, p in zip(size, padded)]})

    manifest = {"cases": CASES, "importance": importance, "starts": starts,
                "nifti": nifti_fixtures(args.out, rng), "dice": dice_fixture(args.out, rng)}
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(args.out, n)) for n in os.listdir(args.out))
    print(f"wrote {len(os.listdir(args.out))} files, {total / 1024:.0f} KiB, to {args.out}")


if __name__ == "__main__":
    main()
