#include "commands/top_fleet.hpp"
#include "commands/top_input.hpp"

#include "core/exit_codes.hpp"
#include "core/number_text.hpp"
#include "core/screen_text.hpp"
#include "fleet/fleet_view.hpp"
#include "formats/dotted_lines.hpp"
#include "nvidia_smi/stop_signals.hpp"
#include "terminal/top_view.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <clocale>
#include <csignal>
#include <sstream>

namespace nvsmi {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

Tone status_tone(HostStatus status) {
  switch (status) {
  case HostStatus::ok:
    return Tone::good;
  case HostStatus::stale:
    return Tone::warning;
  case HostStatus::unreachable:
    return Tone::alarm;
  case HostStatus::waiting:
    break;
  }
  return Tone::dim;
}

// Each line of `text` (newline-separated, as dotted_lines gives it), printable; without UTF-8 the
// separator '·' would turn to '?', so '|' stands in.
std::vector<std::string> text_lines(const std::string &text, bool unicode) {
  std::vector<std::string> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!unicode)
      for (std::size_t at; (at = line.find("\u00b7")) != std::string::npos;)
        line.replace(at, std::string("\u00b7").size(), "|");
    out.push_back(printable_text(line, unicode));
  }
  return out;
}

// `line` (printable) cut to `columns`, ending in `…` where it was cut; without UTF-8 just cut.
std::string cut(const std::string &line, int columns, bool unicode) {
  if (unicode)
    return cut_to_columns(line, static_cast<std::size_t>(columns));
  return fit_text(line, std::min(columns, static_cast<int>(text_columns(line))));
}

void add_lines(std::vector<ScreenLine> &out, const std::string &text, Tone tone, int columns,
               bool unicode) {
  for (const std::string &line : text_lines(text, unicode))
    out.push_back({Span{cut(line, columns, unicode), tone}});
}

// A summary's lines, each state's count in its tone; `strong` for the fleet's own.
void add_summary(std::vector<ScreenLine> &out, const std::string &text, int columns, bool unicode,
                 bool strong) {
  for (const std::string &line : text_lines(text, unicode)) {
    ScreenLine spans = summary_line(line, columns, unicode ? " \u00b7 " : " | ");
    for (Span &span : spans)
      span.strong = strong;
    out.push_back(std::move(spans));
  }
}

} // namespace

std::vector<ScreenLine> layout_fleet_screen(const std::vector<HostReading> &hosts,
                                            std::chrono::system_clock::time_point now,
                                            ScreenSize size, std::size_t &scroll,
                                            milliseconds interval, bool unicode) {
  int columns = std::max(size.columns, 1);
  TableStyle style{false, static_cast<std::size_t>(std::max(columns, 40))};
  std::vector<ScreenLine> head;
  add_lines(head,
            "nvsmi-agent top \u00b7 " + std::to_string(hosts.size()) + " hosts \u00b7 every " +
                seconds_text(interval) + " s",
            Tone::heading, columns, unicode);
  add_summary(head, dotted_lines(fleet_summary_text(fleet_summary_of(hosts)), style), columns,
              unicode, true);
  // One heading for every host's rows: their columns are the same, whatever each host holds.
  if (ScreenLine heading = fleet_gpu_heading(columns); !heading.empty())
    head.push_back(std::move(heading));

  std::vector<ScreenLine> body;
  for (const HostReading &reading : hosts) {
    body.push_back({});
    add_lines(body, dotted_lines(fleet_host_line(reading, now), style), status_tone(reading.status),
              columns, unicode);
    if (!reading.last_good)
      continue;
    std::vector<ScreenLine> sample;
    add_summary(sample, dotted_lines(fleet_summary_text(fleet_summary(*reading.last_good)), style),
                columns, unicode, false);
    for (ScreenLine &line : fleet_gpu_rows(*reading.last_good, columns, unicode))
      sample.push_back(std::move(line));
    // A host that is not ok shows what it last said, dimmed: a reading of the past, not now.
    if (reading.status != HostStatus::ok)
      for (ScreenLine &line : sample)
        for (Span &span : line)
          span.style = Tone::dim;
    for (ScreenLine &line : sample)
      body.push_back(std::move(line));
  }

  std::size_t lines = static_cast<std::size_t>(std::max(size.lines, 1));
  std::size_t room = lines > head.size() + 1 ? lines - head.size() - 1 : 0;
  scroll = body.size() > room ? std::min(scroll, body.size() - room) : 0;
  std::vector<ScreenLine> screen(head.begin(), head.end());
  for (std::size_t at = scroll; at < body.size() && at - scroll < room; ++at)
    screen.push_back(body[at]);
  screen.resize(lines - 1);
  std::string keys =
      unicode ? "q quit  \u2191\u2193 PgUp PgDn scroll" : "q quit  up/down PgUp PgDn scroll";
  if (body.size() > room)
    keys += "  lines " + std::to_string(scroll + 1) + "-" +
            std::to_string(std::min(body.size(), scroll + room)) + " of " +
            std::to_string(body.size());
  screen.push_back({Span{cut(keys, columns, unicode), Tone::heading}});
  return screen;
}

