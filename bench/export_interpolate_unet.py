#!/usr/bin/python3
"""Writes a 3D UNet whose decoder upsamples with F.interpolate(x, size=skip.shape[2:]) (hand-written
UNets and pytorch-3dunet upsample so: the exported Resize takes its sizes from the skip's shape),
otherwise tests/fixtures' unet3d_resize (two levels, base 6, trilinear or nearest, a 1x1x1 head and
a channel softmax), random weights, batch and spatial axes dynamic; fp32 and as
tools/fp16_convert.py converts it. --check compares voxrt with torch in float64 at 33x35x37, where
the skips' sizes are odd (33 -> 16 -> 33):

    /usr/bin/python3 bench/export_interpolate_unet.py /tmp/interp [--nearest] [--check]
    build/voxrt bench /tmp/interp/interp_unet.onnx --shape input=1x1x96x96x96
    bench/compare_onnxruntime --models /tmp/interp/interp_unet --configs ort_fp32,vox_fp32
"""
import sys

import torch
import torch.nn.functional as F
from torch import nn

from export_common import write


def conv_relu(cin, cout):
    return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1), nn.ReLU())


class InterpolateUNet(nn.Module):
    def __init__(self, mode, base=6):
        super().__init__()
        c1, c2, c3 = base, base * 2, base * 4
        self.mode = mode
        self.enc1 = nn.Sequential(conv_relu(1, c1), conv_relu(c1, c1))
        self.enc2 = nn.Sequential(conv_relu(c1, c2), conv_relu(c2, c2))
        self.bottom = nn.Sequential(conv_relu(c2, c3), conv_relu(c3, c3))
        self.dec2 = nn.Sequential(conv_relu(c3 + c2, c2), conv_relu(c2, c2))
        self.dec1 = nn.Sequential(conv_relu(c2 + c1, c1), conv_relu(c1, c1))
        self.head = nn.Conv3d(c1, 3, 1)

    def up(self, x, like):
        extra = {} if self.mode == "nearest" else {"align_corners": False}
        return F.interpolate(x, size=like.shape[2:], mode=self.mode, **extra)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool3d(e1, 2))
        b = self.bottom(F.max_pool3d(e2, 2))
        d2 = self.dec2(torch.cat([self.up(b, e2), e2], 1))
        d1 = self.dec1(torch.cat([self.up(d2, e1), e1], 1))
        return torch.softmax(self.head(d1), 1)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit(__doc__)
    torch.manual_seed(0)
    mode = "nearest" if "--nearest" in sys.argv else "trilinear"
    write(InterpolateUNet(mode), args[0], "interp_unet", (1, 1, 33, 35, 37), "--check" in sys.argv)


if __name__ == "__main__":
    main()
