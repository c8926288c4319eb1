#!/usr/bin/env python3
"""The Kubernetes deployment (deploy/kubernetes/, docs/KUBERNETES.md), rendered and checked:

- every kustomization (base, each overlay, and the combination docs/KUBERNETES.md shows) renders
  with `kubectl kustomize`;
- every object it makes is valid against the Kubernetes API schemas, and the Prometheus
  operator's objects against its CRDs' schemas (npm's kubernetes-models packages, installed from
  tests/kubernetes/package-lock.json into the build folder), unknown fields included;
- the properties the deployment promises: GPU nodes, the NVIDIA runtime class and variables, a
  read-only non-root container without capabilities, resources, probes on a path serve answers,
  no user names or command lines exposed, hostPID only in the host-pid overlay (and the
  namespace's Pod Security level with it), the Service and ServiceMonitor joined, and the
  PrometheusRule's groups equal to deploy/prometheus/nvsmi-rules.yml;
- the DaemonSet's own command line, with the pod's address made 127.0.0.1, runs the built agent
  against the stand-in nvidia-smi, and its probes' path answers 200 with a fresh sample.

Usage: test_kubernetes.py AGENT SOURCE_DIR BUILD_DIR
Exits 77 (skipped) where kubectl, node or npm is missing (scripts/install-deps test installs
them)."""
import http.client
import json
import os
import pathlib
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import yaml

PATIENCE = 60  # seconds: the longest wait for the agent, on a loaded 2-core machine
NAMESPACE = "nvsmi-agent"
POD_IP = "POD-IP"  # what $(POD_IP) stands for where the command line is only read
# Each kustomization, and whether its agent runs in the host's PID namespace.
KUSTOMIZATIONS = {
    "base": False,
    "overlays/prometheus-operator": False,
    "overlays/host-pid": True,
}
# docs/KUBERNETES.md's combination of the host-pid overlay with the Prometheus operator's objects.
COMBINED = ["overlays/host-pid", "monitoring"]

failures = []


def need(condition, what):
    if not condition:
        failures.append(what)
    return condition


def render(folder):
    run = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True,
                         timeout=120)
    if not need(run.returncode == 0, f"kubectl kustomize {folder}: {run.stderr.strip()}"):
        return []
    return [o for o in yaml.safe_load_all(run.stdout) if o]


