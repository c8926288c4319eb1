#!/usr/bin/env python3
"""What a user writes instead of the agent: read `nvidia-smi -q -x` with xml.etree.ElementTree (and
`--query-gpu` CSV with the csv module) into dicts holding the fields the agent's reader keeps,
numbers as numbers and unknown markers as None. Times each file given and prints, as JSON, the
CPU seconds one document takes; with --once, reads FILE once and prints what it extracted, as a
script run by cron would (bench/snapshot-cost counts its instructions).
Usage: etree_extract.py [--seconds S] FILE...
       etree_extract.py --once FILE"""
import csv
import io
import json
import sys
import time
import xml.etree.ElementTree as ET
from datetime import datetime

UNKNOWN = {"", "N/A", "[N/A]", "[Not Supported]", "Not Supported", "[Unknown Error]"}


def text(node, path):
    value = node.findtext(path)
    if value is None:
        return None
    value = value.strip()
    return None if value in UNKNOWN or value.startswith("[") else value


def number(node, path, unit, kind=int):
    value = text(node, path)
    if value is None:
        return None
    if unit:
        if not value.endswith(" " + unit):
            raise ValueError(f"{path}: expected unit {unit} in {value!r}")
        value = value[: -len(unit) - 1]
    return kind(value)


def first(node, paths, unit):
    for path in paths:
        value = number(node, path, unit, float)
        if value is not None:
            return value
    return None


def read_gpu(index, gpu):
    power = gpu.find("gpu_power_readings")
    if power is None:
        power = gpu.find("power_readings")
    reasons = gpu.find("clocks_event_reasons")
    if reasons is None:
        reasons = gpu.find("clocks_throttle_reasons")
    mig = text(gpu, "mig_mode/current_mig")
    processes = gpu.find("processes")
    devices = gpu.find("mig_devices")
    return {
        "index": index,
        "name": text(gpu, "product_name"),
        "uuid": text(gpu, "uuid"),
        "pci_bus_id": text(gpu, "pci/pci_bus_id") or gpu.get("id"),
        "pstate": text(gpu, "performance_state"),
        "fan_speed_percent": number(gpu, "fan_speed", "%"),
        "temperature_c": number(gpu, "temperature/gpu_temp", "C"),
        "memory_total_mib": number(gpu, "fb_memory_usage/total", "MiB"),
        "memory_used_mib": number(gpu, "fb_memory_usage/used", "MiB"),
        "memory_free_mib": number(gpu, "fb_memory_usage/free", "MiB"),
        "utilization_gpu_percent": number(gpu, "utilization/gpu_util", "%"),
        "utilization_memory_percent": number(gpu, "utilization/memory_util", "%"),
        "power_draw_w": None if power is None else first(
            power, ("power_draw", "average_power_draw", "instant_power_draw"), "W"),
        "power_limit_w": None if power is None else first(
            power, ("current_power_limit", "enforced_power_limit", "power_limit"), "W"),
        "clocks_mhz": {name: number(gpu, f"clocks/{element}", "MHz") for name, element in (
            ("graphics", "graphics_clock"), ("sm", "sm_clock"), ("memory", "mem_clock"),
            ("video", "video_clock"))},
        "mig_enabled": None if mig is None else mig == "Enabled",
        "mig_devices": None if devices is None else [{
            "index": number(d, "index", None),
            "gpu_instance_id": number(d, "gpu_instance_id", None),
            "compute_instance_id": number(d, "compute_instance_id", None),
            "memory_total_mib": number(d, "fb_memory_usage/total", "MiB"),
            "memory_used_mib": number(d, "fb_memory_usage/used", "MiB"),
            "memory_free_mib": number(d, "fb_memory_usage/free", "MiB"),
        } for d in devices.iter("mig_device")],
        "processes": None if processes is None else [{
            "pid": number(p, "pid", None),
            "type": text(p, "type"),
            "name": text(p, "process_name"),
            "used_memory_mib": number(p, "used_memory", "MiB"),
            "gpu_instance_id": number(p, "gpu_instance_id", None),
            "compute_instance_id": number(p, "compute_instance_id", None),
        } for p in processes.iter("process_info")],
        "clock_event_reasons_active": None if reasons is None else [
            r.tag.split("reason_", 1)[1] for r in reasons
            if "reason_" in r.tag and (r.text or "").strip() == "Active"],
    }


def read_xml(data):
    root = ET.fromstring(data)
    stamp = text(root, "timestamp")
    return {
        "timestamp": stamp and datetime.strptime(stamp, "%a %b %d %H:%M:%S %Y"),
        "driver_version": text(root, "driver_version"),
        "cuda_version": text(root, "cuda_version"),
        "gpus": [read_gpu(i, gpu) for i, gpu in enumerate(root.iter("gpu"))],
    }


CSV_FIELDS = {  # column -> (key, unit, kind); units are in the header only (`nounits`)
    "index": ("index", int), "uuid": ("uuid", str), "name": ("name", str),
    "pci.bus_id": ("pci_bus_id", str), "pstate": ("pstate", str),
    "temperature.gpu": ("temperature_c", int), "utilization.gpu": ("utilization_gpu_percent", int),
    "utilization.memory": ("utilization_memory_percent", int),
    "memory.total": ("memory_total_mib", int), "memory.used": ("memory_used_mib", int),
    "memory.free": ("memory_free_mib", int), "power.draw": ("power_draw_w", float),
    "power.limit": ("power_limit_w", float), "fan.speed": ("fan_speed_percent", int),
    "clocks.current.graphics": ("graphics_mhz", int), "clocks.current.sm": ("sm_mhz", int),
    "clocks.current.memory": ("memory_mhz", int), "clocks.current.video": ("video_mhz", int),
    "driver_version": ("driver_version", str), "count": ("count", int),
}


def read_csv(data):
    rows = csv.reader(io.StringIO(data.decode()), skipinitialspace=True)
    header = [cell.split(" [")[0] for cell in next(rows)]
    gpus = []
    for row in rows:
        gpu = {}
        for name, cell in zip(header, row):
            if name == "timestamp":
                gpu["timestamp"] = datetime.strptime(cell, "%Y/%m/%d %H:%M:%S.%f")
            elif name in CSV_FIELDS:
                key, kind = CSV_FIELDS[name]
                gpu[key] = None if cell in UNKNOWN or cell.startswith("[") else kind(cell)
        gpus.append(gpu)
    return {"gpus": gpus}


def seconds_per_document(path, budget):
    data = open(path, "rb").read()
    read = read_xml if data.lstrip().startswith(b"<") else read_csv
    extracted = read(data)
    # CPU time, as the C++ side reports: on a shared machine it is what the work costs.
    runs, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < budget or runs < 3:
        read(data)
        runs += 1
    return (time.process_time() - cpu) / runs, len(extracted["gpus"])


def main():
    args = sys.argv[1:]
    budget = 1.0
    if args[:1] == ["--once"]:
        data = open(args[1], "rb").read()
        read = read_xml if data.lstrip().startswith(b"<") else read_csv
        json.dump(read(data), sys.stdout, default=str)
        print()
        return
    if args[:1] == ["--seconds"]:
        budget, args = float(args[1]), args[2:]
    results = {}
    for path in args:
        seconds, gpus = seconds_per_document(path, budget)
        results[path] = {"seconds": seconds, "gpus": gpus}
    json.dump(results, sys.stdout)
    print()


if __name__ == "__main__":
    main()
