#!/usr/bin/python3
"""Writes MONAI's UNet at the spleen bundle's size (channels 16-256, four strides, two residual
units, BatchNorm, PReLU, 2 classes; 4.8 M parameters) with random weights, fp32 and as
tools/fp16_convert.py converts it, for timing at a real model's scale (the fixture family
unet3d_monai is the same network at channels 8-64):

    /usr/bin/python3 bench/export_monai_spleen.py /tmp/spleen
    build/voxrt bench /tmp/spleen/spleen.onnx --shape input=1x1x96x96x96 --threads 1
    node bench/ort_bench.js /tmp/spleen/spleen.onnx --shape 1x1x96x96x96 --threads 1
"""
import os
import sys

import onnx
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import fp16_convert  # noqa: E402
import make_fixtures  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/spleen"
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = make_fixtures.MonaiUNet(channels=(16, 32, 64, 128, 256), strides=(2, 2, 2, 2), res_units=2,
                                    out_channels=2)
    model.eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm3d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    path = os.path.join(out, "spleen.onnx")
    torch.onnx.export(model, torch.randn(1, 1, 96, 96, 96), path, opset_version=17, input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})
    onnx.save(fp16_convert.convert_float_to_float16(onnx.load(path)), os.path.join(out, "spleen_fp16.onnx"))
    print(f"{path}: {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main()