namespace {

class FleetTop {
public:
  // Either asks agents' serve (`client`) or samples machines over ssh (`ssh`).
  FleetTop(const FleetClientOptions *client, const SshFleetOptions *ssh, milliseconds interval)
      : interval_(interval), signals_(context_, SIGINT, SIGTERM),
        input_(
            context_, [this] { return stopping_; },
            [this] {
              if (view_) {
                view_->resize();
                draw();
              }
            },
            [this] { read_keys(); }),
        poll_timer_(context_), tick_(context_), stop_deadline_(context_) {
    if (client)
      poller_.emplace(context_, *client);
    else
      ssh_ = std::make_unique<SshFleet>(context_, *ssh, [this] { changed(); });
  }

  int run() {
    // Caught before ncurses starts, so that no signal leaves the screen taken and ncurses leaves
    // SIGWINCH to this loop.
    signals_.async_wait([this](boost::system::error_code error, int signal) {
      if (!error)
        stop(exit_code_for_stop(signal));
    });
    input_.catch_resize();
    if (ssh_)
      ssh_->start(); // before the screen is taken: where ssh is missing, one line says so
    view_.emplace();
    input_.read_keyboard();
    poll();
    tick();
    draw();
    context_.run();
    view_.reset(); // the terminal as it was
    return code_;
  }

private:
  // Every interval; a poll still out (a host at its deadline) is not started twice, and each
  // host's reading changes as it answers, which the next tick draws.
  void poll() {
    if (!poller_)
      return; // over ssh, each host's samples come as they are taken
    poller_->poll([this] { draw(); });
    poll_timer_.expires_after(interval_);
    poll_timer_.async_wait([this](boost::system::error_code error) {
      if (!error && !stopping_)
        poll();
    });
  }

  // Once a second: the ages move, and a host that answered mid-poll shows without waiting for
  // the slowest.
  void tick() {
    tick_.expires_after(milliseconds(1000));
    tick_.async_wait([this](boost::system::error_code error) {
      if (error || stopping_)
        return;
      draw();
      tick();
    });
  }

  void read_keys() {
    std::size_t page = static_cast<std::size_t>(std::max(1, view_->size().lines / 2));
    while (std::optional<TopKey> key = view_->read_key()) {
      switch (*key) {
      case TopKey::quit:
        return stop(exit_ok);
      case TopKey::resize:
        view_->resize();
        break;
      case TopKey::scroll_up:
        scroll_ -= std::min<std::size_t>(scroll_, 1);
        break;
      case TopKey::scroll_down:
        ++scroll_;
        break;
      case TopKey::page_up:
        scroll_ -= std::min(scroll_, page);
        break;
      case TopKey::page_down:
        scroll_ += page;
        break;
      default: // the keys of one machine's processes have nothing to act on here
        break;
      }
    }
    draw();
  }

  void draw() {
    if (view_ && !stopping_)
      view_->draw(layout_fleet_screen(poller_ ? poller_->hosts() : ssh_->hosts(),
                                      std::chrono::system_clock::now(), view_->size(), scroll_,
                                      interval_, view_->unicode()));
  }

  // A host over ssh has a new sample or problem: drawn at most every tenth of a second.
  void changed() {
    if (redraw_pending_ || stopping_)
      return;
    redraw_pending_ = true;
    poll_timer_.expires_after(milliseconds(100));
    poll_timer_.async_wait([this](boost::system::error_code error) {
      redraw_pending_ = false;
      if (!error)
        draw();
    });
  }

  void stop(int code) {
    if (stopping_)
      return;
    stopping_ = true;
    code_ = code;
    if (ssh_) {
      // Every ssh ended and reaped before the screen is given back; a second for SIGTERM, then
      // SIGKILL, so five at the most.
      ssh_->stop([this] { context_.stop(); });
      stop_deadline_.expires_after(milliseconds(5000));
      stop_deadline_.async_wait([this](boost::system::error_code error) {
        if (!error)
          context_.stop();
      });
      return;
    }
    // The requests still out end with the context: the poller's handlers are never run again.
    context_.stop();
  }

  InputFlags input_flags_; // destroyed after the keyboard's descriptor and the view
  asio::io_context context_;
  milliseconds interval_;
  std::optional<FleetPoller> poller_;
  std::unique_ptr<SshFleet> ssh_;
  asio::signal_set signals_;
  TopInput input_;
  asio::steady_timer poll_timer_;
  asio::steady_timer tick_;
  asio::steady_timer stop_deadline_;
  bool redraw_pending_ = false;
  std::optional<TopView> view_;
  std::size_t scroll_ = 0;
  bool stopping_ = false;
  int code_ = exit_ok;
};

} // namespace

int run_top_fleet(const FleetClientOptions &client, milliseconds interval) {
  std::setlocale(LC_ALL, "");
  TopView::check_terminal();
  ignore_write_signals();
  FleetTop top(&client, nullptr, interval);
  return top.run();
}

int run_top_ssh(const SshFleetOptions &ssh) {
  std::setlocale(LC_ALL, "");
  TopView::check_terminal();
  ignore_write_signals();
  FleetTop top(nullptr, &ssh, ssh.interval);
  return top.run();
}

} // namespace nvsmi
