#include "serve/serve_history.hpp"

#include "formats/formats.hpp"
#include "formats/json_writer.hpp"

#include <algorithm>

namespace nvsmi {
namespace {

// A part of a streamed body: large enough that a fast client is not held up by many small
// writes, small enough that a hundred stalled clients hold little.
constexpr std::size_t part_bytes = 32 * 1024;

std::string number_text(double value) {
  std::string text;
  JsonWriter(text).value(value);
  return text;
}

} // namespace

ServeHistory::ServeHistory(double seconds, std::size_t max_bytes)
    : seconds_(seconds), max_bytes_(max_bytes) {}

void ServeHistory::add(const Snapshot &snapshot, double unix_seconds) {
  if (seconds_ <= 0)
    return;
  std::size_t text_bytes = 0;
  CompactSnapshot sample =
      compact(snapshot, samples_.empty() ? nullptr : &samples_.back().sample, text_bytes);
  std::size_t own = sizeof(Entry) + own_bytes(sample);
  bytes_ += own + text_bytes;
  samples_.push_back({next_sequence_++, unix_seconds, own, std::move(sample)});
  while (!samples_.empty() &&
         (samples_.front().received < unix_seconds - seconds_ || bytes_ > max_bytes_)) {
    // Counted before it goes: a text is given back only when no newer sample shares it.
    bytes_ -= samples_.front().own_bytes + text_bytes_freed_by(samples_.front().sample);
    samples_.pop_front();
  }
}

const ServeHistory::Entry *ServeHistory::find(std::uint64_t sequence) const {
  if (samples_.empty() || sequence < samples_.front().sequence)
    return nullptr;
  std::uint64_t offset = sequence - samples_.front().sequence;
  return offset < samples_.size() ? &samples_[static_cast<std::size_t>(offset)] : nullptr;
}

void ServeHistory::visit_since(
    double after,
    const std::function<void(double received, const CompactSnapshot &)> &visit) const {
  auto first = std::lower_bound(samples_.begin(), samples_.end(), after,
                                [](const Entry &entry, double t) { return entry.received < t; });
  for (auto entry = first; entry != samples_.end(); ++entry)
    visit(entry->received, entry->sample);
}

BodyProducer ServeHistory::stream(double after, bool exclusive, double interval_seconds) const {
  std::string head = "{\"schema\":\"nvsmi-agent.history/1\",\"interval_seconds\":" +
                     number_text(interval_seconds) +
                     ",\"history_seconds\":" + number_text(seconds_) + ",\"samples\":[";
  std::uint64_t next = next_sequence_;
  for (const Entry &entry : samples_)
    if (exclusive ? entry.received > after : entry.received >= after) {
      next = entry.sequence;
      break;
    }
  struct Cursor {
    std::shared_ptr<const ServeHistory> history;
    std::string head;
    std::uint64_t next, end;
    bool first = true;
  };
  auto cursor = std::make_shared<Cursor>(
      Cursor{shared_from_this(), std::move(head), next, next_sequence_, true});
  return [cursor](std::string &out) {
    std::size_t start = out.size();
    if (!cursor->head.empty()) {
      out += cursor->head;
      cursor->head.clear();
    }
    const ServeHistory &history = *cursor->history;
    if (!history.samples_.empty() && cursor->next < history.samples_.front().sequence)
      cursor->next = history.samples_.front().sequence; // aged out while this was sent
    while (cursor->next < cursor->end && out.size() - start < part_bytes) {
      const Entry *entry = history.find(cursor->next++);
      if (!entry)
        continue;
      out += cursor->first ? "{\"received\":" : ",{\"received\":";
      cursor->first = false;
      out += number_text(entry->received);
      out += ",\"snapshot\":";
      out += format_json(expand(entry->sample));
      out += '}';
    }
    if (cursor->next < cursor->end)
      return true;
    out += "]}\n";
    return false;
  };
}

} // namespace nvsmi
