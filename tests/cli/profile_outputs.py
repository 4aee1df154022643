#!/usr/bin/env python3
"""`voxrt profile --compare` compares each precision's outputs with the first one's.

A precision against itself must give a relative L2 error of exactly zero and every argmax the
same (the comparison is of like with like, on the same inputs); fp16 against fp32 must give a
small error that is not zero (the two runs really differ). Per node likewise: each node's value
against the first precision's (the `err` cells, the only ones in scientific notation) is exactly
zero for a precision against itself, above zero and below 1e-2 for fp16, and the output node's
cell is the output's own error. The same with the input read from an
.npy file (`--input`), which must be what runs: an input of zeros gives another error than the
random one. `--shape` and `--input` together are refused.

usage: profile_outputs.py VOXRT MODEL SHAPE (a float32 model with one input, SHAPE name=NxCxHxW)
"""
import math
import os
import re
import struct
import subprocess
import sys
import tempfile

voxrt, model, shape = sys.argv[1:4]
name, dims = shape.split("=")
dims = [int(d) for d in dims.split("x")]


def write_npy(path, values):
    """A float32 .npy file of shape `dims` (format 1.0, C order), without numpy."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ", ".join(map(str, dims))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{len(values)}f", *values))


def compared(precisions, source, node_errors=None):
    r = subprocess.run([voxrt, "profile", model, *source, "--compare", precisions, "--runs", "1",
                        "--warmup", "0", "--threads", "1"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"voxrt profile failed: {r.stderr.strip()}")
    if node_errors is not None:
        table = r.stdout.split("\nnode ", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
        node_errors.extend(re.findall(r"\s(\d\.\d\de[+-]\d\d)(?=\s)", "\n".join(table)))
    rows = re.findall(r"^(\S+)\s+'(\S+)'\s+relative L2 (\S+)\s+argmax over axis 1 agrees at ([\d.]+)% of (\d+)",
                      r.stdout, re.MULTILINE)
    if len(rows) != 1:
        sys.exit(f"expected one comparison row for {precisions}, got {rows} in:\n{r.stdout}")
    label, name, rel, agree, positions = rows[0]
    print(f"{precisions}: {label} '{name}' relative L2 {rel}, argmax {agree}% of {positions}")
    return float(rel), float(agree), int(positions)


random = ["--shape", shape]
same = []
rel, agree, positions = compared("fp32,fp32", random, same)
if rel != 0 or agree != 100:
    sys.exit(f"fp32 against itself: relative L2 {rel}, argmax agreement {agree}%")
if len(same) < 10 or any(float(e) != 0 for e in same):
    sys.exit(f"fp32 against itself, per node: {same}, expected ten or more zeros")
half = []
rel16, agree16, positions16 = compared("fp32,fp16", random, half)
if not 0 < rel16 < 1e-2:
    sys.exit(f"fp16 against fp32: relative L2 {rel16}, expected above 0 and below 1e-2")
print(f"fp16 per node: {' '.join(half)}")
if len(half) != len(same) or not all(0 < float(e) < 1e-2 for e in half):
    sys.exit(f"fp16 against fp32, per node: {half}, expected {len(same)} above 0 and below 1e-2")
if half[-1] != f"{rel16:.2e}":
    sys.exit(f"fp16 against fp32: the output node's error {half[-1]}, the output's {rel16:.2e}")
if positions16 != positions or agree16 < 99:
    sys.exit(f"fp16 against fp32: argmax agreement {agree16}% of {positions16} positions")

count = math.prod(dims)
with tempfile.TemporaryDirectory() as tmp:
    smooth, zeros = os.path.join(tmp, "smooth.npy"), os.path.join(tmp, "zeros.npy")
    write_npy(smooth, [math.sin(0.05 * i) for i in range(count)])
    write_npy(zeros, [0.0] * count)
    rel, agree, _ = compared("fp32,fp32", ["--input", f"{name}={smooth}"])
    if rel != 0 or agree != 100:
        sys.exit(f"fp32 against itself on --input: relative L2 {rel}, argmax agreement {agree}%")
    rel_smooth, _, _ = compared("fp32,fp16", ["--input", f"{name}={smooth}"])
    rel_zeros, _, _ = compared("fp32,fp16", ["--input", f"{name}={zeros}"])
    if not 0 < rel_smooth < 1e-2 or rel_smooth in (rel16, rel_zeros):
        sys.exit(f"fp16 against fp32 on --input: relative L2 {rel_smooth} (random inputs {rel16}, "
                 f"zeros {rel_zeros}): the file's values did not run")
    both = subprocess.run([voxrt, "profile", model, "--shape", shape, "--input", f"{name}={smooth}"],
                          capture_output=True, text=True)
    if both.returncode == 0 or "not both" not in both.stderr:
        sys.exit(f"--shape with --input: exit {both.returncode}, {both.stderr.strip()}")
