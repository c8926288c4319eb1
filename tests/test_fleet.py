#!/usr/bin/env python3
"""The fleet test (issue 17): three `nvsmi-agent serve` on loopback, each on other fixtures, and a
fourth target where nothing listens, scraped by one real Prometheus server that loads the shipped
rules (deploy/prometheus/nvsmi-rules.yml). Asks Prometheus's HTTP API for the free GPUs per host
(the recording rule) and for the alerts firing or pending, and checks both exactly against the
table below; then runs every query of the Grafana dashboard (deploy/grafana/nvsmi-fleet.json) and
checks that each returns data.

The same Prometheus sends its alerts to Debian's real Alertmanager (issue 28, item 4), configured
from the shipped example (deploy/alertmanager/alertmanager.yml: its route tree and inhibit rules as
shipped, only the receivers' URLs and the timers replaced; amtool checks both files), which sends
them to a webhook receiver of this test's own. The test checks that exactly the expected alerts
arrive, per receiver (critical to the pager, warning to the chat), one group per host, that the
inhibit rules mute the alerts they say, that no label but the rules' own and no command line
reaches a receiver, nor a user name from an agent that withholds them; then it restarts the
failing host's agent on a healthy fixture and checks that that host's alerts arrive resolved.

The rules are loaded from a temporary copy with every `for:` shortened to FOR_IN_TEST, for this
test only (GpuIdleButHeld's hour could not be waited for): the alerts with a `for` fire here after
seconds. The shipped durations are tested by promtool (deploy/prometheus/tests).

Nothing depends on timing: every check polls with a generous deadline, and a `pending` alert may
be `firing` once its `for` has run out (a slow machine). Loopback only; every process this test
starts is killed however it ends.

Usage: tests/test_fleet.py [--agent PATH] [--fixtures DIR] [--keep] [--without-alertmanager]
Exits 0 when it passes, 1 when it fails, 77 (skipped) without prometheus or a fixture it needs,
and 77 after the Prometheus checks without prometheus-alertmanager.
"""
import argparse
import json
import os
import pathlib
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fleet_dashboard import dashboard_queries, substitute  # noqa: E402
import fleet_alertmanager  # noqa: E402

SOURCE = pathlib.Path(__file__).resolve().parent.parent
ME = pwd.getpwuid(os.getuid()).pw_name  # the user of the live processes the stand-in reports

# ================================================================================================
# The fleet and what it must show. Edit here when a fixture changes.
#
# healthy  the stand-in nvidia-smi (scripts/fake-nvidia-smi, XML source) replays
#          h100-8gpu-states-v12.xml: GPUs 0, 4, 7 free; 1, 6 in use; 2 hot (89 C, slowdown at
#          87 C); 3 idle but held; 5 at its power limit. Its processes' pids are replaced by live
#          processes of this test, so they have a user (ME). Its --kernel-log names a file that
#          does not exist: nvsmi_xid_readable 0.
# failing  the stand-in on h100-8gpu-failing-v12.xml, pids replaced by live processes as above:
#          GPU 3 with 2 volatile uncorrectable ECC errors and a pending row remap, GPU 5 busy on a
#          x8 link of x16, GPU 6 in hw_thermal_slowdown. Kernel log: Xid 48 (needs a reset) on
#          GPU 3, Xid 13 (the application's) on GPU 1. Its agent listens on every address
#          (0.0.0.0, as an agent scraped over the network does) without --expose users, so it
#          withholds its processes' users (ME): no alert of this host may name them.
# lost     the stand-in on h100-8gpu-lost-v12.xml and its stderr (GPU 4 missing, nvidia-smi says
#          it is lost), else --fixture h100-8gpu-lost-values-v12.xml. Kernel log: Xid 79 (fell
#          off the bus) on the lost GPU's bus id.
# down     a port nothing listens on.
HOSTS = ("healthy", "failing", "lost", "down")

FIXTURES = {
    "healthy": "xml/h100-8gpu-states-v12.xml",
    "failing": "xml/h100-8gpu-failing-v12.xml",
    "lost": "xml/h100-8gpu-lost-v12.xml",
}
LOST_STDERR = ("xml/h100-8gpu-lost-v12.stderr", "xml/h100-8gpu-lost-v12.xml.stderr")
LOST_VALUES = "xml/h100-8gpu-lost-values-v12.xml"  # used when the stderr file is not there
LOST_GPU = 4

# Where an agent listens other than on 127.0.0.1 (Prometheus scrapes each on 127.0.0.1).
LISTEN = {"failing": "0.0.0.0"}

# Kernel log lines per host: (GPU index in the fixture, Xid, message).
XIDS = {
    "failing": [(3, 48, "An uncorrectable double bit error (DBE) has been reported on GPU"),
                (1, 13, "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range "
                 "Address")],
    "lost": [(LOST_GPU, 79, "GPU has fallen off the bus.")],
}

# instance:nvsmi_gpus_free:count per host (no series for the host that is down).
EXPECTED_FREE_GPUS = {"healthy": 3, "failing": 3, "lost": 2}

