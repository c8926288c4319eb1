// A private tmux server for tests of what a person sees and types at a terminal (`top`, Ctrl-C
// under `run`): its own socket, one window with a shell of the given size, killed with everything
// in it when the test ends, passed or failed.
#pragma once

#include "support.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <string>
#include <unistd.h>

namespace test {

// A tmux server of this test's own (its own socket), with one window running a shell of the given
// size; killed with everything in it when the test ends, passed or failed.
class Tmux {
public:
  Tmux(int columns, int lines) {
    static std::atomic<int> count{0};
    name_ = "nvsmi-test-" + std::to_string(::getpid()) + "-" + std::to_string(++count);
    Run run = tmux("new-session -d -x " + std::to_string(columns) + " -y " + std::to_string(lines) +
                   " " + quote("env PS1='$ ' sh"));
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
  }
  ~Tmux() { tmux("kill-server"); }
  Tmux(const Tmux &) = delete;
  Tmux &operator=(const Tmux &) = delete;

  Run tmux(const std::string &arguments) {
    return run_shell("LC_ALL=C.UTF-8 tmux -u -L " + name_ + " -f /dev/null " + arguments);
  }
  // What the pane shows now, one line per row.
  std::string screen() { return tmux("capture-pane -p").out; }
  bool shows(const std::string &text) { return screen().find(text) != std::string::npos; }
  bool wait_for(const std::string &text) {
    return wait_until([&] { return shows(text); });
  }
  bool wait_for(const std::function<bool(const std::string &)> &condition) {
    return wait_until([&] { return condition(screen()); });
  }
  // Types `line` into the shell and presses Enter.
  void run(const std::string &line) {
    tmux("send-keys -l " + quote(line));
    tmux("send-keys Enter");
  }
  void keys(const std::string &literal) { tmux("send-keys -l " + quote(literal)); }
  void key(const std::string &name) { tmux("send-keys " + name); }
  void resize(int columns, int lines) {
    tmux("resize-window -x " + std::to_string(columns) + " -y " + std::to_string(lines));
  }

private:
  std::string name_;
};

} // namespace test
