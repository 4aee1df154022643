#!/usr/bin/python3
"""Writes the fixture family unet3d_monai's network (channels 8-64, three strides, two residual
units, PReLU, 3 classes) with MONAI's default normalization, InstanceNorm (no affine), in place
of the BatchNorm the spleen bundle and the fixture use, with random weights: fp32 and as
tools/fp16_convert.py converts it. With BatchNorm every normalization folds into its
convolution; with InstanceNorm thirteen of them stay separate passes, which on a CPU without
AVX512-FP16 are bound by their fp16 conversions (docs/PERFORMANCE.md):

    /usr/bin/python3 bench/export_monai_instancenorm.py /tmp/monai_in
    build/voxrt profile /tmp/monai_in/monai_in.onnx --shape input=1x1x96x96x96 --compare fp32,fp16+bf16 --threads 1
"""
import os
import sys

import onnx
import torch
from torch import nn

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import fp16_convert  # noqa: E402
import make_fixtures  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/monai_in"
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    make_fixtures.MONAI_NORM = nn.InstanceNorm3d  # affine=False, MONAI's default
    model = make_fixtures.MonaiUNet()
    model.eval()
    path = os.path.join(out, "monai_in.onnx")
    make_fixtures.export(model, (32, 32, 32), 17, path, False)
    onnx.save(fp16_convert.convert_float_to_float16(onnx.load(path)), os.path.join(out, "monai_in_fp16.onnx"))
    print(f"{path}: {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main()
