#!/usr/bin/python3
"""The demo stand-in: scripts/fake-nvidia-smi found through PATH or a symbolic link, its demo mode
(readings from the clock, processes from a file), and scripts/demo, which starts real processes of
several users and leaves none behind.

Usage: test_demo.py AGENT_BIN SOURCE_DIR
"""
import json
import math
import os
import pwd
import pty
import select
import signal
import subprocess
import sys
import tempfile
import time
import unittest

AGENT = ""
ROOT = ""
PATIENCE = 60  # seconds: a deadline for every wait, far past what each takes


def stand_in():
    return os.path.join(ROOT, "scripts", "fake-nvidia-smi")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_NVSMI", "NVIDIA_SMI"))}
    env["NVSMI_DEMO_AGENT"] = os.path.dirname(AGENT)
    env.update(extra)
    return env


def snapshot_json(env, *args):
    done = subprocess.run([AGENT, "snapshot", "--format", "json", *args], env=env,
                          capture_output=True, text=True, timeout=PATIENCE)
    if done.returncode != 0:
        raise AssertionError(f"snapshot exited {done.returncode}: {done.stderr}")
    return json.loads(done.stdout)


def demo_util(t, gpu):
    """The stand-in's utilization of a GPU with a process at second t (its header's formula)."""
    return int(55 + 40 * math.sin(6.283185307 * (t / 120 + gpu / 8)) + 0.5)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone, before or while it was read
        return False


def wait_until(condition, what):
    deadline = time.monotonic() + PATIENCE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {PATIENCE} s: {what}")
        time.sleep(0.05)


