"""What bench/export_nnunet.py and bench/export_segresnet.py share: writing a torch network as
NAME.onnx and NAME_fp16.onnx, and their --check against torch in float64."""
import os
import subprocess
import sys

import numpy as np
import onnx
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import fp16_convert  # noqa: E402


def write(model, out, name, shape, check_after):
    """Exports `model` (eval mode) for inputs of `shape` (batch and spatial axes dynamic) to
    out/NAME.onnx at opset 17, converts it as tools/fp16_convert.py does to out/NAME_fp16.onnx,
    and with `check_after` runs check() on them."""
    os.makedirs(out, exist_ok=True)
    model.eval()
    path = os.path.join(out, name + ".onnx")
    dynamic = {0: "batch", 2: "depth", 3: "height", 4: "width"} if len(shape) == 5 else \
        {0: "batch", 2: "height", 3: "width"}
    torch.onnx.export(model, torch.randn(shape), path, opset_version=17, input_names=["input"],
                      output_names=["output"], dynamic_axes={"input": dynamic, "output": dynamic})
    onnx.save(fp16_convert.convert_float_to_float16(onnx.load(path)), os.path.join(out, name + "_fp16.onnx"))
    print(f"{path}: {sum(p.numel() for p in model.parameters())} parameters")
    if check_after:
        check(model, out, name, shape)


def check(model, out, name, shape):
    """Runs build/voxrt on one random input of `shape` with out/NAME.onnx in fp32 and
    out/NAME_fp16.onnx in fp16 and with bf16 products, and prints each one's relative L2 error
    against `model` (a torch module) in float64. With random weights the scores have no decisive
    margins, so only the relative L2 error means much (argmax agreement is printed too)."""
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        ref = model.double()(torch.from_numpy(x).double()).numpy()
    voxrt = os.path.join(ROOT, "build", "voxrt")
    for suffix, dtype, precision in [("", np.float32, "model"), ("_fp16", np.float16, "model"),
                                     ("_fp16", np.float16, "model+bf16")]:
        xin, yout = os.path.join(out, "check_input.npy"), os.path.join(out, "check_output.npy")
        np.save(xin, x.astype(dtype))
        subprocess.run([voxrt, "run", os.path.join(out, name + suffix + ".onnx"), "--input", "input=" + xin,
                        "--output", yout, "--precision", precision, "--threads", "2"], check=True,
                       stdout=subprocess.DEVNULL)
        y = np.load(yout).astype(np.float64)
        rel = np.linalg.norm(y - ref) / np.linalg.norm(ref)
        agree = (y.argmax(1) == ref.argmax(1)).mean()
        print(f"{name}{suffix} --precision {precision}: relative L2 {rel:.3g}, argmax agreement {agree:.5f}")