# Every alert firing or pending: (alertname, host, gpu label or "", state).
EXPECTED_ALERTS = {
    ("NvsmiAgentDown", "down", "", "pending"),          # for: 3m
    ("XidUnreadable", "healthy", "", "pending"),        # for: 10m
    ("GpuHot", "healthy", "2", "pending"),              # for: 5m
    ("GpuIdleButHeld", "healthy", "3", "pending"),      # for: 1h, with user=ME
    ("GpuUncorrectableEcc", "failing", "3", "firing"),
    ("GpuRowRemapPending", "failing", "3", "firing"),
    ("GpuXidNeedsReset", "failing", "3", "firing"),     # Xid 48
    ("GpuPcieLinkDegraded", "failing", "5", "pending"),  # for: 5m
    ("GpuThermalThrottled", "failing", "6", "pending"),  # for: 10m
    ("GpuLost", "lost", str(LOST_GPU), "firing"),
    ("GpuFellOffBus", "lost", str(LOST_GPU), "firing"),  # Xid 79
}
# Labels an alert must carry besides those above.
EXPECTED_ALERT_LABELS = {("GpuIdleButHeld", "healthy", "3"): {"user": ME, "severity": "warning"},
                         ("GpuUncorrectableEcc", "failing", "3"): {"severity": "critical"}}

# What reaches the receivers of deploy/alertmanager/alertmanager.yml (every alert above fires with
# the short `for:`): (alertname, host, gpu) per receiver, critical to the pager, warning to the
# chat, nothing to the default receiver (every alert carries the nvsmi-agent job).
EXPECTED_NOTIFIED = {
    "gpu-pager": {("GpuUncorrectableEcc", "failing", "3"), ("GpuXidNeedsReset", "failing", "3"),
                  ("GpuLost", "lost", str(LOST_GPU))},
    "gpu-chat": {("NvsmiAgentDown", "down", ""), ("XidUnreadable", "healthy", ""),
                 ("GpuHot", "healthy", "2"), ("GpuIdleButHeld", "healthy", "3"),
                 ("GpuPcieLinkDegraded", "failing", "5"), ("GpuThermalThrottled", "failing", "6")},
    "site-default": set(),
}
# Firing in Prometheus, muted by the shipped inhibit rules, with the alerts that mute each.
EXPECTED_INHIBITED = {
    ("GpuFellOffBus", "lost", str(LOST_GPU)): {"GpuLost"},  # a lost GPU pages once
    ("GpuRowRemapPending", "failing", "3"): {"GpuUncorrectableEcc",  # a critical GPU's warning
                                             "GpuXidNeedsReset"},
}
# The labels an alert may carry to a receiver: the series' (docs/METRICS.md) and the rules'. A
# user name only on GpuIdleButHeld (the rules' descriptions may name the users of a failing GPU
# too: both come from nvsmi_gpu_user_processes, which serve withholds off loopback unless told
# --expose users).
ALERT_LABELS = {"alertname", "severity", "instance", "job", "gpu", "uuid", "name", "pci_bus_id",
                "xid", "error_type", "scope", "reason", "action", "state", "user"}
USER_ALERTS = {"GpuIdleButHeld"}
# An alert whose description names the GPU's users, ME among them (the healthy host serves them).
USERS_NAMED_BY = ("GpuHot", "healthy", "2")
# The healthy host's processes run with this in their command lines, and its agent serves them
# (--expose command-lines): it must reach no receiver (a command line is never a label).
SECRET = "--db-password=nvsmi-fleet-secret"
# Every `for:` of the rules in this test (see the docstring): short, and longer than the failing
# agent's restart, lest NvsmiAgentDown fire for it.
FOR_IN_TEST = "15s"
# The failing host's agent is restarted on this (no alert of the rules fires for it) with an empty
# kernel log: every alert of that host resolves.
RESOLVED_FIXTURE = "xml/h100-8gpu-v12.xml"

# fleet --prometheus (issue 28 item 5): each host's status, and the GPUs' states by host and `gpu`
# label, as the agents' nvsmi_gpu_state says them (the fixtures' states, above).
EXPECTED_PROMETHEUS_STATUS = {"healthy": "ok", "failing": "ok", "lost": "ok",
                              "down": "unreachable"}
EXPECTED_PROMETHEUS_STATES = {
    ("healthy", "0"): "free", ("healthy", "1"): "in_use", ("healthy", "2"): "hot",
    ("healthy", "3"): "idle_but_held", ("healthy", "5"): "at_power_limit",
    ("failing", "3"): "failing", ("lost", str(LOST_GPU)): "lost"}
EXPECTED_PROMETHEUS_SUMMARY = "24 GPUs on 4 hosts: "

# Counts say 0 where there is none, never "No data" (issue 23, item 18). The dashboard's counts
# of the fleet, by panel title, asked for at a time before this test began, when Prometheus holds
# no sample: each must be one 0.
ZERO_COUNT_PANELS = ("GPUs", "Free GPUs", "Lost GPUs", "GPUs with uncorrectable ECC",
                     "Agents down")
# The recording rule of idle but held GPUs per host and user (the dashboard's panel per user sums
# it): ME runs on the lost host's GPUs 2, 3 and 5, all busy, so ME holds none idle there.
ZERO_IDLE_HELD_HOST = "lost"

# The dashboard's variables, tried in turn: each query must return data for at least one (a
# panel of Xids has data on the failing host, one of users on the healthy host).
DASHBOARD_BINDINGS = [("failing", "3"), ("healthy", "3"), ("lost", str(LOST_GPU))]
# ================================================================================================

PATIENCE = 240  # seconds for any one condition; the machine may be busy
RULES = SOURCE / "deploy" / "prometheus" / "nvsmi-rules.yml"
DASHBOARD = SOURCE / "deploy" / "grafana" / "nvsmi-fleet.json"
STAND_IN = SOURCE / "scripts" / "fake-nvidia-smi"


