// The one decoder of nvidia-smi's line-by-line streams (dmon, pmon, the compute-apps loop): it cuts
// the bytes into lines, feeds each to a line reader, says what the reader refused and hands on
// what it completed. The readers differ; how their lines are fed, refused and handed on does not.
#pragma once

#include "core/log_line.hpp"
#include "nvidia_smi/stream_decoder.hpp"

#include "nvsmi/stream.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace nvsmi {

// Whether a reader's Outcome says what a line it read lost (`std::optional<std::string> dropped`).
template <class Outcome, class = void> struct says_dropped : std::false_type {};
template <class Outcome>
struct says_dropped<Outcome, std::void_t<decltype(std::declval<Outcome &>().dropped)>>
    : std::true_type {};

// `Reader` has `Outcome add_line(std::string_view)`, whose `Outcome` has
// `std::optional<std::string> error`, the optional item named by `item` (a pointer to that
// member): the row or sample the line completed, and may have `dropped`: the figures that line
// held out of their range, left unknown (nvsmi/stream_readings.hpp). Those are said at most
// `dropped_burst` times a minute per stream, then counted: a GPU that reads 250 % every second
// is said when it starts, and does not take the log's whole budget (core/log_line.hpp) from
// what else the streams have to say.
template <class Reader, auto item> class LineDecoder final : public StreamDecoder {
public:
  using Outcome = typename Reader::Outcome;
  using Item =
      typename std::remove_reference_t<decltype(std::declval<Outcome &>().*item)>::value_type;

  struct Handlers {
    std::function<void(Item)> on_item;
    std::function<void()> before_line = {}; // any line, before it is read
    std::function<void()> on_finish = {};   // the run ended, after the reader was reset
  };

  // How the decoder's messages begin: `name` names the stream in a line the splitter refused
  // ("dmon line skipped: ..."); `reader_error_prefix` goes before the reader's own errors, which
  // the dmon reader words with its name already.
  struct Naming {
    std::string name;
    std::string reader_error_prefix;
  };

  // `reader` is shared with whoever else asks it between lines (the compute-apps loop's settle).
  LineDecoder(Naming naming, std::shared_ptr<Reader> reader, Handlers handlers)
      : naming_(std::move(naming)), reader_(std::move(reader)), handlers_(std::move(handlers)),
        lines_(max_line_bytes) {}

  void feed(std::string_view bytes, const Events &events) override {
    StreamPieces pieces;
    lines_.feed(bytes, pieces);
    for (const std::string &error : pieces.errors)
      events.skipped(naming_.name + " line skipped: " + error, true);
    for (const std::string &line : pieces.pieces) {
      if (handlers_.before_line)
        handlers_.before_line();
      Outcome outcome = reader_->add_line(line);
      if (outcome.error) {
        events.message(line);
        events.skipped(naming_.reader_error_prefix + *outcome.error, true);
      }
      if constexpr (says_dropped<Outcome>::value)
        if (outcome.dropped)
          for (const std::string &said :
               dropped_said_.admit(*outcome.dropped, LogRateLimit::Clock::now()))
            events.skipped(said == *outcome.dropped ? said : naming_.name + ": " + said, true);
      if (auto &completed = outcome.*item) {
        handlers_.on_item(std::move(*completed));
        events.sample_done();
      }
    }
  }

  // What a run left incomplete is never known whole: it is dropped with the run.
  bool finish(const Events &, bool) override {
    lines_.reset();
    *reader_ = Reader();
    if (handlers_.on_finish)
      handlers_.on_finish();
    return false;
  }

  static constexpr std::size_t dropped_burst = 5;

private:
  // The readers refuse longer lines themselves; this keeps the splitter from holding more.
  static constexpr std::size_t max_line_bytes = 64u << 10;

  LogRateLimit dropped_said_{dropped_burst, std::chrono::minutes(1)};
  Naming naming_;
  std::shared_ptr<Reader> reader_;
  Handlers handlers_;
  LineSplitter lines_;
};

} // namespace nvsmi
