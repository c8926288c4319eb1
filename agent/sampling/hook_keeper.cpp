#include "sampling/hook_keeper.hpp"

#include "core/descriptor.hpp"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nvsmi {
namespace {

// Everything the keeper needs, made before fork: after it, in the keeper, only system calls and
// the stack (the agent has other threads, which may have held the allocator's lock).
struct Plan {
  const char *executable;
  char *const *argv;
  char *const *envp;
  pid_t parent;
  int report;
  long timeout_ms;
};

// How long the sweep may take to see every descendant gone: past it, one stuck in the kernel (D
// state, a hung driver call) is counted as left, and the keeper ends.
constexpr long sweep_ms = 5000;

// One line of the report, built on the stack.
class Line {
public:
  Line &add(const char *text) { return add(text, std::strlen(text)); }
  Line &add(const char *text, std::size_t length) {
    for (std::size_t i = 0; i < length && length_ < sizeof text_ - 1; ++i)
      text_[length_++] = text[i];
    return *this;
  }
  Line &add(long number) {
    char digits[24];
    std::size_t count = 0;
    unsigned long value =
        number < 0 ? 0UL - static_cast<unsigned long>(number) : static_cast<unsigned long>(number);
    do {
      digits[count++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    if (number < 0)
      add("-", 1);
    while (count > 0)
      add(&digits[--count], 1);
    return *this;
  }
  // Written whole at once: a report line never mixes with another.
  void say(int fd) {
    text_[length_++] = '\n';
    while (::write(fd, text_, length_) < 0 && errno == EINTR) {
    }
  }

private:
  char text_[128];
  std::size_t length_ = 0;
};

long now_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000L + now.tv_nsec / 1000000L;
}

void pause_ms(long ms) {
  timespec pause{ms / 1000, (ms % 1000) * 1000000L};
  while (::nanosleep(&pause, &pause) < 0 && errno == EINTR) {
  }
}

// Reads what fits of a small file into `buffer` (NUL-terminated); its length, 0 where unreadable.
std::size_t read_small(const char *path, char *buffer, std::size_t size) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  std::size_t got = 0;
  while (got < size - 1) {
    ssize_t n = ::read(fd, buffer + got, size - 1 - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  buffer[got] = '\0';
  return got;
}

// "/proc/<pid>/<leaf>" into `path`.
void proc_path(char *path, std::size_t size, long pid, const char *leaf) {
  char digits[24];
  std::size_t count = 0;
  do {
    digits[count++] = static_cast<char>('0' + pid % 10);
    pid /= 10;
  } while (pid != 0);
  std::size_t at = 0;
  for (const char *c = "/proc/"; *c && at < size - 1; ++c)
    path[at++] = *c;
  while (count > 0 && at < size - 1)
    path[at++] = digits[--count];
  for (const char *c = leaf; *c && at < size - 1; ++c)
    path[at++] = *c;
  path[at] = '\0';
}

// A process's parent, state and command name, from /proc/PID/stat ("4242 (sleep) S 17 ..."; the
// name may hold ')' and spaces, so it ends at the last ')').
struct Stat {
  long parent = -1;
  char state = '?';
  char name[20] = {};
};
bool read_stat(long pid, Stat &stat) {
  char path[48], text[512];
  proc_path(path, sizeof path, pid, "/stat");
  std::size_t length = read_small(path, text, sizeof text);
  const char *open = nullptr, *close = nullptr;
  for (std::size_t i = 0; i < length; ++i) {
    if (text[i] == '(' && !open)
      open = text + i;
    if (text[i] == ')')
      close = text + i;
  }
  if (!open || !close || close < open || close + 4 > text + length)
    return false;
  std::size_t name_length = static_cast<std::size_t>(close - open - 1);
  if (name_length > sizeof stat.name - 1)
    name_length = sizeof stat.name - 1;
  // A name is the process's own to choose: nothing in it may start a line of the report.
  for (std::size_t i = 0; i < name_length; ++i) {
    char c = open[1 + i];
    stat.name[i] = static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  }
  stat.name[name_length] = '\0';
  stat.state = close[2];
  long parent = 0;
  for (const char *c = close + 4; *c >= '0' && *c <= '9'; ++c)
    parent = parent * 10 + (*c - '0');
  stat.parent = parent;
  return true;
}

// Calls `visit(pid)` for each child of this (single-threaded) process: from
// /proc/self/task/<pid>/children where the kernel has it, else by the parent in every
// /proc/PID/stat.
template <typename Visit> void each_child(pid_t self, Visit visit) {
  char path[64];
  proc_path(path, sizeof path, self, "/task/");
  std::size_t at = std::strlen(path);
  char digits[24];
  std::size_t count = 0;
  for (long pid = self; pid != 0 || count == 0; pid /= 10)
    digits[count++] = static_cast<char>('0' + pid % 10);
  while (count > 0)
    path[at++] = digits[--count];
  std::memcpy(path + at, "/children", sizeof "/children");
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buffer[4096];
    long pid = -1;
    for (;;) {
      ssize_t got = ::read(fd, buffer, sizeof buffer);
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        break;
      for (ssize_t i = 0; i < got; ++i) {
        if (buffer[i] >= '0' && buffer[i] <= '9') {
          pid = (pid < 0 ? 0 : pid * 10) + (buffer[i] - '0');
        } else if (pid >= 0) {
          visit(pid);
          pid = -1;
        }
      }
    }
    if (pid >= 0)
      visit(pid);
    ::close(fd);
    return;
  }
  int proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0)
    return;
  alignas(8) char buffer[4096];
  for (;;) {
    long got = ::syscall(SYS_getdents64, proc, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break;
    for (long offset = 0; offset < got;) {
      unsigned short length;
      std::memcpy(&length, buffer + offset + 16, sizeof length);
      const char *name = buffer + offset + 19;
      offset += length;
      long pid = 0;
      bool digits_only = *name != '\0';
      for (const char *c = name; *c && digits_only; ++c) {
        digits_only = *c >= '0' && *c <= '9' && pid < 100000000;
        pid = pid * 10 + (*c - '0');
      }
      Stat stat;
      if (digits_only && read_stat(pid, stat) && stat.parent == self)
        visit(pid);
    }
  }
  ::close(proc);
}

// Ends every descendant (they all come to the keeper as orphans) and says whom it killed beside
// the program. Returns once none is left, or after sweep_ms.
void sweep(pid_t self, pid_t program, bool &program_reaped, int &program_status, int report) {
  long pids_seen[512];
  std::size_t seen = 0, killed = 0;
  long until = now_ms() + sweep_ms;
  for (;;) {
    for (;;) {
      int status = 0;
      pid_t ended = ::waitpid(-1, &status, WNOHANG);
      if (ended < 0 && errno == EINTR)
        continue;
      if (ended < 0) { // no child left
        if (killed > 0)
          Line().add("N ").add(static_cast<long>(killed)).say(report);
        return;
      }
      if (ended == 0)
        break;
      if (ended == program) {
        program_reaped = true;
        program_status = status;
      }
    }
    std::size_t left = 0;
    each_child(self, [&](long pid) {
      Stat stat;
      if (!read_stat(pid, stat) || stat.state == 'Z')
        return;
      ++left;
      ::kill(static_cast<pid_t>(pid), SIGKILL);
      if (pid == program)
        return;
      for (std::size_t i = 0; i < seen; ++i)
        if (pids_seen[i] == pid)
          return;
      if (seen < sizeof pids_seen / sizeof pids_seen[0])
        pids_seen[seen++] = pid;
      if (killed++ < kept_named_at_most)
        Line().add("K ").add(pid).add(" ").add(stat.name).say(report);
    });
    if (now_ms() >= until) {
      if (killed > 0)
        Line().add("N ").add(static_cast<long>(killed)).say(report);
      Line().add("L ").add(static_cast<long>(left)).say(report);
      return;
    }
    pause_ms(2);
  }
}

[[noreturn]] void keep(const Plan &plan) {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigemptyset(&default_action.sa_mask);
  for (int signal = 1; signal < NSIG; ++signal)
    if (signal != SIGKILL && signal != SIGSTOP)
      ::sigaction(signal, &default_action, nullptr); // the agent's handlers are not ours
  // A report to an agent that has died must not end the keeper before its sweep.
  struct sigaction ignore = default_action;
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, nullptr);
  // SIGTERM (the agent's, or its death) and SIGCHLD are waited for, never delivered.
  sigset_t waited;
  ::sigemptyset(&waited);
  ::sigaddset(&waited, SIGTERM);
  ::sigaddset(&waited, SIGCHLD);
  ::sigprocmask(SIG_SETMASK, &waited, nullptr);
  if (::setpgid(0, 0) != 0 || ::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != plan.parent)
    ::_exit(1); // the agent died before it could be told: nothing was started
  int report = ::fcntl(plan.report, F_DUPFD_CLOEXEC, 3);
  int null = ::open("/dev/null", O_RDWR);
  if (report < 0 || null < 0 || ::dup2(null, 0) < 0 || ::dup2(null, 1) < 0 || ::dup2(null, 2) < 0)
    ::_exit(1);
  if (report != 3) {
    if (::dup3(report, 3, O_CLOEXEC) < 0)
      ::_exit(1);
    report = 3;
  }
  release_descriptors_from(4, true); // the agent's listening socket, epoll, logs, locks
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    Line().add("R ").add(static_cast<long>(errno)).say(report);
  long deadline = now_ms() + plan.timeout_ms;

