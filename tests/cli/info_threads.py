#!/usr/bin/env python3
"""`voxrt info --threads N` reports the activation memory a run on N threads plans.

On more than one thread a small model's arena keeps a region per channel size (runtime/arena),
so two threads plan more than one; `voxrt bench` on two threads must report what `info` does.

usage: info_threads.py VOXRT MODEL SHAPE
"""
import re
import subprocess
import sys

voxrt, model, shape = sys.argv[1:4]
UNITS = {"B": 1 / 1048576, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024}


def activations(args, pattern):
    r = subprocess.run([voxrt] + args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"voxrt {' '.join(args)} failed: {r.stderr.strip()}")
    m = re.search(pattern, r.stdout)
    if not m:
        sys.exit(f"no activations in: {r.stdout.strip()}")
    return float(m.group(1)) * UNITS[m.group(2)]


info = {t: activations(["info", model, "--shape", shape, "--threads", str(t)],
                       rf"activations ([\d.]+) (B|KiB|MiB|GiB) peak on {t} threads?\b")
        for t in (1, 2)}
bench = activations(["bench", model, "--shape", shape, "--threads", "2", "--runs", "1",
                     "--warmup", "0"], r"activations ([\d.]+) (B|KiB|MiB|GiB)")
print(f"info: {info[1]:.3f} MiB on one thread, {info[2]:.3f} on two; bench on two {bench:.3f}")
if not info[2] > info[1]:
    sys.exit("two threads should plan a region per channel size, more than one thread's arena")
if abs(info[2] - bench) > 0.001 * bench:
    sys.exit("voxrt info --threads 2 and voxrt bench --threads 2 disagree")