class Skip(Exception):
    pass


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.status, answer.read().decode("utf-8", "replace")


def wait_for(what, condition, patience=PATIENCE, every=0.5):
    """condition() until it returns something true; its last value, or raises after patience."""
    deadline = time.monotonic() + patience
    last_error = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Exception as error:  # noqa: BLE001 (not up yet, connection refused, ...)
            last_error = error
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {patience} s waiting for {what}"
                                 + (f" (last error: {last_error})" if last_error else ""))
        time.sleep(every)


class Processes:
    """Every process this test starts, each in its own process group, all killed at the end."""

    def __init__(self, folder):
        self.folder = folder
        self.started = []

    def start(self, name, command, env=None):
        log = open(self.folder / f"{name}.log", "wb")
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, env=env, start_new_session=True,
                                   cwd=self.folder)
        log.close()
        self.started.append(process)
        return process

    def log(self, name):
        try:
            return (self.folder / f"{name}.log").read_text(errors="replace")
        except OSError:
            return ""

    def stop(self, process):
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        try:  # whatever is left of its group (the stand-in's children)
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass

    def stop_all(self):
        for process in reversed(self.started):
            self.stop(process)


def gpu_bus_ids(xml_path):
    """{index: pci_bus_id} of an nvidia-smi XML file, indices by position as nvidia-smi's."""
    root = ElementTree.parse(xml_path).getroot()
    return {index: (gpu.findtext("pci/pci_bus_id") or gpu.get("id") or "")
            for index, gpu in enumerate(root.findall("gpu"))}


def kernel_pci(bus_id):
    """00000000:49:00.0 -> 0000:49:00, as the kernel prints it in an Xid line."""
    found = re.fullmatch(r"(?:[0-9a-fA-F]*?)([0-9a-fA-F]{1,4}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})"
                         r"(?:\.[0-7])?", bus_id.strip())
    if not found:
        raise ValueError(f"not a PCI bus id: {bus_id!r}")
    domain, bus, device = found.groups()
    return f"{int(domain, 16):04x}:{bus.lower()}:{device.lower()}"


def write_kernel_log(path, lines):
    """Xid lines as a forwarded syslog has them."""
    with open(path, "w") as out:
        for n, (pci, xid, message) in enumerate(lines):
            who = f"pid={4000 + n}, name=python3"
            if xid == 79:  # no process is to blame
                who = "pid='<unknown>', name=<unknown>"
            out.write(f"Nov 24 02:17:{n:02d} gpu-fleet-test kernel: [ {1234 + n}.567890] NVRM: Xid "
                      f"(PCI:{pci}): {xid}, {who}, {message}\n")


def with_live_pids(xml_text, processes):
    """The XML with each process's pid replaced by a live sleeper of this test (one per pid),
    whose command line holds SECRET."""
    sleepers = {}

    def live(found):
        pid = found.group(1)
        if pid not in sleepers:
            sleepers[pid] = processes.start(f"sleep-{pid}", [
                sys.executable, "-c", "import time; time.sleep(3600)", SECRET])
        return f"<pid>{sleepers[pid].pid}</pid>"

    return re.sub(r"<pid>\s*(\d+)\s*</pid>", live, xml_text)


