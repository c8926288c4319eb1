#!/usr/bin/env python3
"""The built man page has EXAMPLES, EXIT STATUS, ENVIRONMENT and FILES; EXIT STATUS lists every
code of agent/core/exit_codes.hpp, and ENVIRONMENT every variable the agent reads.

Usage: test_man_page.py MAN_PAGE.1.gz SOURCE_ROOT
"""
import gzip
import pathlib
import re
import sys


def sections(page):
    """Each .SH section's name and its text."""
    found = {}
    name = None
    for line in page.splitlines():
        heading = re.match(r'\.SH\s+"?([^"]*)"?\s*$', line)
        if heading:
            name = heading.group(1).strip()
            found[name] = ""
        elif name:
            found[name] += line + "\n"
    return found


def main():
    man, root = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    if not man.exists():
        print(f"{man} was not built: is help2man installed (scripts/install-deps build)?")
        return 1
    page = gzip.decompress(man.read_bytes()).decode()
    found = sections(page)
    failures = []
    for wanted in ("EXAMPLES", "EXIT STATUS", "ENVIRONMENT", "FILES"):
        if not found.get(wanted, "").strip():
            failures.append(f"no {wanted} section (sections: {', '.join(found)})")

    exit_codes = re.findall(r"^\s*exit_[a-z_]+ = (\d+),",
                            (root / "agent/core/exit_codes.hpp").read_text(), re.M)
    if not exit_codes:
        failures.append("no exit codes read from agent/core/exit_codes.hpp")
    listed = re.findall(r"^\.B (\S+)$", found.get("EXIT STATUS", ""), re.M)
    for code in exit_codes:
        if code not in listed:
            failures.append(f"exit code {code} is not in EXIT STATUS")

    # Every variable the agent reads: getenv("X"), and caller_named_variable("X") (core/privilege).
    variables = set()
    for source in list((root / "agent").rglob("*.cpp")) + list((root / "parsers").rglob("*.cpp")):
        variables |= set(re.findall(r'(?:getenv|caller_named_variable)\("([A-Z_][A-Z0-9_]*)"\)',
                                    source.read_text()))
    if not variables:
        failures.append("no variables found read in agent/")
    environment = found.get("ENVIRONMENT", "")
    for variable in sorted(variables):
        if not re.search(r"\b" + re.escape(variable) + r"\b", environment):
            failures.append(f"{variable} is read by the agent but not in ENVIRONMENT")

    for failure in failures:
        print(failure)
    if not failures:
        print(f"{man}: the four sections, {len(exit_codes)} exit codes, "
              f"{len(variables)} variables ({', '.join(sorted(variables))})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
