// What the readers share about a GPU that nvidia-smi names but cannot read: the markers it prints
// in its readings when the GPU itself is gone (docs/research/fleet-health.md, section 10).
#pragma once

#include "nvsmi/quantity.hpp"
#include "nvsmi/snapshot.hpp"

#include <string_view>

namespace nvsmi::detail {

// Whether `document`, which holds no character reference ("&#..."), could hold a reading that
// LostEvidence takes for the GPU gone: both such messages have a space before an 'l' or an 'r'
// ("GPU is lost", "GPU requires reset"), in either case; only a character reference ("&#32;")
// could write them otherwise. Where it cannot, a reader need not hand every reading to
// LostEvidence::reading. Any byte may come: it looks at 32 at a time.
bool may_hold_lost_marker(std::string_view document);

// Gathers one GPU's readings, as printed, and says whether they make it lost. "GPU is lost" or
// "GPU requires reset" in any reading is the GPU gone; "Unknown Error" is, only when every
// identity and core reading says so, since a single one (a fan) is that reading unknown.
class LostEvidence {
public:
  // Any reading of the GPU.
  void reading(std::string_view value) {
    if (!marker_ && may_be_message(value))
      read_message(value);
  }
  // uuid, name, temperature, memory, utilization: also a reading.
  void core_reading(std::string_view value) {
    bool message = may_be_message(value);
    if (!marker_ && message)
      read_message(value);
    core_seen_ = true;
    core_all_unknown_error_ = core_all_unknown_error_ && message && says_unknown_error(value);
  }
  // "GPU is lost", "GPU requires reset", "Unknown Error", or nullopt for a GPU that was read.
  Text reason() const;

private:
  // Whether `value` could be one of the messages, whose words start with 'G' or 'U' in either case,
  // bare or in brackets. Every reading of every row passes here: inline, and a number or a word
  // of a readable GPU is let go at its first character, "[N/A]" at its second.
  static bool may_be_message(std::string_view value) {
    auto g_or_u = [](char c) { return (c | 0x20) == 'g' || (c | 0x20) == 'u'; };
    if (value.empty())
      return false;
    char first = value.front();
    if (g_or_u(first))
      return true;
    if (first != '[' && first != ' ' && first != '\t' && first != '\r' && first != '\n')
      return false;
    value = trim(value);
    if (value.empty())
      return false;
    if (value.front() != '[')
      return g_or_u(value.front());
    // Brackets count only in pairs, as message_of strips them: "[GPU is lost]".
    if (value.size() < 2 || value.back() != ']')
      return false;
    std::string_view inside = trim(value.substr(1, value.size() - 2));
    return !inside.empty() && g_or_u(inside.front());
  }
  void read_message(std::string_view value);
  static bool says_unknown_error(std::string_view value);

  Text marker_;
  bool core_seen_ = false, core_all_unknown_error_ = true;
};

} // namespace nvsmi::detail
