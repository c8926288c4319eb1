#include "support.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace test {
namespace {

// Set before main() so that every process a test starts inherits it (see running_here).
const std::string run_tag = [] {
  std::string tag = std::to_string(::getpid()) + "-" +
                    std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  ::setenv("NVSMI_TEST_RUN", tag.c_str(), 1);
  // A suite started from a `sudo -i` shell would otherwise see every --nvidia-smi and --fixture
  // refused as under sudo (or doas, pkexec); the tests of that refusal set them themselves.
  for (const char *name : {"SUDO_UID", "DOAS_USER", "PKEXEC_UID"})
    ::unsetenv(name);
  return tag;
}();

} // namespace

bool wait_until(const std::function<bool()> &condition, std::chrono::milliseconds deadline,
                std::chrono::milliseconds every) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= end)
      return false;
    std::this_thread::sleep_for(every);
  }
  return true;
}

std::string shell_wait_until(const std::string &condition, std::chrono::seconds deadline) {
  return "for _ in $(seq " + std::to_string(deadline.count() * 10) + "); do { " + condition +
         "; } >/dev/null 2>&1 && break; sleep 0.1; done";
}

bool running_here(const std::string &command) {
  const std::string nul(1, '\0'), entry_of_ours = nul + "NVSMI_TEST_RUN=" + run_tag + nul;
  std::error_code error;
  for (const auto &entry : std::filesystem::directory_iterator("/proc", error)) {
    std::string proc = entry.path().string();
    std::string environment, command_line, stat;
    try {
      environment = read_file(proc + "/environ");
      command_line = read_file(proc + "/cmdline");
      stat = read_file(proc + "/stat");
    } catch (const std::exception &) {
      continue; // not a process, gone, or not ours to read
    }
    std::replace(command_line.begin(), command_line.end(), '\0', ' ');
    std::size_t paren = stat.rfind(')');
    bool zombie = paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z';
    if (!zombie && command_line.compare(0, command.size(), command) == 0 &&
        (nul + environment).find(entry_of_ours) != std::string::npos)
      return true;
  }
  return false;
}

std::string fixture_path(const std::string &relative) {
  return std::string(FIXTURES_DIR) + "/" + relative;
}

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

void write_file(const std::string &path, const std::string &content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

namespace {
// The folders temporary_folder made, removed when the test executable ends: a CI run made about
// 9,000 and left them all in /tmp. Only by the process that made them, not by a forked child that
// exits; NVSMI_TEST_KEEP=1 keeps them, for a look after a failure.
class MadeFolders {
public:
  void add(const std::string &path) {
    std::lock_guard<std::mutex> lock(mutex_);
    paths_.push_back(path);
  }
  ~MadeFolders() {
    const char *keep = std::getenv("NVSMI_TEST_KEEP");
    if (::getpid() != owner_ || (keep && std::string(keep) == "1"))
      return;
    for (const std::string &path : paths_) {
      std::error_code failed;
      // A test may have taken the permissions off a folder inside to make the agent fail.
      for (auto it = std::filesystem::recursive_directory_iterator(
               path, std::filesystem::directory_options::skip_permission_denied, failed);
           !failed && it != std::filesystem::recursive_directory_iterator(); it.increment(failed))
        if (it->is_directory(failed) && !it->is_symlink(failed))
          std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                       std::filesystem::perm_options::add, failed);
      std::filesystem::remove_all(path, failed);
    }
  }

private:
  std::mutex mutex_;
  std::vector<std::string> paths_;
  pid_t owner_ = ::getpid();
};
MadeFolders &made_folders() {
  static MadeFolders folders;
  return folders;
}
} // namespace

std::string temporary_folder() {
  const char *base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/nvsmi-test.XXXXXX";
  if (!mkdtemp(pattern.data()))
    throw std::runtime_error("mkdtemp failed");
  made_folders().add(pattern);
  return pattern;
}

