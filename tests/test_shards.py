#!/usr/bin/python3
"""ctest runs each suite as one test per source file, by Catch2's file-name tags
(tests/CMakeLists.txt, nvsmi_library_test). A test case whose file is not one of those (a TEST_CASE
in a header) would then run in no ctest test, and a file named there with no test case, or a
misspelt one, would pass having run nothing: Catch2 exits 0 when no test case matches.

Usage: test_shards.py EXECUTABLE FILE... -- [EXECUTABLE FILE... --]...
FILE is a source's name without its extension, as the tag [#FILE] names it."""
import re
import subprocess
import sys


def groups(arguments):
    group = []
    for argument in arguments:
        if argument == "--":
            yield group[0], set(group[1:])
            group = []
        else:
            group.append(argument)
    if group:
        sys.exit("test_shards.py: the last group does not end with --")


def tags_of(executable):
    # Catch2 exits with the number of tags it listed, so the listing's heading is what says it ran.
    listed = subprocess.run([executable, "-#", "--list-tags"], capture_output=True, text=True,
                            timeout=120)
    if "All available tags:" not in listed.stdout:
        sys.exit(f"test_shards.py: {executable} -# --list-tags listed no tags "
                 f"(exit status {listed.returncode}): {listed.stderr.strip()}")
    return set(re.findall(r"\[#([^\]]+)\]", listed.stdout))


def main():
    problems = []
    checked = 0
    for executable, files in groups(sys.argv[1:]):
        tags = tags_of(executable)
        for tag in sorted(tags - files):
            problems.append(f"{executable}: the test cases of {tag} run in no ctest test "
                            "(add its source to the suite in tests/CMakeLists.txt)")
        for name in sorted(files - tags):
            problems.append(f"{executable}: {name} is a ctest test with no test case")
        checked += 1
    if checked == 0:
        problems.append("no suite was given")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1
    print(f"every test case of {checked} suites is in a file ctest runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
