#!/usr/bin/python3
"""Writes MONAI's SegResNet as its BraTS tutorial configures it (init_filters 16, 4 input
channels, 3 output channels, blocks_down (1, 2, 2, 4), blocks_up (1, 1, 1): pre-activation
residual blocks of GroupNorm(8), ReLU and 3x3x3 conv, stride-2 conv downsampling, 1x1x1 conv and
trilinear upsampling, skips added; 4.7 M parameters) with random weights, fp32 and as
tools/fp16_convert.py converts it, for timing at BraTS's 128^3 crops; --check compares voxrt with
torch in float64 on a 64^3 input:

    /usr/bin/python3 bench/export_segresnet.py /tmp/segresnet [--check]
    build/voxrt profile /tmp/segresnet/segresnet.onnx --shape input=1x4x128x128x128 --compare fp32 --threads 1
    bench/compare_onnxruntime --models /tmp/segresnet/segresnet --size3d 128
"""
import sys

import torch
from torch import nn

from export_common import write

IN_CHANNELS, CLASSES, FILTERS = 4, 3, 16
BLOCKS_DOWN, BLOCKS_UP = (1, 2, 2, 4), (1, 1, 1)


def norm(c):
    return nn.GroupNorm(8, c)


class ResBlock(nn.Module):
    """MONAI's ResBlock: norm, ReLU, conv, twice, added to the input."""

    def __init__(self, c):
        super().__init__()
        self.norm1, self.norm2 = norm(c), norm(c)
        self.conv1 = nn.Conv3d(c, c, 3, padding=1, bias=False)
        self.conv2 = nn.Conv3d(c, c, 3, padding=1, bias=False)
        self.act = nn.ReLU()

    def forward(self, x):
        y = self.conv1(self.act(self.norm1(x)))
        return self.conv2(self.act(self.norm2(y))) + x


class SegResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_init = nn.Conv3d(IN_CHANNELS, FILTERS, 3, padding=1, bias=False)
        self.down = nn.ModuleList()
        for i, blocks in enumerate(BLOCKS_DOWN):
            c = FILTERS * 2**i
            pre = nn.Conv3d(c // 2, c, 3, stride=2, padding=1, bias=False) if i > 0 else nn.Identity()
            self.down.append(nn.Sequential(pre, *[ResBlock(c) for _ in range(blocks)]))
        self.up_samples, self.up_layers = nn.ModuleList(), nn.ModuleList()
        for i, blocks in enumerate(BLOCKS_UP):
            c = FILTERS * 2 ** (len(BLOCKS_UP) - i)
            self.up_samples.append(nn.Sequential(
                nn.Conv3d(c, c // 2, 1, bias=False),
                nn.Upsample(scale_factor=2, mode="trilinear", align_corners=False)))
            self.up_layers.append(nn.Sequential(*[ResBlock(c // 2) for _ in range(blocks)]))
        self.final = nn.Sequential(norm(FILTERS), nn.ReLU(), nn.Conv3d(FILTERS, CLASSES, 1))

    def forward(self, x):
        x = self.conv_init(x)
        skips = []
        for stage in self.down:
            x = stage(x)
            skips.append(x)
        for up, layer, skip in zip(self.up_samples, self.up_layers, reversed(skips[:-1])):
            x = layer(up(x) + skip)
        return self.final(x)


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    torch.manual_seed(0)
    write(SegResNet(), args[0] if args else "/tmp/segresnet", "segresnet", (1, IN_CHANNELS, 64, 64, 64),
          "--check" in sys.argv[1:])


if __name__ == "__main__":
    main()
