#!/usr/bin/python3
"""Export the small UNet fixtures used by voxrt's model tests.

Run with Debian's interpreter (python3-torch, python3-onnx, numpy), CPU only:

    /usr/bin/python3 tools/make_fixtures.py

Each model is first trained for a few hundred steps on a synthetic 3-class
segmentation task (see synthetic_case), so that, like a real network, it
decides most voxels by a wide margin and fp16 rounding flips almost none.
Writes tests/fixtures/<model>_op<opset>[_fp16|_fp16io32].onnx, the inputs and
float64 reference outputs in tests/fixtures/<model>/, and
tests/fixtures/manifest.json. Takes about 65 s. Everything is seeded and runs
on one thread, so a rerun with the same torch and onnx versions on the same
kind of CPU rewrites identical files.
"""

import argparse
import json
import re
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
import fp16_convert  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO_ROOT, "tests", "fixtures")
OPSETS = (11, 17)
BATCHES = (1, 3)
NUM_CLASSES = 3

TOLERANCES = {
    "fp32": {"rel_l2": 1e-5, "argmax_agreement": 0.999, "argmax_agreement_all": 0.999, "argmax_axis": 1},
    "fp16": {"rel_l2": 1e-2, "argmax_agreement": 0.999, "argmax_agreement_all": 0.999, "argmax_axis": 1},
}
# The decisive-voxel metric ignores voxels whose reference top-1 minus top-2
# margin is below this fraction of the reference output's RMS: genuine
# near-ties, which any correct fp16 engine may flip either way.
ARGMAX_MIN_MARGIN_REL = 0.02

# Synthetic segmentation task (see synthetic_case).
CLASS_LEVELS = np.array([0.0, 1.0, 2.0])
NOISE_SIGMA = 0.25
VOXELS_PER_OBJECT = {2: 150, 3: 800}
TRAIN_BATCH = 4
TRAIN_LR = 3e-3
BN_CALIBRATION_BATCHES = 8


class SegNet(nn.Module):
    def logits(self, x):
        """Class scores before any final softmax (what training's cross-entropy takes)."""
        return self(x)


def conv_bn_relu(dims, cin, cout):
    conv = nn.Conv3d if dims == 3 else nn.Conv2d
    norm = nn.BatchNorm3d if dims == 3 else nn.BatchNorm2d
    return nn.Sequential(conv(cin, cout, 3, padding=1, bias=False), norm(cout), nn.ReLU(inplace=False))


def double_conv_bn(dims, cin, cout):
    return nn.Sequential(conv_bn_relu(dims, cin, cout), conv_bn_relu(dims, cout, cout))


class UNet3dBn(SegNet):
    """Classic 3D UNet: conv-BN-ReLU pairs, max pooling, transposed-conv upsampling."""

    def __init__(self, base=8):
        super().__init__()
        c1, c2, c3 = base, base * 2, base * 4
        self.enc1 = double_conv_bn(3, 1, c1)
        self.enc2 = double_conv_bn(3, c1, c2)
        self.bottom = double_conv_bn(3, c2, c3)
        self.pool = nn.MaxPool3d(2)
        self.up2 = nn.ConvTranspose3d(c3, c2, kernel_size=2, stride=2)
        self.dec2 = double_conv_bn(3, c2 * 2, c2)
        self.up1 = nn.ConvTranspose3d(c2, c1, kernel_size=2, stride=2)
        self.dec1 = double_conv_bn(3, c1 * 2, c1)
        self.head = nn.Conv3d(c1, NUM_CLASSES, kernel_size=1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        b = self.bottom(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


def conv_in_lrelu(cin, cout, stride):
    return nn.Sequential(
        nn.Conv3d(cin, cout, 3, stride=stride, padding=1, bias=True),
        nn.InstanceNorm3d(cout, affine=True),
        nn.LeakyReLU(0.01, inplace=False),
    )


class NnUnet3d(SegNet):
    """nnU-Net style: strided-conv downsampling, InstanceNorm, LeakyReLU."""

    def __init__(self, base=8):
        super().__init__()
        c1, c2, c3 = base, base * 2, base * 4
        self.stage1 = nn.Sequential(conv_in_lrelu(1, c1, 1), conv_in_lrelu(c1, c1, 1))
        self.stage2 = nn.Sequential(conv_in_lrelu(c1, c2, 2), conv_in_lrelu(c2, c2, 1))
        self.stage3 = nn.Sequential(conv_in_lrelu(c2, c3, 2), conv_in_lrelu(c3, c3, 1))
        self.up2 = nn.ConvTranspose3d(c3, c2, kernel_size=2, stride=2, bias=False)
        self.dec2 = nn.Sequential(conv_in_lrelu(c2 * 2, c2, 1), conv_in_lrelu(c2, c2, 1))
        self.up1 = nn.ConvTranspose3d(c2, c1, kernel_size=2, stride=2, bias=False)
        self.dec1 = nn.Sequential(conv_in_lrelu(c1 * 2, c1, 1), conv_in_lrelu(c1, c1, 1))
        self.seg = nn.Conv3d(c1, NUM_CLASSES, kernel_size=1)

    def forward(self, x):
        s1 = self.stage1(x)
        s2 = self.stage2(s1)
        s3 = self.stage3(s2)
        d2 = self.dec2(torch.cat([self.up2(s3), s2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), s1], dim=1))
        return self.seg(d1)


def conv_relu(cin, cout):
    return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1), nn.ReLU(inplace=False))


