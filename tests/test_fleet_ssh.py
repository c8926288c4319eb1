#!/usr/bin/python3
"""`fleet --ssh`, `pick --ssh` and `top --ssh` against Debian's real OpenSSH server on loopback (issue 45).

Each "host" is an sshd of this test's own: its own config, host key, authorized key and port on
127.0.0.1 (the system's sshd and its files are never touched; as root, sshd needs its privilege
separation folder /run/sshd, which the package makes at boot and this test makes where missing).
Each sshd gives its sessions a PATH (sshd_config's SetEnv) on which nvidia-smi is the stand-in
(scripts/fake-nvidia-smi) or something worse:

  good      the stand-in, its compute process a live `sleep` of this test (so ps finds its user)
  stalled   an sshd stopped with SIGSTOP: the connection is accepted and never answered
  stopped   a port nothing listens on
  hostile   names with escape sequences, a line of garbage now and then, and a ps that answers
            with escapes, a pid not asked for and a line of 200,000 bytes
  nonvsmi   no nvidia-smi on its PATH
  wrongkey  the good sshd, but known_hosts holds another key for it: refused, never asked
  nokey     the good sshd, and no key to offer: refused
  later     the stand-in, which stops printing after 4 samples: stale with its last sample

The client side is the user's own ssh with a config of this test's (--ssh-config): its aliases,
the test's key and known_hosts, StrictHostKeyChecking yes. Every wait polls for a condition with
a generous deadline; every process the test starts is ended however it ends.

Usage: tests/test_fleet_ssh.py AGENT SOURCE_DIR
Exits 0 when it passes, 1 when it fails, 77 (skipped) without sshd, ssh-keygen or tmux.
"""
import json
import os
import pathlib
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

AGENT = os.path.abspath(sys.argv[1])
SOURCE = pathlib.Path(sys.argv[2]).resolve()
FAKE = SOURCE / "scripts" / "fake-nvidia-smi"
SSHD = "/usr/sbin/sshd"
ME = pwd.getpwuid(os.getuid()).pw_name
PATIENCE = 120  # seconds any one condition may take on a busy machine
FAILURES = []


def check(condition, what):
    if not condition:
        FAILURES.append(what)
        print("FAIL: " + what, file=sys.stderr)
    return condition


def wait_until(condition, seconds=PATIENCE, every=0.1):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(every)
    return condition()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def agent_ssh_processes(folder):
    """The ssh clients the agent started: their command lines name its control folder."""
    run = subprocess.run(["pgrep", "-f", "ControlPath=" + folder], capture_output=True, text=True,
                         check=False)
    return [line for line in run.stdout.split() if line]


