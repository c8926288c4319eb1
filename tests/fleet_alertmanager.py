"""Alertmanager for the fleet test (tests/test_fleet.py; issue 28, item 4): Debian's real
Alertmanager on loopback, configured from the shipped example (deploy/alertmanager/alertmanager.yml)
with only its receivers' URLs and its timers replaced, and a webhook receiver of the test's own
that records every notification.

Alertmanager listens on 127.0.0.1 only, its cluster (gossip) listener off and its storage in the
test's scratch folder; the receiver listens on 127.0.0.1 only. Nothing leaves the machine.
"""
import copy
import http.server
import json
import pathlib
import re
import shutil
import subprocess
import threading
import urllib.parse

SOURCE = pathlib.Path(__file__).resolve().parent.parent
SHIPPED = SOURCE / "deploy" / "alertmanager" / "alertmanager.yml"
BINARY = "prometheus-alertmanager"  # Debian's name; amtool ships in the same package

# The test's timers instead of the shipped ones (minutes and hours). group_wait stays a few
# seconds, as the shipped 30 s does in a fleet, so that an alert and the one that inhibits it,
# which Prometheus evaluates in different rule groups, are both in before the first notification.
TIMERS = {"group_wait": "5s", "group_interval": "5s", "repeat_interval": "1h"}
RESOLVE_TIMEOUT = "1m"
PLACEHOLDER_DOMAIN = "example.invalid"
MAX_BODY = 1 << 20  # bytes of one notification the receiver reads


def missing():
    """What this machine lacks to run Alertmanager's part of the test, in words; None if nothing."""
    if not shutil.which(BINARY) or not shutil.which("amtool"):
        return f"{BINARY} (with amtool) is not installed (scripts/install-deps installs it)"
    try:
        import yaml  # noqa: F401, PLC0415
    except ImportError:
        return "python3-yaml is not installed (scripts/install-deps installs it)"
    return None


def short_for(rules_text, duration):
    """The rules with every `for:` set to duration (the test cannot wait an hour), else as they
    are: raises when there is none to shorten (the rules changed shape)."""
    shortened, count = re.subn(r"(?m)^(\s+for:\s*)\S+\s*$", rf"\g<1>{duration}", rules_text)
    if count == 0:
        raise AssertionError("no `for:` in the rules to shorten")
    return shortened


def configured_for_test(shipped_text, receiver_base):
    """The shipped configuration with each receiver's webhook sent to receiver_base/NAME and the
    test's timers; its route tree and inhibit rules untouched. Raises where the shipped file has
    what the test cannot redirect (a receiver that is not a webhook) or a receiver URL that is
    not a placeholder."""
    import yaml  # noqa: PLC0415 (see missing())
    config = yaml.safe_load(shipped_text)
    test = copy.deepcopy(config)
    test.setdefault("global", {})["resolve_timeout"] = RESOLVE_TIMEOUT

    def retime(route):
        for key, value in TIMERS.items():
            if key in route:
                route[key] = value
        for child in route.get("routes", []):
            retime(child)

    retime(test["route"])
    for receiver in test["receivers"]:
        kinds = set(receiver) - {"name"}
        if kinds != {"webhook_configs"}:
            raise AssertionError(f"{SHIPPED}: receiver {receiver['name']} has {sorted(kinds)}: "
                                 "the test can redirect webhook_configs only")
        for hook in receiver["webhook_configs"]:
            host = urllib.parse.urlsplit(hook["url"]).hostname or ""
            if not host.endswith(PLACEHOLDER_DOMAIN):
                raise AssertionError(f"{SHIPPED}: receiver {receiver['name']} sends to {host}, "
                                     f"not a placeholder on {PLACEHOLDER_DOMAIN}")
            hook["url"] = f"{receiver_base}/{receiver['name']}"
    # What the test replaced is all that differs from the shipped file.
    for kept in ("route", "inhibit_rules"):
        shipped_part = copy.deepcopy(config.get(kept))
        test_part = copy.deepcopy(test.get(kept))
        if kept == "route":
            for part in (shipped_part, test_part):
                _drop_timers(part)
        if shipped_part != test_part:
            raise AssertionError(f"the test's {kept} differs from the shipped one")
    return test


