// The kernel log's readers on any bytes, as XidLog feeds them: parse_kmsg_record on the whole input
// (a /dev/kmsg read: a record and its continuation lines) and on each of its lines (a file of
// records or of syslog lines); a record's message line by line to parse_xid_line, and what is no
// record to parse_xid_line as a line. What the headers promise must hold for every result, and an
// Xid read, as a tally of a snapshot's kernel log, must leave every output format whole.
#include "check_output.hpp"

#include "kernel_log/kmsg_record.hpp"

#include "core/local_time.hpp"
#include "nvsmi/pci_address.hpp"
#include "nvsmi/timestamp.hpp"
#include "nvsmi/utf8.hpp"
#include "nvsmi/xid.hpp"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

using namespace nvsmi;

namespace {

[[noreturn]] void broken(const char *what, std::string_view input) {
  std::fprintf(stderr, "broken kernel log reading: %s, on %zu bytes\n", what, input.size());
  std::abort();
}

// What a label, a JSON value and a log line can take: valid UTF-8 on one line (no C0 or C1
// control), within the cap, without the trailing blanks a CR or padding would leave.
bool clean_text(const std::string &text) {
  if (text.size() > 512 || !is_valid_utf8(text) || (!text.empty() && text.back() == ' '))
    return false;
  for (std::size_t at = 0; at < text.size();) {
    CodePoint point = code_point_at(text, at);
    if (point.value < 0x20 || (point.value >= 0x7f && point.value < 0xa0))
      return false;
    at += point.bytes;
  }
  return true;
}

bool same(const XidEvent &a, const XidEvent &b) {
  return a.pci_device == b.pci_device && a.xid == b.xid && a.pid == b.pid &&
         a.process_name == b.process_name && a.message == b.message;
}

void check_xid(std::string_view line) {
  std::optional<XidEvent> event = parse_xid_line(line);
  // Whatever comes before "NVRM:" (a record's header) or after the line (a CR) changes nothing.
  std::string with_header = "6,1234,5678,-;" + std::string(line);
  std::optional<XidEvent> again = parse_xid_line(with_header);
  if (event.has_value() != again.has_value() || (event && !same(*event, *again)))
    broken("a kmsg header before the line changed what it says", line);
  again = parse_xid_line(std::string(line) + "\r");
  if (event.has_value() != again.has_value() || (event && !same(*event, *again)))
    broken("a CR after the line changed what it says", line);
  if (!event)
    return;

  if (line.find("NVRM: Xid (") == std::string_view::npos)
    broken("a line without \"NVRM: Xid (\" read as an Xid", line);
  // One spelling per GPU: lower-case hex, no function, the way the kernel prints it, so that it
  // reads back as the same address and prints the same again.
  const std::string &device = event->pci_device;
  for (char c : device)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ':'))
      broken("a PCI device other than lower-case hex", line);
  std::optional<PciAddress> address = parse_pci_address(device);
  if (!address || address->function)
    broken("a PCI device that is no address, or has a function", line);
  char spelled[32];
  std::snprintf(spelled, sizeof spelled, "%04x:%02x:%02x", address->domain, address->bus,
                address->device);
  if (device != spelled)
    broken("a PCI device spelled two ways", line);
  // Xids are small numbers (the catalog's are below 200); six digits at most are read.
  if (event->xid < 0 || event->xid > 999999)
    broken("an Xid out of range", line);
  if (event->pid && *event->pid < 0)
    broken("a negative pid", line);
  if (event->process_name && (event->process_name->empty() || !clean_text(*event->process_name)))
    broken("a process name empty, not valid UTF-8, past the cap or on two lines", line);
  if (!clean_text(event->message))
    broken("a message not valid UTF-8, past the cap or on two lines", line);

  // A GPU at the address of the Xid lines of the seeds: the tally is the GPU's when the line named
  // it, else an unmatched one.
  Snapshot snapshot;
  snapshot.gpus.resize(1);
  snapshot.gpus[0].pci_bus_id = "00000000:3B:00.0";
  snapshot.kernel_log.emplace();
  snapshot.kernel_log->source = "/dev/kmsg";
  snapshot.kernel_log->readable = true;
  snapshot.kernel_log->xids.push_back(
      {event->pci_device, event->xid, 1, event->message, std::string("2023-11-14T22:03:20+00:00")});
  fuzz::check_formats(snapshot);
}

