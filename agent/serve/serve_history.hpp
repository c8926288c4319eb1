// serve's history: the samples of the last `seconds`, packed (compact_snapshot.hpp), bounded by
// time and by the bytes they really hold, and served as a stream so that a client that does not
// read holds a small part of the body, not all of it.
#pragma once

#include "serve/compact_snapshot.hpp"

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>

namespace nvsmi {

// Appends the next part of a body to `out`; false once the body is complete.
using BodyProducer = std::function<bool(std::string &out)>;

class ServeHistory : public std::enable_shared_from_this<ServeHistory> {
public:
  ServeHistory(double seconds, std::size_t max_bytes);

  // Keeps `snapshot`, received at `unix_seconds`, and lets go of what is past the time or bytes.
  void add(const Snapshot &snapshot, double unix_seconds);
  std::size_t bytes() const { return bytes_; }
  std::size_t size() const { return samples_.size(); }

  // The history document, {"schema":..,"samples":[{"received":T,"snapshot":{..}},..]}, for
  // the samples received after `after` (at or after, unless `exclusive`) and before this call:
  // later samples are not added to a response under way, and samples that age out while it is
  // sent are left out of it.
  BodyProducer stream(double after, bool exclusive, double interval_seconds) const;

  // Calls `visit` with each sample received at or after `after`, oldest first, and returns
  // when it has seen them all: for a body bounded by its caller (the series), not by the history.
  void
  visit_since(double after,
              const std::function<void(double received, const CompactSnapshot &)> &visit) const;
  double seconds() const { return seconds_; }
  // When the oldest sample it holds was received; nullopt when it holds none.
  std::optional<double> oldest_received() const {
    return samples_.empty() ? std::nullopt : std::optional<double>(samples_.front().received);
  }

private:
  struct Entry {
    std::uint64_t sequence;
    double received;
    std::size_t own_bytes;
    CompactSnapshot sample;
  };
  const Entry *find(std::uint64_t sequence) const;

  double seconds_;
  std::size_t max_bytes_, bytes_ = 0;
  std::uint64_t next_sequence_ = 0;
  std::deque<Entry> samples_;
};

} // namespace nvsmi