  pid_t program = ::fork();
  if (program == 0) {
    sigset_t none;
    ::sigemptyset(&none);
    ::sigaction(SIGPIPE, &default_action, nullptr); // an ignored signal stays so through exec
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(plan.executable, plan.argv, plan.envp);
    Line().add("E ").add(static_cast<long>(errno)).say(report);
    ::_exit(127);
  }
  if (program < 0) {
    Line().add("E ").add(static_cast<long>(errno)).say(report);
    ::_exit(0);
  }
  pid_t self = ::getpid();
  bool reaped = false;
  int status = 0;
  const char *why = nullptr; // "T": its deadline; "X": stopped by SIGTERM
  while (!reaped && !why) {
    for (;;) { // what has ended: the program, or an orphan it left
      int ended_status = 0;
      pid_t ended = ::waitpid(-1, &ended_status, WNOHANG);
      if (ended < 0 && errno == EINTR)
        continue;
      if (ended <= 0)
        break;
      if (ended == program) {
        reaped = true;
        status = ended_status;
      }
    }
    if (reaped)
      break;
    long left = deadline - now_ms();
    if (left <= 0) {
      why = "T";
      break;
    }
    timespec wait{left / 1000, (left % 1000) * 1000000L};
    siginfo_t info{};
    int signal = ::sigtimedwait(&waited, &info, &wait);
    if (signal == SIGTERM)
      why = "X";
  }
  if (why)
    Line().add(why).say(report);
  sweep(self, program, reaped, status, report);
  if (reaped)
    Line().add("S ").add(static_cast<long>(status)).say(report);
  ::_exit(0);
}

} // namespace

