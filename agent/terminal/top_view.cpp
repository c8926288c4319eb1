#include "terminal/top_view.hpp"

#include "core/exit_codes.hpp"

#include <curses.h>
#include <term.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <langinfo.h>
#include <sys/ioctl.h>
#include <unistd.h>

namespace nvsmi {
namespace {

// Colour pairs, numbered by Tone.
short pair_of(Tone style) { return static_cast<short>(static_cast<int>(style) + 1); }

// Bold is kept for the fleet summary (Span::strong), so that the answer is what stands out:
// headings and keys are underlined, an alarm is red (reverse video without colours).
attr_t attributes(Tone style, bool colour) {
  switch (style) {
  case Tone::normal:
    return A_NORMAL;
  case Tone::heading:
    return A_UNDERLINE;
  case Tone::dim:
    return colour ? A_DIM | COLOR_PAIR(pair_of(style)) : A_DIM;
  case Tone::good:
  case Tone::warning:
  case Tone::busy:
    return colour ? COLOR_PAIR(pair_of(style)) : A_NORMAL;
  case Tone::alarm:
    return colour ? COLOR_PAIR(pair_of(style)) : A_REVERSE;
  }
  return A_NORMAL;
}

} // namespace

void TopView::check_terminal() {
  if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO))
    throw AgentError(exit_usage, "top needs a terminal: standard input and output must be one "
                                 "(use watch to sample into a pipe or a file)");
  const char *term = std::getenv("TERM");
  int error = 0;
  if (!term || !*term || ::setupterm(term, STDOUT_FILENO, &error) != OK)
    throw AgentError(exit_usage, std::string("top cannot drive this terminal: TERM=") +
                                     (term ? term : "(unset)") +
                                     " is not in this machine's terminfo");
  // setupterm leaves a terminal description behind; newterm makes its own.
  ::del_curterm(cur_term);
}

TopView::TopView() {
  check_terminal();
  unicode_ = std::strcmp(::nl_langinfo(CODESET), "UTF-8") == 0;
  // Esc alone clears the filters: ncurses waits this long for the rest of an escape sequence.
  ::set_escdelay(25);
  SCREEN *screen = ::newterm(nullptr, stdout, stdin);
  if (!screen)
    throw AgentError(exit_usage, "top cannot open the terminal");
  screen_ = screen;
  ::cbreak(); // Ctrl-C still interrupts (SIGINT), which the run catches
  ::noecho();
  ::nonl();
  ::keypad(stdscr, TRUE);
  ::nodelay(stdscr, TRUE);
  ::curs_set(0);
  // A click selects a process; presses are reported at once rather than waited on to tell a
  // click from a drag. (Shift and a drag still select text in most terminals.)
  ::mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED, nullptr);
  ::mouseinterval(0);
  if (::has_colors()) {
    ::start_color();
    ::use_default_colors();
    ::init_pair(pair_of(Tone::dim), COLOR_WHITE, -1);
    ::init_pair(pair_of(Tone::good), COLOR_GREEN, -1);
    ::init_pair(pair_of(Tone::warning), COLOR_YELLOW, -1);
    ::init_pair(pair_of(Tone::alarm), COLOR_RED, -1);
    ::init_pair(pair_of(Tone::busy), COLOR_CYAN, -1);
  }
}

TopView::~TopView() {
  ::endwin();
  ::delscreen(static_cast<SCREEN *>(screen_));
}

ScreenSize TopView::size() const { return {COLS, LINES}; }

void TopView::resize() {
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_row > 0 && size.ws_col > 0)
    ::resize_term(size.ws_row, size.ws_col);
  // The terminal kept what it could of the old screen, where it chose: a terminal that shrinks
  // keeps the rows by the cursor (the bottom ones), while ncurses believes the top ones are left.
  // Sending only the cells that differ from that belief would leave a broken screen for good:
  // the next frame clears and paints all of it.
  ::clearok(curscr, TRUE);
}

void TopView::draw(const std::vector<ScreenLine> &screen) {
  bool colour = ::has_colors();
  // erase(), not clear(): clear() would repaint every cell of the terminal on each frame.
  ::werase(stdscr);
  int row = 0;
  for (const ScreenLine &line : screen) {
    if (row >= LINES)
      break;
    ::wmove(stdscr, row, 0);
    for (const Span &span : line) {
      attr_t attrs = attributes(span.style, colour) | (span.selected ? A_REVERSE : A_NORMAL) |
                     (span.strong ? A_BOLD : A_NORMAL);
      ::wattron(stdscr, attrs);
      // The last cell of the last line cannot be written without scrolling: waddstr then returns
      // ERR after drawing the rest, which is what is wanted.
      ::waddstr(stdscr, span.text.c_str());
      ::wattroff(stdscr, attrs);
    }
    ++row;
  }
  ::wnoutrefresh(stdscr);
  ::doupdate();
}

std::optional<TopKey> TopView::read_key() {
  int key = ::wgetch(stdscr);
  switch (key) {
  case ERR:
    return std::nullopt;
  case 'q':
  case 'Q':
    return TopKey::quit;
  case 'm':
    return TopKey::sort_memory;
  case 'c':
    return TopKey::sort_cpu;
  case 's':
    return TopKey::sort_sm;
  case 'p':
    return TopKey::sort_pid;
  case 'u':
    return TopKey::sort_user;
  case 'g':
    return TopKey::cycle_gpu;
  case 'f':
    return TopKey::cycle_user;
  case 'a':
  case 27: // Esc
    return TopKey::clear_filters;
  case KEY_UP:
  case 'k':
    return TopKey::scroll_up;
  case KEY_DOWN:
  case 'j':
    return TopKey::scroll_down;
  case KEY_PPAGE:
    return TopKey::page_up;
  case KEY_NPAGE:
  case ' ':
    return TopKey::page_down;
  case KEY_RESIZE:
    return TopKey::resize;
  case KEY_MOUSE: {
    MEVENT event{};
    if (::getmouse(&event) != OK || !(event.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED)))
      return TopKey::none;
    clicked_line_ = event.y;
    return TopKey::click;
  }
  case '?':
  case 'h':
    return TopKey::help;
  case 't':
    return TopKey::tree;
  case 'z':
    return TopKey::compact;
  case 'T':
    return TopKey::signal_term;
  case 'K':
    return TopKey::signal_kill;
  case 'I':
    return TopKey::signal_interrupt;
  case 'y':
  case 'Y':
    return TopKey::confirm;
  default:
    return TopKey::none;
  }
}

} // namespace nvsmi
