#!/usr/bin/env python3
"""The DCGM-names proof (issue 28, item 1): `nvsmi-agent serve --metric-names dcgm` on the stand-in
nvidia-smi, scraped by a real Prometheus (Debian's `prometheus`), answers NVIDIA's own Grafana
dashboard for the DCGM exporter. Every panel's query, its template variables set to match every
value ($instance, $gpu: `.+`, so the label must be there), must return data where the agent gives
the panel's families, and the panels it cannot serve are exactly those named in CANNOT_SERVE.

Before Prometheus, the agent's /metrics itself: each DCGM family it writes is one of the
exporter's counter files' (etc/default-counters.csv, etc/dcp-metrics-included.csv) with the type
they give it, and docs/DCGM.md names every counter of both files (given or not, and why).

The exporter's files come from ../shared/dcgm-exporter (--shared), never copied into the project:
without them, or without prometheus, the test is skipped (77). Loopback only; every check polls
with a deadline; every process it starts is stopped however it ends.

Usage: tests/test_dcgm_dashboard.py --agent PATH --shared DIR [--fixtures DIR] [--docs FILE]
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import sys
import tempfile
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fleet_dashboard import dashboard_queries, substitute  # noqa: E402
from test_fleet import Processes, Skip, free_port, http_get, wait_for  # noqa: E402

SOURCE = pathlib.Path(__file__).resolve().parent.parent
STAND_IN = SOURCE / "scripts" / "fake-nvidia-smi"
FIXTURE = "xml/h100-8gpu-v12.xml"  # 8 H100s, every default family's reading known
EXPORTER_FILES = ("default-counters.csv", "dcp-metrics-included.csv", "dcgm-exporter-dashboard.json")

# The dashboard's panels whose families nvidia-smi's readings do not give yet, by title.
# DCGM_FI_PROF_PIPE_TENSOR_ACTIVE comes with nvidia-smi dmon's readings (issue 27): once its row in
# agent/formats/prometheus_dcgm.cpp is switched on, this panel has data and leaves this list.
CANNOT_SERVE = set()

# What the dashboard's variables are set to: every value, as Grafana's "All" does, and a label
# that must be there.
VARIABLES = {"instance": ".+", "gpu": ".+", "datasource": "prometheus"}


def exporter_counters(shared):
    """{family: type} of every line of both counter files, commented-out lines too (a site may
    have turned them on)."""
    counters = {}
    for name in EXPORTER_FILES[:2]:
        for line in (shared / name).read_text().splitlines():
            found = re.fullmatch(r"\s*#?\s*(DCGM_\w+)\s*,\s*(\w+)\s*,.*", line)
            if found:
                counters[found.group(1)] = found.group(2)
    if len(counters) < 20:
        raise AssertionError(f"the exporter's counter files hold only {sorted(counters)}")
    return counters


def served_families(metrics):
    """{family: type} of /metrics' TYPE lines."""
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", metrics, re.M))


def check_exposition(metrics, counters, docs):
    served = served_families(metrics)
    dcgm = {name: kind for name, kind in served.items() if name.startswith("DCGM_")}
    if not dcgm:
        raise AssertionError(f"no DCGM family in /metrics:\n{metrics[:2000]}")
    for name, kind in dcgm.items():
        if name not in counters:
            raise AssertionError(f"{name} is none of the exporter's counters")
        if kind != counters[name]:
            raise AssertionError(f"{name} is a {kind}, the exporter's is a {counters[name]}")
    ours = sorted(name for name in served if not name.startswith("DCGM_"))
    if any(not name.startswith("nvsmi_") for name in ours):
        raise AssertionError(f"families neither the exporter's nor ours: {ours}")
    undocumented = sorted(name for name in counters if name not in docs)
    if undocumented:
        raise AssertionError(f"docs/DCGM.md does not list {undocumented}")
    print(f"test_dcgm_dashboard: /metrics has {len(dcgm)} DCGM families, each of the exporter's "
          f"type: {sorted(dcgm)}; and ours: {ours}")
    return set(dcgm)


def start_agent(processes, args, folder):
    for attempt in range(5):
        port = free_port()
        process = processes.start("agent", [
            args.agent, "serve", "--interval", "1", "--metric-names", "dcgm", "--source", "xml",
            "--no-processes", "--nvidia-smi", str(STAND_IN), "--listen", f"127.0.0.1:{port}"],
            env={**os.environ,
                 "FAKE_NVSMI_XML": str(pathlib.Path(args.fixtures) / FIXTURE)})

        def answers():
            if process.poll() is not None:
                return "exited"
            status, body = http_get(f"http://127.0.0.1:{port}/metrics")
            return status == 200 and "DCGM_FI_DEV_GPU_TEMP{" in body and body

        body = wait_for("the agent's DCGM families", answers)
        if body != "exited":
            return port, body
        if "in use" not in processes.log("agent") or attempt == 4:
            raise AssertionError(f"the agent exited:\n{processes.log('agent')}")


