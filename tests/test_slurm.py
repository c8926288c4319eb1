#!/usr/bin/python3
"""deploy/slurm/'s prolog and epilog, then the agent, on a real Slurm (issue 29).

Usage: test_slurm.py AGENT_BIN PROJECT_DIR

First the scripts alone, against hostile job environments (docs/BAD-INPUT.md, "Slurm allocations"):
each way in, as slurmd would run them (as root, with the job's SLURM_* variables).
Then a single-node cluster of Debian's slurm-wlm and munge on loopback, all of it under a private
temporary folder (its own munge key and socket, free ports, state and spool, character devices made
for the four GPUs of gres.conf, cons_tres): a job of `daemon` with --gres=gpu:2 and one process on
a GPU, a job of `nobody` with --gres=gpu:1 and none; the prolog's files, the agent's allocations and
allocated-but-idle state through the stand-in nvidia-smi, then the epilog's cleanup once the jobs
are cancelled. Every daemon it started is stopped and waited for, whatever happens.

Exit 0: passed; 1: failed; 77: the scripts passed but this machine cannot run the cluster (not
root, no slurmd, no mknod), said on stdout.
"""

import json
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

AGENT, PROJECT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SCRIPTS = os.path.join(PROJECT, "deploy", "slurm")
FAKE = os.path.join(PROJECT, "scripts", "fake-nvidia-smi")
PATIENCE = 60  # seconds: tests/support.hpp's test::patience
UUID = "GPU-00000000-0000-0000-0000-00000000000{}"  # the 8-GPU CSV fixture's, by index

failures = []

# The lines a MIG site's prolog and epilog wrappers add: NVSMI_JOB_GPUS from its layout file, if
# it has one.
MIG_WRAPPER = """if [ -f %(layout)s ]; then
  NVSMI_JOB_GPUS=$(printf '%%s\\n' "$SLURM_JOB_GPUS" | tr , '\\n' |
    while read -r gres; do awk -v g="$gres" '$1 == g { print $2 }' %(layout)s; done | paste -sd, -)
  export NVSMI_JOB_GPUS
fi
"""


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what, flush=True)
    if not condition:
        failures.append(what)


def wait_until(condition, deadline=PATIENCE):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def run_script(name, env, timeout=30):
    """Runs deploy/slurm/NAME as slurmd does: an environment of the job's variables alone."""
    return subprocess.run(["/bin/sh", os.path.join(SCRIPTS, name)], env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)


def records(folder):
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def job_env(folder, job="1234", user="alice", gpus="0,2", account="physics"):
    return {"NVSMI_JOB_MAPPING_DIR": folder, "SLURM_JOB_ID": job, "SLURM_JOB_USER": user,
            "SLURM_JOB_GPUS": gpus, "SLURM_JOB_ACCOUNT": account}


