#!/usr/bin/env python3
"""The shipped systemd unit: `systemd-analyze security` rates it 3.0 or better, and the hardening
keeps what serve needs (CAP_SYSLOG and no ProtectKernelLogs for /dev/kmsg, every user's /proc, the
NVIDIA devices, the claims folder), listening on loopback only.
Usage: test_serve_unit.py UNIT. Exit 77 (skipped) where systemd-analyze is absent."""
import re
import shutil
import subprocess
import sys

BOUND = 3.0


def main():
    unit = sys.argv[1]
    text = open(unit, encoding="utf-8").read()
    settings = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            settings.setdefault(key.strip(), []).append(value.strip())
    failures = []

    def need(condition, what):
        if not condition:
            failures.append(what)

    exec_start = settings.get("ExecStart", [""])[-1]
    need("--listen 127.0.0.1:" in exec_start, "ExecStart listens on loopback: " + exec_start)
    need(settings.get("AmbientCapabilities") == ["CAP_SYSLOG"], "CAP_SYSLOG for /dev/kmsg")
    need("yes" not in settings.get("ProtectKernelLogs", []), "no ProtectKernelLogs (/dev/kmsg)")
    need("yes" not in settings.get("PrivateDevices", []), "no PrivateDevices (/dev/nvidia*)")
    need("yes" not in settings.get("PrivateUsers", []), "no PrivateUsers (other users' uids)")
    need(not set(settings.get("ProtectProc", [])) & {"invisible", "noaccess", "ptraceable"},
         "no ProtectProc hiding other users' /proc")
    need("pid" not in settings.get("ProcSubset", []), "no ProcSubset=pid (/proc/meminfo, stat)")
    need(any("/run/lock/nvsmi-agent" in v for v in settings.get("ReadWritePaths", [])),
         "ReadWritePaths for the claims folder")
    need("DevicePolicy" not in settings, "no DevicePolicy (the NVIDIA devices)")

    if shutil.which("systemd-analyze") is None:
        for failure in failures:
            print("FAIL: " + failure)
        print("skipped: systemd-analyze is not installed")
        return 1 if failures else 77
    run = subprocess.run(["systemd-analyze", "security", "--offline=true", unit],
                         capture_output=True, text=True, timeout=120)
    score = re.search(r"Overall exposure level for \S+: ([0-9.]+)", run.stdout + run.stderr)
    need(score is not None, "a score from systemd-analyze: " + run.stdout[-500:] + run.stderr)
    if score:
        print("systemd-analyze security: " + score.group(1))
        need(float(score.group(1)) <= BOUND, f"exposure {score.group(1)} > {BOUND}")
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