class Lab:
    def __init__(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="nvsmi-ssh-test."))
        os.chmod(self.dir, 0o700)
        self.runtime = self.dir / "runtime"  # the agent's XDG_RUNTIME_DIR: its folder goes here
        self.runtime.mkdir(mode=0o700)
        self.procs = []
        keygen = ["ssh-keygen", "-q", "-t", "ed25519", "-N", ""]
        for name in ("hostkey", "otherkey", "clientkey"):
            subprocess.run(keygen + ["-f", str(self.dir / name)], check=True)
        shutil.copy(self.dir / "clientkey.pub", self.dir / "authorized_keys")
        self.sleeper = subprocess.Popen(["sleep", "3600"])
        self.procs.append(self.sleeper)
        self.good_bin = self.bin("good", {"nvidia-smi": FAKE})
        self.hostile_bin = self.bin("hostile", {"nvidia-smi": FAKE})
        self.write_hostile()
        self.ports = {}
        self.sshd = {}
        self.config_lines = []

    def bin(self, name, links):
        folder = self.dir / ("bin-" + name)
        folder.mkdir()
        for link, target in links.items():
            os.symlink(target, folder / link)
        return folder

    def write_hostile(self):
        nounits = (SOURCE / "fixtures" / "csv" / "h100-8gpu-nounits.csv").read_text()
        evil = "\x1b]0;owned\x07H100\x1b[2J\u202e\x9b31m"
        (self.dir / "hostile.csv").write_text(nounits.replace("NVIDIA H100 80GB HBM3", evil))
        (self.dir / "hostile-apps").write_text(
            "GPU-00000000-0000-0000-0000-000000000001, %d, 300 MiB, \x1b[31mevil\x1b[0m\n"
            % self.sleeper.pid)
        ps = self.hostile_bin / "ps"
        ps.write_text("#!/bin/sh\nprintf '%s 0 \\033[2Jroot\\033]0;x\\007 \\033[31mowned\\n' "
                      "\"$(echo \"$@\" | sed 's/.*-p //; s/,.*//')\"\n"
                      "printf '1 0 root init\\n'\n"
                      "head -c 200000 /dev/zero | tr '\\0' a\necho\n")
        ps.chmod(0o755)

    def start_sshd(self, name, env):
        port = free_port()
        config = self.dir / ("sshd_config." + name)
        lines = ["Port %d" % port, "ListenAddress 127.0.0.1",
                 "HostKey %s" % (self.dir / "hostkey"),
                 "PidFile %s" % (self.dir / ("sshd.pid." + name)),
                 "AuthorizedKeysFile %s" % (self.dir / "authorized_keys"),
                 # The test's folder is under /tmp, which StrictModes would refuse for the keys.
                 "StrictModes no", "UsePAM no", "PasswordAuthentication no",
                 "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
                 "SetEnv " + " ".join("%s=%s" % item for item in env.items())]
        config.write_text("\n".join(lines) + "\n")
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)],
                                stdout=subprocess.DEVNULL,
                                stderr=open(self.dir / ("sshd.log." + name), "w"))
        self.procs.append(proc)
        self.sshd[name] = proc
        self.ports[name] = port
        if not wait_until(lambda: self.listening(port), 30):
            raise RuntimeError("sshd %s did not listen: %s" % (
                name, (self.dir / ("sshd.log." + name)).read_text()))
        return port

    @staticmethod
    def listening(port):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    def alias(self, name, port, known="hostkey", key="clientkey"):
        self.config_lines += [
            "Host " + name, "  HostName 127.0.0.1", "  Port %d" % port, "  User " + ME,
            "  IdentityFile %s" % (self.dir / key), "  IdentitiesOnly yes",
            "  UserKnownHostsFile %s" % (self.dir / "known_hosts"),
            "  GlobalKnownHostsFile /dev/null", "  StrictHostKeyChecking yes",
            "  HostKeyAlias " + name]
        public = (self.dir / (known + ".pub")).read_text().split()[:2]
        with open(self.dir / "known_hosts", "a") as f:
            f.write("%s %s %s\n" % (name, public[0], public[1]))

    def write_client_config(self):
        path = self.dir / "ssh_config"
        path.write_text("\n".join(self.config_lines) + "\n")
        return str(path)

    def agent_env(self):
        env = dict(os.environ, XDG_RUNTIME_DIR=str(self.runtime), LC_ALL="C.UTF-8")
        env.pop("SSH_AUTH_SOCK", None)  # no agent: `nokey` must have nothing to offer
        env["PATH"] = "/usr/bin:/bin:/usr/sbin:/sbin"
        return env

    def close(self):
        # What sshd started for the agent's sessions: a command without a terminal gets no signal
        # when its session ends, so a stand-in that hangs (`later`) outlives it, as it would on a
        # real host (docs/FLEET.md, "Over ssh").
        subprocess.run(["pkill", "-KILL", "-f", str(self.dir)], check=False)
        for proc in self.procs:
            try:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                pass


def fleet_json(lab, config, hosts, timeout):
    """`fleet --ssh HOSTS --format json`, how long it took and its hosts by name; every ssh of it
    ended and its control folder gone."""
    start = time.monotonic()
    run = subprocess.run([AGENT, "fleet", "--ssh", hosts, "--ssh-config", config, "--timeout",
                          str(timeout), "--format", "json"], capture_output=True,
                         env=lab.agent_env(), timeout=120, check=False)
    took = time.monotonic() - start
    check(run.returncode == 0, "fleet --ssh exits 0: %d %r" % (run.returncode, run.stderr))
    # Every host answered or said why by the deadline (the timeout and 5 s more), and every ssh
    # ended within 5 s more.
    check(took < timeout + 5 + 5 + 5, "fleet --ssh took %.1f s" % took)
    check(not agent_ssh_processes(str(lab.runtime)), "an ssh of fleet's is left running")
    check(not list(lab.runtime.iterdir()), "the control folder is left: %s"
          % list(lab.runtime.iterdir()))
    text = run.stdout.decode("utf-8")  # valid UTF-8, or this raises
    by_host = {host["host"]: host for host in json.loads(text)["hosts"]}
    print(json.dumps({name: [h["status"], h["problem"]] for name, h in by_host.items()}, indent=1))
    return text, by_host


