#!/usr/bin/python3
"""Bounded peers (issue 40, item 2): the fleet client against hostile peers on loopback
(tests/fleet_peers.py), through the built agent.

- `fleet --hosts` with a real `serve` and four hostile peers (a chunk-size line that never ends, a
  trailer that never ends, headers that never end, a well-formed snapshot of 100,000 tiny GPUs):
  exit 0, the real host `ok`, each hostile one `unreachable` with why in one printable line, and
  the process' peak resident memory under FLEET_PEAK_MIB;
- `serve --fleet-hosts` with the same hosts: /metrics answered on every one of SCRAPES scrapes
  within SCRAPE_SECONDS while it polls them, /fleet.json saying the same of each host, and its
  peak resident memory under SERVE_PEAK_MIB;
- `fleet --prometheus` against a Prometheus whose ten answers are 4 MB each (about 25,000 series):
  exit 6 with an error naming the limit of 10,000 series an answer, and the peak under
  PROMETHEUS_PEAK_MIB.

Peak memory is the kernel's own count for the process, VmHWM in /proc/PID/status, read every 10 ms
while it runs (not wait4's ru_maxrss, which counts the test's own resident memory, copied into the
child at fork), not an address-space limit: what is reserved and never touched (thread stacks,
malloc arenas) would make such a limit measure the allocator rather than what the agent holds, and
a refused allocation ends in an internal error rather than a figure.
The bounds are about twice the figures measured on the development machine and far under what an
unbounded client reaches (hundreds of MiB to GiB in the same time; docs/FLEET.md, "Limits").

Usage: tests/test_fleet_peers.py --agent PATH --fixtures DIR
Exits 0 when it passes, 1 when it fails.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import fleet_peers  # noqa: E402

FLEET_PEAK_MIB = 32
SERVE_PEAK_MIB = 32
PROMETHEUS_PEAK_MIB = 96
SCRAPES = 12
SCRAPE_SECONDS = 5  # each; serve answers in milliseconds, so this only allows for a busy machine
PATIENCE = 120  # seconds for anything to happen: a busy 2-core machine may be slow

EXPECTED = {  # what each hostile host's problem says
    "chunk_line": "unreachable: answered a chunk-size line or trailer over 32 KiB",
    "trailer": "unreachable: answered a chunk-size line or trailer over 32 KiB",
    "headers": "unreachable: answered headers over 16 KiB",
    "many_gpus": "unreachable: answered a snapshot over fleet's limit: more than 64 GPUs",
}


def printable_line(text):
    return "\n" not in text and not any(ord(c) < 32 or 0x7f <= ord(c) < 0xa0 for c in text)


def run_measured(command, deadline=PATIENCE):
    """Runs command to its end: (exit code, stdout, stderr, peak resident KiB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        end = time.monotonic() + deadline
        peak = 0
        while True:
            peak = max(peak, peak_kib(process.pid))
            pid, status = os.waitpid(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > end:
                process.kill()
                os.waitpid(process.pid, 0)
                process.returncode = -9
                raise AssertionError(f"{command[1:3]} did not end in {deadline} s")
            time.sleep(0.01)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (process.returncode, out.read().decode("utf-8", "replace"),
                err.read().decode("utf-8", "replace"), peak)


def peak_kib(pid):
    """The process' VmHWM; 0 once it has ended (a zombie has none)."""
    try:
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    return int(found.group(1)) if found else 0


def wait_for(what, condition, patience=PATIENCE):
    end = time.monotonic() + patience
    last = None
    while time.monotonic() < end:
        last = condition()
        if last:
            return last
        time.sleep(0.25)
    raise AssertionError(f"{what}: not within {patience} s (last: {last!r})")


def get(url, timeout=SCRAPE_SECONDS):
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.status, answer.read().decode("utf-8", "replace")


class Serve:
    """`nvsmi-agent serve` on a free loopback port, stopped when the test ends."""

    def __init__(self, agent, arguments, folder, name):
        self.log_path = folder / f"{name}.log"
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [agent, "serve", "--listen", "127.0.0.1:0", *arguments],
            stdout=subprocess.DEVNULL, stderr=self.log, stdin=subprocess.DEVNULL)

        def listening():
            if self.process.poll() is not None:
                raise AssertionError(f"serve ended: {self.log_path.read_text()}")
            found = re.search(r"serving http://127\.0\.0\.1:(\d+)/", self.log_path.read_text())
            return found and int(found.group(1))

        self.port = wait_for(f"serve {name} listening", listening)

    @property
    def host(self):
        return f"127.0.0.1:{self.port}"

    def peak_kib(self):
        return peak_kib(self.process.pid)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def hostile_peers():
    return {"chunk_line": fleet_peers.chunk_line_peer(), "trailer": fleet_peers.trailer_peer(),
            "headers": fleet_peers.headers_peer(), "many_gpus": fleet_peers.many_gpus_peer()}


def check_statuses(what, hosts, good, peers):
    """hosts: the fleet document's hosts; good: the real serve's host."""
    by_host = {host["host"]: host for host in hosts}
    if by_host.get(good, {}).get("status") != "ok":
        raise AssertionError(f"{what}: the real host is not ok: {by_host.get(good)}")
    wrong = []  # every peer's, so that a failure shows each way in at once
    for name, peer in peers.items():
        host = by_host.get(peer.host, {})
        said = f"{host.get('status')}: {host.get('problem')}"
        if said != EXPECTED[name] or not printable_line(said) or host.get("snapshot"):
            wrong.append(f"the {name} peer: expected {EXPECTED[name]!r}, got {said!r} (snapshot "
                         f"{str(host.get('snapshot'))[:80]})")
    if wrong:
        raise AssertionError(f"{what}: " + "; ".join(wrong))


def check_fleet(agent, good):
    peers = hostile_peers()
    try:
        hosts = [good.host] + [peer.host for peer in peers.values()]
        code, out, err, peak = run_measured([agent, "fleet", "--hosts", ",".join(hosts),
                                             "--timeout", "5", "--format", "json"])
        if code != 0:
            raise AssertionError(f"fleet: exit {code}, stderr {err!r}")
        try:
            check_statuses("fleet", json.loads(out)["hosts"], good.host, peers)
        except AssertionError as wrong:
            raise AssertionError(f"{wrong}; peak RSS {peak} KiB") from None
        if peak > FLEET_PEAK_MIB * 1024:
            raise AssertionError(f"fleet: peak RSS {peak} KiB, over {FLEET_PEAK_MIB} MiB")
        print(f"test_fleet_peers: fleet against 4 hostile peers: every host said, peak RSS "
              f"{peak / 1024:.1f} MiB")
        code, out, err, _ = run_measured([agent, "fleet", "--hosts", ",".join(hosts),
                                          "--timeout", "5"])
        for name, peer in peers.items():
            # A host's block: its line, and the lines below it up to a blank one (a long reason
            # goes on a line of its own).
            block = next((block for block in out.split("\n\n")
                          if block.strip().startswith(peer.host)), "")
            if code != 0 or EXPECTED[name].split(": ", 1)[1] not in block:
                raise AssertionError(f"fleet text: the {name} peer's lines are {block!r}:\n{out}")
    finally:
        for peer in peers.values():
            peer.close()


def check_serve(agent, fixtures, good, folder):
    peers = hostile_peers()
    serve = None
    try:
        hosts = [good.host] + [peer.host for peer in peers.values()]
        serve = Serve(agent, ["--fixture", str(fixtures / "xml/h100-8gpu-v12.xml"),
                              "--interval", "1", "--fleet-hosts", ",".join(hosts),
                              "--fleet-timeout", "5"], folder, "fleet-serve")

        # Scraped from its first polls on: the peers' answers arrive and are read meanwhile.
        wait_for("serve asking every peer",
                 lambda: all(peer.connections > 0 for peer in peers.values()))
        polls_before = sum(peer.connections for peer in peers.values())
        answered = 0
        slowest = 0.0
        failures = []
        for _ in range(SCRAPES):
            start = time.monotonic()
            try:
                status, body = get(f"http://{serve.host}/metrics")
                if status == 200 and "nvsmi_up 1" in body:
                    answered += 1
                else:
                    failures.append(f"HTTP {status}")
            except OSError as error:
                failures.append(str(error))
            slowest = max(slowest, time.monotonic() - start)
            time.sleep(0.5)
        polls = sum(peer.connections for peer in peers.values()) - polls_before
        if answered != SCRAPES:
            raise AssertionError(f"serve --fleet-hosts: /metrics answered {answered} of {SCRAPES} "
                                 f"scrapes within {SCRAPE_SECONDS} s: {failures}")
        seen = []

        def every_host_said():
            try:
                status, body = get(f"http://{serve.host}/fleet.json")
                check_statuses("serve's /fleet.json", json.loads(body)["hosts"], good.host, peers)
                return True
            except (AssertionError, ValueError, KeyError, OSError) as wrong:
                seen[:] = [str(wrong)]
                return False

        try:
            wait_for("serve's /fleet.json saying each host", every_host_said)
        except AssertionError as late:
            raise AssertionError(f"{late}: {seen}") from None
        peak = serve.peak_kib()
        if polls < len(peers):
            raise AssertionError(f"serve --fleet-hosts: the peers were asked {polls} times while "
                                 "it was scraped: the scrapes did not meet its polls")
        if peak > SERVE_PEAK_MIB * 1024:
            raise AssertionError(f"serve --fleet-hosts: peak RSS {peak} KiB, over "
                                 f"{SERVE_PEAK_MIB} MiB")
        print(f"test_fleet_peers: serve --fleet-hosts: {answered}/{SCRAPES} scrapes answered "
              f"(slowest {slowest:.2f} s) while the peers were asked {polls} times, peak RSS "
              f"{peak / 1024:.1f} MiB")
    finally:
        if serve:
            serve.stop()
        for peer in peers.values():
            peer.close()


def check_prometheus(agent):
    prometheus = fleet_peers.prometheus_peer()
    try:
        code, out, err, peak = run_measured([agent, "fleet", "--prometheus",
                                             f"http://{prometheus.host}", "--timeout", "30",
                                             "--format", "json"])
        said = err.strip()
        if code != 6 or "answered more than 10000 series" not in said or out:
            raise AssertionError(f"fleet --prometheus: exit {code}, stderr {said[:300]!r}, "
                                 f"stdout {out[:200]!r}, peak RSS {peak} KiB")
        if not printable_line(said):
            raise AssertionError(f"fleet --prometheus: the error is not one line: {said!r}")
        if peak > PROMETHEUS_PEAK_MIB * 1024:
            raise AssertionError(f"fleet --prometheus: peak RSS {peak} KiB, over "
                                 f"{PROMETHEUS_PEAK_MIB} MiB")
        print(f"test_fleet_peers: fleet --prometheus with ten 4 MB answers: {said}; peak RSS "
              f"{peak / 1024:.1f} MiB")
    finally:
        prometheus.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", required=True)
    parser.add_argument("--fixtures", required=True, type=pathlib.Path)
    args = parser.parse_args()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="nvsmi-fleet-peers-"))
    good = None
    try:
        good = Serve(args.agent, ["--fixture", str(args.fixtures / "xml/h100-8gpu-v12.xml")],
                     folder, "good")
        failed = 0
        # Each check on its own, so that a failure shows every way in that fails.
        for check in (lambda: check_fleet(args.agent, good),
                      lambda: check_serve(args.agent, args.fixtures, good, folder),
                      lambda: check_prometheus(args.agent)):
            try:
                check()
            except AssertionError as failure:
                print(f"test_fleet_peers: FAILED: {failure}")
                failed += 1
        if failed:
            return 1
        print("test_fleet_peers: PASSED")
        return 0
    except AssertionError as failure:
        print(f"test_fleet_peers: FAILED: {failure}")
        return 1
    finally:
        if good:
            good.stop()
        for log in folder.glob("*.log"):
            log.unlink()
        folder.rmdir()


if __name__ == "__main__":
    sys.exit(main())
