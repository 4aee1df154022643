#!/usr/bin/env python3
"""`voxrt bench` reports its own peak memory, not its parent's.

Linux keeps getrusage's ru_maxrss across exec, so a program started by a large parent (the
benchmark script's Python, onnxruntime's node) inherits the parent's resident size at fork as
its "maximum". This parent holds a 384 MiB ballast, touched, while it runs voxrt bench on a small
model, and fails if the reported peak reaches the ballast.

usage: bench_peak_rss.py VOXRT MODEL SHAPE
"""
import re
import subprocess
import sys

voxrt, model, shape = sys.argv[1:4]
ballast = bytearray(384 << 20)
for i in range(0, len(ballast), 4096):
    ballast[i] = 1
r = subprocess.run([voxrt, "bench", model, "--shape", shape, "--runs", "2", "--warmup", "0"],
                   capture_output=True, text=True)
if r.returncode != 0:
    sys.exit(f"voxrt bench failed: {r.stderr.strip()}")
m = re.search(r"peak RSS ([\d.]+) (KiB|MiB|GiB)", r.stdout)
if not m:
    sys.exit(f"no peak RSS in: {r.stdout.strip()}")
mib = float(m.group(1)) * {"KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[m.group(2)]
print(f"voxrt bench peak RSS {mib:.1f} MiB under a parent holding {len(ballast) >> 20} MiB")
if mib >= 256:
    sys.exit(f"peak RSS {mib:.1f} MiB: the parent's memory was counted")