class StandIn(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def processes_file(self, text):
        path = os.path.join(self.dir.name, "processes")
        with open(path, "w") as out:
            out.write(text)
        return path

    def test_a_symbolic_link_named_nvidia_smi_on_path_finds_its_fixtures(self):
        # It looked for them beside the link: 'printed nothing on stdout', exit 6.
        os.mkdir(os.path.join(self.dir.name, "bin"))
        os.symlink(stand_in(), os.path.join(self.dir.name, "bin", "nvidia-smi"))
        env = clean_env(PATH=os.path.join(self.dir.name, "bin") + ":" + os.environ["PATH"])
        for source in ("xml", "csv"):
            snapshot = snapshot_json(env, "--source", source)
            self.assertEqual(len(snapshot["gpus"]), 8, source)

    def test_demo_readings_follow_the_clock_and_name_the_processes(self):
        me = os.getpid()
        processes = self.processes_file(f"1 {me} 30000 python3 train.py\n")
        seen = {}
        for source in ("xml", "csv"):
            for t in (1000, 1030):
                env = clean_env(FAKE_NVSMI_MODE="demo", FAKE_NVSMI_NOW=str(t),
                                FAKE_NVSMI_DEMO_PROCESSES=processes)
                gpu = snapshot_json(env, "--nvidia-smi", stand_in(), "--source", source)["gpus"][1]
                text = json.dumps(gpu)
                self.assertEqual(gpu["utilization_gpu_percent"], demo_util(t, 1), text)
                self.assertEqual(gpu["memory_used_mib"], 30000 + 300 + 64 * ((t + 1) % 5), text)
                self.assertEqual(gpu["temperature_c"], 30 + demo_util(t, 1) // 2, text)
                mine = [p for p in gpu["processes"] if p["pid"] == me]
                self.assertEqual(len(mine), 1, text)
                self.assertEqual(mine[0]["user"], pwd.getpwuid(os.getuid()).pw_name, text)
                self.assertEqual(mine[0]["used_memory_mib"], 30000, text)
                seen[source, t] = gpu["utilization_gpu_percent"]
            self.assertNotEqual(seen[source, 1000], seen[source, 1030], source)

    def test_demo_leaves_out_ended_pids_and_lines_not_of_its_shape(self):
        me = os.getpid()
        processes = self.processes_file(
            "garbage\n"
            f"9 {me} 10 not-a-gpu\n"
            f"1 {me} -5 negative\n"
            "2 999999999 100 ended\n"
            f"3 {me} 100 \x01bell\n"
            f"4 {me} 100 a<b&c>d\n")
        env = clean_env(FAKE_NVSMI_MODE="demo", FAKE_NVSMI_DEMO_PROCESSES=processes)
        gpus = snapshot_json(env, "--nvidia-smi", stand_in())["gpus"]
        listed = {(gpu["index"], p["name"]) for gpu in gpus for p in gpu["processes"] or []}
        self.assertEqual(listed, {(4, "a<b&c>d")})
        self.assertEqual(gpus[2]["memory_used_mib"], 0)

    def test_demo_answers_the_process_loops(self):
        me = os.getpid()
        processes = self.processes_file(f"5 {me} 1234 python3\n")
        env = clean_env(FAKE_NVSMI_MODE="demo", FAKE_NVSMI_DEMO_PROCESSES=processes)
        apps = subprocess.Popen(
            [stand_in(), "--query-compute-apps=timestamp,gpu_uuid,pid,used_gpu_memory,process_name",
             "--format=csv,nounits", "-lms", "100"], env=env, stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(apps.stdout.readline().strip(),
                             "timestamp, gpu_uuid, pid, used_gpu_memory [MiB], process_name")
            for _ in range(2):
                row = apps.stdout.readline().strip().split(", ")
                self.assertEqual(row[1:], ["GPU-00000000-0000-0000-0000-000000000005", str(me),
                                           "1234", "python3"])
        finally:
            apps.kill()
            apps.wait(PATIENCE)
        pmon = subprocess.Popen([stand_in(), "pmon", "-s", "um", "-d", "1"], env=env,
                                stdout=subprocess.PIPE, text=True)
        try:
            rows = [pmon.stdout.readline().split() for _ in range(10)]
        finally:
            pmon.kill()
            pmon.wait(PATIENCE)
        self.assertEqual(rows[7][:4], ["5", str(me), "C", "1234"])
        self.assertEqual(rows[7][-1], "python3")
        self.assertEqual(rows[2][:2], ["0", "-"])


class Demo(unittest.TestCase):
    def demo(self, *command, **popen):
        return subprocess.Popen([os.path.join(ROOT, "scripts", "demo"), *command],
                                env=clean_env(), **popen)

    def test_the_agent_names_real_users_and_commands_and_nothing_is_left(self):
        done = subprocess.run([os.path.join(ROOT, "scripts", "demo"), "nvsmi-agent", "snapshot",
                               "--format", "json"], env=clean_env(), capture_output=True,
                              text=True, timeout=PATIENCE)
        self.assertEqual(done.returncode, 0, done.stderr)
        snapshot = json.loads(done.stdout)
        processes = [p for gpu in snapshot["gpus"] for p in gpu["processes"] or []]
        users = {p["user"] for p in processes}
        if os.getuid() == 0:
            self.assertEqual(users, {"nobody", "daemon", "root"})
        else:
            self.assertEqual(users, {pwd.getpwuid(os.getuid()).pw_name})
        self.assertIn("python3 train.py --model llama-8b --seconds 3600",
                      [p["command"] for p in processes])
        self.assertEqual({gpu["index"] for gpu in snapshot["gpus"] if gpu["processes"]},
                         {1, 2, 3, 5})
        for p in processes:
            self.assertFalse(alive(p["pid"]), f"{p} still runs after the demo")

    def started(self, demo, running=True):
        """The demo's workloads, read through the command it runs (running: all still are)."""
        lines = [demo.stdout.readline().split() for _ in range(5)]
        self.assertTrue(all(len(line) >= 4 for line in lines), lines)
        pids = [int(line[1]) for line in lines]
        if running:
            self.assertTrue(all(alive(pid) for pid in pids))
        return pids

    def test_a_signal_to_the_demo_stops_everything(self):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
            with self.subTest(sig=sig):
                demo = self.demo("bash", "-c", 'cat "$FAKE_NVSMI_DEMO_PROCESSES"; '
                                 'dirname "$FAKE_NVSMI_DEMO_PROCESSES"; exec sleep 600',
                                 stdout=subprocess.PIPE, text=True, start_new_session=True)
                try:
                    pids = self.started(demo)
                    folder = demo.stdout.readline().strip()
                    demo.send_signal(sig)
                    demo.wait(PATIENCE)
                    for pid in pids:
                        wait_until(lambda: not alive(pid), f"workload {pid} ended after {sig}")
                    if sig != signal.SIGKILL:
                        self.assertFalse(os.path.exists(folder))
                        # The command it ran is stopped too: the kernel may take a moment to
                        # end what the signal reached on a busy machine, so it is waited for.
                        wait_until(lambda: subprocess.run(
                            ["pgrep", "-s", str(demo.pid)], capture_output=True).returncode != 0,
                            f"nothing left in the demo's session after {sig}")
                finally:
                    try:
                        os.killpg(demo.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    demo.wait(PATIENCE)
                    if sig == signal.SIGKILL:
                        subprocess.run(["rm", "-rf", folder])

    def test_the_workloads_have_a_deadline(self):
        env = clean_env(NVSMI_DEMO_SECONDS="1")
        short = subprocess.Popen([os.path.join(ROOT, "scripts", "demo"), "bash", "-c",
                                  'cat "$FAKE_NVSMI_DEMO_PROCESSES"; exec sleep 600'],
                                 env=env, stdout=subprocess.PIPE, text=True,
                                 start_new_session=True)
        try:
            # A second's deadline may be over before they are read on a busy machine.
            pids = self.started(short, running=False)
            for pid in pids:
                wait_until(lambda: not alive(pid), f"workload {pid} ended by its deadline")
        finally:
            os.killpg(short.pid, signal.SIGTERM)
            short.wait(PATIENCE)

    def shell_session(self, shell):
        """scripts/demo with no COMMAND under SHELL=shell on a pseudo-terminal: what it showed
        before its first prompt, the line `nvidia-smi -L | wc -l` gave, and the exit code of the
        demo after `exit 7`."""
        home = os.path.join(self.dir.name, "home")  # no ~/.bashrc: the shell's own prompt
        os.makedirs(home, exist_ok=True)
        env = clean_env(SHELL=shell, HOME=home)
        env.pop("PS1", None)
        env.pop("ENV", None)
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.execve(os.path.join(ROOT, "scripts", "demo"), ["scripts/demo"], env)
            finally:
                os._exit(127)
        screen = bytearray()

        def read_until(text):
            deadline = time.monotonic() + PATIENCE
            while text.encode() not in screen:
                if time.monotonic() > deadline:
                    raise AssertionError(f"not within {PATIENCE} s: {text!r} in {bytes(screen)!r}")
                ready, _, _ = select.select([fd], [], [], 0.1)
                if ready:
                    try:
                        screen.extend(os.read(fd, 65536))
                    except OSError:  # the demo ended: its terminal is gone
                        raise AssertionError(f"ended before {text!r}: {bytes(screen)!r}")

        try:
            read_until("(nvsmi demo) ")
            before_prompt = screen.decode(errors="replace")
            os.write(fd, b"echo gpus=$(nvidia-smi -L | wc -l)\n")
            read_until("gpus=8")
            os.write(fd, b"exit 7\n")
            _, status = os.waitpid(pid, 0)
        except BaseException:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
        finally:
            os.close(fd)
        return before_prompt, os.waitstatus_to_exitcode(status)

    def test_the_shell_says_what_it_is_and_marks_its_prompt(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        for shell in ("/bin/bash", "/bin/sh"):
            with self.subTest(shell=shell):
                shown, code = self.shell_session(shell)
                # The banner, before the first prompt: what this is, and how to leave it.
                self.assertIn("stand-in of 8 H100s", shown)
                self.assertIn("not this machine's GPUs", shown)
                self.assertIn("`exit` ends the demo", shown)
                self.assertLess(shown.index("`exit` ends"), shown.index("(nvsmi demo) "))
                self.assertEqual(code, 7)

    def test_a_command_gets_no_banner(self):
        done = subprocess.run([os.path.join(ROOT, "scripts", "demo"), "sh", "-c", "echo $PS1"],
                              env=clean_env(), capture_output=True, text=True, timeout=PATIENCE)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stderr, "")
        self.assertNotIn("nvsmi demo", done.stdout)

    def test_a_bad_deadline_is_refused_in_one_line(self):
        done = subprocess.run([os.path.join(ROOT, "scripts", "demo"), "true"],
                              env=clean_env(NVSMI_DEMO_SECONDS="1e9"), capture_output=True,
                              text=True, timeout=PATIENCE)
        self.assertEqual(done.returncode, 2)
        self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)


if __name__ == "__main__":
    AGENT, ROOT = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
