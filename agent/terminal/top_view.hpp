// The terminal `top` draws on, through ncurses: opened on construction (alternate screen, no
// echo, keys one at a time), given back as it was on destruction, whatever ended the run.
#pragma once

#include "terminal/top_layout.hpp"

#include <fcntl.h>
#include <optional>
#include <unistd.h>

namespace nvsmi {

// A key as `top` understands it.
enum class TopKey {
  none,
  quit,
  sort_memory,
  sort_cpu,
  sort_sm,
  sort_pid,
  sort_user,
  cycle_gpu,
  cycle_user,
  clear_filters,
  scroll_up, // with a process table: the selection moves
  scroll_down,
  page_up,
  page_down,
  resize,
  help,
  tree,
  compact,
  signal_term,
  signal_kill,
  signal_interrupt,
  confirm, // y: send the signal asked for
  click,   // the left button pressed: clicked_line() says on which line
};

// Asio makes the keyboard's descriptor non-blocking, and the flag belongs to the terminal's open
// file, which the shell shares: it is put back as it was, however the run ends, or the shell
// that started top would find its input non-blocking.
class InputFlags {
public:
  InputFlags() : flags_(::fcntl(STDIN_FILENO, F_GETFL)) {}
  ~InputFlags() {
    if (flags_ >= 0)
      ::fcntl(STDIN_FILENO, F_SETFL, flags_);
  }
  InputFlags(const InputFlags &) = delete;
  InputFlags &operator=(const InputFlags &) = delete;

private:
  int flags_;
};

class TopView {
public:
  // Throws AgentError(exit_usage) when stdin or stdout is not a terminal or TERM names none
  // this machine knows. Call setlocale first: ncurses reads the locale when it starts.
  TopView();
  ~TopView();
  TopView(const TopView &) = delete;
  TopView &operator=(const TopView &) = delete;

  // Whether the locale is UTF-8 (block characters can be drawn).
  bool unicode() const { return unicode_; }
  ScreenSize size() const;
  // Takes the terminal's new size (after SIGWINCH) from the kernel; the next draw paints the
  // whole screen.
  void resize();
  // Paints `screen`; ncurses sends the terminal only the cells that differ from the last frame.
  void draw(const std::vector<ScreenLine> &screen);
  // The next key typed, without waiting: nullopt when none is waiting.
  std::optional<TopKey> read_key();
  // The screen line of the last TopKey::click, from the top (0).
  int clicked_line() const { return clicked_line_; }

  // The checks of the constructor, without opening the screen: throws as it does.
  static void check_terminal();

private:
  bool unicode_ = false;
  int clicked_line_ = -1;
  void *screen_ = nullptr; // ncurses' SCREEN, kept out of this header
};

} // namespace nvsmi