class UNet3dResize(SegNet):
    """Trilinear upsampling (exports Resize) and a channel softmax at the end."""

    def __init__(self, base=6):
        super().__init__()
        c1, c2, c3 = base, base * 2, base * 4
        self.enc1 = nn.Sequential(conv_relu(1, c1), conv_relu(c1, c1))
        self.enc2 = nn.Sequential(conv_relu(c1, c2), conv_relu(c2, c2))
        self.bottom = nn.Sequential(conv_relu(c2, c3), conv_relu(c3, c3))
        self.pool = nn.MaxPool3d(2)
        self.upsample = nn.Upsample(scale_factor=2, mode="trilinear", align_corners=False)
        self.dec2 = nn.Sequential(conv_relu(c3 + c2, c2), conv_relu(c2, c2))
        self.dec1 = nn.Sequential(conv_relu(c2 + c1, c1), conv_relu(c1, c1))
        self.head = nn.Conv3d(c1, NUM_CLASSES, kernel_size=1)
        self.softmax = nn.Softmax(dim=1)

    def logits(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        b = self.bottom(self.pool(e2))
        d2 = self.dec2(torch.cat([self.upsample(b), e2], dim=1))
        d1 = self.dec1(torch.cat([self.upsample(d2), e1], dim=1))
        return self.head(d1)

    def forward(self, x):
        return self.softmax(self.logits(x))


class UNet2d(SegNet):
    """2D UNet: one transposed-conv and one bilinear upsampling path."""

    def __init__(self, base=8):
        super().__init__()
        c1, c2, c3 = base, base * 2, base * 4
        self.enc1 = double_conv_bn(2, 1, c1)
        self.enc2 = double_conv_bn(2, c1, c2)
        self.bottom = double_conv_bn(2, c2, c3)
        self.pool = nn.MaxPool2d(2)
        self.up2 = nn.ConvTranspose2d(c3, c2, kernel_size=2, stride=2)
        self.dec2 = double_conv_bn(2, c2 * 2, c2)
        self.up1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.dec1 = double_conv_bn(2, c2 + c1, c1)
        self.head = nn.Conv2d(c1, NUM_CLASSES, kernel_size=1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        b = self.bottom(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return self.head(d1)


class ResBlockGn(nn.Module):
    """SegResNet's block: GroupNorm, ReLU, conv, twice, plus the identity."""

    def __init__(self, c, groups):
        super().__init__()
        self.n1 = nn.GroupNorm(groups, c)
        self.c1 = nn.Conv3d(c, c, 3, padding=1, bias=False)
        self.n2 = nn.GroupNorm(groups, c)
        self.c2 = nn.Conv3d(c, c, 3, padding=1, bias=False)

    def forward(self, x):
        return self.c2(F.relu(self.n2(self.c1(F.relu(self.n1(x)))))) + x


class UNet3dGn(SegNet):
    """MONAI SegResNet style: GroupNorm (4 groups), residual blocks, average pooling and a
    strided conv down, a transposed conv up added to its skip, a trilinear up concatenated."""

    def __init__(self, base=8, groups=4):
        super().__init__()
        c1, c2, c3 = base, base * 2, base * 4
        self.stem = nn.Conv3d(1, c1, 3, padding=1)
        self.enc1 = ResBlockGn(c1, groups)
        self.down1 = nn.Sequential(nn.AvgPool3d(2), nn.Conv3d(c1, c2, 3, padding=1, bias=False))
        self.enc2 = ResBlockGn(c2, groups)
        self.down2 = nn.Conv3d(c2, c3, 3, stride=2, padding=1, bias=False)
        self.bottom = ResBlockGn(c3, groups)
        self.up2 = nn.ConvTranspose3d(c3, c2, kernel_size=2, stride=2)
        self.dec2 = ResBlockGn(c2, groups)
        self.reduce1 = nn.Conv3d(c2, c1, 1, bias=False)
        self.up1 = nn.Upsample(scale_factor=2, mode="trilinear", align_corners=False)
        self.fuse1 = nn.Sequential(
            nn.Conv3d(2 * c1, c1, 3, padding=1, bias=False), nn.GroupNorm(groups, c1), nn.LeakyReLU(0.01)
        )
        self.head = nn.Sequential(nn.GroupNorm(groups, c1), nn.ReLU(), nn.Conv3d(c1, NUM_CLASSES, 1))

    def forward(self, x):
        e1 = self.enc1(self.stem(x))
        e2 = self.enc2(self.down1(e1))
        b = self.bottom(self.down2(e2))
        d2 = self.dec2(self.up2(b) + e2)
        d1 = self.fuse1(torch.cat([self.up1(self.reduce1(d2)), e1], dim=1))
        return self.head(d1)


# The normalization monai_conv puts after each convolution: BatchNorm, as the spleen bundle
# configures MONAI's UNet. bench/export_monai_instancenorm.py sets MONAI's default, InstanceNorm.
MONAI_NORM = nn.BatchNorm3d


def monai_conv(cin, cout, stride=1, transposed=False, conv_only=False):
    """MONAI's Convolution with its default NDA order: conv, MONAI_NORM, (dropout 0), PReLU."""
    if transposed:
        conv = nn.ConvTranspose3d(cin, cout, 3, stride=stride, padding=1, output_padding=stride - 1)
    else:
        conv = nn.Conv3d(cin, cout, 3, stride=stride, padding=1)
    if conv_only:
        return conv
    return nn.Sequential(conv, MONAI_NORM(cout), nn.PReLU())


class MonaiResidualUnit(nn.Module):
    """MONAI's ResidualUnit: `subunits` convolutions (the first strided) plus a residual path, a
    3x3x3 strided conv when the unit downsamples, 1x1x1 when only the channels change."""

    def __init__(self, cin, cout, stride, subunits, last_conv_only=False):
        super().__init__()
        units, channels = [], cin
        for su in range(subunits):
            units.append(monai_conv(channels, cout, stride if su == 0 else 1,
                                    conv_only=last_conv_only and su == subunits - 1))
            channels = cout
        self.conv = nn.Sequential(*units)
        if stride != 1:
            self.residual = nn.Conv3d(cin, cout, 3, stride=stride, padding=1)
        elif cin != cout:
            self.residual = nn.Conv3d(cin, cout, 1)
        else:
            self.residual = nn.Identity()

    def forward(self, x):
        return self.conv(x) + self.residual(x)


class MonaiSkip(nn.Module):
    def __init__(self, sub):
        super().__init__()
        self.sub = sub

    def forward(self, x):
        return torch.cat([x, self.sub(x)], dim=1)


class MonaiUNet(SegNet):
    """MONAI's UNet as the spleen bundle configures it (residual units of two convs, strided convs
    down, 3x3x3 stride-2 transposed convs up, BatchNorm, PReLU), channels 8..64, three strides."""

    def __init__(self, channels=(8, 16, 32, 64), strides=(2, 2, 2), res_units=2, out_channels=NUM_CLASSES):
        super().__init__()

        def block(cin, cout, chans, strs, is_top):
            c, s = chans[0], strs[0]
            if len(chans) > 2:
                sub, up_in = block(c, c, chans[1:], strs[1:], False), 2 * c
            else:
                sub, up_in = MonaiResidualUnit(c, chans[1], 1, res_units), c + chans[1]
            down = MonaiResidualUnit(cin, c, s, res_units)
            up = nn.Sequential(
                monai_conv(up_in, cout, s, transposed=True),
                MonaiResidualUnit(cout, cout, 1, 1, last_conv_only=is_top),
            )
            return nn.Sequential(down, MonaiSkip(sub), up)

        self.model = block(1, out_channels, channels, strides, True)

    def forward(self, x):
        return self.model(x)


MODELS = [
    {
        "name": "unet3d_bn",
        "build": UNet3dBn,
        "spatial": (16, 16, 16),
        "train_patch": (16, 16, 16),
        "train_steps": 300,
        "description": "3D UNet: Conv3d 3x3x3 + BatchNorm3d + ReLU, MaxPool3d(2), ConvTranspose3d(k2,s2), "
        "skip Concat, 1x1x1 head to 3 classes. Exported with TrainingMode.PRESERVE so "
        "BatchNormalization nodes stay in the graph.",
        "preserve_bn": True,
    },
    {
        "name": "nnunet3d",
        "build": NnUnet3d,
        "spatial": (24, 24, 24),
        "train_patch": (16, 16, 16),
        "train_steps": 300,
        "description": "nnU-Net style: Conv3d with stride 2 for downsampling, InstanceNorm3d(affine), "
        "LeakyReLU(0.01), ConvTranspose3d(k2,s2) upsampling, skip Concat, 3 classes. Trained and "
        "tested on the synthetic volumes times 100 (CT-like magnitudes, about -100..300): the first "
        "InstanceNorm sees values up to ~300 whose squares and sums overflow float16, so an fp16 path "
        "must accumulate its statistics in float32.",
        "preserve_bn": False,
        "input_scale": 100.0,
    },
    {
        "name": "unet3d_resize",
        "build": UNet3dResize,
        "spatial": (16, 24, 32),
        "train_patch": (16, 16, 16),
        "train_steps": 500,
        "description": "3D UNet with trilinear Upsample(scale 2, align_corners=False) exported as Resize, "
        "Conv3d + bias + ReLU, MaxPool3d(2), skip Concat, channel Softmax at the end; "
        "non-cubic input (D,H,W = 16,24,32) to catch axis mix-ups.",
        "preserve_bn": False,
    },
    {
        "name": "unet2d",
        "build": UNet2d,
        "spatial": (48, 48),
        "train_patch": (48, 48),
        "train_steps": 300,
        "description": "2D UNet: Conv2d 3x3 + BatchNorm2d + ReLU, MaxPool2d(2), one ConvTranspose2d(k2,s2) "
        "and one bilinear Upsample (Resize) path, skip Concat, 3 classes. BatchNormalization kept.",
        "preserve_bn": True,
    },
    {
        "name": "unet3d_gn",
        "build": UNet3dGn,
        "spatial": (16, 16, 24),
        "train_patch": (16, 16, 16),
        "train_steps": 300,
        "description": "MONAI SegResNet style: GroupNorm(4 groups; torch exports it as Reshape, "
        "InstanceNormalization, Reshape, Mul, Add) with ReLU or LeakyReLU, residual blocks (conv + "
        "identity Add), AvgPool3d(2) and a stride-2 conv down, ConvTranspose3d(k2,s2) added to its "
        "skip, 1x1x1 conv and trilinear Upsample concatenated with the other skip, 3 classes.",
        "preserve_bn": False,
    },
    {
        "name": "unet3d_monai",
        "build": MonaiUNet,
        "spatial": (16, 24, 32),
        "train_patch": (16, 16, 16),
        "train_steps": 300,
        "description": "MONAI UNet (spleen bundle style): residual units (two conv + BatchNorm + PReLU, "
        "a strided 3x3x3 or 1x1x1 conv on the residual path), stride-2 conv down, ConvTranspose3d(k3, s2, "
        "p1, output_padding 1) + BatchNorm + PReLU up, skip Concat, channels 8-64 over four levels, "
        "3 classes; BatchNorm folded by the exporter, PReLU with one learned slope each.",
        "preserve_bn": False,
    },
]


def smooth_field(rng, shape, spacing=12.0):
    """Zero-mean, unit-ish random field that varies over about `spacing` voxels."""
    coarse = tuple(max(2, int(round(s / spacing)) + 1) for s in shape)
    grid = torch.from_numpy(rng.standard_normal((1, 1) + coarse))
    mode = "trilinear" if len(shape) == 3 else "bilinear"
    return F.interpolate(grid, size=tuple(shape), mode=mode, align_corners=True)[0, 0].numpy()


def synthetic_case(rng, shape):
    """One image and its labels: background 0, spheres/disks 1, rotated ellipsoids/ellipses 2.

    Classes differ in intensity (about 0, 1, 2) under a smooth multiplicative
    bias field, a smooth additive offset and Gaussian noise; later objects
    overwrite earlier ones. Sizes are in voxels, whatever the volume's shape.
    """
    dims = len(shape)
    axes_grid = np.meshgrid(*[np.arange(s, dtype=np.float64) + 0.5 for s in shape], indexing="ij")
    points = np.stack(axes_grid, axis=-1)
    labels = np.zeros(shape, dtype=np.int64)
    count = max(2, int(round(np.prod(shape) / VOXELS_PER_OBJECT[dims])))
    for _ in range(count):
        cls = 1 + int(rng.integers(0, 2))
        center = rng.uniform(0.0, 1.0, dims) * np.array(shape)
        if cls == 1:
            semi_axes = np.full(dims, rng.uniform(2.5, 5.0))
        else:
            semi_axes = rng.uniform(1.8, 7.0, dims)
        rotation, _ = np.linalg.qr(rng.standard_normal((dims, dims)))
        local = (points - center) @ rotation
        labels[((local / semi_axes) ** 2).sum(axis=-1) <= 1.0] = cls
    level = CLASS_LEVELS[labels]
    image = level * (1.0 + 0.15 * smooth_field(rng, shape)) + 0.2 * smooth_field(rng, shape)
    image = image + NOISE_SIGMA * rng.standard_normal(shape)
    return image.astype(np.float32), labels


def synthetic_batch(rng, batch, shape, scale):
    images, labels = zip(*(synthetic_case(rng, shape) for _ in range(batch)))
    x = np.stack(images)[:, None] * np.float32(scale)
    return x.astype(np.float32), np.stack(labels)


def train(model, spec, seed):
    """A few hundred Adam steps of cross-entropy on synthetic patches.

    Then BatchNorm running statistics are recomputed as a plain average over
    fresh batches (train-mode forward, no gradients), so that the eval-mode
    network behaves like the one that was trained.
    """
    rng = np.random.default_rng(seed)
    shape = spec["train_patch"]
    scale = spec.get("input_scale", 1.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=TRAIN_LR)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, spec["train_steps"], eta_min=TRAIN_LR * 0.05)
    model.train()
    loss = None
    for _ in range(spec["train_steps"]):
        x, y = synthetic_batch(rng, TRAIN_BATCH, shape, scale)
        loss = F.cross_entropy(model.logits(torch.from_numpy(x)), torch.from_numpy(y))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    bns = [m for m in model.modules() if isinstance(m, (nn.BatchNorm2d, nn.BatchNorm3d))]
    if bns:
        for bn in bns:
            bn.reset_running_stats()
            bn.momentum = None  # cumulative average
        with torch.no_grad():
            for _ in range(BN_CALIBRATION_BATCHES):
                model(torch.from_numpy(synthetic_batch(rng, TRAIN_BATCH, shape, scale)[0]))
        for bn in bns:
            bn.momentum = 0.1
    model.eval()
    return float(loss)


def export(model, spatial, opset, path, preserve_bn):
    dummy = torch.randn((1, 1) + tuple(spatial), generator=torch.Generator().manual_seed(1))
    training = torch.onnx.TrainingMode.PRESERVE if preserve_bn else torch.onnx.TrainingMode.EVAL
    names = ["depth", "height", "width"][-len(spatial):]
    dynamic = {0: "batch_size", **{2 + i: n for i, n in enumerate(names)}}
    model.eval()
    torch.onnx.export(
        model,
        dummy,
        path,
        export_params=True,
        opset_version=opset,
        do_constant_folding=True,
        input_names=["input"],
        output_names=["output"],
        # Batch and spatial axes are dynamic: one file serves the tests' small patches and the
        # benchmarks' 96^3 (3D) or 256^2 (2D) ones.
        dynamic_axes={"input": dynamic, "output": dynamic},
        training=training,
    )
    m = onnx.load(path)
    onnx.checker.check_model(m)
    return m


def op_types(model):
    return sorted({n.op_type for n in model.graph.node})


def rel_l2(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


def io_shape(value_info):
    dims = []
    for d in value_info.type.tensor_type.shape.dim:
        dims.append(d.dim_param if d.HasField("dim_param") else d.dim_value)
    return dims


def io_dtype(value_info):
    return {onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.FLOAT16: "float16"}[
        value_info.type.tensor_type.elem_type
    ]


def make_data(spec, model, out_dir, seed):
    """Inputs from the training task's generator (fresh draws); references from the float64 copy of the model."""
    data_dir = os.path.join(out_dir, spec["name"])
    os.makedirs(data_dir, exist_ok=True)
    cases = []
    rng = np.random.default_rng(seed)
    for batch in BATCHES:
        x, truth = synthetic_batch(rng, batch, spec["spatial"], spec.get("input_scale", 1.0))
        with torch.no_grad():
            y64 = model.double()(torch.from_numpy(x).double()).numpy()
            y32 = model.float()(torch.from_numpy(x)).numpy()
        err = rel_l2(y32, y64)
        if err > 1e-5:
            raise RuntimeError(f"{spec['name']}: torch fp32 vs f64 rel L2 {err:.3g} is above the fp32 bar")
        std = float(y64.std())
        if not np.isfinite(y64).all() or std < 1e-3:
            raise RuntimeError(f"{spec['name']}: degenerate reference output (std {std})")
        in_name = f"input_b{batch}.npy"
        out_name = f"output_b{batch}.npy"
        in16_name = f"input_b{batch}_fp16.npy"
        np.save(os.path.join(data_dir, in_name), x)
        np.save(os.path.join(data_dir, in16_name), x.astype(np.float16))
        np.save(os.path.join(data_dir, out_name), y64.astype(np.float32))
        labels = y64.argmax(axis=1)
        fractions = [float((labels == c).mean()) for c in range(NUM_CLASSES)]
        stored = y64.astype(np.float32).astype(np.float64)
        top2 = np.sort(stored, axis=1)[:, -2:]
        margin = top2[:, 1] - top2[:, 0]
        min_margin = float(np.float32(ARGMAX_MIN_MARGIN_REL * np.sqrt(np.mean(stored**2))))
        cases.append(
            {
                "batch": batch,
                "input": f"{spec['name']}/{in_name}",
                "input_fp16": f"{spec['name']}/{in16_name}",
                "expected": f"{spec['name']}/{out_name}",
                "input_shape": list(x.shape),
                "output_shape": list(y64.shape),
                "argmax_min_margin": min_margin,
                "decisive_fraction": round(float((margin >= min_margin).mean()), 4),
                "torch_fp32_rel_l2": err,
                "class_fractions": [round(f, 4) for f in fractions],
                "label_accuracy": round(float((labels == truth).mean()), 4),
            }
        )
    return cases


def check_fp16(model):
    onnx.checker.check_model(model)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=DEFAULT_OUT, help="output folder (default tests/fixtures)")
    args = parser.parse_args()

    warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
    # One thread: a second one changes the order of reductions in training
    # (so the bytes would depend on the thread count) and is no faster here.
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    os.makedirs(args.out, exist_ok=True)

    manifest = {
        "generator": "/usr/bin/python3 tools/make_fixtures.py",
        "torch_version": torch.__version__,
        "onnx_version": onnx.__version__,
        "reference": "torch forward of the same weights in float64, stored as float32",
        "metric": "rel_l2 = ||got - expected||_2 / ||expected||_2 over the whole output tensor. "
        "argmax_agreement: among voxels whose reference top-1 minus top-2 value along argmax_axis is "
        ">= the case's argmax_min_margin (decisive voxels), the fraction whose argmax matches the "
        "reference's. argmax_agreement_all: the same fraction over all voxels (near-ties included).",
        "fp16_inputs": "models whose input dtype is float16 take the case's input_fp16 file (the float32 "
        "input rounded to nearest float16); every model is compared with the same float32 expected file",
        "training": "each model is trained briefly (Adam, cross-entropy) on a synthetic 3-class task: "
        "background ~0, spheres ~1, rotated ellipsoids ~2 (disks/ellipses for unet2d) under a smooth bias "
        "field and Gaussian noise; inputs are fresh draws of the same generator (times input_scale). "
        "label_accuracy is the reference's argmax against the generator's true labels.",
        "tolerances": TOLERANCES,
        "models": [],
    }

    for index, spec in enumerate(MODELS):
        seed = 1000 + index
        torch.manual_seed(seed)
        model = spec["build"]()
        started = time.monotonic()
        loss = train(model, spec, seed + 1)
        trained = time.monotonic()
        cases = make_data(spec, model, args.out, seed + 2)

        for opset in OPSETS:
            stem = f"{spec['name']}_op{opset}"
            fp32_path = os.path.join(args.out, stem + ".onnx")
            fp32 = export(model, spec["spatial"], opset, fp32_path, spec["preserve_bn"])
            if spec["preserve_bn"] and "BatchNormalization" not in op_types(fp32):
                raise RuntimeError(f"{stem}: BatchNormalization was folded away")

            variants = [(stem + ".onnx", "fp32", fp32, [])]
            for suffix, keep_io in (("_fp16", False), ("_fp16io32", True)):
                converted = fp16_convert.convert_float_to_float16(fp32, keep_io_types=keep_io)
                check_fp16(converted)
                onnx.save(converted, os.path.join(args.out, stem + suffix + ".onnx"))
                blocked = sorted(
                    {n.op_type for n in fp32.graph.node} & set(fp16_convert.DEFAULT_OP_BLOCK_LIST)
                )
                variants.append((stem + suffix + ".onnx", "fp16", converted, blocked))

            for file_name, precision, m, blocked in variants:
                graph = m.graph
                manifest["models"].append(
                    {
                        "name": file_name[: -len(".onnx")],
                        "family": spec["name"],
                        "file": file_name,
                        "opset": opset,
                        "precision": precision,
                        "keep_io_types": precision == "fp16" and io_dtype(graph.input[0]) == "float32",
                        "ops_kept_fp32": blocked,
                        "input_scale": spec.get("input_scale", 1.0),
                        "description": spec["description"],
                        "inputs": [
                            {"name": vi.name, "dtype": io_dtype(vi), "shape": io_shape(vi)} for vi in graph.input
                        ],
                        "outputs": [
                            {"name": vi.name, "dtype": io_dtype(vi), "shape": io_shape(vi)} for vi in graph.output
                        ],
                        "ops": op_types(m),
                        "cases": cases,
                        "tolerance": TOLERANCES[precision],
                        "bytes": os.path.getsize(os.path.join(args.out, file_name)),
                    }
                )
        print(
            f"{spec['name']}: final loss {loss:.4f}, train {trained - started:.0f}s, "
            f"total {time.monotonic() - started:.0f}s ({', '.join(op_types(fp32))})",
            flush=True,
        )

    text = json.dumps(manifest, indent=1)
    # one line per list of numbers or names keeps the manifest readable
    text = re.sub(r"\[\s*([^\[\]{}]*?)\s*\]", lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