std::string quote(const std::string &word) {
  std::string out = "'";
  for (char c : word)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Run run_shell(const std::string &command) {
  static const std::string folder = temporary_folder();
  std::string out_path = folder + "/out", err_path = folder + "/err";
  int status = std::system(
      ("( " + command + " ) >" + quote(out_path) + " 2>" + quote(err_path) + " </dev/null")
          .c_str());
  Run run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = read_file(out_path);
  run.err = read_file(err_path);
  return run;
}

bool installed(const std::string &program) {
  return run_shell("command -v " + quote(program)).exit_code == 0;
}

Run chromium(const std::string &arguments) {
  // Its temporary files (org.chromium.Chromium.*) in the profile's folder, removed with it.
  std::string profile = temporary_folder();
  return run_shell("TMPDIR=" + quote(profile) +
                   " timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic "
                   "--no-first-run --disable-background-networking --disable-component-update "
                   "--disable-sync --user-data-dir=" +
                   quote(profile) + " " + arguments);
}

void keep_artifact(const std::string &name, const std::string &content) {
  std::filesystem::create_directories(ARTIFACTS_DIR);
  write_file(std::string(ARTIFACTS_DIR) + "/" + name, content);
}

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

std::vector<std::string> non_empty_lines_of(const std::string &text) {
  std::vector<std::string> lines = lines_of(text);
  lines.erase(std::remove(lines.begin(), lines.end(), std::string()), lines.end());
  return lines;
}

Run promtool_check_metrics(const std::string &metrics) {
  std::string file = temporary_folder() + "/metrics";
  write_file(file, metrics);
  return run_shell("promtool check metrics <" + quote(file));
}

std::string nvidia_smi_upgraded_after_start(const std::string &folder) {
  std::string wrapper = folder + "/nvidia-smi";
  write_file(wrapper, "#!/bin/sh\n"
                      "case \"$1\" in\n"
                      "--query-gpu=* | -q)\n"
                      "  [ -e \"$0.upgraded\" ] || { : >\"$0.upgraded\"; chmod -x \"$0\"; } ;;\n"
                      "esac\n"
                      "exec " +
                          quote(std::string(SCRIPTS_DIR) + "/fake-nvidia-smi") + " \"$@\"\n");
  write_file(folder + "/apps", "GPU-00000000-0000-0000-0000-000000000000, " +
                                   std::to_string(::getpid()) + ", 1024 MiB, tests\n");
  if (run_shell("chmod +x " + quote(wrapper)).exit_code != 0)
    throw std::runtime_error("cannot chmod " + wrapper);
  return wrapper;
}

std::string upgraded_nvidia_smi_environment(const std::string &folder) {
  return "FAKE_NVSMI_APPS=" + quote(folder + "/apps") +
         " FAKE_NVSMI_PROCESS_ARGS=" + quote(folder + "/process-calls") + " ";
}

std::string with_lost_readings(std::string xml, int gpu, const std::string &element) {
  std::size_t at = 0;
  for (int i = 0; i <= gpu; ++i)
    if ((at = xml.find("<gpu ", at + (i > 0))) == std::string::npos)
      throw std::runtime_error("no GPU " + std::to_string(gpu) + " in the XML");
  std::size_t begin = xml.find("<" + element + ">", at);
  std::size_t end = xml.find("</" + element + ">", begin);
  if (begin == std::string::npos || end == std::string::npos || end > xml.find("</gpu>", at))
    throw std::runtime_error("GPU " + std::to_string(gpu) + " has no <" + element + ">");
  // Text between a tag's end and the next tag's start, not only white space: a value.
  static const std::regex value(R"(>[^<>]*[^<>\s][^<>]*<)");
  std::string block = xml.substr(begin, end + 1 - begin); // with the closing tag's '<'
  xml.replace(begin, end + 1 - begin, std::regex_replace(block, value, ">[GPU is lost]<"));
  return xml;
}

std::string root_made_by_shipped_tmpfiles() {
  if (!installed("systemd-tmpfiles")) {
    WARN("skipped: no systemd-tmpfiles (apt-get install systemd)");
    return {};
  }
  std::string root = temporary_folder();
  Run made = run_shell("systemd-tmpfiles --create --root=" + quote(root) + " " +
                       SCRIPTS_DIR "/../deploy/tmpfiles.d/nvsmi-agent.conf");
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  return root;
}

} // namespace test
