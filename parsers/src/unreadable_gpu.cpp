#include "nvsmi/unreadable_gpu.hpp"

#include "lost_gpu.hpp"

#include "nvsmi/pci_address.hpp"
#include "nvsmi/quantity.hpp"
#include "reader_text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <tuple>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace nvsmi {
namespace {

bool take_prefix(std::string_view &text, std::string_view prefix) {
  if (text.size() < prefix.size() || !equal_ignoring_case(text.substr(0, prefix.size()), prefix))
    return false;
  text.remove_prefix(prefix.size());
  return true;
}

// A reading's words without nvidia-smi's brackets or a closing period: "[GPU is lost]" and
// "GPU is lost." are the same message.
std::string_view message_of(std::string_view value) {
  value = trim(value);
  if (value.size() >= 2 && value.front() == '[' && value.back() == ']')
    value = trim(value.substr(1, value.size() - 2));
  while (!value.empty() && value.back() == '.')
    value.remove_suffix(1);
  return value;
}

// The GPU's own words, its first sentence: the advice after it ("Reboot the system to recover
// this GPU") is the same for every GPU and says nothing of this one.
std::string first_sentence(std::string_view text) {
  text = trim(text);
  std::size_t stop = text.find(". ");
  if (stop != std::string_view::npos)
    text = text.substr(0, stop);
  while (!text.empty() && text.back() == '.')
    text.remove_suffix(1);
  return std::string(trim(text));
}

std::optional<std::tuple<unsigned, unsigned, unsigned, unsigned>> address_key(const Text &bus_id) {
  if (!bus_id)
    return std::nullopt;
  auto address = parse_pci_address(*bus_id);
  if (!address)
    return std::nullopt;
  return std::make_tuple(address->domain, address->bus, address->device,
                         address->function.value_or(0));
}

// The message's "0000:59:00.0" in the form nvidia-smi gives a GPU's bus id in its XML and CSV,
// "00000000:59:00.0", so that a lost GPU's labels look like its neighbours'.
std::string as_nvidia_smi_prints(const std::string &bus_id) {
  auto address = parse_pci_address(bus_id);
  if (!address)
    return bus_id;
  char text[32];
  std::snprintf(text, sizeof text, "%08X:%02X:%02X.%X", address->domain, address->bus,
                address->device, address->function.value_or(0));
  return text;
}

// nvidia-smi numbers GPUs in bus order, so a lost one goes where its bus id puts it.
void insert_by_bus(std::vector<Gpu> &gpus, Gpu lost) {
  auto key = address_key(lost.pci_bus_id);
  auto at = std::find_if(gpus.begin(), gpus.end(), [&](const Gpu &gpu) {
    auto other = address_key(gpu.pci_bus_id);
    return key && other && *other > *key;
  });
  gpus.insert(at, std::move(lost));
  for (std::size_t i = 0; i < gpus.size(); ++i)
    gpus[i].index = static_cast<int>(i);
}

// The CSV's `index` column is nvidia-smi's own numbering, which a lost GPU keeps: the message's
// index, else the lowest no GPU has (where its row would have been).
void insert_by_index(std::vector<Gpu> &gpus, Gpu lost, std::optional<int> index) {
  std::set<int> used;
  for (const Gpu &gpu : gpus)
    used.insert(gpu.index);
  if (!index || *index < 0 || used.count(*index)) {
    index = 0;
    while (used.count(*index))
      ++*index;
  }
  lost.index = *index;
  auto at = std::find_if(gpus.begin(), gpus.end(),
                         [&](const Gpu &gpu) { return gpu.index > lost.index; });
  gpus.insert(at, std::move(lost));
}

} // namespace

namespace detail {

void LostEvidence::read_message(std::string_view value) {
  std::string_view message = message_of(value);
  for (std::string_view gone : {"GPU is lost", "GPU requires reset"})
    if (equal_ignoring_case(message, gone))
      marker_ = std::string(gone);
}

bool LostEvidence::says_unknown_error(std::string_view value) {
  return equal_ignoring_case(message_of(value), "Unknown Error");
}

bool may_hold_lost_marker(std::string_view document) {
  // A space, then 'l' or 'r' lowered by setting 0x20 (which turns only 'L' and 'R' into them).
  auto marks = [](char first, char second) {
    char lowered = static_cast<char>(second | 0x20);
    return first == ' ' && (lowered == 'l' || lowered == 'r');
  };
  const char *bytes = document.data();
  std::size_t at = 0;
#if defined(__SSE2__)
  const __m128i space = _mm_set1_epi8(' '), case_bit = _mm_set1_epi8(0x20), l = _mm_set1_epi8('l'),
                r = _mm_set1_epi8('r');
  auto marks_16 = [&](const char *from) {
    __m128i first = _mm_loadu_si128(reinterpret_cast<const __m128i *>(from));
    __m128i lowered =
        _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i *>(from + 1)), case_bit);
    return _mm_and_si128(_mm_cmpeq_epi8(first, space),
                         _mm_or_si128(_mm_cmpeq_epi8(lowered, l), _mm_cmpeq_epi8(lowered, r)));
  };
  for (; at + 33 <= document.size(); at += 32)
    if (_mm_movemask_epi8(_mm_or_si128(marks_16(bytes + at), marks_16(bytes + at + 16))) != 0)
      return true;