def test_fleet(lab, config):
    # A host that takes no connection: ssh's own "timed out" at --timeout, the deadline 5 s later.
    _, by_host = fleet_json(lab, config, "stalled", 5)
    check(by_host["stalled"]["status"] == "unreachable"
          and "timed out" in (by_host["stalled"]["problem"] or ""),
          "stalled is unreachable with ssh's own reason: %r" % by_host["stalled"])
    check(by_host["stalled"]["snapshot"] is None, "stalled has no sample")
    # The others answer or fail at once: fleet prints as soon as each has, so a long --timeout
    # costs only a loaded machine its time (each good host opens four ssh sessions in turn).
    text, by_host = fleet_json(lab, config, "good,stopped,hostile,nonvsmi,wrongkey,nokey", 30)

    good = by_host["good"]
    check(good["status"] == "ok", "good is ok: %r" % good["problem"])
    gpus = (good["snapshot"] or {}).get("gpus", [])
    check(len(gpus) == 8, "good has 8 GPUs")
    processes = [p for gpu in gpus for p in (gpu.get("processes") or [])]
    mine = [p for p in processes if p.get("pid") == lab.sleeper.pid]
    check(mine and mine[0].get("user") == ME and "sleep 3600" in (mine[0].get("command") or ""),
          "good's process has its user and command from the host's ps: %r %r %r" % (
              mine, (good["snapshot"] or {}).get("processes_unknown_reason"),
              [(gpu.get("index"), gpu.get("processes")) for gpu in gpus]))

    expect = {"stopped": ("unreachable", "Connection refused"),
              "nonvsmi": ("unreachable", "not found"),
              "wrongkey": ("unreachable", "Host key verification failed"),
              "nokey": ("unreachable", "Permission denied")}
    for name, (status, words) in expect.items():
        host = by_host[name]
        check(host["status"] == status and words in (host["problem"] or ""),
              "%s is %s with ssh's own reason (%s): %r %r" % (
                  name, status, words, host["status"], host["problem"]))
        check(host["snapshot"] is None, "%s has no sample" % name)
    # The hostile host: whatever it said reaches the JSON as printable text.
    for char in text.rstrip("\n"):
        if ord(char) < 0x20 or 0x7f <= ord(char) < 0xa0:
            check(False, "a control character in fleet's JSON: %r" % char)
            break

    shown = subprocess.run([AGENT, "fleet", "--ssh", "hostile,good", "--ssh-config", config],
                           capture_output=True, env=lab.agent_env(),
                           timeout=120, check=False)
    screen = shown.stdout.decode("utf-8")
    check(shown.returncode == 0 and "hostile \u00b7 " in screen and "good \u00b7 ok" in screen,
          "fleet --ssh prints both hosts: %r" % screen[:400])
    check(not any(ord(c) < 0x20 and c != "\n" or 0x7f <= ord(c) < 0xa0 for c in screen),
          "fleet --ssh's text holds no control character")


def test_pick(lab, config):
    """pick --ssh: the hosts with N free GPUs, the most free first; none: exit 9 naming each."""
    def pick(*args):
        # --timeout 30: room for a loaded machine; pick answers as soon as each host has.
        return subprocess.run([AGENT, "pick"] + list(args) + ["--ssh-config", config,
                                                              "--timeout", "30"],
                              capture_output=True, text=True, env=lab.agent_env(), timeout=120,
                              check=False)
    two = pick("2", "--ssh", "stopped,good")
    # The stand-in's GPUs 0, 4 and 7 are free: 0 and 7 have the most free memory.
    check(two.returncode == 0 and two.stdout == "good 0,7\n",
          "pick 2 --ssh names good's two best free GPUs: %r %r" % (two.stdout, two.stderr))
    four = pick("4", "--ssh", "stopped,good")
    check(four.returncode == 9 and "good: 3 free" in four.stderr
          and "stopped unreachable: ssh: connect to host" in four.stderr and four.stdout == "",
          "pick 4 --ssh says no host has 4, and why each: %r %r" % (four.returncode, four.stderr))
    env = pick("1", "--ssh", "good", "--format", "env")
    check(env.returncode == 2 and "--format env" in env.stderr,
          "pick --ssh refuses --format env: %r" % env.stderr)
    check(not agent_ssh_processes(str(lab.runtime)), "an ssh of pick's is left running")


def tmux(server, *args):
    return subprocess.run(["tmux", "-u", "-L", server, "-f", "/dev/null"] + list(args),
                          capture_output=True, text=True, check=False,
                          env=dict(os.environ, LC_ALL="C.UTF-8"))