KeptStart start_kept(const std::string &executable, const std::vector<std::string> &arguments,
                     const std::vector<std::string> &environment, long timeout_ms) {
  KeptStart started;
  std::vector<char *> argv, envp;
  for (const std::string &word : arguments)
    argv.push_back(const_cast<char *>(word.c_str()));
  argv.push_back(nullptr);
  for (const std::string &variable : environment)
    envp.push_back(const_cast<char *>(variable.c_str()));
  envp.push_back(nullptr);
  int pipe[2];
  if (::pipe2(pipe, O_CLOEXEC) != 0) {
    started.error = errno;
    return started;
  }
  Plan plan{executable.c_str(), argv.data(), envp.data(), ::getpid(), pipe[1], timeout_ms};
  // No signal handler of the agent's may run in the keeper before it has put back the defaults.
  sigset_t all, before;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  pid_t keeper = ::fork();
  if (keeper == 0)
    keep(plan);
  int fork_error = errno;
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  ::close(pipe[1]);
  if (keeper < 0) {
    ::close(pipe[0]);
    started.error = fork_error;
    return started;
  }
  started.keeper = keeper;
  started.report = pipe[0];
  return started;
}

KeptEnd read_kept_end(const std::string &report) {
  KeptEnd end;
  std::size_t at = 0;
  while (at < report.size()) {
    std::size_t line_end = report.find('\n', at);
    if (line_end == std::string::npos)
      break; // a keeper killed while it wrote: the rest is not said
    std::string line = report.substr(at, line_end - at);
    at = line_end + 1;
    if (line.size() < 1)
      continue;
    std::string rest = line.size() > 2 ? line.substr(2) : "";
    auto number = [&rest]() -> long {
      long value = 0;
      for (char c : rest) {
        if (c < '0' || c > '9')
          break;
        value = value * 10 + (c - '0');
      }
      return value;
    };
    switch (line[0]) {
    case 'S':
      end.program_ended = true;
      end.program_status = static_cast<int>(number());
      break;
    case 'E':
      end.exec_error = static_cast<int>(number());
      break;
    case 'K': {
      std::size_t space = rest.find(' ');
      end.killed.push_back("pid " + rest.substr(0, space) + " (" +
                           (space == std::string::npos ? "" : rest.substr(space + 1)) + ")");
      break;
    }
    case 'N':
      end.killed_count = static_cast<std::size_t>(number());
      break;
    case 'L':
      end.left = static_cast<std::size_t>(number());
      break;
    case 'T':
      end.deadline = true;
      break;
    case 'X':
      end.stopped = true;
      break;
    case 'R':
      end.no_subreaper = static_cast<int>(number());
      break;
    default:
      break;
    }
  }
  return end;
}

} // namespace nvsmi
