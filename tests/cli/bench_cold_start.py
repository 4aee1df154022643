#!/usr/bin/env python3
"""`voxrt bench` reports the cold start apart: the Session's creation and its first run.

bench/compare_onnxruntime reads the line; with no warm-up the first run is the first timed one,
so it is no shorter than the shortest timed run.

usage: bench_cold_start.py VOXRT MODEL SHAPE
"""
import re
import subprocess
import sys

voxrt, model, shape = sys.argv[1:4]
for warmup in (0, 1):
    r = subprocess.run([voxrt, "bench", model, "--shape", shape, "--runs", "3", "--warmup",
                        str(warmup)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"voxrt bench failed: {r.stderr.strip()}")
    cold = re.search(r"session created in ([\d.]+) ms .*first run ([\d.]+) ms", r.stdout)
    least = re.search(r"min ([\d.]+) ms", r.stdout)
    if not cold or not least:
        sys.exit(f"no cold start or min in: {r.stdout.strip()}")
    created, first, shortest = float(cold.group(1)), float(cold.group(2)), float(least.group(1))
    print(f"--warmup {warmup}: session created in {created} ms, first run {first} ms, "
          f"min {shortest} ms")
    if created <= 0 or first <= 0:
        sys.exit("a cold-start time is not positive")
    if warmup == 0 and first < shortest:
        sys.exit(f"first run {first} ms below the shortest timed run {shortest} ms")
