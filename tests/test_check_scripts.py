#!/usr/bin/env python3
"""scripts/check-scripts passes this checkout and catches what it is there for: each case writes
one script and expects the check to fail on it or to pass it.

Usage: tests/test_check_scripts.py   (exits non-zero on the first case that goes wrong)
"""
import pathlib
import subprocess
import sys
import tempfile

SOURCE = pathlib.Path(__file__).resolve().parent.parent
CHECK = SOURCE / "scripts" / "check-scripts"
HEAD = "#!/usr/bin/env bash\nset -euo pipefail\n"

# (what the script does, its text, whether the check must fail on it)
CASES = [
    ("the package test's man page search that failed in CI",
     HEAD + "zcat man.1.gz | grep -qF -- '\\-\\-fixture' || exit 1\n", True),
    ("grep -m 1 leaves early too", HEAD + "ps ax | grep -m 1 agent\n", True),
    ("-q after other options", HEAD + "dmesg | grep -i -q xid\n", True),
    ("with a variable set for grep", HEAD + "cat big | LC_ALL=C grep -qF x\n", True),
    ("the long form", HEAD + "cat a | grep --quiet x\n", True),
    ("grep -q on a file", HEAD + "grep -q pattern file && echo yes\n", False),
    ("grep -q on a here-string", HEAD + 'grep -q x <<<"$text"\n', False),
    ("|| before grep is no pipe", HEAD + "false || grep -q x file\n", False),
    ("a pipe into grep that reads to the end", HEAD + "zcat a.gz | grep -c x\n", False),
    ("no pipefail: the status is grep's", "#!/usr/bin/env bash\nzcat a.gz | grep -q x\n", False),
    ("a commented-out line", HEAD + "# zcat a.gz | grep -q x\n", False),
]


def check(args):
    result = subprocess.run([sys.executable, str(CHECK)] + args, capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def main():
    code, output = check([])
    if code != 0:
        print(f"FAIL: this checkout does not pass scripts/check-scripts:\n{output}")
        return 1
    if "no early reader" not in output:
        print(f"FAIL: the check over this checkout said: {output}")
        return 1
    with tempfile.TemporaryDirectory() as folder:
        for number, (what, text, must_fail) in enumerate(CASES):
            script = pathlib.Path(folder) / f"case{number}.sh"
            script.write_text(text)
            code, output = check([str(script)])
            if must_fail and (code != 1 or f"{script}:" not in output):
                print(f"FAIL: {what}: the check did not name it (exit {code}): {output}")
                return 1
            if not must_fail and code != 0:
                print(f"FAIL: {what}: the check refused it (exit {code}): {output}")
                return 1
            print(f"ok: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
