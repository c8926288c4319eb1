#!/usr/bin/env python3
"""What the dynamic loader does for the agent (docs/PERFORMANCE.md, "A snapshot's instructions"):
built with NVSMI_STATIC_DEPS (STATIC 1), the binary needs only glibc's libraries; a snapshot of a
fixture loads no libproc2, hence no libsystemd and its chain; a snapshot that reads the host loads
libproc2 then, and its host readings are there; a libproc2.so.0 that is not one, or lacks a
function, leaves them null with one line on stderr, and the snapshot is printed. Counts, not
timings.
Usage: test_linked_libraries.py AGENT FIXTURES SCRIPTS STATIC"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# glibc's own: every program loads them, and they must follow the system's kernel and libc.
GLIBC = {"libc.so.6", "libm.so.6"}


def needed(binary):
    dynamic = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True,
                             check=True).stdout
    return {line.split("[", 1)[1].split("]", 1)[0] for line in dynamic.splitlines()
            if "(NEEDED)" in line}


def loaded(argv):
    """Runs argv with the loader's trace on: its exit code, stdout, and every library it loaded."""
    env = dict(os.environ, LD_DEBUG="files")
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    libraries = {os.path.basename(line.split("file=", 1)[1].split()[0])
                 for line in result.stderr.splitlines() if "file=" in line}
    return result.returncode, result.stdout, libraries


def without_libproc2(agent, scripts, folder, failures):
    """dlopen searches LD_LIBRARY_PATH first: a libproc2.so.0 there stands in for a broken one."""
    stand_in = [agent, "snapshot", "--nvidia-smi", os.path.join(scripts, "fake-nvidia-smi"),
                "--format", "json"]
    empty = os.path.join(folder, "empty.c")
    with open(empty, "w") as source:
        source.write("int nvsmi_not_libproc2;\n")
    cases = {"not a library": None, "no procps functions": empty}
    for case, source in cases.items():
        library_dir = os.path.join(folder, case.replace(" ", "-"))
        os.mkdir(library_dir)
        library = os.path.join(library_dir, "libproc2.so.0")
        if source is None:
            with open(library, "w") as garbage:
                garbage.write("\x7fELF? no: hostile bytes \x1b[31m\n")
        else:
            compiler = shutil.which("cc") or shutil.which("gcc")
            subprocess.run([compiler, "-shared", "-fPIC", "-o", library, source], check=True)
        result = subprocess.run(stand_in, capture_output=True, text=True, timeout=60,
                                env=dict(os.environ, LD_LIBRARY_PATH=library_dir))
        lines = [line for line in result.stderr.splitlines() if "libproc2" in line]
        if result.returncode != 0:
            failures.append(f"{case}: snapshot failed ({result.returncode}): {result.stderr}")
            continue
        host = json.loads(result.stdout).get("host") or {}
        if host.get("cpu_count") is not None or host.get("memory_total_mib") is not None:
            failures.append(f"{case}: host readings invented without libproc2: {host}")
        if host.get("hostname") is None:
            failures.append(f"{case}: the hostname (not libproc2's) is lost too: {host}")
        if host.get("load1") is None:
            failures.append(f"{case}: the load (sysinfo's, not libproc2's) is lost too: {host}")
        if len(lines) != 1 or not re.match(r"nvsmi-agent: \S+ host readings unknown: ", lines[0]):
            failures.append(f"{case}: not one line on stderr saying so: {result.stderr!r}")
        elif any(ord(c) < 0x20 for c in lines[0]):
            failures.append(f"{case}: unprintable bytes on stderr: {lines[0]!r}")


def main():
    agent, fixtures, scripts, static = sys.argv[1:5]
    failures = []

    extra = {name for name in needed(agent) - GLIBC if not name.startswith("ld-linux")}
    if "libproc2.so.0" in extra:
        failures.append("needs libproc2 at start: it is loaded when the host is read")
    if static == "1" and extra:
        failures.append(f"needs more than glibc: {sorted(extra)}")
    static_only = ("libssl", "libcrypto", "libncursesw", "libtinfo", "libyaml-cpp", "libstdc++")

    code, out, libraries = loaded([agent, "snapshot", "--fixture",
                                   os.path.join(fixtures, "xml/h100-8gpu-v12.xml"),
                                   "--format", "legacy"])
    if code != 0 or not out.startswith("{"):
        failures.append(f"snapshot --fixture failed ({code})")
    if not libraries:
        failures.append("LD_DEBUG=files showed no library loaded: the trace is not read right")
    for library in sorted(libraries):
        stem = library.split(".so")[0]
        if stem in ("libproc2", "libsystemd") or (static == "1" and stem in static_only):
            failures.append(f"snapshot --fixture loads {library}")

    code, out, libraries = loaded([agent, "snapshot", "--nvidia-smi",
                                   os.path.join(scripts, "fake-nvidia-smi"), "--format", "json"])
    if code != 0:
        failures.append(f"snapshot of the stand-in failed ({code})")
    else:
        if "libproc2.so.0" not in libraries:
            failures.append(f"reading the host did not load libproc2.so.0: {sorted(libraries)}")
        host = json.loads(out).get("host") or {}
        if host.get("cpu_count") is None or host.get("memory_total_mib") is None:
            failures.append(f"host readings missing with libproc2 loaded late: {host}")

    with tempfile.TemporaryDirectory() as folder:
        without_libproc2(agent, scripts, folder, failures)

    for failure in failures:
        print("test_linked_libraries: " + failure, file=sys.stderr)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