def test_top(lab, config):
    server = "nvsmi-ssh-test-%d" % os.getpid()
    env = lab.agent_env()
    command = " ".join(["env", "-u", "SSH_AUTH_SOCK", "XDG_RUNTIME_DIR=" + str(lab.runtime),
                        "LC_ALL=C.UTF-8", AGENT, "top", "--ssh", "good,stopped,later",
                        "--ssh-config", config, "--interval", "0.5", "--timeout", "5",
                        "; echo top-exited-$?"])
    tmux(server, "new-session", "-d", "-x", "130", "-y", "60", "env PS1='$ ' sh")
    try:
        tmux(server, "send-keys", "-l", command)
        tmux(server, "send-keys", "Enter")
        screen = lambda: tmux(server, "capture-pane", "-p").stdout
        first = ""

        def shows_all():
            nonlocal first
            first = screen()
            return ("good \u00b7 ok" in first and "stopped \u00b7 unreachable" in first
                    and "Connection refused" in first and "in use" in first)
        check(wait_until(shows_all), "top --ssh shows good ok and stopped unreachable: %s"
              % screen())
        check("3 hosts" in first, "top --ssh's heading counts the hosts")
        # The stand-in of `later` stops printing after 4 samples: it goes stale, its last sample
        # still shown (dimmed).
        check(wait_until(lambda: "later \u00b7 stale" in screen()),
              "top --ssh shows a host that stopped answering as stale: %s" % screen())
        tmux(server, "send-keys", "q")
        check(wait_until(lambda: "top-exited-0" in screen(), 30),
              "top --ssh quits on q with 0: %s" % screen())
        check(wait_until(lambda: not agent_ssh_processes(str(lab.runtime)), 30),
              "an ssh of top's is left running")
    finally:
        tmux(server, "kill-server")
    del env


def setup(lab):
    """Every host of the docstring's table, and the client config naming them."""
    base = "/usr/bin:/bin"
    good = lab.start_sshd("good", {
        "PATH": "%s:%s" % (lab.good_bin, base), "FAKE_NVSMI_STAMP_NOW": "1",
        "FAKE_NVSMI_APPS": str(lab.dir / "good-apps")})
    (lab.dir / "good-apps").write_text(
        "GPU-00000000-0000-0000-0000-000000000001, %d, 300 MiB, sleep\n" % lab.sleeper.pid)
    stalled = lab.start_sshd("stalled", {"PATH": base})
    lab.sshd["stalled"].send_signal(signal.SIGSTOP)
    hostile = lab.start_sshd("hostile", {
        "PATH": "%s:%s" % (lab.hostile_bin, base), "FAKE_NVSMI_STAMP_NOW": "1",
        "FAKE_NVSMI_CSV": str(lab.dir / "hostile.csv"), "FAKE_NVSMI_GARBAGE_AFTER": "1",
        "FAKE_NVSMI_APPS": str(lab.dir / "hostile-apps")})
    nonvsmi = lab.start_sshd("nonvsmi", {"PATH": base})
    later = lab.start_sshd("later", {
        "PATH": "%s:%s" % (lab.good_bin, base), "FAKE_NVSMI_STAMP_NOW": "1",
        "FAKE_NVSMI_HANG_AFTER": "4"})
    lab.alias("good", good)
    lab.alias("stalled", stalled)
    lab.alias("stopped", free_port())
    lab.alias("hostile", hostile)
    lab.alias("nonvsmi", nonvsmi)
    lab.alias("later", later)
    lab.alias("wrongkey", good, known="otherkey")
    lab.alias("nokey", good, key="no-such-key")
    return lab.write_client_config()


def main():
    for tool in (SSHD, shutil.which("ssh-keygen"), shutil.which("tmux"), shutil.which("ssh")):
        if not tool or not os.path.exists(tool):
            print("skipped: OpenSSH's server and client and tmux are needed "
                  "(scripts/install-deps installs them)")
            return 77
    if os.getuid() == 0 and not os.path.isdir("/run/sshd"):
        os.makedirs("/run/sshd", mode=0o755)  # sshd's privilege separation folder, as at boot
    lab = Lab()
    try:
        config = setup(lab)
        test_fleet(lab, config)
        test_pick(lab, config)
        test_top(lab, config)
    finally:
        lab.close()
        if not FAILURES:
            shutil.rmtree(lab.dir, ignore_errors=True)
        else:
            print("kept: %s" % lab.dir, file=sys.stderr)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
