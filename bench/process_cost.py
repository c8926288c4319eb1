#!/usr/bin/env python3
"""The whole-process cost of a cron snapshot: runs COMMAND... RUNS times (spawn to exit) and prints,
as JSON, the median and minimum wall time and the peak RSS, with /bin/true measured the same way
as the floor of starting any process; then the instructions of one run, counted by callgrind (and
by `perf stat` where the machine lets it count). With --wall-only, just the wall times; with
--instructions, just callgrind's count of one run (bench/snapshot-cost); with --at-most N too,
exit 1 where it is over N (the ctest test snapshot_instructions), 77 where valgrind is missing.
Usage: process_cost.py [--wall-only] RUNS COMMAND...
       process_cost.py --instructions [--at-most N] COMMAND..."""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def spawn_costs(argv, runs, rss=True):
    walls = []
    with open(os.devnull, "wb") as null:
        for _ in range(runs):
            start = time.perf_counter()
            pid = os.posix_spawn(argv[0], argv, os.environ,
                                 file_actions=[(os.POSIX_SPAWN_DUP2, null.fileno(), 1)])
            _, status = os.waitpid(pid, 0)
            walls.append(time.perf_counter() - start)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"process_cost: {argv} failed with {status}")
    return {"wall_median_s": statistics.median(walls), "wall_min_s": min(walls),
            "peak_rss_kib": peak_rss(argv) if rss else None}


def peak_rss(argv):
    """Through GNU time: a child of this (vfork-spawned) Python would inherit its high-water mark
    across exec, and report Python's RSS rather than its own."""
    result = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, check=True)
    return int(result.stderr.split()[-1])


def callgrind_instructions(argv):
    if not shutil.which("valgrind"):
        return None
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "callgrind.out")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        with open(out) as profile:
            match = re.search(r"^(?:summary|totals): (\d+)", profile.read(), re.M)
    return int(match.group(1)) if match else None


def perf_instructions(argv):
    if not shutil.which("perf"):
        return None
    result = subprocess.run(["perf", "stat", "-x,", "-e", "instructions:u", *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in result.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("instructions") and fields[0].isdigit():
            return int(fields[0])
    return None  # "<not supported>": no hardware counters here (a VM or container)


def main():
    args = sys.argv[1:]
    if args[0] == "--instructions":
        argv, limit = args[1:], None
        if argv[0] == "--at-most":
            limit, argv = int(argv[1]), argv[2:]
        argv[0] = shutil.which(argv[0]) or argv[0]
        count = callgrind_instructions(argv)
        if count is None:
            print("process_cost: no valgrind, or no count from callgrind", file=sys.stderr)
            sys.exit(77)
        print(count)
        if limit is not None and count > limit:
            print(f"process_cost: {count:,} instructions, over {limit:,}", file=sys.stderr)
            sys.exit(1)
        return
    wall_only = args[0] == "--wall-only"
    runs, argv = int(args[wall_only]), args[wall_only + 1:]
    argv[0] = shutil.which(argv[0]) or argv[0]
    result = spawn_costs(argv, runs, not wall_only)
    if wall_only:
        json.dump(result, sys.stdout)
        return
    result["floor"] = spawn_costs([shutil.which("true")], runs)
    result["callgrind_instructions"] = callgrind_instructions(argv)
    result["perf_instructions"] = perf_instructions(argv)
    result["runs"] = runs
    result["command"] = " ".join([os.path.basename(argv[0]), *argv[1:]])
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
