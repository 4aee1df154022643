#!/usr/bin/env python3
"""`voxrt segment` runs its network on one thread per physical core it may use by default.

Runs the demo network on the demo volume three times: with the process's own CPU affinity,
where the summary may name no more threads than this script counts physical cores (sysfs
topology, SMT siblings once; the CPU count where that is unreadable; a cgroup CPU quota may
lower it); pinned to one CPU with os.sched_setaffinity in the child, where it must name one; and
pinned with --threads 3, which must win.

usage: segment_threads.py VOXRT MODEL VOLUME
"""
import os
import re
import subprocess
import sys
import tempfile

voxrt, model, volume = sys.argv[1:4]


def physical_cores(cpus):
    cores = set()
    for c in cpus:
        try:
            with open(f"/sys/devices/system/cpu/cpu{c}/topology/physical_package_id") as p, \
                    open(f"/sys/devices/system/cpu/cpu{c}/topology/core_id") as k:
                cores.add((int(p.read()), int(k.read())))
        except OSError:
            return len(cpus)
    return len(cores)


def threads_named(extra, pin=None):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [voxrt, "segment", model, "--input", volume, "--output", os.path.join(tmp, "l.nii.gz"),
               "--patch", "64"] + extra
        r = subprocess.run(cmd, capture_output=True, text=True,
                           preexec_fn=(lambda: os.sched_setaffinity(0, {pin})) if pin is not None else None)
    if r.returncode != 0:
        sys.exit(f"voxrt segment failed: {r.stderr.strip()}")
    m = re.search(r"on (\d+) network threads?", r.stdout)
    if not m:
        sys.exit(f"no thread count in: {r.stdout.strip()}")
    return int(m.group(1))


cpus = sorted(os.sched_getaffinity(0))
want = physical_cores(cpus)
got = threads_named([])
print(f"default: {got} network threads, {want} physical cores in the affinity mask")
if got > want:  # a cgroup CPU quota may lower it, never raise it
    sys.exit(f"default threads {got}, more than the {want} physical cores")
pinned = threads_named([], pin=cpus[-1])
print(f"pinned to CPU {cpus[-1]}: {pinned}")
if pinned != 1:
    sys.exit(f"pinned to one CPU, the default named {pinned} threads")
explicit = threads_named(["--threads", "3"], pin=cpus[-1])
if explicit != 3:
    sys.exit(f"--threads 3 named {explicit} threads")
