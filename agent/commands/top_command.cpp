#include "commands/top_command.hpp"

#include "commands/top_fleet.hpp"
#include "commands/top_input.hpp"

#include "core/exit_codes.hpp"
#include "core/log_line.hpp"
#include "core/number_text.hpp"
#include "host/process_signal.hpp"
#include "host/process_tree.hpp"
#include "nvidia_smi/stop_signals.hpp"
#include "sampling/sampling_loop.hpp"
#include "terminal/top_layout.hpp"
#include "terminal/top_model.hpp"
#include "terminal/top_view.hpp"

#include <boost/asio/steady_timer.hpp>

#include <chrono>

#include <clocale>
#include <csignal>
#include <deque>
#include <fcntl.h>
#include <unistd.h>

namespace nvsmi {
namespace {

namespace asio = boost::asio;
using std::chrono::milliseconds;

// Messages kept while the screen is up, written to stderr once it is given back.
constexpr std::size_t max_kept_messages = 20;

class Top {
public:
  explicit Top(const TopOptions &options)
      : loop_(
            options.sampling, [this](Snapshot s) { deliver(std::move(s)); },
            [this](LogKind, const std::string &message) { keep_message(message); },
            [this](int code) { stop(code); }),
        input_(
            loop_.context(), [this] { return loop_.stopping(); },
            [this] {
              if (view_) {
                view_->resize();
                draw();
              }
            },
            [this] { read_keys(); }),
        tick_(loop_.context()), model_(loop_.sampler().interval()) {}

  int run() {
    // Before the screen is taken, so that no signal leaves it taken.
    loop_.catch_signals([this](int signal) { stop(exit_code_for_stop(signal)); });
    input_.catch_resize();
    view_.emplace();
    input_.read_keyboard();
    int code = loop_.run([this] {
      tick();
      draw();
    });
    view_.reset(); // the terminal as it was, before anything more is written to it
    for (const std::string &message : messages_)
      log_line(message);
    return code;
  }

private:
  void read_keys() {
    bool changed = false;
    int page = std::max(1, view_->size().lines / 2);
    while (std::optional<TopKey> key = view_->read_key()) {
      changed = true;
      if (*key == TopKey::resize) {
        view_->resize();
        continue;
      }
      // A question waiting: y sends, any other key cancels (and does nothing else).
      if (model_.pending_signal()) {
        if (*key == TopKey::confirm)
          send_signal();
        else {
          model_.cancel_signal();
          model_.set_status("nothing sent", false);
        }
        continue;
      }
      model_.clear_status();
      // The help screen: any key closes it.
      if (model_.help()) {
        model_.toggle_help();
        continue;
      }
      switch (*key) {
      case TopKey::quit:
        stop(exit_ok);
        return;
      case TopKey::sort_memory:
        model_.sort_by(SortKey::gpu_memory);
        break;
      case TopKey::sort_cpu:
        model_.sort_by(SortKey::cpu);
        break;
      case TopKey::sort_sm:
        model_.sort_by(SortKey::sm);
        break;
      case TopKey::sort_pid:
        model_.sort_by(SortKey::pid);
        break;
      case TopKey::sort_user:
        model_.sort_by(SortKey::user);
        break;
      case TopKey::cycle_gpu:
        model_.cycle_gpu_filter();
        break;
      case TopKey::cycle_user:
        model_.cycle_user_filter();
        break;
      case TopKey::clear_filters:
        model_.clear_filters();
        break;
      case TopKey::scroll_up:
        model_.move_selection(-1);
        break;
      case TopKey::scroll_down:
        model_.move_selection(1);
        break;
      case TopKey::page_up:
        model_.move_selection(-page);
        break;
      case TopKey::page_down:
        model_.move_selection(page);
        break;
      case TopKey::help:
        model_.toggle_help();
        break;
      case TopKey::tree:
        model_.toggle_tree();
        // The ancestors at once, not at the next sample; the starts stay the sample's own.
        if (model_.tree() && model_.latest())
          model_.add_ancestors(lineages(*model_.latest(), true));
        break;
      case TopKey::compact:
        model_.toggle_compact();
        break;
      case TopKey::signal_term:
        model_.ask_signal(SIGTERM);
        break;
      case TopKey::signal_kill:
        model_.ask_signal(SIGKILL);
        break;
      case TopKey::signal_interrupt:
        model_.ask_signal(SIGINT);
        break;
      case TopKey::click:
        select_clicked(view_->clicked_line());
        break;
      case TopKey::confirm: // y with no question: nothing to say yes to
      case TopKey::resize:  // handled above
      case TopKey::none:
        break;
      }
    }
    if (changed)
      draw();
  }

