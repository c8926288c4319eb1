// Shared by the tests: fixture paths, files, and running the built agent.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace test {

// How long a test waits for something that takes well under a second on an idle machine. A
// machine busy with other work (a build, other test runs, `stress-ng --cpu`) can take many times
// longer, and a wait that polls returns as soon as its condition holds, so this costs nothing when
// things work. It stays far below the suites' ctest TIMEOUT, so a fault fails its test instead of
// hanging it.
constexpr std::chrono::seconds patience{60};
// The bound for "it returned promptly": about a second on an idle machine, minutes or never when
// the fault a test looks for is there (a wait for a hung child or for a timeout of 20 s or more).
constexpr std::chrono::seconds promptly{15};

// Polls `condition` every `every` until it holds (true) or `deadline` has passed (false).
bool wait_until(const std::function<bool()> &condition,
                std::chrono::milliseconds deadline = patience,
                std::chrono::milliseconds every = std::chrono::milliseconds(50));
// A shell loop that polls `condition` (a shell command) every 0.1 s until it succeeds or
// `deadline` has passed, for a test's script where a fixed `sleep` would guess at the time needed.
std::string shell_wait_until(const std::string &condition,
                             std::chrono::seconds deadline = patience);
// Whether a process started by this test program (it carries NVSMI_TEST_RUN=<this program's
// tag> in its environment, as everything run_shell starts does) whose command line starts with
// `command` is still running; a zombie has left. The same command run by another test run on
// this machine (another checkout, another CI job) is not counted, nor is a shell or an agent that
// merely names it among its arguments.
bool running_here(const std::string &command);
// The command line of the stand-in nvidia-smi, and of its subshells, while it runs.
inline const std::string fake_nvidia_smi_process = "bash " SCRIPTS_DIR "/fake-nvidia-smi";

std::string fixture_path(const std::string &relative);
std::string read_file(const std::string &path);
void write_file(const std::string &path, const std::string &content);
// Keeps what a screen or report showed as ARTIFACTS_DIR/NAME, for a person (and CI) to open.
void keep_artifact(const std::string &name, const std::string &content);
// A fresh empty folder under the system's temporary folder.
std::string temporary_folder();
// An nvidia-smi in `folder` (its path is returned) that runs the stand-in, and whose first GPU
// query (--query-gpu, -q) takes its execute bit off before it answers, as a driver upgrade that
// replaces nvidia-smi right after the agent started it: every later start fails to exec
// (Permission denied) until the test gives the bit back (`chmod +x`). Compute-apps answer with
// one process of this test's on GPU 0 (FAKE_NVSMI_APPS); each process query's arguments go to
// `folder`/process-calls.
std::string nvidia_smi_upgraded_after_start(const std::string &folder);
// The environment (FAKE_NVSMI_APPS, FAKE_NVSMI_PROCESS_ARGS) that goes with it.
std::string upgraded_nvidia_smi_environment(const std::string &folder);

// nvidia-smi XML (`xml`) with every value under GPU `gpu`'s first <`element`> (any depth) replaced
// by "[GPU is lost]", as nvidia-smi prints a reading of a GPU it lost.
std::string with_lost_readings(std::string xml, int gpu, const std::string &element);

struct Run {
  int exit_code;
  std::string out, err;
};
// Runs `command` through /bin/sh with stdout and stderr captured.
Run run_shell(const std::string &command);
// Runs the built nvsmi-agent with `arguments` (already shell-quoted where needed); only in the
// suites that run the agent (agent_support.cpp).
Run run_agent(const std::string &arguments);
std::string quote(const std::string &word);
// Whether `program` is on PATH (tests that need it warn and skip where it is not).
bool installed(const std::string &program);
// Runs headless Chromium, with a fresh profile and no network of its own, on `arguments`.
Run chromium(const std::string &arguments);

// A fresh root with the shipped tmpfiles.d file (deploy/tmpfiles.d/nvsmi-agent.conf) applied in it
// by `systemd-tmpfiles --create --root`, for a test to stat what it made; empty, with a warning
// that the test is skipped, where systemd-tmpfiles is not installed.
std::string root_made_by_shipped_tmpfiles();

// The lines of `text`, without their '\n' (a last line without one counts too).
std::vector<std::string> lines_of(const std::string &text);
// The same without its empty lines.
std::vector<std::string> non_empty_lines_of(const std::string &text);

// Prometheus's own linter on a /metrics text: `promtool check metrics`. Only where
// installed("promtool").
Run promtool_check_metrics(const std::string &metrics);

} // namespace test
