#!/usr/bin/env python3
"""bench/compare_onnxruntime reads a model's input channels and spatial rank from `voxrt info`:
for the fixture given, for a symbolic batch with fixed spatial sizes (MONAI's spleen UNet,
`batchx1x96x96x96`, once read as 96 channels), for symbolic spatial sizes and for 2D inputs.

usage: compare_input_layout.py VOXRT SCRIPT MODEL CHANNELS RANK
"""
import importlib.machinery
import importlib.util
import subprocess
import sys

voxrt, script, model, channels, rank = sys.argv[1:6]
loader = importlib.machinery.SourceFileLoader("compare_onnxruntime", script)
spec = importlib.util.spec_from_loader("compare_onnxruntime", loader)
compare = importlib.util.module_from_spec(spec)
loader.exec_module(compare)

failures = []
info = subprocess.run([voxrt, "info", model], capture_output=True, text=True, check=True).stdout
got = compare.parse_input_layout(info)
if got != (int(channels), int(rank)):
    failures.append(f"{model}: read {got} from\n{info}")
for line, want in [("input       input  float  batchx1x96x96x96", (1, 3)),
                   ("input       input  float  batchx4x128x128x128", (4, 3)),
                   ("input       input  float  batchx1xdepthxheightxwidth", (1, 3)),
                   ("input       x  float16  1x2x64x64x64", (2, 3)),
                   ("input       input  float  Nx3x512x512", (3, 2)),
                   ("input       input  float  batchx1xheightxwidth", (1, 2))]:
    got = compare.parse_input_layout("model  m.onnx\n" + line + "\noutput  y  float  1x2\n")
    if got != want:
        failures.append(f"'{line}': read {got}, expected {want}")
if failures:
    sys.exit("\n".join(failures))
print("input layouts read as expected")