def _drop_timers(route):
    for key in TIMERS:
        route.pop(key, None)
    for child in route.get("routes", []):
        _drop_timers(child)


def check_config(path):
    """amtool check-config on path; raises with its output when it refuses it."""
    done = subprocess.run(["amtool", "check-config", str(path)], capture_output=True, text=True,
                          timeout=60)
    if done.returncode != 0:
        raise AssertionError(f"amtool check-config {path} refused it:\n{done.stdout}{done.stderr}")


class WebhookReceiver:
    """An HTTP server on 127.0.0.1 that records each JSON body POSTed to it, by path."""

    def __init__(self):
        self.lock = threading.Lock()
        self.received = []  # (receiver name from the path, payload)
        self.refused = []  # what was not a notification: path and why
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(length, MAX_BODY))
                try:
                    payload = json.loads(body)
                except ValueError as error:
                    with owner.lock:
                        owner.refused.append((self.path, f"not JSON: {error}"))
                    self.send_response(400)
                else:
                    with owner.lock:
                        owner.received.append((self.path.lstrip("/"), payload))
                    self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):  # quiet: the test prints what matters
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def notifications(self):
        with self.lock:
            return list(self.received)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class Notifications:
    """What the receiver got, read per receiver and host. Raises AssertionError at once for a
    notification that breaks a rule whatever the timing: sent to a receiver the route should not
    reach, grouped by other than the host, a label outside `allowed_labels`, a `user` label on an
    alert other than those in `user_alerts`, or `secret` anywhere in it."""

    def __init__(self, received, host_of, allowed_labels, user_alerts, secret, receivers):
        self.firing = {}  # receiver -> {(alertname, host, gpu)}: every alert notified firing
        self.latest = {}  # (receiver, host) -> the last notification's status and alert keys
        self.alerts = {}  # (alertname, host, gpu) -> the alert as last notified
        group_keys = {}  # (receiver, host) -> {groupKey}
        for path, payload in received:
            receiver = payload.get("receiver")
            if path != receiver or receiver not in receivers:
                raise AssertionError(f"a notification for {receiver!r} at /{path}, expected one "
                                     f"of {sorted(receivers)}: {json.dumps(payload)[:2000]}")
            if secret in json.dumps(payload):
                raise AssertionError(f"a process's command line reached {receiver}: "
                                     f"{json.dumps(payload)[:2000]}")
            instance = payload.get("groupLabels", {}).get("instance")
            if set(payload.get("groupLabels", {})) != {"instance"}:
                raise AssertionError(f"a notification not grouped per host: groupLabels "
                                     f"{payload.get('groupLabels')}")
            host = host_of(instance)
            group_keys.setdefault((receiver, host), set()).add(payload.get("groupKey"))
            keys = set()
            for alert in payload.get("alerts", []):
                labels = alert["labels"]
                key = (labels.get("alertname", ""), host_of(labels.get("instance", "")),
                       labels.get("gpu", ""))
                if labels.get("instance") != instance:
                    raise AssertionError(f"{key} in the group of {host}")
                extra = set(labels) - allowed_labels
                if extra:
                    raise AssertionError(f"{key} reached {receiver} with labels {sorted(extra)}, "
                                         "which no shipped rule gives: what do they carry?")
                if "user" in labels and key[0] not in user_alerts:
                    raise AssertionError(f"{key} carries a user name: {labels['user']!r}")
                if alert.get("status") == "firing":
                    self.firing.setdefault(receiver, set()).add(key)
                self.alerts[key] = alert
                keys.add((key, alert.get("status")))
            self.latest[(receiver, host)] = (payload.get("status"), keys)
        for (receiver, host), keys in group_keys.items():
            if len(keys) != 1:
                raise AssertionError(f"{host}'s alerts reached {receiver} in {len(keys)} groups "
                                     f"({sorted(map(str, keys))}), not one")


def yaml_text(config):
    import yaml  # noqa: PLC0415 (see missing())
    return yaml.safe_dump(config, sort_keys=False)