def scripts_against_hostile_environments():
    base = tempfile.mkdtemp(prefix="nvsmi-slurm-scripts-")
    try:
        folder = os.path.join(base, "jobs")
        run = run_script("prolog.sh", job_env(folder))
        check(run.returncode == 0 and
              records(folder) == ["0", "0.account", "0.user", "2", "2.account", "2.user"],
              "prolog: a file per GPU, its .user and .account, in a folder it made " +
              repr(records(folder)))
        with open(os.path.join(folder, "2.account")) as f:
            check(f.read() == "physics\n", "prolog: the .account file holds the job's account")
        with open(os.path.join(folder, "0")) as f:
            check(f.read() == "1234\n", "prolog: the GPU's file holds the job id alone (DCGM's form)")
        with open(os.path.join(folder, "2.user")) as f:
            check(f.read() == "alice\n", "prolog: the .user file holds the job's user")
        mode = stat.S_IMODE(os.stat(folder).st_mode)
        check(mode == 0o755, "prolog: the folder is 0755, got %o" % mode)
        check(stat.S_IMODE(os.stat(os.path.join(folder, "0")).st_mode) == 0o644,
              "prolog: the records are 0644")
        check(not [n for n in records(folder) if n.startswith(".")], "prolog: no temporary file left")

        run = run_script("epilog.sh", job_env(folder, job="99"))
        check(run.returncode == 0 and len(records(folder)) == 6,
              "epilog: another job's epilog leaves this job's records")
        run = run_script("epilog.sh", job_env(folder))
        check(run.returncode == 0 and records(folder) == [], "epilog: removes its job's records")

        for job in ["../1", "1\n2", "12 34", "-1", "9" * 100000, ""]:
            run = run_script("prolog.sh", job_env(folder, job=job))
            check(run.returncode == 0 and records(folder) == [] and
                  run.stderr.startswith("nvsmi-agent job-mapping: SLURM_JOB_ID is not a job id"),
                  "prolog: job id %r refused, said, exit 0" % job[:20])

        for gpus, kept in [("../../etc/cron.d/x,1", ["1"]), ("0\n1,3", ["3"]), ("*", []),
                           ("12345,2", ["2"]), ("GPU-0a1b,5", ["5"])]:
            run_script("prolog.sh", job_env(folder, gpus=gpus))
            got = [n for n in records(folder) if n.isdigit()]
            check(got == kept and "is not an index (or GPU.INSTANCE): skipped" in run_script(
                "prolog.sh", job_env(folder, gpus=gpus)).stderr,
                  "prolog: GPUs %r give only %r, the rest said" % (gpus, kept))
            run_script("epilog.sh", job_env(folder, gpus=gpus))
            check(records(folder) == [], "epilog: clears %r" % kept)

        # A MIG site's list (NVSMI_JOB_GPUS, before Slurm's): `GPU.GPU_INSTANCE` records.
        mig = dict(job_env(folder, gpus="3"), NVSMI_JOB_GPUS="0.1,1.12,2.3.4,0.,.1,5.12345,0.x")
        run = run_script("prolog.sh", mig)
        check(records(folder) == ["0.1", "0.1.account", "0.1.user", "1.12", "1.12.account",
                                  "1.12.user"] and run.stderr.count("GPU.INSTANCE): skipped") == 5,
              "prolog: NVSMI_JOB_GPUS's MIG instances recorded, its other items refused and said "
              "%r %r" % (records(folder), run.stderr))
        with open(os.path.join(folder, "1.12")) as f:
            check(f.read() == "1234\n", "prolog: a MIG instance's file holds the job id alone")
        run_script("epilog.sh", dict(mig, SLURM_JOB_ID="99"))
        check(len(records(folder)) == 6, "epilog: another job's leaves the MIG records")
        run_script("epilog.sh", mig)
        check(records(folder) == [], "epilog: clears its MIG records")

        started = time.monotonic()
        run = run_script("prolog.sh", job_env(folder, gpus="1," * 60000))
        check(run.returncode == 0 and "more than 64 GPUs listed: nothing done" in run.stderr and records(folder) == [] and
              time.monotonic() - started < 15, "prolog: a huge GPU list is cut, promptly")
        run_script("epilog.sh", job_env(folder, gpus="1"))

        for user in ["alice/../root", "a\nb", "-rf", "x" * 100, "\x1b[31mred", ""]:
            run = run_script("prolog.sh", job_env(folder, user=user, gpus="3"))
            check(records(folder) == ["3", "3.account"] and "user not recorded" in run.stderr,
                  "prolog: user %r not recorded, the job is" % user[:20])
            run_script("epilog.sh", job_env(folder, gpus="3"))

        for account in ["phys/../root", "a\nb", "-x", "y" * 100, "\x1b]0;title\x07"]:
            run = run_script("prolog.sh", job_env(folder, account=account, gpus="3"))
            check(records(folder) == ["3", "3.user"] and
                  "SLURM_JOB_ACCOUNT is not an account name: account not recorded" in run.stderr and
                  "\x1b" not in run.stderr,
                  "prolog: account %r not recorded, said; the job is" % account[:20])
            run_script("epilog.sh", job_env(folder, gpus="3"))
        run = run_script("prolog.sh", job_env(folder, account="", gpus="3"))
        check(records(folder) == ["3", "3.user"] and run.stderr == "",
              "prolog: a job with no account (no accounting): none recorded, nothing said")
        run_script("epilog.sh", job_env(folder, gpus="3"))

        # (An environment string is at most 128 KiB, MAX_ARG_STRLEN.)
        # A link planted where a record goes: replaced, never followed.
        target = os.path.join(base, "target")
        with open(target, "w") as f:
            f.write("untouched\n")
        os.symlink(target, os.path.join(folder, "0"))
        os.symlink(target, os.path.join(folder, "0.user"))
        run_script("prolog.sh", job_env(folder, gpus="0"))
        with open(target) as f:
            check(f.read() == "untouched\n", "prolog: a planted link's target is not written")
        check(not os.path.islink(os.path.join(folder, "0")), "prolog: the link is replaced")
        for name in ["0", "0.user", "0.account"]:
            os.remove(os.path.join(folder, name))
        os.symlink(target, os.path.join(folder, "0"))
        run_script("epilog.sh", job_env(folder, job="untouched", gpus="0"))
        check(os.path.exists(target), "epilog: never follows a link")
        os.remove(os.path.join(folder, "0"))

        # A folder someone else could write to, or a link to one: nothing recorded there.
        os.chmod(folder, 0o1777)
        run = run_script("prolog.sh", job_env(folder))
        check(records(folder) == [] and "is not root's alone" in run.stderr,
              "prolog: refuses a world-writable folder")
        os.chmod(folder, 0o755)
        os.chown(folder, 65534, 65534)
        run = run_script("prolog.sh", job_env(folder))
        check(records(folder) == [] and "is not root's alone" in run.stderr,
              "prolog: refuses a folder another user owns")
        os.chown(folder, 0, 0)
        link = os.path.join(base, "link")
        os.symlink(folder, link)
        run = run_script("prolog.sh", job_env(link))
        check(records(folder) == [] and "is a link" in run.stderr, "prolog: refuses a folder link")
        run = run_script("prolog.sh", job_env("relative/jobs"))
        check(run.returncode == 0 and "absolute path" in run.stderr,
              "prolog: refuses a relative folder")
        run = run_script("prolog.sh", {"NVSMI_JOB_MAPPING_DIR": folder, "SLURM_JOB_ID": "5"})
        check(run.returncode == 0 and records(folder) == [], "prolog: a job with no GPU: nothing")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def job_log(path, job="1234", user="daemon"):
    """fixtures/logs/shared-3users.jsonl with GPUs 0 and 1 held by `job` all along: a JSON log
    as watch --json-log --job-mapping-dir writes it."""
    lines = []
    with open(os.path.join(PROJECT, "fixtures", "logs", "shared-3users.jsonl")) as f:
        for line in f:
            if not line.strip():
                continue
            sample = json.loads(line)
            for gpu in sample["gpus"]:
                gpu["allocation"] = None
                if gpu["index"] in (0, 1):
                    gpu["allocation"] = {"scheduler": "slurm", "job_id": job, "user": user,
                                         "since": None, "held_s": 3600}
            lines.append(json.dumps(sample))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def summary_against_hostile_folders():
    """deploy/slurm/epilog.sh's job summary (job-summary.sh): written by the job's user into the
    job's working folder, never by root, whatever the user planted there, within its deadline."""
    base = tempfile.mkdtemp(prefix="nvsmi-slurm-summary-")
    try:
        os.chmod(base, 0o755)
        daemon = pwd.getpwnam("daemon")
        log = os.path.join(base, "gpu-log.jsonl")
        job_log(log)
        work = os.path.join(base, "work")
        os.mkdir(work)
        os.chown(work, daemon.pw_uid, daemon.pw_gid)
        summary = os.path.join(work, "nvsmi-agent-job-1234.txt")

        def epilog(folder=work, timeout=30, **variables):
            env = {"NVSMI_JOB_MAPPING_DIR": os.path.join(base, "jobs"),
                   "NVSMI_JOB_SUMMARY_LOG": log, "NVSMI_AGENT": AGENT,
                   "SLURM_JOB_ID": "1234", "SLURM_JOB_USER": "daemon",
                   "SLURM_JOB_UID": str(daemon.pw_uid), "SLURM_JOB_GID": str(daemon.pw_gid),
                   "SLURM_JOB_GPUS": "0,1", "SLURM_JOB_WORK_DIR": folder}
            env.update(variables)
            env = {k: v for k, v in env.items() if v is not None}
            started = time.monotonic()
            run = run_script("epilog.sh", env, timeout=timeout)
            return run, time.monotonic() - started

        def clean():
            for name in os.listdir(work):
                path = os.path.join(work, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    os.rmdir(path)
                else:
                    os.remove(path)

        run, _ = epilog()
        written = os.path.exists(summary) and os.lstat(summary)
        text = open(summary).read() if written else ""
        check(run.returncode == 0 and written and written.st_uid == daemon.pw_uid and
              stat.S_ISREG(written.st_mode) and "job 1234" in text and "daemon" in text and
              os.listdir(work) == ["nvsmi-agent-job-1234.txt"],
              "summary: the epilog writes job 1234's summary into its working folder, owned by "
              "its user, nothing else left: %r %r" % (run.stderr[-300:], text[:200]))
        clean()

        run, _ = epilog(NVSMI_JOB_SUMMARY_LOG=None)
        check(run.returncode == 0 and os.listdir(work) == [] and run.stderr == "",
              "summary: off unless NVSMI_JOB_SUMMARY_LOG is set")

        # A link to a file only root may write: replaced by the user's file, never followed.
        target = os.path.join(base, "root-only")
        with open(target, "w") as f:
            f.write("untouched\n")
        os.symlink(target, summary)
        os.lchown(summary, daemon.pw_uid, daemon.pw_gid)
        run, _ = epilog()
        check(open(target).read() == "untouched\n" and not os.path.islink(summary) and
              os.lstat(summary).st_uid == daemon.pw_uid,
              "summary: a planted link is replaced, its target (root's) untouched")
        clean()

        # A FIFO where the summary goes: nobody reads it, yet the epilog is done promptly.
        os.mkfifo(summary)
        os.chown(summary, daemon.pw_uid, daemon.pw_gid)
        run, took = epilog()
        check(run.returncode == 0 and stat.S_ISREG(os.lstat(summary).st_mode) and took < 25,
              "summary: a planted FIFO is replaced, never opened (%.1f s)" % took)
        clean()

        # A folder by the summary's name: left as it is, said.
        os.mkdir(summary)
        run, _ = epilog()
        check(run.returncode == 0 and os.path.isdir(summary) and os.listdir(summary) == [] and
              "cannot write nvsmi-agent-job-1234.txt" in run.stderr and
              [n for n in os.listdir(work) if n.startswith(".")] == [],
              "summary: a folder in its place is left, said, no temporary file left")
        clean()

        # A folder the user cannot write (root's, or a link the user made to one): nothing
        # written there, said; root never writes for them.
        closed = os.path.join(base, "closed")
        os.mkdir(closed, 0o755)
        link = os.path.join(work, "to-closed")
        os.symlink(closed, link)
        for folder in [closed, link]:
            run, _ = epilog(folder=folder)
            check(run.returncode == 0 and os.listdir(closed) == [] and
                  "cannot write" in run.stderr,
                  "summary: a folder its user cannot write (%s) gets nothing, said" %
                  os.path.basename(folder))
        clean()

        # Hostile values: no summary, said, exit 0.
        for what, variables in [
                ("a job of root", {"SLURM_JOB_UID": "0", "SLURM_JOB_GID": "0"}),
                ("a uid that is not a number", {"SLURM_JOB_UID": "1; id"}),
                ("a relative folder", {"SLURM_JOB_WORK_DIR": "work"}),
                ("a folder with a line break", {"SLURM_JOB_WORK_DIR": work + "\n"}),
                ("a folder with a line break inside", {"SLURM_JOB_WORK_DIR": work + "\n/etc"}),
                ("a folder with a terminal escape", {"SLURM_JOB_WORK_DIR": work + "\x1b[2J"}),
                ("a job id that is not one", {"SLURM_JOB_ID": "../1234"})]:
            run, _ = epilog(**variables)
            check(run.returncode == 0 and os.listdir(work) == [] and
                  run.stderr.startswith("nvsmi-agent job-summary: ") and
                  "cannot write" not in run.stderr and "\x1b" not in run.stderr,
                  "summary: %s: no summary, said, exit 0: %r" % (what, run.stderr[:120]))

        # An agent that hangs, or that never stops printing: cut at the deadline and at 64 KiB.
        hang = os.path.join(base, "hang")
        with open(hang, "w") as f:
            f.write("#!/bin/sh\nexec sleep 300\n")
        flood = os.path.join(base, "flood")
        with open(flood, "w") as f:
            f.write("#!/bin/sh\nexec yes job 1234\n")
        os.chmod(hang, 0o755)
        os.chmod(flood, 0o755)
        run, took = epilog(NVSMI_AGENT=hang, NVSMI_JOB_SUMMARY_TIMEOUT="1")
        check(run.returncode == 0 and took < 15 and os.listdir(work) == [] and
              "no summary from" in run.stderr,
              "summary: an agent that hangs is stopped at the deadline (%.1f s)" % took)
        run, took = epilog(NVSMI_AGENT=flood, NVSMI_JOB_SUMMARY_TIMEOUT="5")
        check(run.returncode == 0 and took < 20 and os.path.exists(summary) and
              os.path.getsize(summary) <= 65536 + 1,
              "summary: an endless summary is cut at 64 KiB (%.1f s)" % took)
        clean()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def drain_script_against_hostile_environments():
    """deploy/slurm/drain-on-unhealthy.sh alone, with an scontrol that writes its arguments."""
    base = tempfile.mkdtemp(prefix="nvsmi-slurm-drain-")
    try:
        calls = os.path.join(base, "calls")
        with open(os.path.join(base, "scontrol"), "w") as f:
            f.write("#!/bin/sh\nfor a in \"$@\"; do printf '%%s\\n' \"$a\"; done >>%s\n" % calls)
        os.chmod(os.path.join(base, "scontrol"), 0o755)
        host = socket.gethostname().split(".")[0]

        def drain(**variables):
            if os.path.exists(calls):
                os.remove(calls)
            env = {"PATH": base + ":/usr/sbin:/usr/bin:/sbin:/bin"}
            env.update(variables)
            run = run_script("drain-on-unhealthy.sh", env)
            args = []
            if os.path.exists(calls):
                with open(calls) as f:
                    args = f.read().split("\n")[:-1]
            return run, args

        run, args = drain(NVSMI_GPU_INDEX="3", NVSMI_REASON="row remap pending",
                          NVSMI_ACTION="gpu_reset")
        check(run.returncode == 0 and args == [
            "update", "nodename=" + host, "state=drain",
            "reason=nvsmi-agent: GPU 3 row remap pending (gpu_reset)"],
              "drain: scontrol update nodename=<short host> state=drain reason=... %r" % args)
        for index in ["3; reboot", "", "-1", "1" * 5, "../3", "3\n4"]:
            run, args = drain(NVSMI_GPU_INDEX=index, NVSMI_REASON="x")
            check(run.returncode == 2 and args == [] and
                  run.stderr.startswith("nvsmi-agent drain-on-unhealthy: NVSMI_GPU_INDEX"),
                  "drain: index %r refused, scontrol not run" % index[:20])
        run, args = drain(NVSMI_GPU_INDEX="0",
                          NVSMI_REASON="$(reboot) `id` \x1b[31m;\n|&>" + "y" * 1000,
                          NVSMI_ACTION="gpu reset; rm")
        reason = args[-1] if args else ""
        check(run.returncode == 0 and len(args) == 4 and
              len(reason) <= len("reason=nvsmi-agent: GPU 0  (") + 128 + 32 + 1 and
              all(c not in reason for c in "$`;|&>\n\x1b"),
              "drain: a hostile reason and action reach scontrol as one word, cut, without "
              "shell or terminal characters %r" % reason[:80])
    finally:
        shutil.rmtree(base, ignore_errors=True)


def drained_by_the_agent(cluster):
    """The agent's --on-unhealthy runs the shipped drain script when the stand-in's GPU 3 fails:
    the node is drained with the GPU and the reason."""
    failing = os.path.join(PROJECT, "fixtures", "xml", "h100-8gpu-failing-v12.xml")
    run = subprocess.run(
        [AGENT, "watch", "--format", "json", "--count", "3", "--interval", "0.1",
         "--kernel-log", "none", "--fixture", failing,
         "--on-unhealthy", os.path.join(SCRIPTS, "drain-on-unhealthy.sh")],
        env=cluster.env, capture_output=True, text=True, timeout=120, check=False)
    check(run.returncode == 0 and "--on-unhealthy for GPU 3" in run.stderr,
          "agent: watch ran the drain hook for GPU 3: %s" % run.stderr[-400:])
    node = cluster.slurm("scontrol", "show", "node", socket.gethostname().split(".")[0])
    check("DRAIN" in node and "Reason=nvsmi-agent: GPU 3 " in node,
          "slurm: the node is drained with the GPU and its reason: %r" %
          [line.strip() for line in node.splitlines() if "State=" in line or "Reason=" in line])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """munged, slurmctld and slurmd of this test alone, under `base`."""

    def __init__(self, base):
        self.base = base
        self.pid_files = []
        self.env = dict(os.environ, SLURM_CONF=os.path.join(base, "slurm.conf"))
        self.jobs = os.path.join(base, "jobs")
        self.log = os.path.join(base, "gpu-log.jsonl")  # the agent's JSON log, for the epilog
        self.mig_layout = os.path.join(base, "mig-layout")  # gres index, GPU.INSTANCE a line

    def path(self, *names):
        return os.path.join(self.base, *names)

    def start(self):
        base = self.base
        os.chmod(base, 0o755)  # the jobs' users reach munge's socket through it
        for name in ["munge", "run", "state", "spool", "log", "dev"]:
            os.mkdir(self.path(name), 0o755)
        os.chmod(self.path("munge"), 0o700)
        with open(self.path("munge", "munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(self.path("munge", "munge.key"), 0o400)
        for gpu in range(4):  # slurmd takes only character or block devices for a gres File
            os.mknod(self.path("dev", "nvidia%d" % gpu), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        socket_path = self.path("run", "munge.socket")
        self.pid_files.append(self.path("munge", "munged.pid"))
        subprocess.run(["munged", "--force", "--socket=" + socket_path,
                        "--key-file=" + self.path("munge", "munge.key"),
                        "--log-file=" + self.path("log", "munged.log"),
                        "--pid-file=" + self.pid_files[-1],
                        "--seed-file=" + self.path("munge", "seed")], check=True, timeout=30)
        host = socket.gethostname().split(".")[0]
        wrapper = self.path("prolog-wrapper.sh"), self.path("epilog-wrapper.sh")
        for script, name in zip(wrapper, ["prolog.sh", "epilog.sh"]):
            # As a site sets the folder: slurmd gives its scripts no environment of its own.
            with open(script, "w") as f:
                # The epilog also writes the job's summary from the agent's log (squeue, which
                # finds the job's folder on this Slurm, needs the cluster's configuration).
                summary = ("NVSMI_JOB_SUMMARY_LOG=%s NVSMI_AGENT=%s SLURM_CONF=%s "
                           % (self.log, AGENT, self.env["SLURM_CONF"])
                           if name == "epilog.sh" else "")
                # A MIG site's: where its layout file says which GPU instance each gres index
                # is (Slurm numbers MIG gres its own way), the job's instances as GPU.INSTANCE.
                layout = MIG_WRAPPER % {"layout": self.mig_layout}
                f.write("#!/bin/sh\n%s%sNVSMI_JOB_MAPPING_DIR=%s exec /bin/sh %s\n"
                        % (layout, summary, self.jobs, os.path.join(SCRIPTS, name)))
            os.chmod(script, 0o755)
        self.pid_files += [self.path("run", "slurmctld.pid"), self.path("run", "slurmd.pid")]
        with open(self.path("slurm.conf"), "w") as f:
            f.write(f"""ClusterName=nvsmitest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={socket_path}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={self.path("state")}
SlurmdSpoolDir={self.path("spool")}
SlurmctldPidFile={self.pid_files[1]}
SlurmdPidFile={self.pid_files[2]}
SlurmctldLogFile={self.path("log", "slurmctld.log")}
SlurmdLogFile={self.path("log", "slurmd.log")}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
Prolog={wrapper[0]}
Epilog={wrapper[1]}
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} Gres=gpu:4 State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
        with open(self.path("gres.conf"), "w") as f:
            f.write("NodeName=%s Name=gpu File=%s\n" % (host, self.path("dev", "nvidia[0-3]")))
        conf = self.env["SLURM_CONF"]
        subprocess.run(["slurmctld", "-f", conf], env=self.env, check=True, timeout=30)
        subprocess.run(["slurmd", "-f", conf], env=self.env, check=True, timeout=30)
        if not wait_until(lambda: "idle" in self.slurm("sinfo", "-h", "-o", "%t")):
            raise RuntimeError("the node never became idle:\n" + self.logs())

    def logs(self):
        text = ""
        for name in ["slurmctld.log", "slurmd.log"]:
            try:
                with open(self.path("log", name)) as f:
                    text += "--- %s\n%s" % (name, "".join(f.readlines()[-20:]))
            except OSError:
                pass
        return text

    def slurm(self, *argv, user=None):
        prefix = []
        if user:  # nobody's group is nogroup on Debian: the ids from the password file
            entry = pwd.getpwnam(user)
            prefix = ["setpriv", "--reuid=%d" % entry.pw_uid, "--regid=%d" % entry.pw_gid,
                      "--clear-groups"]
        run = subprocess.run(prefix + list(argv), env=self.env, capture_output=True, text=True,
                             timeout=30, check=False)
        return run.stdout if run.returncode == 0 else ""

    def stop(self):
        """Every job ended, then every daemon it started and every slurmstepd of its jobs, gone."""
        jobs = self.slurm("squeue", "-h", "-o", "%i").split()
        if jobs:
            self.slurm("scancel", "--full", *jobs)
            wait_until(lambda: not self.slurm("squeue", "-h", "-o", "%i").strip(), 30)
        pids = []
        for pid_file in reversed(self.pid_files):
            try:
                with open(pid_file) as f:
                    pids.append(int(f.read().split()[0]))
            except (OSError, ValueError, IndexError):
                continue
        # A job's slurmstepd outlives slurmd: it is ours when it works in this cluster's folder.
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and os.readlink("/proc/%s/cwd" % entry).startswith(self.base):
                    pids.append(int(entry))
            except OSError:
                continue
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

        def gone(pid):
            try:
                os.kill(pid, 0)
                return False
            except ProcessLookupError:
                return True

        for pid in pids:
            if not wait_until(lambda: gone(pid), 30):
                os.kill(pid, signal.SIGKILL)
                wait_until(lambda: gone(pid), 30)


def snapshot(cluster, apps):
    apps_file = cluster.path("apps")
    with open(apps_file, "w") as f:
        f.write(apps)
    run = subprocess.run(
        [AGENT, "snapshot", "--format", "json", "--source", "csv", "--kernel-log", "none",
         "--nvidia-smi", FAKE, "--job-mapping-dir", cluster.jobs],
        env=dict(os.environ, FAKE_NVSMI_APPS=apps_file), capture_output=True, text=True,
        timeout=60, check=False)
    if run.returncode != 0:
        raise RuntimeError("snapshot failed: " + run.stderr)
    return json.loads(run.stdout)


def jobs_gpus(cluster, job):
    """The GPU indexes the job holds, from the prolog's records."""
    found = []
    for name in records(cluster.jobs):
        if name.isdigit():
            with open(os.path.join(cluster.jobs, name)) as f:
                if f.read().strip() == job:
                    found.append(int(name))
    return sorted(found)


def real_slurm(base):
    cluster = Cluster(base)
    try:
        cluster.start()
        submit = ["sbatch", "--parsable", "--output=/dev/null"]
        # daemon's job works in a folder of daemon's: its summary goes there at its end.
        work = cluster.path("work-daemon")
        os.mkdir(work, 0o755)
        daemon = pwd.getpwnam("daemon")
        os.chown(work, daemon.pw_uid, daemon.pw_gid)
        # The job's shell says its pid, which `exec` hands to the sleep: the process on its GPU.
        pids = cluster.path("pids")
        os.mkdir(pids)
        os.chmod(pids, 0o1777)
        job_a = cluster.slurm(*submit, "--chdir=" + work, "--account=physics", "--gres=gpu:2",
                              "--wrap",
                              "echo $$ > %s/$SLURM_JOB_ID; exec sleep 300" % pids,
                              user="daemon").strip()
        job_b = cluster.slurm(*submit, "--chdir=/", "--gres=gpu:1", "--wrap", "exec sleep 300",
                              user="nobody").strip()
        check(job_a.isdigit() and job_b.isdigit(), "slurm: two jobs submitted as daemon and nobody")
        check(wait_until(lambda: len(jobs_gpus(cluster, job_a)) == 2 and
                         len(jobs_gpus(cluster, job_b)) == 1),
              "slurm: the prolog recorded 2 GPUs of job %s and 1 of job %s %r" %
              (job_a, job_b, records(cluster.jobs)))
        gpus_a, gpus_b = jobs_gpus(cluster, job_a), jobs_gpus(cluster, job_b)
        if len(gpus_a) != 2 or len(gpus_b) != 1:
            print(cluster.logs())
            return
        with open(os.path.join(cluster.jobs, "%d.user" % gpus_a[0])) as f:
            check(f.read() == "daemon\n", "slurm: the prolog recorded the job's user")
        with open(os.path.join(cluster.jobs, "%d.account" % gpus_a[0])) as f:
            check(f.read() == "physics\n", "slurm: the prolog recorded the job's account")
        pid_file = os.path.join(pids, job_a)
        check(wait_until(lambda: os.path.exists(pid_file) and os.path.getsize(pid_file) > 0),
              "slurm: job %s started its process" % job_a)
        with open(pid_file) as f:
            pid = f.read().strip()
        # The job that runs: a process on its first GPU. The other job's GPU, held 20 minutes
        # by its record's time, has none: allocated but idle.
        apps = "%s, %s, 1024 MiB, sleep\n" % (UUID.format(gpus_a[0]), pid)
        b_record = os.path.join(cluster.jobs, str(gpus_b[0]))
        long_ago = time.time() - 20 * 60
        os.utime(b_record, (long_ago, long_ago))
        gpus = snapshot(cluster, apps)["gpus"]
        for gpu in gpus_a:
            allocation = gpus[gpu]["allocation"]
            check(allocation is not None and allocation["job_id"] == job_a and
                  allocation["user"] == "daemon" and allocation["scheduler"] == "slurm" and
                  allocation["account"] == "physics",
                  "agent: GPU %d held by job %s of daemon: %r" % (gpu, job_a, allocation))
        allocation = gpus[gpus_b[0]]["allocation"]
        check(allocation is not None and allocation["job_id"] == job_b and
              allocation["user"] == "nobody" and allocation["held_s"] >= 20 * 60,
              "agent: GPU %d held by job %s of nobody for 20 min: %r" %
              (gpus_b[0], job_b, allocation))
        check(gpus[gpus_b[0]]["state"] == "allocated_idle",
              "agent: job %s's GPU with no process is allocated_idle" % job_b)
        check(gpus[gpus_a[0]]["state"] != "allocated_idle",
              "agent: job %s's GPU with its process is not allocated_idle" % job_a)
        held = set(gpus_a + gpus_b)
        check(all(gpus[i]["allocation"] is None for i in range(8) if i not in held),
              "agent: every other GPU has a null allocation")

        job_log(cluster.log, job=job_a)  # as the agent's watch would have logged job A
        cluster.slurm("scancel", job_a, job_b)
        check(wait_until(lambda: records(cluster.jobs) == []),
              "slurm: the epilog cleared every record %r" % records(cluster.jobs))
        summary = os.path.join(work, "nvsmi-agent-job-%s.txt" % job_a)
        check(wait_until(lambda: os.path.exists(summary)) and
              os.lstat(summary).st_uid == daemon.pw_uid and
              ("job " + job_a) in open(summary).read(),
              "slurm: the epilog wrote job %s's summary in its folder, owned by daemon %r" %
              (job_a, os.listdir(work)))
        gpus = snapshot(cluster, "")["gpus"]
        check(all(gpu["allocation"] is None for gpu in gpus),
              "agent: no allocation once the jobs ended")
        mig_job(cluster, submit)
        drained_by_the_agent(cluster)
        if failures:
            print(cluster.logs())
    finally:
        cluster.stop()


def mig_job(cluster, submit):
    """A job on a MIG node: the site's layout makes its gres one of GPU 0's GPU instances on the
    A100 recording (1 has no process, 2 pid 3131), recorded as `0.1` or `0.2`; the agent gives
    that instance the job, allocated but idle on instance 1, and the epilog clears it."""
    with open(cluster.mig_layout, "w") as f:
        # Two instances on the recording: whichever gres Slurm gives, one of them.
        f.write("".join("%d 0.%d\n" % (gres, gres % 2 + 1) for gres in range(4)))
    try:
        job = cluster.slurm(*submit, "--chdir=/", "--gres=gpu:1", "--wrap", "exec sleep 300",
                            user="nobody").strip()
        check(wait_until(lambda: any("." in name for name in records(cluster.jobs))),
              "slurm: the MIG job's prolog wrote a GPU.INSTANCE record %r" % records(cluster.jobs))
        instances = [n for n in records(cluster.jobs) if n.count(".") == 1 and
                     n.replace(".", "").isdigit()]
        check(len(instances) == 1 and not [n for n in records(cluster.jobs) if n.isdigit()],
              "slurm: one instance record and no GPU record %r" % records(cluster.jobs))
        if len(instances) != 1:
            return
        record = os.path.join(cluster.jobs, instances[0])
        with open(record) as f:
            check(f.read() == job + "\n", "slurm: the instance's record holds job %s" % job)
        long_ago = time.time() - 20 * 60
        os.utime(record, (long_ago, long_ago))
        run = subprocess.run(
            [AGENT, "snapshot", "--format", "json", "--kernel-log", "none", "--nvidia-smi", FAKE,
             "--job-mapping-dir", cluster.jobs],
            env=dict(os.environ, FAKE_NVSMI_XML=os.path.join(PROJECT, "fixtures", "xml",
                                                             "a100-mig-v12.xml"),
                     FAKE_NVSMI_LIST=os.path.join(PROJECT, "fixtures", "listing",
                                                  "a100-mig-3g-2g.txt")),
            capture_output=True, text=True, timeout=60, check=False)
        check(run.returncode == 0, "agent: a MIG snapshot " + run.stderr)
        if run.returncode != 0:
            return
        gpu, instance = (int(x) for x in instances[0].split("."))
        devices = {device["gpu_instance_id"]: device
                   for device in json.loads(run.stdout)["gpus"][gpu]["mig_devices"]}
        held = devices.get(instance, {})
        allocation = held.get("allocation") or {}
        check(allocation.get("job_id") == job and allocation.get("user") == "nobody",
              "agent: MIG instance %s held by job %s of nobody: %r" % (instances[0], job, held))
        check(held.get("state") == "allocated_idle" if instance == 1 else True,
              "agent: the MIG job's instance with no process is allocated_idle: %r" % held)
        cluster.slurm("scancel", job)
        check(wait_until(lambda: records(cluster.jobs) == []),
              "slurm: the epilog cleared the MIG record %r" % records(cluster.jobs))
    finally:
        os.remove(cluster.mig_layout)


def cannot_run_cluster():
    if os.geteuid() != 0:
        return "not root: slurmd, munged and the prolog run as root"
    missing = [p for p in ["munged", "slurmctld", "slurmd", "sbatch", "setpriv"]
               if not shutil.which(p)]
    if missing:
        return "missing %s (apt-get install slurmd slurmctld slurm-client munge)" % " ".join(missing)
    probe = tempfile.mkdtemp(prefix="nvsmi-slurm-mknod-")
    try:
        os.mknod(os.path.join(probe, "probe"), 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError as error:
        return "cannot make a device file for gres.conf (%s)" % error
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    return None


def main():
    if os.geteuid() != 0:
        print("skipped: the prolog and epilog are root's (run as root)")
        return 77
    scripts_against_hostile_environments()
    summary_against_hostile_folders()
    drain_script_against_hostile_environments()
    reason = cannot_run_cluster()
    if reason:
        print("skipped the real Slurm: " + reason)
        return 1 if failures else 77
    base = tempfile.mkdtemp(prefix="nvsmi-slurm-")
    try:
        real_slurm(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if failures:
        print("%d failed:\n  %s" % (len(failures), "\n  ".join(failures)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