  // What the screen line clicked shows, as the screen now shows it: a process row is selected, a
  // GPU's row shows only that GPU's processes (and all of them again on a second click).
  void select_clicked(int line) {
    ClickTargets targets;
    layout_screen(model_, TopClock::now(), view_->size(), view_->unicode(), &targets);
    if (line < 0 || static_cast<std::size_t>(line) >= targets.process_rows.size())
      return;
    std::size_t at = static_cast<std::size_t>(line);
    if (targets.process_rows[at])
      model_.select_row(*targets.process_rows[at]);
    else if (targets.gpus[at])
      model_.toggle_gpu_filter(*targets.gpus[at]);
  }

  // The signal the person said yes to, to the process the question named: the kernel decides
  // whether this user may, and a pid that now names another process is left alone.
  void send_signal() {
    std::optional<PendingSignal> pending = model_.take_pending_signal();
    if (!pending || !pending->process.pid)
      return;
    SignalResult result = signal_process(static_cast<pid_t>(*pending->process.pid),
                                         pending->process.start_ticks, pending->signal);
    model_.set_status(result.message, result.outcome != SignalOutcome::sent);
  }

  // What /proc says of each listed pid now, as its sample comes: its start, to tell it from a
  // later process given its pid, and, while the tree is shown, its ancestors (a walk up /proc
  // per process, not paid for where nobody looks at it).
  static Lineages lineages(const Snapshot &snapshot, bool with_ancestors) {
    Lineages out;
    for (const Gpu &gpu : snapshot.gpus)
      for (const Process &process : gpu.processes.value_or(std::vector<Process>{})) {
        if (!process.pid || *process.pid <= 0 || out.count(*process.pid))
          continue;
        pid_t pid = static_cast<pid_t>(*process.pid);
        ProcessLineage &lineage = out[*process.pid];
        lineage.start_ticks = process_start_ticks(pid);
        if (with_ancestors)
          for (const Descendant &ancestor : process_ancestry(pid))
            lineage.ancestors.emplace_back(ancestor.pid, ancestor.name);
      }
    return out;
  }

  // Once a second, so that a sample that stops coming shows as late without a new one.
  void tick() {
    tick_.expires_after(milliseconds(1000));
    tick_.async_wait([this](boost::system::error_code error) {
      if (error || loop_.stopping())
        return;
      draw();
      tick();
    });
  }

  void deliver(Snapshot snapshot) {
    if (loop_.stopping())
      return;
    Lineages read = lineages(snapshot, model_.tree());
    // The header's cost of the monitor: read every few seconds, not with every sample.
    auto now = std::chrono::steady_clock::now();
    if (now - cost_read_ >= std::chrono::seconds(5)) {
      snapshot.agent = loop_.sampler().cost();
      cost_read_ = now;
    }
    model_.set_interval(loop_.sampler().interval());
    model_.add_sample(std::move(snapshot), TopClock::now(), std::move(read));
    draw();
  }

  void keep_message(const std::string &message) {
    messages_.push_back(message);
    while (messages_.size() > max_kept_messages)
      messages_.pop_front();
    model_.set_message(message);
    if (view_ && !loop_.stopping())
      draw();
  }

  void draw() {
    if (view_)
      view_->draw(layout_screen(model_, TopClock::now(), view_->size(), view_->unicode()));
  }

  void stop(int code) {
    if (loop_.stopping())
      return;
    tick_.cancel();
    input_.cancel();
    loop_.stop(code);
  }

  InputFlags input_flags_; // destroyed after the keyboard's descriptor and the view
  SamplingLoop loop_;
  TopInput input_;
  asio::steady_timer tick_;
  TopModel model_;
  std::chrono::steady_clock::time_point cost_read_{};
  std::optional<TopView> view_;
  std::deque<std::string> messages_;
};

} // namespace

int run_top(const TopOptions &options) {
  if (options.fleet)
    return run_top_fleet(*options.fleet, to_ms(options.sampling.interval_seconds));
  if (options.ssh)
    return run_top_ssh(*options.ssh);
  std::setlocale(LC_ALL, "");
  // Before the sampler reads a fixture or starts nvidia-smi: a pipe gets one clear line at once.
  TopView::check_terminal();
  ignore_write_signals();
  Top top(options);
  int code = top.run();
  finish_log();
  return code;
}

} // namespace nvsmi