class Fleet:
    def __init__(self, args, folder, processes):
        self.args = args
        self.folder = folder
        self.processes = processes
        self.instances = {}  # host -> "127.0.0.1:PORT"
        self.agents = {}  # host -> its agent's process
        self.alertmanager_port = None  # none: Prometheus sends its alerts nowhere
        self.receiver = None  # the webhook receiver Alertmanager sends to
        self.fixtures = pathlib.Path(args.fixtures)
        self.lost_has_users = False  # the lost host runs the stand-in with live processes

    def fixture(self, relative):
        path = self.fixtures / relative
        return path if path.is_file() else None

    def needed(self):
        """The agents' command lines and environments; raises Skip when a fixture is missing."""
        lost_stderr = next((self.fixture(n) for n in LOST_STDERR if self.fixture(n)), None)
        lost_values = self.fixture(LOST_VALUES)
        missing = [name for name in (FIXTURES["healthy"], FIXTURES["failing"], RESOLVED_FIXTURE)
                   if not self.fixture(name)]
        if not (self.fixture(FIXTURES["lost"]) and lost_stderr) and not lost_values:
            missing.append(f"{FIXTURES['lost']} with {LOST_STDERR[0]}, or {LOST_VALUES}")
        if missing:
            raise Skip("fixtures missing: " + ", ".join(missing))
        agent = pathlib.Path(self.args.agent)
        if not os.access(agent, os.X_OK):
            raise Skip(f"no agent at {agent} (build it: cmake --build build --target nvsmi-agent)")

        plans = {}
        base = [str(agent), "serve", "--interval", "1"]
        stand_in = ["--source", "xml", "--no-processes", "--nvidia-smi", str(STAND_IN)]

        healthy_xml = self.folder / "healthy.xml"
        healthy_xml.write_text(with_live_pids(self.fixture(FIXTURES["healthy"]).read_text(),
                                              self.processes))
        plans["healthy"] = (base + stand_in + ["--kernel-log", str(self.folder / "no-such.log"),
                                               "--expose", "command-lines"],
                            {"FAKE_NVSMI_XML": str(healthy_xml)})

        failing = self.fixture(FIXTURES["failing"])
        buses = gpu_bus_ids(failing)
        write_kernel_log(self.folder / "failing-kern.log",
                         [(kernel_pci(buses[gpu]), xid, text)
                          for gpu, xid, text in XIDS["failing"]])
        failing_xml = self.folder / "failing.xml"
        failing_xml.write_text(with_live_pids(failing.read_text(), self.processes))
        plans["failing"] = (base + stand_in + ["--kernel-log",
                                               str(self.folder / "failing-kern.log")],
                            {"FAKE_NVSMI_XML": str(failing_xml)})

        if lost_stderr and self.fixture(FIXTURES["lost"]):
            stderr_text = lost_stderr.read_text()
            found = re.search(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]", stderr_text)
            if not found:
                raise AssertionError(f"{lost_stderr} names no PCI bus id")
            lost_bus = found.group(0)
            lost_xml = self.folder / "lost.xml"
            lost_xml.write_text(with_live_pids(self.fixture(FIXTURES["lost"]).read_text(),
                                               self.processes))
            command = base + stand_in
            self.lost_has_users = True
            env = {"FAKE_NVSMI_XML": str(lost_xml), "FAKE_NVSMI_STDERR": str(lost_stderr)}
        else:
            lost_bus = gpu_bus_ids(lost_values)[LOST_GPU]
            command, env = base + ["--fixture", str(lost_values)], {}
        write_kernel_log(self.folder / "lost-kern.log",
                         [(kernel_pci(lost_bus), xid, text) for _, xid, text in XIDS["lost"]])
        plans["lost"] = (command + ["--kernel-log", str(self.folder / "lost-kern.log")], env)
        return plans

    def start_agents(self, plans):
        for host, (command, extra_env) in plans.items():
            self.start_agent(host, command, extra_env)
        self.instances["down"] = f"127.0.0.1:{free_port()}"

    def start_agent(self, host, command, extra_env, port=None):
        """The agent for host on a free port, or on port (a restart: the same instance); tries
        again while the port is taken."""
        for attempt in range(5):
            listen_port = port or free_port()
            env = dict(os.environ)
            env.update(extra_env)
            process = self.processes.start(
                f"agent-{host}",
                command + ["--listen", f"{LISTEN.get(host, '127.0.0.1')}:{listen_port}"], env)

            def answers():
                if process.poll() is not None:
                    return "exited"
                status, body = http_get(f"http://127.0.0.1:{listen_port}/metrics")
                return status == 200 and "nvsmi_up" in body and "ok"

            state = wait_for(f"the {host} agent's /metrics", answers)
            if state == "ok":
                self.instances[host] = f"127.0.0.1:{listen_port}"
                self.agents[host] = process
                return
            log = self.processes.log(f"agent-{host}")
            if "in use" not in log or attempt == 4:
                raise AssertionError(f"the {host} agent exited:\n{log}")
            if port:
                time.sleep(1)  # the port is still held: by the agent's old socket, or another

    def start_alertmanager(self):
        """The webhook receiver, and Alertmanager on the shipped example's route tree and inhibit
        rules (both files checked by amtool), sending to it."""
        self.receiver = fleet_alertmanager.WebhookReceiver()
        fleet_alertmanager.check_config(fleet_alertmanager.SHIPPED)
        config = self.folder / "alertmanager.yml"
        config.write_text(fleet_alertmanager.yaml_text(fleet_alertmanager.configured_for_test(
            fleet_alertmanager.SHIPPED.read_text(), self.receiver.base)))
        fleet_alertmanager.check_config(config)
        for attempt in range(5):
            port = free_port()
            process = self.processes.start("alertmanager", [
                fleet_alertmanager.BINARY, f"--config.file={config}",
                f"--storage.path={self.folder / 'alertmanager-data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--cluster.listen-address="])  # no gossip listener: a lone Alertmanager

            def ready():
                if process.poll() is not None:
                    return "exited"
                return http_get(f"http://127.0.0.1:{port}/-/ready")[0] == 200 and "ok"

            if wait_for("alertmanager to be ready", ready) == "ok":
                self.alertmanager_port = port
                return
            log = self.processes.log("alertmanager")
            if "address already in use" not in log or attempt == 4:
                raise AssertionError(f"alertmanager exited:\n{log}")

    def alertmanager_api(self, path, **query):
        status, body = http_get(f"http://127.0.0.1:{self.alertmanager_port}{path}"
                                + ("?" + urllib.parse.urlencode(query) if query else ""))
        if status != 200:
            raise AssertionError(f"alertmanager {path}: {status} {body}")
        return json.loads(body)

    def start_prometheus(self):
        targets = ", ".join(f"'{self.instances[host]}'" for host in HOSTS)
        rules = self.folder / "nvsmi-rules.yml"  # the shipped rules, for: shortened (docstring)
        rules.write_text(fleet_alertmanager.short_for(RULES.read_text(), FOR_IN_TEST))
        config = self.folder / "prometheus.yml"
        alerting = ""
        if self.alertmanager_port:
            alerting = ("alerting:\n  alertmanagers:\n    - static_configs:\n"
                        f"        - targets: ['127.0.0.1:{self.alertmanager_port}']\n")
        config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            f"rule_files: ['{rules}']\n" + alerting +
            "scrape_configs:\n  - job_name: nvsmi-agent\n    static_configs:\n"
            f"      - targets: [{targets}]\n")
        for attempt in range(5):
            self.prometheus_port = free_port()
            process = self.processes.start("prometheus", [
                "prometheus", f"--config.file={config}",
                f"--storage.tsdb.path={self.folder / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.prometheus_port}"])

            def ready():
                if process.poll() is not None:
                    return "exited"
                return http_get(self.url("/-/ready"))[0] == 200 and "ok"

            if wait_for("prometheus to be ready", ready) == "ok":
                self.started = time.monotonic()
                return
            log = self.processes.log("prometheus")
            if "address already in use" not in log or attempt == 4:
                raise AssertionError(f"prometheus exited:\n{log}")

    def url(self, path, **query):
        return (f"http://127.0.0.1:{self.prometheus_port}{path}"
                + ("?" + urllib.parse.urlencode(query) if query else ""))

    def api(self, path, **query):
        status, body = http_get(self.url(path, **query))
        answer = json.loads(body)
        if status != 200 or answer.get("status") != "success":
            raise AssertionError(f"{path} {query}: {body}")
        return answer["data"]

    def query(self, promql):
        return self.api("/api/v1/query", query=promql)["result"]

    def host_of(self, instance):
        return next((h for h, i in self.instances.items() if i == instance), instance)


