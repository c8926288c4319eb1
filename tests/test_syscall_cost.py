#!/usr/bin/env python3
"""A live `watch --source xml` sample, in steady state, opens no file but the GPU processes'
/proc entries and the job folder: /proc/stat, /proc/meminfo, /proc/diskstats and /proc/net/dev are
held open and read again, the online CPUs come from /proc/stat's read and the load from sysinfo
(no /sys/devices/system/cpu/online or /proc/loadavg each sample); and its system calls stay within
a budget. Counted by bench/syscall-cost under strace, on the stand-in nvidia-smi: counts, no times.

Usage: tests/test_syscall_cost.py AGENT   (exits 77, skipped, where strace cannot trace here)
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What a sample may open: each GPU process's /proc/PID (the stand-in lists four pids, which are
# likely not running here, so that each open fails) and, where one of them runs, its files there
# (by a name relative to that folder, or libproc2's /proc/N/...); and the job-mapping folder.
def may_open(path):
    return (path == "/run/nvsmi-agent/slurm-jobs" or path == "/proc/N" or
            path.startswith("/proc/N/") or not path.startswith("/"))
# The main thread's calls a sample, all kinds: 30 on the development VM (three reads of the
# document and the retries that find the pipes empty, the host's reads, the line written).
# Room for the event loop waking more often on a busy machine, not for a new file a sample.
CALL_BUDGET = 45


def main():
    agent = sys.argv[1]
    env = dict(os.environ, AGENT=agent, NVIDIA_SMI=os.path.join(ROOT, "scripts", "fake-nvidia-smi"),
               FAKE_NVSMI_XML=os.path.join(ROOT, "fixtures", "xml", "h100-8gpu-v12.xml"))
    probe = subprocess.run(["strace", "-qq", "-o", os.devnull, "true"], capture_output=True,
                           text=True)
    if probe.returncode != 0:
        print(f"SKIP: strace cannot trace here: {probe.stderr.strip()[:200]}")
        return 77
    result = subprocess.run([os.path.join(ROOT, "bench", "syscall-cost"), "--json", "-n", "13"],
                            capture_output=True, text=True, env=env, timeout=300)
    if result.returncode != 0:
        print(f"FAIL: bench/syscall-cost exited {result.returncode}: {result.stderr}")
        return 1
    counts = json.loads(result.stdout)
    print(f"per sample over {counts['samples']}: {json.dumps(counts)}")
    failures = []
    extra = sorted(path for path in counts["opened"] if not may_open(path))
    if extra:
        failures.append(f"a sample opens {extra}: held open, or read once, before")
    if counts["opened"].get("/proc/N", 0) != 4:
        failures.append(f"the four processes' /proc entries opened {counts['opened']} a sample")
    total = sum(counts["calls"].values())
    if total > CALL_BUDGET:
        failures.append(f"{total:.1f} system calls a sample, over {CALL_BUDGET}: {counts['calls']}")
    for name in ("clone", "clone3", "fork", "vfork", "execve"):
        if counts["calls"].get(name):
            failures.append(f"{name} in steady state: a child started per sample")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
