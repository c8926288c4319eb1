#include "nvsmi/xid.hpp"

#include "nvsmi/pci_address.hpp"
#include "nvsmi/utf8.hpp"

#include <algorithm>
#include <cstdio>

namespace nvsmi {
namespace {

// Enough for every message in NVIDIA's catalog and the longest NVLink register dumps seen; a log
// line can be any length, a label or JSON value should not.
constexpr std::size_t max_message_bytes = 512;

constexpr std::string_view marker = "NVRM: Xid";

bool take(std::string_view &text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix)
    return false;
  text.remove_prefix(prefix.size());
  return true;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Up to `max_digits` decimal digits from the front, consumed; nullopt (nothing consumed) for none
// or more than that, so that a huge number is not read as a wrapped one.
std::optional<std::int64_t> take_number(std::string_view &text, std::size_t max_digits) {
  std::size_t digits = 0;
  while (digits < text.size() && is_digit(text[digits]))
    ++digits;
  if (digits == 0 || digits > max_digits)
    return std::nullopt;
  std::int64_t value = 0;
  for (std::size_t i = 0; i < digits; ++i)
    value = value * 10 + (text[i] - '0');
  text.remove_prefix(digits);
  return value;
}

// "GPU-I:02" or "GPU-CI:01": the MIG instance the error was in (not kept: the tallies are per
// physical GPU, which is what a reset acts on).
bool is_mig_part(std::string_view part) {
  if (!take(part, "GPU-I:") && !take(part, "GPU-CI:"))
    return false;
  return !part.empty() && part.size() <= 8 && std::all_of(part.begin(), part.end(), [](char c) {
    return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
  });
}

// "0000:3b:00", optionally after "PCI:" (older drivers print the address alone), optionally
// followed by the MIG instances: the whole text between the parentheses.
std::optional<std::string> read_device(std::string_view inside) {
  take(inside, "PCI:");
  std::size_t space = inside.find(' ');
  std::string_view address = inside.substr(0, space);
  while (space != std::string_view::npos) {
    inside.remove_prefix(space + 1);
    space = inside.find(' ');
    if (!is_mig_part(inside.substr(0, space)))
      return std::nullopt;
  }
  auto parsed = parse_pci_address(address);
  if (!parsed)
    return std::nullopt;
  // One spelling, whatever the case the line had, so one GPU has one tally.
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x", parsed->domain, parsed->bus, parsed->device);
  return std::string(text);
}

// One printable line (a log line or label must stay one line), at most max_message_bytes;
// trailing blanks (a CR of a file written on another system) dropped.
std::string clean_message(std::string_view raw) {
  std::string out = printable_line(raw, max_message_bytes, ' ');
  while (!out.empty() && out.back() == ' ')
    out.pop_back();
  return out;
}

// Where "NVRM: Xid" starts a message: at the line's start, or after the prefix of a /dev/kmsg
// record (';'), a syslog or dmesg timestamp ("] ") or a syslog tag ("kernel: "). Not inside a
// word, so "SXid" and anything that only mentions the text further into a message is not read.
std::size_t find_marker(std::string_view line) {
  std::size_t at = 0;
  while ((at = line.find(marker, at)) != std::string_view::npos) {
    if (at == 0 || line[at - 1] == ';' || line[at - 1] == ' ' || line[at - 1] == '\t' ||
        line[at - 1] == ']')
      return at;
    at += marker.size();
  }
  return std::string_view::npos;
}

} // namespace

std::optional<XidEvent> parse_xid_line(std::string_view line) {
  // A file written elsewhere may end its lines with CR.
  while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
    line.remove_suffix(1);
  std::size_t at = find_marker(line);
  if (at == std::string_view::npos)
    return std::nullopt;
  std::string_view rest = line.substr(at + marker.size());
  if (!take(rest, " ("))
    return std::nullopt;
  std::size_t close = rest.find(')');
  if (close == std::string_view::npos || close > 64)
    return std::nullopt;
  auto device = read_device(rest.substr(0, close));
  rest.remove_prefix(close + 1);
  if (!device || !take(rest, ":"))
    return std::nullopt;
  while (!rest.empty() && rest.front() == ' ')
    rest.remove_prefix(1);
  auto xid = take_number(rest, 6);
  if (!xid)
    return std::nullopt;
  // The code ends the line, or is followed by ", " and the rest.
  if (!rest.empty() && rest.front() != ',')
    return std::nullopt;

  XidEvent event;
  event.pci_device = std::move(*device);
  event.xid = static_cast<int>(*xid);
  take(rest, ",");
  take(rest, " ");

  // "pid=1797828, " or "pid='<unknown>', " (no process known), then "name=python3, " or
  // "name=<unknown>, "; drivers before 2016 or so print neither, some recent ones only for some
  // Xids.
  std::string_view tail = rest;
  if (take(tail, "pid=")) {
    bool known = take(tail, "'<unknown>'") || take(tail, "<unknown>");
    if (!known)
      if (auto pid = take_number(tail, 10)) {
        event.pid = *pid;
        known = true;
      }
    // Anything else after "pid=" is not the driver's field: the whole is the message.
    if (known && (tail.empty() || take(tail, ","))) {
      take(tail, " ");
      rest = tail;
      if (take(rest, "name=")) {
        // A process name may hold anything, even ", ": the first one ends it, as the driver
        // quotes nothing.
        std::size_t end = rest.find(", ");
        std::string_view name = rest.substr(0, end);
        // Blanks and control bytes clean to nothing: no name, as an absent one, not "".
        if (name != "<unknown>")
          if (std::string clean = clean_message(name); !clean.empty())
            event.process_name = std::move(clean);
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 2);
      }
    } else {
      event.pid.reset();
    }
  }
  event.message = clean_message(rest);
  return event;
}

bool xid_needs_reset(int xid) {
  // NVIDIA's Xid catalog: immediate action RESET_GPU or RESTART_BM, or a workflow whose text says
  // a reset or reboot is needed (48, 74). Not 63 (the catalog says IGNORE: a pending row remap
  // says when a reset is due) nor 94 (contained: restart the application).
  static constexpr int needing[] = {46,  48,  62,  64,  74,  79,  95,  109, 110,
                                    119, 120, 136, 140, 143, 155, 156, 158};
  return std::find(std::begin(needing), std::end(needing), xid) != std::end(needing);
}

std::optional<std::size_t> xid_gpu(const Snapshot &snapshot, const XidTally &tally) {
  for (std::size_t i = 0; i < snapshot.gpus.size(); ++i)
    if (snapshot.gpus[i].pci_bus_id &&
        same_pci_device(*snapshot.gpus[i].pci_bus_id, tally.pci_device))
      return i;
  return std::nullopt;
}

} // namespace nvsmi