def check_free_gpus(fleet):
    result = {}

    def matches():
        result.clear()
        for series in fleet.query("instance:nvsmi_gpus_free:count"):
            result[fleet.host_of(series["metric"].get("instance"))] = float(series["value"][1])
        return result == EXPECTED_FREE_GPUS

    try:
        wait_for("the free GPUs per host", matches)
    except AssertionError as error:
        raise AssertionError(f"{error}\nfree GPUs per host: expected {EXPECTED_FREE_GPUS}, "
                             f"got {result}") from None
    print(f"test_fleet: free GPUs per host as expected: {result}")


def check_alerts(fleet):
    durations = {}
    for group in fleet.api("/api/v1/rules")["groups"]:
        for rule in group["rules"]:
            if rule["type"] == "alerting":
                durations[rule["name"]] = rule.get("duration", 0)
    unknown = {name for name, *_ in EXPECTED_ALERTS} - set(durations)
    if unknown:
        raise AssertionError(f"alerts the rules do not have: {sorted(unknown)}")

    seen = {}

    def matches():
        seen.clear()
        for alert in fleet.api("/api/v1/alerts")["alerts"]:
            labels = alert["labels"]
            key = (labels["alertname"], fleet.host_of(labels.get("instance", "")),
                   labels.get("gpu", ""))
            seen.setdefault(key, []).append(alert)
        got = set()
        for key, alerts in seen.items():
            for alert in alerts:
                state = alert["state"]
                # Pending for longer than its `for` on a slow machine: then firing is right too.
                if state == "firing" and (*key, "pending") in EXPECTED_ALERTS \
                        and durations.get(key[0], 0) > 0:
                    state = "pending"
                got.add((*key, state))
        return got == EXPECTED_ALERTS

    try:
        wait_for("the alerts", matches)
    except AssertionError as error:
        got = {(*k, a["state"]) for k, alerts in seen.items() for a in alerts}
        raise AssertionError(
            f"{error}\nalerts expected and not seen: {sorted(EXPECTED_ALERTS - got)}\n"
            f"alerts seen and not expected: {sorted(got - EXPECTED_ALERTS)}") from None
    for key, labels in EXPECTED_ALERT_LABELS.items():
        for alert in seen[key]:
            wrong = {}
            for name, value in labels.items():
                if alert["labels"].get(name) != value:
                    wrong[name] = alert["labels"].get(name)
            if wrong:
                raise AssertionError(f"{key}: labels {wrong}, expected {labels}")
    for alerts in seen.values():
        for alert in alerts:
            annotations = alert.get("annotations", {})
            host = alert["labels"].get("instance", "")
            if host not in annotations.get("summary", "") or \
                    host not in annotations.get("description", ""):
                raise AssertionError(f"an alert that does not name its host: {alert}")
    print(f"test_fleet: {len(EXPECTED_ALERTS)} alerts as expected")


def check_dashboard(fleet):
    queries = dashboard_queries(json.loads(DASHBOARD.read_text()))
    empty = []

    def every_query_has_data():
        empty.clear()
        for where, expr in queries:
            for host, gpu in DASHBOARD_BINDINGS:
                promql = substitute(expr, {"instance": fleet.instances[host], "gpu": gpu,
                                           "user": ME, "datasource": "prometheus"})
                if fleet.query(promql):
                    break
            else:
                empty.append(f"{where}: {expr}")
        return not empty

    try:
        wait_for("data for every dashboard query", every_query_has_data, patience=120, every=2)
    except AssertionError as error:
        raise AssertionError(f"{error}\nqueries with no data:\n  " + "\n  ".join(empty)) from None
    print(f"test_fleet: the {len(queries)} dashboard queries return data")


def check_zero_counts(fleet):
    queries = dict(dashboard_queries(json.loads(DASHBOARD.read_text())))
    before = time.time() - 3600  # nothing scraped yet
    for title in ZERO_COUNT_PANELS:
        expr = queries[f'panel "{title}" A']
        result = fleet.api("/api/v1/query", query=expr, time=f"{before:.3f}")["result"]
        values = [float(series["value"][1]) for series in result]
        if values != [0]:
            raise AssertionError(f'panel "{title}" with nothing to count: {expr} gave {result}, '
                                 "expected one 0")
    if fleet.lost_has_users:
        promql = (f'instance_user:nvsmi_gpus_idle_held:count{{user="{ME}",'
                  f'instance="{fleet.instances[ZERO_IDLE_HELD_HOST]}"}}')
        found = []

        def zero():
            found[:] = [float(series["value"][1]) for series in fleet.query(promql)]
            return found == [0]

        try:
            wait_for(f"{promql} to be 0", zero)
        except AssertionError as error:
            raise AssertionError(f"{error}: got {found}") from None
    print(f"test_fleet: counts with nothing to count are 0: {', '.join(ZERO_COUNT_PANELS)}"
          + (", idle but held per host and user" if fleet.lost_has_users else ""))