// The number a record's header holds in its field `index` (0: the prefix), as written there.
std::optional<std::uint64_t> header_number(std::string_view record, int index) {
  for (int skip = 0; skip < index; ++skip) {
    std::size_t comma = record.find(',');
    if (comma == std::string_view::npos)
      return std::nullopt;
    record.remove_prefix(comma + 1);
  }
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(record.data(), record.data() + record.size(), value);
  if (error != std::errc())
    return std::nullopt;
  return value;
}

// A message as the kernel writes it into a record: backslashes, newlines and other bytes outside
// printable ASCII as "\xNN".
std::string escaped(const std::string &message) {
  std::string out;
  for (char c : message) {
    auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f || c == '\\') {
      char escape[5];
      std::snprintf(escape, sizeof escape, "\\x%02x", byte);
      out += escape;
    } else {
      out += c;
    }
  }
  return out;
}

void check_record(std::string_view bytes) {
  std::optional<KmsgRecord> record = parse_kmsg_record(bytes);
  if (!record) {
    check_xid(bytes); // XidLog reads a line that is no record as a plain line
    return;
  }
  // The header's numbers are the record's, none wrapped or cut: XidLog counts only facility 0
  // (the kernel's), so a user-space record must never read as 0.
  if (record->level < 0 || record->level > 7)
    broken("a level out of range", bytes);
  std::uint64_t prefix = record->facility * 8 + static_cast<std::uint64_t>(record->level);
  if (header_number(bytes, 0) != prefix || header_number(bytes, 1) != record->sequence ||
      header_number(bytes, 2) != record->usec)
    broken("a header number other than the one written", bytes);

  // The message ends at the first raw newline and its escapes only shorten it.
  std::string_view body = bytes.substr(bytes.find(';') + 1);
  body = body.substr(0, body.find('\n'));
  if (record->message.size() > body.size())
    broken("a message longer than the record's", bytes);
  // Decoding undoes what the kernel's escaping did, whatever the bytes.
  std::string written = "6,1,2,-;" + escaped(record->message) + "\n SUBSYSTEM=pci\n";
  std::optional<KmsgRecord> reread = parse_kmsg_record(written);
  if (!reread || reread->message != record->message)
    broken("a message escaped as the kernel does reads back as another", bytes);

  // Booted 11.6 days ago, now 2023-11-14T22:13:20Z: a stamp up to then is a local time that names
  // that instant, to the millisecond; a later one is none.
  constexpr std::uint64_t boot_now = 1'000'000'000'000;
  constexpr std::int64_t wall_now = 1'700'000'000'000'000;
  std::optional<std::string> when = record_local_time(record->usec, boot_now, wall_now);
  if (record->usec > boot_now) {
    if (when)
      broken("a stamp after the boot clock given a time", bytes);
  } else {
    std::optional<Timestamp> stamp = when ? parse_iso8601_timestamp(*when) : std::nullopt;
    std::optional<double> seconds = stamp ? epoch_seconds(*stamp) : std::nullopt;
    std::int64_t usec = wall_now - static_cast<std::int64_t>(boot_now - record->usec);
    if (!seconds || std::llround(*seconds * 1000) != usec / 1000)
      broken("a record's time that names another instant", bytes);
  }

  std::string_view message = record->message;
  for (std::size_t end; !message.empty(); message.remove_prefix(end + 1)) {
    end = message.find('\n');
    check_xid(message.substr(0, end));
    if (end == std::string_view::npos)
      break;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  check_record(input); // a record read whole, else the input as one line
  std::string_view rest = input;
  for (std::size_t end; !rest.empty(); rest.remove_prefix(end + 1)) {
    end = rest.find('\n');
    check_record(rest.substr(0, end));
    if (end == std::string_view::npos)
      break;
  }
  return 0;
}
