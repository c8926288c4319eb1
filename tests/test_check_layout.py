#!/usr/bin/env python3
"""scripts/check-layout catches what it is there for: each case plants one wrong arrow in a copy
of agent/ and parsers/ and expects a failure that names it; the untouched copy must pass.

Usage: tests/test_check_layout.py   (exits non-zero on the first case that goes wrong)
"""
import pathlib
import shutil
import subprocess
import sys
import tempfile

SOURCE = pathlib.Path(__file__).resolve().parent.parent
CHECK = SOURCE / "scripts" / "check-layout"

# (what is planted, file, text appended to it, what the failure must say)
CASES = [
    ("an output format reaching for a process", "agent/formats/formats.cpp",
     '#include "sampling/sampler.hpp"\n', "formats -> sampling"),
    ("the runner of nvidia-smi using a command (the arrow issue 12 turned round)",
     "agent/nvidia_smi/source.cpp", '#include "commands/snapshot_command.hpp"\n',
     "nvidia_smi -> commands"),
    ("the runner of nvidia-smi using the sampler above it",
     "agent/nvidia_smi/nvidia_smi_stream.cpp", '#include "sampling/sampler.hpp"\n',
     "nvidia_smi -> sampling"),
    ("the runner of nvidia-smi reading the kernel log (issue 24 took that arrow away)",
     "agent/nvidia_smi/source.cpp", '#include "kernel_log/xid_log.hpp"\n',
     "nvidia_smi -> kernel_log"),
    ("a command including a sibling command", "agent/commands/check_command.hpp",
     '#include "commands/snapshot_command.hpp"\n', "a command includes no other command"),
    ("a command using the command line", "agent/commands/watch_command.hpp",
     '#include "cli/cli.hpp"\n', "commands -> cli"),
    ("a format found by a relative path", "agent/formats/prometheus_metrics.hpp",
     '#include "../serve/serve_state.hpp"\n', "formats -> serve"),
    ("a reader including the agent", "parsers/src/utf8.cpp", '#include "core/exit_codes.hpp"\n',
     "parsers -> core"),
    ("a library linked the wrong way", "agent/formats/CMakeLists.txt",
     "target_link_libraries(nvsmi_formats PRIVATE nvsmi_files)\n", "formats -> files"),
    ("a file left in agent/ itself", "agent/stray.hpp", "#pragma once\n",
     "agent/stray.hpp: agent/ keeps only main.cpp"),
]


def run_check(root):
    result = subprocess.run([sys.executable, str(CHECK), "--root", str(root)],
                            capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def copy_tree(into):
    for name in ("agent", "parsers"):
        shutil.copytree(SOURCE / name, into / name)


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as scratch:
        clean = pathlib.Path(scratch) / "clean"
        copy_tree(clean)
        code, output = run_check(clean)
        if code != 0:
            print(f"FAIL: the untouched copy is refused:\n{output}")
            failures += 1
        for index, (what, file, planted, expected) in enumerate(CASES):
            root = pathlib.Path(scratch) / f"case{index}"
            copy_tree(root)
            with open(root / file, "a") as target:
                target.write(planted)
            code, output = run_check(root)
            if code != 1 or expected not in output:
                print(f"FAIL: {what}: exit {code}, expected a line with {expected!r}:\n{output}")
                failures += 1
            elif len(output.splitlines()) != 2:  # the planted problem, then the count
                print(f"FAIL: {what}: more than the one planted problem reported:\n{output}")
                failures += 1
            else:
                print(f"ok: {what}: {output.splitlines()[0]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