def wait_for_notifications(what, fleet, condition):
    """condition(notifications) until it is true, reading everything the receiver got each time;
    fails at once where a notification breaks a rule or condition raises (never transient)."""
    broken = []
    last = []

    def check():
        try:
            notifications = fleet_alertmanager.Notifications(
                fleet.receiver.notifications(), fleet.host_of, ALERT_LABELS, USER_ALERTS, SECRET,
                set(EXPECTED_NOTIFIED))
            last[:] = [notifications]
            unexpected = {receiver: sorted(keys - EXPECTED_NOTIFIED[receiver])
                          for receiver, keys in notifications.firing.items()
                          if keys - EXPECTED_NOTIFIED[receiver]}
            if unexpected:
                raise AssertionError(f"alerts that should not reach a receiver did: {unexpected}")
            return condition(notifications)
        except AssertionError as error:
            broken.append(error)
            return True

    try:
        wait_for(what, check)
    except AssertionError as error:
        seen = {r: sorted(k) for r, k in last[0].firing.items()} if last else "nothing"
        raise AssertionError(f"{error}\nalerts notified firing, per receiver: {seen}") from None
    if broken:
        raise broken[0]
    return last[0]


def check_notified(fleet):
    # The secret is there to leak: the healthy agent serves its processes' command lines.
    status, body = http_get(f"http://{fleet.instances['healthy']}/api/v1/snapshot")
    if status != 200 or SECRET not in body:
        raise AssertionError(f"the healthy agent does not serve the command lines with {SECRET} "
                             f"(--expose command-lines): {status} {body[:2000]}")

    def every_expected(notifications):
        return all(notifications.firing.get(receiver, set()) == keys
                   for receiver, keys in EXPECTED_NOTIFIED.items())

    notifications = wait_for_notifications("the alerts at the receivers", fleet, every_expected)
    check_users_named(fleet, notifications)
    print(f"test_fleet: alertmanager: {sum(map(len, EXPECTED_NOTIFIED.values()))} alerts "
          "reached the receivers as expected, one group per host and receiver")


def check_users_named(fleet, notifications):
    """User names reach a receiver only from an agent that serves them: the healthy host's
    (loopback) alerts name ME where ME's processes are on the GPU, the failing host's (0.0.0.0,
    without --expose users) never do, though ME's processes are on its failing GPUs too."""
    status, metrics = http_get(f"http://{fleet.instances['failing']}/metrics")
    if status != 200 or 'user="' in metrics:
        raise AssertionError(f"the failing host's agent serves user names: {status}")
    for key, alert in notifications.alerts.items():
        text = json.dumps(alert)
        if key[1] == "failing" and ("Users on it" in text or "user" in alert["labels"]):
            raise AssertionError(f"{key} names a user the agent withholds: {text}")
    named = notifications.alerts[USERS_NAMED_BY]["annotations"]["description"]
    if f"Users on it: {ME}." not in named:
        raise AssertionError(f"{USERS_NAMED_BY} does not name its GPU's user {ME}: {named}")


def check_inhibited(fleet):
    """Alertmanager holds every alert Prometheus fires; those EXPECTED_INHIBITED are suppressed,
    each by one of the alerts expected to (Alertmanager names the first it finds), and no other
    is."""
    expected = {key for keys in EXPECTED_NOTIFIED.values() for key in keys} \
        | set(EXPECTED_INHIBITED)
    found = {}

    def matches():
        alerts = fleet.alertmanager_api("/api/v2/alerts")
        names = {alert["fingerprint"]: alert["labels"]["alertname"] for alert in alerts}
        found.clear()
        for alert in alerts:
            labels = alert["labels"]
            key = (labels["alertname"], fleet.host_of(labels.get("instance", "")),
                   labels.get("gpu", ""))
            found[key] = {names.get(f, f) for f in alert["status"]["inhibitedBy"]}
        return set(found) == expected and all(
            found[key] <= EXPECTED_INHIBITED[key] and found[key] if key in EXPECTED_INHIBITED
            else not found[key] for key in expected)

    try:
        wait_for("alertmanager's alerts and inhibitions", matches)
    except AssertionError as error:
        raise AssertionError(f"{error}\nexpected muted: {EXPECTED_INHIBITED}\nalertmanager "
                             f"holds (alert: muted by): {found}") from None
    print(f"test_fleet: alertmanager: the inhibit rules mute {sorted(EXPECTED_INHIBITED)}")


