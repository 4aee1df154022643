"""voxrt against torch in float64, for the bench/export_*.py scripts' --check."""
import os
import subprocess

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
