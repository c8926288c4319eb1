// Processes as the kernel sees them, for the tests that no child is left behind: an agent run in
// the background, zombies among its children, and marker processes found by name in /proc.
#pragma once

#include "support.hpp"

#include <chrono>
#include <csignal>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace test {

// A process's state letter (R, S, Z, ...) and parent, from /proc/PID/stat; state 0 when gone.
struct ProcessStat {
  char state = 0;
  int parent = 0;
};
// A /proc file's text, or empty where it cannot be read. Read with read(2) rather than an
// ifstream: a process that ends between the open and the read makes read fail with ESRCH, which
// libstdc++'s filebuf turns into an exception ("basic_filebuf::underflow error reading the file:
// No such process") out of an istreambuf_iterator, and a poll for the process's end then threw
// instead of seeing it gone (the sanitizer build's serve suite, in CI).
inline std::string read_proc_file(const std::string &path) {
  std::string text;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return text;
  char buffer[4096];
  for (ssize_t got; (got = ::read(fd, buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<std::size_t>(got));
  ::close(fd);
  return text;
}

inline ProcessStat process_stat(int pid) {
  std::string stat = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  std::size_t paren = stat.rfind(')'); // the name may hold spaces and parentheses
  ProcessStat result;
  if (paren == std::string::npos)
    return result;
  std::istringstream rest(stat.substr(paren + 1));
  rest >> result.state >> result.parent;
  return result;
}

// Gone, or a zombie that only its new parent can still reap.
inline bool process_ended(int pid) {
  char state = process_stat(pid).state;
  return state == 0 || state == 'Z';
}

inline std::vector<int> all_pids() {
  std::vector<int> pids;
  if (DIR *proc = ::opendir("/proc")) {
    while (dirent *entry = ::readdir(proc))
      if (int pid = std::atoi(entry->d_name); pid > 0)
        pids.push_back(pid);
    ::closedir(proc);
  }
  return pids;
}

// `parent`'s children that have exited and not been reaped.
inline std::vector<int> zombie_children(int parent) {
  std::vector<int> zombies;
  for (int pid : all_pids()) {
    ProcessStat stat = process_stat(pid);
    if (stat.parent == parent && stat.state == 'Z')
      zombies.push_back(pid);
  }
  return zombies;
}

// Live processes whose argv[0] is exactly `name` (a marker the stand-in starts).
inline std::vector<int> processes_named(const std::string &name) {
  std::vector<int> found;
  for (int pid : all_pids()) {
    std::string arguments = read_proc_file("/proc/" + std::to_string(pid) + "/cmdline");
    std::string argv0 = arguments.substr(0, arguments.find('\0'));
    if (!arguments.empty() && argv0 == name && !process_ended(pid))
      found.push_back(pid);
  }
  return found;
}

// The pid a program wrote into `path`, or 0 while it has not (yet) written a whole one.
inline int pid_in_file(const std::string &path) {
  std::ifstream file(path);
  int pid = 0;
  return file >> pid && file.peek() == '\n' ? pid : 0;
}

// A name no other test (here or in another checkout running at the same time) uses.
inline std::string unique_marker() {
  std::string folder = temporary_folder();
  return "nvsmi-marker-" + folder.substr(folder.rfind('.') + 1);
}

// A command (`ENV=... program args`, which the shell execs, so that pid() is the program's)
// run in the background with its stdout, stderr and exit code kept in a folder.
class Background {
public:
  explicit Background(const std::string &command) : folder_(temporary_folder()) {
    std::string code = quote(folder_ + "/code");
    run_shell("( " + command + " >" + quote(folder_ + "/out") + " 2>" + quote(folder_ + "/err") +
              " </dev/null & echo $! >" + quote(folder_ + "/pid") + "; wait $!; echo $? >" + code +
              ".part; mv " + code + ".part " + code + " ) >/dev/null 2>&1 &");
    wait_until([&] {
      std::ifstream file(folder_ + "/pid");
      return static_cast<bool>(file >> pid_);
    });
  }
  ~Background() {
    if (pid_ > 0 && !exit_code())
      ::kill(pid_, SIGKILL);
  }
  Background(const Background &) = delete;
  Background &operator=(const Background &) = delete;

  int pid() const { return pid_; }
  std::string out() const { return read(folder_ + "/out"); }
  std::string err() const { return read(folder_ + "/err"); }
  // The exit code as a shell reports it (128 + N for a death by signal N), once it has ended.
  std::optional<int> exit_code() const {
    std::ifstream file(folder_ + "/code");
    int code = 0;
    if (file >> code)
      return code;
    return std::nullopt;
  }
  // Waits for the end; -1 past the deadline.
  int wait(std::chrono::seconds deadline = std::chrono::seconds(30)) const {
    wait_until([&] { return exit_code().has_value(); }, deadline);
    return exit_code().value_or(-1);
  }
  bool err_contains(const std::string &text) const { return err().find(text) != std::string::npos; }

private:
  static std::string read(const std::string &path) {
    try {
      return read_file(path);
    } catch (const std::exception &) {
      return "";
    }
  }
  std::string folder_;
  int pid_ = 0;
};

} // namespace test
