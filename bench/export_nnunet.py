#!/usr/bin/python3
"""Writes nnU-Net v2's 3d_fullres networks with random weights, at the scale nnU-Net trains them
(a 128^3 patch), where the fixture nnunet3d is a small copy (channels 8-32, three stages).

The default network is PlainConvUNet: six stages of 32, 64, 128, 256, 320 and 320 channels, two
conv-InstanceNorm-LeakyReLU blocks a stage, strided-conv downsampling, kernel-2 stride-2
ConvTranspose upsampling, a 1x1x1 head, deep supervision off as at inference (31 M parameters).
With --resenc, the residual-encoder UNet of nnU-Net's ResEnc M preset: 1, 3, 4, 6, 6 and 6
residual blocks a stage (conv-IN-LeakyReLU, conv-IN, added to the skip, LeakyReLU; the skip of a
stage's first block average-pooled, then 1x1x1 conv and IN) and one conv block a decoder stage.
With --2d, the 2d configuration's PlainConvUNet for CT slices (a 512x512 patch): eight stages of
32, 64, 128, 256 and then 512 channels, in 2D, written as nnunet2d.
Both are written in fp32 and as tools/fp16_convert.py converts them; --check then runs build/voxrt
on a 64^3 input (2D: 256^2) in each precision and prints the relative L2 error against torch in
float64:

    /usr/bin/python3 bench/export_nnunet.py /tmp/nnunet [--resenc | --2d] [--check]
    build/voxrt profile /tmp/nnunet/nnunet.onnx --shape input=1x1x128x128x128 --compare fp32,fp16+bf16 --threads 1
    NODE_PATH=bench/node_modules node bench/ort_bench.js /tmp/nnunet/nnunet.onnx --shape 1x1x128x128x128 --threads 1
    bench/compare_onnxruntime --models /tmp/nnunet/nnunet2d --size2d 512 --rounds 3 --runs 3
"""
import os
import sys

import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import make_fixtures  # noqa: E402
from export_common import write  # noqa: E402

FEATURES = (32, 64, 128, 256, 320, 320)
FEATURES_2D = (32, 64, 128, 256, 512, 512, 512, 512)
RESENC_BLOCKS = (1, 3, 4, 6, 6, 6)
block = make_fixtures.conv_in_lrelu


def block_2d(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=True),
                         nn.InstanceNorm2d(cout, affine=True), nn.LeakyReLU(0.01))


class ResidualBlock(nn.Module):
    """dynamic_network_architectures' BasicBlockD."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = block(cin, cout, stride)
        self.conv2 = nn.Sequential(nn.Conv3d(cout, cout, 3, padding=1), nn.InstanceNorm3d(cout, affine=True))
        skip = [nn.AvgPool3d(stride, stride)] if stride != 1 else []
        if cin != cout:
            skip += [nn.Conv3d(cin, cout, 1, bias=False), nn.InstanceNorm3d(cout, affine=True)]
        self.skip = nn.Sequential(*skip)
        self.act = nn.LeakyReLU(0.01)

    def forward(self, x):
        return self.act(self.conv2(self.conv1(x)) + self.skip(x))


class NnUNet(nn.Module):
    def __init__(self, residual, in_channels=1, classes=3, two_d=False):
        super().__init__()
        features = FEATURES_2D if two_d else FEATURES
        conv_block = block_2d if two_d else block
        transposed = nn.ConvTranspose2d if two_d else nn.ConvTranspose3d
        self.stem = block(in_channels, FEATURES[0], 1) if residual else nn.Identity()
        self.encoder = nn.ModuleList()
        cin = FEATURES[0] if residual else in_channels
        for s, c in enumerate(features):
            stride = 1 if s == 0 else 2
            if residual:
                blocks = [ResidualBlock(cin if b == 0 else c, c, stride if b == 0 else 1)
                          for b in range(RESENC_BLOCKS[s])]
            else:
                blocks = [conv_block(cin, c, stride), conv_block(c, c, 1)]
            self.encoder.append(nn.Sequential(*blocks))
            cin = c
        self.up = nn.ModuleList()
        self.decoder = nn.ModuleList()
        for s in range(len(features) - 1, 0, -1):
            below, skip = features[s], features[s - 1]
            self.up.append(transposed(below, skip, kernel_size=2, stride=2, bias=True))
            convs = [conv_block(2 * skip, skip, 1)] + ([] if residual else [conv_block(skip, skip, 1)])
            self.decoder.append(nn.Sequential(*convs))
        self.seg = (nn.Conv2d if two_d else nn.Conv3d)(features[0], classes, kernel_size=1)

    def forward(self, x):
        x = self.stem(x)
        skips = []
        for stage in self.encoder:
            x = stage(x)
            skips.append(x)
        for up, stage, skip in zip(self.up, self.decoder, reversed(skips[:-1])):
            x = stage(torch.cat([up(x), skip], dim=1))
        return self.seg(x)


def main():
    args = [a for a in sys.argv[1:] if a not in ("--resenc", "--2d", "--check")]
    residual, two_d = "--resenc" in sys.argv[1:], "--2d" in sys.argv[1:]
    if residual and two_d:
        sys.exit("export_nnunet.py: --resenc and --2d exclude each other")
    torch.manual_seed(0)
    name = "nnunet_resenc" if residual else "nnunet2d" if two_d else "nnunet"
    write(NnUNet(residual, two_d=two_d), args[0] if args else "/tmp/nnunet", name,
          (1, 1, 256, 256) if two_d else (1, 1, 64, 64, 64), "--check" in sys.argv[1:])


if __name__ == "__main__":
    main()
