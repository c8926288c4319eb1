#!/usr/bin/env python3
"""Prints bench/run's table from the JSON its steps wrote into DIR: reader.json (Google
Benchmark), python.json (etree_extract.py), process.json (process_cost.py) and, where a GPU was
present, nvidia-smi.json. Usage: table.py DIR"""
import json
import os
import platform
import sys

folder = sys.argv[1]


def load(name):
    path = os.path.join(folder, name)
    return json.load(open(path)) if os.path.exists(path) else None


reader = load("reader.json")
python = load("python.json")
process = load("process.json")
nvsmi = load("nvidia-smi.json")
data = os.path.join(folder, "data")
SCALE = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}
# CPU time of the benchmark thread: the same as wall time on an idle machine, and what the work
# costs on a busy one (this one is shared with builds).
cpp = {b["name"]: b["cpu_time"] * SCALE[b["time_unit"]] for b in reader["benchmarks"]}
items = {b["name"]: b.get("items_per_second") for b in reader["benchmarks"]}
etree = {os.path.basename(path).rsplit(".", 1)[0]: r["seconds"] for path, r in python.items()}


def size(name):
    ext = "csv" if name.startswith("csv") else "xml"
    return os.path.getsize(os.path.join(data, f"{name}.{ext}"))


def us(seconds):
    return f"{seconds * 1e6:,.1f} µs"


def mbs(name, seconds):
    return f"{size(name) / seconds / 1e6:,.0f} MB/s"


context = reader["context"]
print(f"nvsmi-agent readers, Release, {context.get('num_cpus')} x {context.get('mhz_per_cpu')} MHz "
      f"{platform.processor() or platform.machine()}, {context.get('date')}")
print()
head = ("input", "size", "read (C++)", "read", "+legacy", "+json", "+csv", "Python", "Python",
        "C++ vs")
head2 = ("", "", "per snapshot", "MB/s", "per snapshot", "per snapshot", "per snapshot",
         "per snapshot", "MB/s", "Python")
rows = [head, head2]
for name in ("xml-1gpu", "xml-8gpu", "xml-64gpu", "csv-8gpu"):
    read = cpp[f"read/{name}"]
    py = etree.get(name)
    rows.append((name, f"{size(name) / 1024:,.1f} KiB", us(read), mbs(name, read),
                 us(cpp[f"read+legacy/{name}"]), us(cpp[f"read+json/{name}"]),
                 us(cpp[f"read+csv/{name}"]), us(py) if py else "-",
                 mbs(name, py) if py else "-", f"{py / read:,.0f}x" if py else "-"))
widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
for row in rows:
    print("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                    for i, (cell, w) in enumerate(zip(row, widths))))
print("(read: bytes to a typed Snapshot; +FORMAT: read, then format the output; Python: "
      "ElementTree or csv into dicts, same fields; CPU time)")
print()
stream_rows = items["rows/csv-8gpu-stream"]
sample_rows = 8 / cpp["read/csv-8gpu"]
print(f"CSV rows, as `watch` reads them (line by line):  {stream_rows:,.0f} GPU rows/s")
print(f"CSV rows, a whole sample with its header:        {sample_rows:,.0f} GPU rows/s")
print()

wall, floor = process["wall_median_s"], process["floor"]["wall_median_s"]
print(f"whole process, `{process['command']}` ({process['runs']} runs):")
print(f"  wall time         median {wall * 1e3:.2f} ms, min {process['wall_min_s'] * 1e3:.2f} ms "
      f"(starting /bin/true: median {floor * 1e3:.2f} ms)")
print(f"  peak RSS          {process['peak_rss_kib'] / 1024:.1f} MiB "
      f"(/bin/true: {process['floor']['peak_rss_kib'] / 1024:.1f} MiB)")
ir = process["callgrind_instructions"]
print(f"  instructions      {ir:,} (callgrind, one run)" if ir else "  instructions      -")
perf = process["perf_instructions"]
print(f"  perf stat         {perf:,} instructions:u" if perf else
      "  perf stat         no hardware counters on this machine")
print()

xml8 = cpp["read+legacy/xml-8gpu"]
if nvsmi:
    print(f"nvidia-smi on this machine ({nvsmi['gpus']} GPU(s)), median of {nvsmi['runs']} runs:")
    for label, key in (("-q -x", "xml"), ("--query-gpu (csv)", "csv")):
        seconds = nvsmi[key]["wall_median_s"]
        print(f"  nvidia-smi {label:18} {seconds * 1e3:8.1f} ms")
    print(f"  the agent's read+legacy of 8 GPUs is {xml8 / nvsmi['xml']['wall_median_s'] * 100:.3f}% "
          f"of one `nvidia-smi -q -x`")
else:
    print("nvidia-smi: no GPU on this machine, its own cost not measured")
print()

python8 = etree["xml-8gpu"]
goals = [
    (f"8-GPU XML read and formatted as {f} under 100 µs", cpp[f"read+{f}/xml-8gpu"] < 100e-6,
     us(cpp[f"read+{f}/xml-8gpu"])) for f in ("legacy", "json", "csv")
] + [
    ("at least 20x the Python script's throughput (8-GPU XML)",
     python8 / cpp["read/xml-8gpu"] >= 20, f"{python8 / cpp['read/xml-8gpu']:,.0f}x"),
    ("a whole `snapshot --fixture` under 5 ms", wall < 5e-3, f"{wall * 1e3:.2f} ms"),
    ("... and under 10 MiB RSS", process["peak_rss_kib"] < 10 * 1024,
     f"{process['peak_rss_kib'] / 1024:.1f} MiB"),
    ("CSV over 1 million GPU rows per second", min(stream_rows, sample_rows) > 1e6,
     f"{min(stream_rows, sample_rows):,.0f} rows/s"),
]
print("goals:")
for text, met, figure in goals:
    print(f"  {'met   ' if met else 'MISSED'}  {text}: {figure}")