#endif
  for (; at + 1 < document.size(); ++at)
    if (marks(bytes[at], bytes[at + 1]))
      return true;
  return false;
}

Text LostEvidence::reason() const {
  if (marker_)
    return marker_;
  if (core_seen_ && core_all_unknown_error_)
    return std::string("Unknown Error");
  return std::nullopt;
}

} // namespace detail

std::optional<UnreadableGpu> parse_unreadable_gpu_line(std::string_view line) {
  std::string_view rest = trim(line);
  // Asked of every CSV row: a row is let go at its first character, without the comparisons
  // below.
  if (rest.empty() || (rest.front() | 0x20) != 'u')
    return std::nullopt;
  if (!take_prefix(rest, "Unable to determine the device handle for ") &&
      !take_prefix(rest, "Unable to detect the device handle for "))
    return std::nullopt;
  if (!take_prefix(rest, "GPU"))
    return std::nullopt;
  rest = trim(rest);
  UnreadableGpu gpu;
  // "GPU0: 0000:24:00.0: ..." names the index first; in "GPU0000:07:00.0: ..." the digits before
  // the first colon are the bus id's domain, told apart by the space after the index's colon.
  std::size_t digits = 0;
  while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits])))
    ++digits;
  if (digits > 0 && digits <= 9 && rest.size() > digits + 1 && rest[digits] == ':' &&
      (rest[digits + 1] == ' ' || rest[digits + 1] == '\t')) {
    gpu.index = std::stoi(std::string(rest.substr(0, digits)));
    rest = trim(rest.substr(digits + 1));
  }
  std::size_t end = 0;
  while (end < rest.size() && (std::isxdigit(static_cast<unsigned char>(rest[end])) ||
                               rest[end] == ':' || rest[end] == '.'))
    ++end;
  std::string_view bus_id = rest.substr(0, end);
  while (!bus_id.empty() && (bus_id.back() == ':' || bus_id.back() == '.'))
    bus_id.remove_suffix(1);
  if (!parse_pci_address(bus_id))
    return std::nullopt;
  gpu.pci_bus_id = std::string(bus_id);
  gpu.reason = first_sentence(rest.substr(end));
  if (gpu.reason.empty())
    gpu.reason = "Unknown Error"; // the message was cut short: why is not known
  return gpu;
}

std::vector<UnreadableGpu> find_unreadable_gpus(std::string_view text) {
  std::vector<UnreadableGpu> found;
  while (!text.empty()) {
    std::size_t newline = text.find('\n');
    if (auto gpu = parse_unreadable_gpu_line(text.substr(0, newline))) {
      bool seen = std::any_of(found.begin(), found.end(), [&](const UnreadableGpu &other) {
        return same_pci_device(other.pci_bus_id, gpu->pci_bus_id);
      });
      if (!seen)
        found.push_back(std::move(*gpu));
    }
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
  }
  return found;
}

std::string_view after_unreadable_gpu_lines(std::string_view text,
                                            std::vector<UnreadableGpu> *found) {
  for (text = trim(text); !text.empty(); text = trim(text)) {
    std::size_t newline = text.find('\n');
    std::optional<UnreadableGpu> gpu = parse_unreadable_gpu_line(text.substr(0, newline));
    if (!gpu)
      return text;
    if (found)
      found->push_back(std::move(*gpu));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
  }
  return text;
}

void add_unreadable_gpus(Snapshot &snapshot, const std::vector<UnreadableGpu> &gpus) {
  for (const UnreadableGpu &unreadable : gpus) {
    auto same = std::find_if(snapshot.gpus.begin(), snapshot.gpus.end(), [&](const Gpu &gpu) {
      return gpu.pci_bus_id && same_pci_device(*gpu.pci_bus_id, unreadable.pci_bus_id);
    });
    if (same != snapshot.gpus.end()) {
      if (!same->lost_reason)
        same->lost_reason = unreadable.reason;
      continue;
    }
    Gpu lost;
    lost.pci_bus_id = as_nvidia_smi_prints(unreadable.pci_bus_id);
    lost.lost_reason = unreadable.reason;
    if (snapshot.source == Source::csv) {
      insert_by_index(snapshot.gpus, std::move(lost), unreadable.index);
      continue;
    }
    insert_by_bus(snapshot.gpus, std::move(lost));
  }
}

} // namespace nvsmi
