#!/usr/bin/env python3
"""`voxrt profile --compare` compares each precision's outputs with the first one's.

A precision against itself must give a relative L2 error of exactly zero and every argmax the
same (the comparison is of like with like, on the same inputs); fp16 against fp32 must give a
small error that is not zero (the two runs really differ).

usage: profile_outputs.py VOXRT MODEL SHAPE
"""
import re
import subprocess
import sys

voxrt, model, shape = sys.argv[1:4]


def compared(precisions):
    r = subprocess.run([voxrt, "profile", model, "--shape", shape, "--compare", precisions, "--runs", "1",
                        "--warmup", "0", "--threads", "1"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"voxrt profile failed: {r.stderr.strip()}")
    rows = re.findall(r"^(\S+)\s+'(\S+)'\s+relative L2 (\S+)\s+argmax over axis 1 agrees at ([\d.]+)% of (\d+)",
                      r.stdout, re.MULTILINE)
    if len(rows) != 1:
        sys.exit(f"expected one comparison row for {precisions}, got {rows} in:\n{r.stdout}")
    label, name, rel, agree, positions = rows[0]
    print(f"{precisions}: {label} '{name}' relative L2 {rel}, argmax {agree}% of {positions}")
    return float(rel), float(agree), int(positions)


rel, agree, positions = compared("fp32,fp32")
if rel != 0 or agree != 100:
    sys.exit(f"fp32 against itself: relative L2 {rel}, argmax agreement {agree}%")
rel16, agree16, positions16 = compared("fp32,fp16")
if not 0 < rel16 < 1e-2:
    sys.exit(f"fp16 against fp32: relative L2 {rel16}, expected above 0 and below 1e-2")
if positions16 != positions or agree16 < 99:
    sys.exit(f"fp16 against fp32: argmax agreement {agree16}% of {positions16} positions")