def start_prometheus(processes, folder, agent_port):
    config = folder / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                      "scrape_configs:\n  - job_name: dcgm-exporter\n    static_configs:\n"
                      f"      - targets: ['127.0.0.1:{agent_port}']\n")
    for attempt in range(5):
        port = free_port()
        process = processes.start("prometheus", [
            "prometheus", f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}"])

        def ready():
            if process.poll() is not None:
                return "exited"
            return http_get(f"http://127.0.0.1:{port}/-/ready")[0] == 200 and "ok"

        if wait_for("prometheus to be ready", ready) == "ok":
            return port
        if "address already in use" not in processes.log("prometheus") or attempt == 4:
            raise AssertionError(f"prometheus exited:\n{processes.log('prometheus')}")


def query(port, promql):
    status, body = http_get(f"http://127.0.0.1:{port}/api/v1/query?"
                            + urllib.parse.urlencode({"query": promql}))
    answer = json.loads(body)
    if status != 200 or answer.get("status") != "success":
        raise AssertionError(f"{promql}: {body}")
    return answer["data"]["result"]


def check_dashboard(port, dashboard, served):
    queries = dashboard_queries(dashboard)
    if not queries:
        raise AssertionError("the dashboard has no query")
    unserved = {}
    for where, expr in queries:
        promql = substitute(expr, VARIABLES)
        families = set(re.findall(r"\bDCGM_\w+", promql))
        if not families:
            raise AssertionError(f"{where} names no DCGM family: {expr}")
        if families <= served:
            wait_for(f"data for {where}: {promql}", lambda: query(port, promql))
            print(f"test_dcgm_dashboard: {where} has data: {promql}")
        else:
            unserved[where] = sorted(families - served)
            if query(port, promql):
                raise AssertionError(f"{where} has data from families the agent does not write")
    titles = {re.fullmatch(r'panel "(.*)" \w*', where).group(1)
              for where in unserved if where.startswith("panel ")}
    variables = [where for where in unserved if not where.startswith("panel ")]
    if variables:
        raise AssertionError(f"dashboard variables without a family: {variables}")
    if titles != CANNOT_SERVE:
        raise AssertionError(f"panels without data: {sorted(titles)}, expected "
                             f"{sorted(CANNOT_SERVE)} (CANNOT_SERVE in this test): {unserved}")
    print(f"test_dcgm_dashboard: panels the agent cannot serve yet: {unserved}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default=str(SOURCE / "build" / "agent" / "nvsmi-agent"))
    parser.add_argument("--shared", default=str(SOURCE.parent / "shared" / "dcgm-exporter"))
    parser.add_argument("--fixtures", default=str(SOURCE / "fixtures"))
    parser.add_argument("--docs", default=str(SOURCE / "docs" / "DCGM.md"))
    args = parser.parse_args()
    # The processes run in the scratch folder: paths as given from here.
    args.agent = str(pathlib.Path(args.agent).resolve())
    args.fixtures = str(pathlib.Path(args.fixtures).resolve())
    shared = pathlib.Path(args.shared)
    missing = [name for name in EXPORTER_FILES if not (shared / name).is_file()]
    if missing:
        print(f"test_dcgm_dashboard: SKIPPED: the DCGM exporter's files are not in {shared}: "
              f"{', '.join(missing)}")
        return 77
    if not shutil.which("prometheus"):
        print("test_dcgm_dashboard: SKIPPED: prometheus is not installed (scripts/install-deps "
              "installs it)")
        return 77
    folder = pathlib.Path(tempfile.mkdtemp(prefix="nvsmi-dcgm-"))
    processes = Processes(folder)
    try:
        counters = exporter_counters(shared)
        dashboard = json.loads((shared / EXPORTER_FILES[2]).read_text())
        agent_port, metrics = start_agent(processes, args, folder)
        # The profiling families come with dmon's rows, a second or two after the first sample
        # (GPM's first readings are `-`): the exposition is read once they are there.
        def profiled():
            body = http_get(f"http://127.0.0.1:{agent_port}/metrics")[1]
            return "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{" in body and body
        metrics = wait_for("dmon's figures in /metrics", profiled)
        served = check_exposition(metrics, counters, pathlib.Path(args.docs).read_text())
        prometheus_port = start_prometheus(processes, folder, agent_port)
        check_dashboard(prometheus_port, dashboard, served)
        print("test_dcgm_dashboard: PASSED")
        return 0
    except Skip as why:
        print(f"test_dcgm_dashboard: SKIPPED: {why}")
        return 77
    except AssertionError as failure:
        print(f"test_dcgm_dashboard: FAILED: {failure}")
        print("--- prometheus log (end) ---\n" + processes.log("prometheus")[-3000:])
        print("--- agent log (end) ---\n" + processes.log("agent")[-2000:])
        return 1
    finally:
        processes.stop_all()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