def check_resolved(fleet):
    """The failing host's agent restarted, on the same port, on a fixture and a kernel log with
    no fault: each receiver's last notification for that host says every alert it had resolved."""
    host = "failing"
    port = int(fleet.instances[host].rsplit(":", 1)[1])
    fleet.processes.stop(fleet.agents[host])
    empty_log = fleet.folder / "resolved-kern.log"
    empty_log.write_text("")
    fleet.start_agent(host, [fleet.args.agent, "serve", "--interval", "1", "--fixture",
                             str(fleet.fixture(RESOLVED_FIXTURE)), "--kernel-log", str(empty_log)],
                      {}, port=port)
    expected = {receiver: {key for key in keys if key[1] == host}
                for receiver, keys in EXPECTED_NOTIFIED.items()}

    def all_resolved(notifications):
        for receiver, keys in expected.items():
            if not keys:
                continue
            status, latest = notifications.latest.get((receiver, host), (None, set()))
            resolved = {key for key, state in latest if state == "resolved"}
            if status != "resolved" or not keys <= resolved:
                return False
            # A muted alert may be told resolved once what muted it is gone.
            extra = resolved - keys - set(EXPECTED_INHIBITED)
            if extra:
                raise AssertionError(f"{receiver} told resolved alerts it never had: {extra}")
        return True

    wait_for_notifications(f"the {host} host's alerts to arrive resolved", fleet, all_resolved)
    # Nothing new is on its way for the host either (an alert of the healthy fixture pending).
    left = fleet.query(f'ALERTS{{instance="{fleet.instances[host]}"}}')
    if left:
        raise AssertionError(f"alerts of the {host} host after its fault went: "
                             f"{[series['metric'] for series in left]}")
    print(f"test_fleet: alertmanager: the {host} host's alerts arrived resolved: "
          f"{sorted(set().union(*expected.values()))}")