def schemas(source, build):
    """The npm packages of tests/kubernetes/package-lock.json in BUILD/kubernetes-schemas,
    installed again only when the lock file changed."""
    lock = (source / "tests/kubernetes/package-lock.json").read_text(encoding="utf-8")
    folder = build / "kubernetes-schemas"
    stamp = folder / "installed-lock.json"
    if stamp.exists() and stamp.read_text(encoding="utf-8") == lock:
        return folder / "node_modules"
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="kubernetes-schemas.", dir=build))
    for name in ("package.json", "package-lock.json"):
        shutil.copy(source / "tests/kubernetes" / name, scratch / name)
    run = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"],
                         cwd=scratch, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        sys.exit(f"test_kubernetes: npm ci failed: {run.stdout}{run.stderr}")
    (scratch / "installed-lock.json").write_text(lock, encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    scratch.rename(folder)  # whole or not at all: a stamp never marks half an install
    return folder / "node_modules"


def validate(rendered, modules, source):
    """Every rendering's objects, by one run of tests/kubernetes/validate.cjs (loading the schemas
    takes seconds), and beside them a DaemonSet with a misspelt field and a wrong type planted,
    which it must refuse: the proof that it reads the schemas and notices unknown fields."""
    objects = {where: objects for where, (objects, _) in rendered.items()}
    daemonset = json.loads(json.dumps(one(rendered["base"][0], "DaemonSet", "base") or {}))
    pod = daemonset.get("spec", {}).get("template", {}).get("spec", {})
    if pod:
        pod["hostPid"] = True
        pod["containers"][0]["ports"][0]["containerPort"] = "9437"
    objects["planted"] = [daemonset]
    run = subprocess.run(["node", str(source / "tests/kubernetes/validate.cjs"), str(modules)],
                         input=json.dumps(objects), capture_output=True, text=True, timeout=120)
    lines = (run.stdout + run.stderr).splitlines()
    planted = [line for line in lines if line.startswith("planted: ")]
    failures.extend(line for line in lines if line not in planted)
    need(run.returncode == 1 and planted, f"the validator failed: {run.stderr}")
    for expected in ("/spec/template/spec/hostPid: not a field of apps/v1 DaemonSet",
                     "/spec/template/spec/containers/0/ports/0/containerPort: fails type"):
        need(any(expected in line for line in planted),
             f"the validator let a planted error through ({expected}): {planted}")


def one(objects, kind, where):
    found = [o for o in objects if o["kind"] == kind]
    need(len(found) == 1, f"{where}: {len(found)} {kind} objects, not 1")
    return found[0] if found else None


def check_daemonset(daemonset, host_pid, where):
    pod = daemonset["spec"]["template"]["spec"]
    need(daemonset["spec"]["selector"]["matchLabels"].items()
         <= daemonset["spec"]["template"]["metadata"]["labels"].items(),
         f"{where}: the DaemonSet's selector does not select its pods")
    need(pod.get("nodeSelector") == {"nvidia.com/gpu.present": "true"},
         f"{where}: no GPU node selector: {pod.get('nodeSelector')}")
    need(pod.get("runtimeClassName") == "nvidia", f"{where}: runtime class not nvidia")
    need(pod.get("hostPID", False) is host_pid, f"{where}: hostPID is {pod.get('hostPID')}")
    need(not pod.get("hostNetwork") and not pod.get("hostIPC"), f"{where}: host network or IPC")
    need(pod.get("automountServiceAccountToken") is False, f"{where}: a service account token")
    need(not any("hostPath" in v for v in pod.get("volumes", [])), f"{where}: a hostPath volume")
    security = pod.get("securityContext", {})
    need(security.get("runAsNonRoot") is True and security.get("runAsUser", 0) > 0,
         f"{where}: not run as a non-root user: {security}")
    need(security.get("seccompProfile") == {"type": "RuntimeDefault"}, f"{where}: no seccomp")
    need(len(pod["containers"]) == 1, f"{where}: {len(pod['containers'])} containers")
    container = pod["containers"][0]
    env = {e["name"]: e for e in container.get("env", [])}
    need(env.get("NVIDIA_VISIBLE_DEVICES", {}).get("value") == "all",
         f"{where}: NVIDIA_VISIBLE_DEVICES is not all")
    need(env.get("NVIDIA_DRIVER_CAPABILITIES", {}).get("value") == "utility",
         f"{where}: NVIDIA_DRIVER_CAPABILITIES is not utility")
    need(env.get("POD_IP", {}).get("valueFrom") == {"fieldRef": {"fieldPath": "status.podIP"}},
         f"{where}: POD_IP is not the pod's address")
    limits = container.get("securityContext", {})
    need(limits.get("readOnlyRootFilesystem") is True, f"{where}: the root is not read-only")
    need(limits.get("allowPrivilegeEscalation") is False, f"{where}: privilege escalation")
    need(not limits.get("privileged"), f"{where}: privileged")
    need(limits.get("capabilities") == {"drop": ["ALL"]},
         f"{where}: capabilities not all dropped: {limits.get('capabilities')}")
    resources = container.get("resources", {})
    for side in ("requests", "limits"):
        need(set(resources.get(side, {})) == {"cpu", "memory"}, f"{where}: {side} {resources}")
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    need("metrics" in ports, f"{where}: no port named metrics")
    for probe in ("readinessProbe", "livenessProbe"):
        get = container.get(probe, {}).get("httpGet", {})
        need(get.get("port") == "metrics" and get.get("path") == "/metrics",
             f"{where}: {probe} is not GET /metrics on the metrics port: {get}")
    arguments = expanded(container)
    need(arguments[:1] == ["serve"], f"{where}: not serve: {arguments}")
    need(not any(a.startswith("--expose") for a in arguments), f"{where}: --expose: {arguments}")
    listen = arguments[arguments.index("--listen") + 1] if "--listen" in arguments else ""
    need(listen == f"[{POD_IP}]:{ports.get('metrics')}",
         f"{where}: not listening on the pod's address and metrics port: {listen}")
    # Without the host's PID namespace, its /proc is not the host's: none read.
    need(("--no-host" in arguments) is not host_pid, f"{where}: --no-host with hostPID "
         f"{host_pid}: {arguments}")
    return container


def expanded(container, pod_ip=POD_IP):
    """The container's command line as the kubelet makes it: $(NAME) is NAME's value from env."""
    values = {e["name"]: e.get("value", pod_ip if e["name"] == "POD_IP" else None)
              for e in container.get("env", [])}

    def value(match):
        name = match.group(1)
        need(values.get(name) is not None, f"$({name}) in the arguments is not set")
        return values.get(name) or ""

    return [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", value, a) for a in container["args"]]


def check_objects(objects, host_pid, rules, where):
    for o in objects:
        if o["kind"] != "Namespace":
            need(o["metadata"].get("namespace") == NAMESPACE,
                 f"{where}: {o['kind']} not in namespace {NAMESPACE}")
    namespace = one(objects, "Namespace", where)
    if namespace:
        level = namespace["metadata"].get("labels", {}).get("pod-security.kubernetes.io/enforce")
        need(level == ("privileged" if host_pid else "restricted"),
             f"{where}: Pod Security level {level} with hostPID {host_pid}")
    account = one(objects, "ServiceAccount", where)
    if account:
        need(account.get("automountServiceAccountToken") is False, f"{where}: account token")
    daemonset = one(objects, "DaemonSet", where)
    service = one(objects, "Service", where)
    if not (daemonset and service):
        return None
    container = check_daemonset(daemonset, host_pid, where)
    pod_labels = daemonset["spec"]["template"]["metadata"]["labels"]
    need(service["spec"]["selector"].items() <= pod_labels.items(),
         f"{where}: the Service does not select the agent's pods")
    need(service["spec"].get("clusterIP") == "None", f"{where}: the Service is not headless")
    need([(p["name"], p["targetPort"]) for p in service["spec"]["ports"]] == [("metrics",
                                                                               "metrics")],
         f"{where}: the Service's port is not the pods' metrics port")
    # The job label is the Service's name; NvsmiAgentDown selects up{job=~"nvsmi.*"}.
    need(re.fullmatch("nvsmi.*", service["metadata"]["name"]),
         f"{where}: job {service['metadata']['name']} is not one NvsmiAgentDown watches")
    monitors = [o for o in objects if o["kind"] == "ServiceMonitor"]
    rule_objects = [o for o in objects if o["kind"] == "PrometheusRule"]
    need(len(monitors) == len(rule_objects), f"{where}: a ServiceMonitor without rules or back")
    for monitor in monitors:
        need(monitor["spec"]["selector"]["matchLabels"].items()
             <= service["metadata"]["labels"].items(),
             f"{where}: the ServiceMonitor does not select the Service")
        need([e["port"] for e in monitor["spec"]["endpoints"]] == ["metrics"],
             f"{where}: the ServiceMonitor does not scrape the metrics port")
    for rule in rule_objects:
        need(rule["spec"]["groups"] == rules,
             f"{where}: the PrometheusRule's groups differ from deploy/prometheus/nvsmi-rules.yml "
             "(scripts/make-prometheus-rule)")
    return container


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metrics(port):
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("GET", "/metrics")
        answer = connection.getresponse()
        return answer.status, answer.read().decode("utf-8", "replace")
    except OSError:
        return 0, ""


def run_container(container, agent, source, where):
    """The container's command line on this machine: the pod's address is 127.0.0.1 (on a free
    port), nvidia-smi the stand-in. Its probe path answers 200 with a fresh sample, and SIGTERM
    ends it with 0."""
    port = free_port()
    arguments = [a.replace("[127.0.0.1]:9437", f"[127.0.0.1]:{port}")
                 for a in expanded(container, pod_ip="127.0.0.1")]
    need(f"[127.0.0.1]:{port}" in arguments, f"{where}: no --listen [POD_IP]:9437 to move")
    with tempfile.TemporaryFile() as log:
        agent_run = subprocess.Popen(
            [agent] + arguments + ["--nvidia-smi", str(source / "scripts/fake-nvidia-smi")],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            status, body = 0, ""
            deadline = time.monotonic() + PATIENCE
            while time.monotonic() < deadline and agent_run.poll() is None:
                status, body = metrics(port)
                if status == 200 and "\nnvsmi_up 1\n" in body:
                    break
                time.sleep(0.1)
            need(status == 200 and "\nnvsmi_up 1\n" in body,
                 f"{where}: GET /metrics gave {status} without nvsmi_up 1")
            # The kernel log is not asked for in a pod: no XidUnreadable from every node.
            need("nvsmi_xid_readable" not in body, f"{where}: the kernel log is read")
        finally:
            if agent_run.poll() is None:
                agent_run.send_signal(signal.SIGTERM)
            try:
                code = agent_run.wait(timeout=PATIENCE)
            except subprocess.TimeoutExpired:
                agent_run.kill()
                code = agent_run.wait()
            log.seek(0)
            need(code == 0, f"{where}: serve {' '.join(arguments)} exited {code}: "
                 f"{log.read().decode('utf-8', 'replace')}")


def main():
    agent, source, build = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    missing = [tool for tool in ("kubectl", "node", "npm") if shutil.which(tool) is None]
    if missing:
        print(f"skipped: {', '.join(missing)} not installed (scripts/install-deps test)")
        return 77
    make = subprocess.run([str(source / "scripts/make-prometheus-rule"), "--check"],
                          capture_output=True, text=True)
    need(make.returncode == 0, make.stderr.strip())
    modules = schemas(source, build)
    rules = yaml.safe_load((source / "deploy/prometheus/nvsmi-rules.yml").read_text())["groups"]
    deploy = source / "deploy/kubernetes"
    rendered = {name: (render(deploy / name), host_pid)
                for name, host_pid in KUSTOMIZATIONS.items()}
    with tempfile.TemporaryDirectory(dir=build) as scratch:
        bases = "".join(f"  - {os.path.relpath(deploy / b, scratch)}\n" for b in COMBINED)
        pathlib.Path(scratch, "kustomization.yaml").write_text(f"bases:\n{bases}")
        rendered[" + ".join(COMBINED)] = (render(scratch), True)
    validate(rendered, modules, source)
    for where, (objects, host_pid) in rendered.items():
        container = check_objects(objects, host_pid, rules, where)
        kinds = sorted(o["kind"] for o in objects)
        print(f"{where}: {len(objects)} objects ({', '.join(kinds)})")
        if container and where in ("base", "overlays/host-pid"):
            run_container(container, agent, source, where)
    need(any(o["kind"] == "PrometheusRule" for o in rendered["overlays/prometheus-operator"][0]),
         "overlays/prometheus-operator has no PrometheusRule")
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
