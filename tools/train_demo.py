#!/usr/bin/python3
"""Train the demo 3D UNet that scripts/demo.sh segments with, and export it to ONNX.

    /usr/bin/python3 tools/train_demo.py            # writes models/demo/demo_unet.onnx (a few minutes, CPU)

The task is tools/make_demo_volume.py's: bright spheres (label 1) and dark rotated ellipsoids
(label 2) in noisy background under a smooth bias field. Inputs are z-score normalized over the
whole volume (voxrt segment --normalize zscore). The network is a small 3D UNet: 3 levels of 8, 16
and 32 channels, two Conv3d-BatchNorm-ReLU per level, max pooling, transposed convolutions up, skip
concatenation, a 1x1x1 head to 3 classes (logits). Trained with Adam on random 32^3 crops (with
random flips) of synthetic volumes, cross-entropy plus soft Dice; BatchNorm statistics are then
recomputed as a plain average. Exported with opset 17, dynamic batch and spatial axes (any size
divisible by 4). Seeded, 2 threads: a rerun on the same machine writes the same weights.
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
import onnx
import torch
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_demo_volume  # noqa: E402

CLASSES = 3


def block(cin, cout):
    return nn.Sequential(
        nn.Conv3d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm3d(cout), nn.ReLU(),
        nn.Conv3d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm3d(cout), nn.ReLU())


class DemoUNet(nn.Module):
    def __init__(self, base=8):
        super().__init__()
        c1, c2, c3 = base, 2 * base, 4 * base
        self.enc1, self.enc2, self.bottom = block(1, c1), block(c1, c2), block(c2, c3)
        self.up2 = nn.ConvTranspose3d(c3, c2, 2, stride=2)
        self.dec2 = block(2 * c2, c2)
        self.up1 = nn.ConvTranspose3d(c2, c1, 2, stride=2)
        self.dec1 = block(2 * c1, c1)
        self.head = nn.Conv3d(c1, CLASSES, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool3d(e1, 2))
        b = self.bottom(F.max_pool3d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], 1))
        return self.head(self.dec1(torch.cat([self.up1(d2), e1], 1)))


def zscore(image):
    return ((image - image.mean()) / max(float(image.std()), 1e-8)).astype(np.float32)


def make_pool(rng, count, shape):
    images, labels = [], []
    for _ in range(count):
        image, label = make_demo_volume.synthetic_case(rng, shape)
        images.append(zscore(image))
        labels.append(label.astype(np.int64))
    return np.stack(images), np.stack(labels)


def crops(rng, images, labels, batch, size):
    xs, ys = [], []
    for _ in range(batch):
        n = rng.integers(0, len(images))
        at = [rng.integers(0, s - size + 1) for s in images.shape[1:]]
        region = (n,) + tuple(slice(a, a + size) for a in at)
        x, y = images[region], labels[region]
        for axis in range(3):
            if rng.random() < 0.5:
                x, y = np.flip(x, axis), np.flip(y, axis)
        xs.append(x.copy())
        ys.append(y.copy())
    return torch.from_numpy(np.stack(xs)[:, None]), torch.from_numpy(np.stack(ys))


def soft_dice_loss(logits, target):
    p = F.softmax(logits, 1)[:, 1:]
    t = F.one_hot(target, CLASSES).permute(0, 4, 1, 2, 3)[:, 1:].float()
    inter = (p * t).sum((0, 2, 3, 4))
    return 1.0 - ((2 * inter + 1) / (p.sum((0, 2, 3, 4)) + t.sum((0, 2, 3, 4)) + 1)).mean()


def dice(a, b):
    return [2.0 * np.sum((a == c) & (b == c)) / max(np.sum(a == c) + np.sum(b == c), 1) for c in (1, 2)]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--out", default=os.path.join(make_demo_volume.DEMO_DIR, "demo_unet.onnx"))
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
    rng = np.random.default_rng(7)
    t0 = time.time()
    images, labels = make_pool(rng, 16, (48, 64, 64))
    model = DemoUNet()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps, eta_min=1e-4)
    model.train()
    for step in range(args.steps):
        x, y = crops(rng, images, labels, 4, 32)
        logits = model(x)
        loss = F.cross_entropy(logits, y) + soft_dice_loss(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 100 == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {loss.item():.4f}  {time.time() - t0:.0f} s", flush=True)

    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm3d)]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    with torch.no_grad():
        for _ in range(16):
            model(crops(rng, images, labels, 4, 32)[0])
    model.eval()

    # The demo volume itself (seed 2024, as make_demo_volume.py writes it), whole, in torch.
    image, truth = make_demo_volume.synthetic_case(np.random.default_rng(2024), (64, 96, 96))
    stored = np.clip(np.round(image * 2.0), -32768, 32767).astype(np.int16).astype(np.float32) * 0.5
    with torch.no_grad():
        pred = model(torch.from_numpy(zscore(stored))[None, None]).argmax(1)[0].numpy()
    print("dice on the demo volume (whole, torch): " + ", ".join(f"{d:.4f}" for d in dice(pred, truth)))

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    axes = {0: "batch", 2: "depth", 3: "height", 4: "width"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.zeros(1, 1, 32, 32, 32), args.out, opset_version=17,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": axes, "output": axes}, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(args.out))
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 1024:.0f} KiB) in {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