def run_agent(agent, *args, timeout=60):
    """The agent's exit code, stdout and stderr."""
    done = subprocess.run([str(agent), *args], stdin=subprocess.DEVNULL, capture_output=True,
                          timeout=timeout)
    return (done.returncode, done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"))


def check_prometheus_fleet(fleet):
    """fleet --prometheus against the real Prometheus: the summary over the four instances, each
    one's status (the down target unreachable, with Prometheus' last error), the GPUs' states as
    their agents said them; the text view says the same."""
    url = f"http://127.0.0.1:{fleet.prometheus_port}"
    seen = {}

    def matches():
        code, out, err = run_agent(fleet.args.agent, "fleet", "--prometheus", url,
                                   "--format", "json", "--timeout", "10")
        if code != 0:
            raise AssertionError(f"exit {code}: {err}")
        answer = json.loads(out)
        seen["answer"] = answer
        hosts = {fleet.host_of(h["host"]): h for h in answer["hosts"]}
        status = {host: h["status"] for host, h in hosts.items()}
        states = {(host, g["gpu"]): g["state"] for host, h in hosts.items() for g in h["gpus"]}
        return (answer["schema"] == "nvsmi-agent.fleet-prometheus/1"
                and status == EXPECTED_PROMETHEUS_STATUS
                and all(states.get(k) == v for k, v in EXPECTED_PROMETHEUS_STATES.items())
                and answer["summary"].startswith(EXPECTED_PROMETHEUS_SUMMARY)
                and "1 host without a fresh sample" in answer["summary"]
                and hosts["down"]["problem"] and "answer" in seen)

    try:
        wait_for("fleet --prometheus to show every host", matches)
    except AssertionError as error:
        raise AssertionError(f"{error}\nlast answer: {json.dumps(seen.get('answer'))[:4000]}") \
            from None
    answer = seen["answer"]
    code, text, err = run_agent(fleet.args.agent, "fleet", "--prometheus", url, "--timeout", "10")
    if code != 0:
        raise AssertionError(f"fleet --prometheus (text): exit {code}: {err}")
    lines = text.splitlines()
    down = fleet.instances["down"]
    if not lines or not lines[0].startswith(EXPECTED_PROMETHEUS_SUMMARY):
        raise AssertionError(f"fleet --prometheus text: no summary first:\n{text}")
    # The host's line, broken between its parts where wider than 80 columns.
    at = next((i for i, line in enumerate(lines) if line.split(" ")[0] == down), None)
    if at is None or "unreachable" not in " ".join(lines[at:at + 2]):
        raise AssertionError(f"fleet --prometheus text: {down} not unreachable:\n{text}")
    if not re.search(rf"^\[{LOST_GPU}\] .* lost$", text, re.M):
        raise AssertionError(f"fleet --prometheus text: GPU {LOST_GPU} not lost:\n{text}")
    # Every GPU's line in the same columns, whichever host: the memory ends at one column.
    ends = {line.index("MiB") for line in lines if line.startswith("[") and "MiB" in line}
    if len(ends) != 1:
        raise AssertionError(f"fleet --prometheus text: the memory column drifts, ends at "
                             f"{sorted(ends)}:\n{text}")
    print(f"test_fleet: fleet --prometheus as expected: {answer['summary']}")


class FakePrometheus:
    """A Prometheus that misbehaves as `mode` says, on a loopback port of its own: garbage,
    a huge answer, an HTTP error, no answer at all, or the API's JSON with hostile labels."""

    HOSTILE = "evil\x1b[2J\x07\u202e:9437"

    def __init__(self):
        self.mode = "garbage"
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                mode = outer.mode
                if mode == "silent":
                    outer.release.wait(30)
                    return
                body, status = b"this is not JSON", 200
                if mode == "huge":
                    body = b"[" * (5 << 20)
                elif mode == "error":
                    body, status = b'{"status":"error","error":"bad\\u001b[31m query"}', 400
                elif mode == "hostile":
                    body = json.dumps(outer.hostile_answer(self.path)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass  # the agent stopped reading at its bound

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def hostile_answer(self, path):
        metric = {"job": "nvsmi\x1b]0;title\x07", "instance": self.HOSTILE, "gpu": "0",
                  "uuid": "GPU-\x1b[31m", "name": "H100\x1b[5m", "state": "free",
                  "user": "mal\x1b[1mlory"}
        if "targets" in path:
            return {"status": "success", "data": {"activeTargets": [
                {"labels": metric, "lastError": "x\x1b[2J", "scrapeInterval": "9999999999h"}]}}
        now = time.time()
        value = [now, str(now) if "timestamp" in urllib.parse.unquote(path) else "1"]
        return {"status": "success", "data": {"resultType": "vector",
                                              "result": [{"metric": metric, "value": value}]}}

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def check_hostile_prometheus(agent):
    """A Prometheus that refuses, says nothing, answers garbage, a huge answer or an HTTP error:
    one line on stderr and exit 7 (cannot ask) or 6 (not its API); one whose labels carry
    terminal controls: printed without them. --prometheus with --hosts: refused, exit 2."""
    fake = FakePrometheus()
    try:
        cases = [("refused", f"http://127.0.0.1:{free_port()}", 7, "cannot connect"),
                 ("silent", None, 7, "no answer in 0.5 s"),
                 ("garbage", None, 6, "not the Prometheus HTTP API's JSON"),
                 ("huge", None, 6, "answered more than 4 MiB"),
                 ("error", None, 7, "answered HTTP 400")]
        for mode, url, expected_code, expected_words in cases:
            fake.mode = mode
            code, out, err = run_agent(agent, "fleet", "--prometheus",
                                       url or f"http://127.0.0.1:{fake.port}", "--timeout", "0.5")
            lines = err.splitlines()
            if (code != expected_code or out or len(lines) != 1
                    or not lines[0].startswith("nvsmi-agent: --prometheus ")
                    or expected_words not in lines[0] or "\x1b" in err):
                raise AssertionError(f"fleet --prometheus, a Prometheus that is {mode}: expected "
                                     f"exit {expected_code} and one line with {expected_words!r}"
                                     f"; got exit {code}, stdout {out[:200]!r}, stderr {err!r}")
        fake.mode = "hostile"
        for form in ("text", "json"):
            code, out, err = run_agent(agent, "fleet", "--prometheus",
                                       f"http://127.0.0.1:{fake.port}", "--format", form)
            controls = [c for c in out if (ord(c) < 32 and c != "\n") or 0x7f <= ord(c) < 0xa0
                        or c == "\u202e"]
            if code != 0 or controls or "evil" not in out:
                raise AssertionError(f"fleet --prometheus --format {form}, hostile labels: exit "
                                     f"{code}, controls {controls!r} in {out!r}, stderr {err!r}")
            if form == "json":
                json.loads(out)
        code, out, err = run_agent(agent, "fleet", "--prometheus", "http://127.0.0.1:9090",
                                   "--hosts", "127.0.0.1:9437")
        if code != 2 or out:
            raise AssertionError(f"fleet --prometheus with --hosts: exit {code}, stderr {err!r}")
    finally:
        fake.close()
    print("test_fleet: fleet --prometheus refuses a Prometheus that misbehaves, as expected")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default=str(SOURCE / "build" / "agent" / "nvsmi-agent"))
    parser.add_argument("--fixtures", default=str(SOURCE / "fixtures"))
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    parser.add_argument("--without-alertmanager", action="store_true",
                        help="only the Prometheus checks (the sanitizer build: Alertmanager's part "
                        "tests shipped files, not the agent)")
    args = parser.parse_args()
    try:
        check_hostile_prometheus(args.agent)
    except AssertionError as failure:
        print(f"test_fleet: FAILED: {failure}")
        return 1
    if not shutil.which("prometheus"):
        print("test_fleet: SKIPPED: prometheus is not installed (scripts/install-deps installs it)")
        return 77
    no_alertmanager = None if args.without_alertmanager else fleet_alertmanager.missing()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="nvsmi-fleet-"))
    processes = Processes(folder)
    fleet = Fleet(args, folder, processes)
    try:
        plans = fleet.needed()
        fleet.start_agents(plans)
        with_alertmanager = not no_alertmanager and not args.without_alertmanager
        if with_alertmanager:
            fleet.start_alertmanager()
        fleet.start_prometheus()
        print(f"test_fleet: agents {fleet.instances}, prometheus on port {fleet.prometheus_port}, "
              f"alertmanager on port {fleet.alertmanager_port}")
        check_free_gpus(fleet)
        check_prometheus_fleet(fleet)
        check_alerts(fleet)
        check_dashboard(fleet)
        check_zero_counts(fleet)
        if no_alertmanager:
            print(f"test_fleet: SKIPPED (the Prometheus checks passed): {no_alertmanager}")
            return 77
        if with_alertmanager:
            check_notified(fleet)
            check_inhibited(fleet)
            check_resolved(fleet)
        print("test_fleet: PASSED")
        return 0
    except Skip as why:
        print(f"test_fleet: SKIPPED: {why}")
        return 77
    except AssertionError as failure:
        print(f"test_fleet: FAILED: {failure}")
        print("--- prometheus log (end) ---\n" + processes.log("prometheus")[-4000:])
        print("--- alertmanager log (end) ---\n" + processes.log("alertmanager")[-4000:])
        for host in ("healthy", "failing", "lost"):
            print(f"--- {host} agent log (end) ---\n" + processes.log(f"agent-{host}")[-2000:])
        return 1
    finally:
        processes.stop_all()
        if fleet.receiver:
            fleet.receiver.close()
        if args.keep:
            print(f"test_fleet: scratch folder kept: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
