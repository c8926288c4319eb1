#include "host/host_io.hpp"

#include "core/descriptor.hpp"

#include "nvsmi/quantity.hpp"

#include <algorithm>
#include <charconv>
#include <fcntl.h>
#include <sys/stat.h>
#include <unordered_map>

namespace nvsmi {
namespace {

constexpr std::uint64_t sector_bytes = 512; // the kernel counts 512-byte sectors for every device

// The whitespace-separated words of a line, into `out` (one vector for a file's lines: a new one
// each line was a fifth of a host reading's instructions).
void split_words(std::string_view line, std::vector<std::string_view> &out) {
  out.clear();
  std::size_t at = 0;
  while (true) {
    at = line.find_first_not_of(" \t", at);
    if (at == std::string_view::npos)
      return;
    std::size_t end = std::min(line.find_first_of(" \t", at), line.size());
    out.push_back(line.substr(at, end - at));
    at = end;
  }
}

std::optional<std::uint64_t> counter(std::string_view word) {
  std::uint64_t value = 0;
  auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (error != std::errc() || end != word.data() + word.size())
    return std::nullopt;
  return value;
}

// Calls `take` for each line of `text`; false where it has more lines than a device list may.
template <typename Take> bool for_each_line(std::string_view text, Take take) {
  std::size_t lines = 0;
  while (!text.empty()) {
    std::size_t end = std::min(text.find('\n'), text.size());
    if (++lines > host_io_max_devices + 2) // net/dev's two header lines
      return false;
    if (!take(text.substr(0, end)))
      return false;
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return true;
}

// A name the kernel would give a device: it becomes part of a path under sys/.
bool plain_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.size() <= 255 &&
         name.find('\0') == std::string_view::npos;
}

bool exists(const std::string &path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

} // namespace

std::optional<DeviceCounters>
read_diskstats(std::string_view text, const std::function<bool(std::string_view)> &whole_disk) {
  DeviceCounters disks;
  std::vector<std::string_view> w;
  bool read = for_each_line(text, [&](std::string_view line) {
    split_words(line, w);
    if (w.empty())
      return true;
    // major minor name, then reads, reads merged, sectors read, ms reading, writes, writes
    // merged, sectors written, and more on later kernels.
    if (w.size() < 10 || !counter(w[0]) || !counter(w[1]) || !plain_name(w[2]))
      return false;
    std::optional<std::uint64_t> sectors_read = counter(w[5]), sectors_written = counter(w[9]);
    if (!sectors_read || !sectors_written)
      return false;
    if (whole_disk(w[2]))
      disks.push_back(
          {std::string(w[2]), *sectors_read * sector_bytes, *sectors_written * sector_bytes});
    return true;
  });
  if (!read)
    return std::nullopt;
  return disks;
}

std::optional<DeviceCounters>
read_net_dev(std::string_view text, const std::function<bool(std::string_view)> &is_virtual) {
  DeviceCounters nics, others;
  std::vector<std::string_view> w;
  bool read = for_each_line(text, [&](std::string_view line) {
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      return line.find_first_not_of(" \t") == std::string_view::npos ||
             line.find('|') != std::string_view::npos; // the header
    std::string_view name = trim(line.substr(0, colon));
    // received: bytes packets errs drop fifo frame compressed multicast; then sent: bytes ...
    split_words(line.substr(colon + 1), w);
    if (!plain_name(name) || name.find_first_of(" \t/") != std::string_view::npos || w.size() < 16)
      return false;
    std::optional<std::uint64_t> received = counter(w[0]), sent = counter(w[8]);
    if (!received || !sent)
      return false;
    if (name == "lo")
      return true;
    (is_virtual(name) ? others : nics).push_back({std::string(name), *received, *sent});
    return true;
  });
  if (!read)
    return std::nullopt;
  if (nics.empty())
    return others;
  return nics;
}

DeviceRates::Rates DeviceRates::update(std::optional<DeviceCounters> now_read,
                                       Clock::time_point at) {
  Rates rates;
  std::optional<DeviceCounters> previous = std::move(previous_);
  Clock::time_point previous_at = previous_at_;
  previous_ = std::move(now_read);
  previous_at_ = at;
  if (!previous || !previous_ || at <= previous_at)
    return rates;
  std::unordered_map<std::string_view, const DeviceBytes *> before;
  for (const DeviceBytes &device : *previous)
    before.emplace(device.name, &device);
  std::uint64_t in = 0, out = 0;
  bool any = false;
  for (const DeviceBytes &device : *previous_) {
    auto found = before.find(device.name);
    if (found == before.end())
      continue;
    const DeviceBytes &then = *found->second;
    if (device.in < then.in || device.out < then.out)
      return rates; // wrapped or replaced: the bytes between are not known
    in += device.in - then.in;
    out += device.out - then.out;
    any = true;
  }
  if (!any)
    return rates;
  double seconds = std::chrono::duration<double>(at - previous_at).count();
  rates.in = static_cast<double>(in) / seconds;
  rates.out = static_cast<double>(out) / seconds;
  return rates;
}

// The whole file, or nullopt where it cannot be read, is not a regular file (a FIFO or device
// planted under NVSMI_HOST_ROOT would block or never end) or is larger than any such file is.
std::optional<std::string_view> HostIoReader::HeldFile::read() {
  struct stat info {};
  // An unlinked file (nlink 0) was replaced or removed: its path names another now, or nothing.
  if (fd_ && (::fstat(fd_->get(), &info) != 0 || info.st_nlink == 0))
    fd_.reset();
  if (!fd_) {
    Descriptor opened(::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (opened.get() < 0 || ::fstat(opened.get(), &info) != 0 || !S_ISREG(info.st_mode))
      return std::nullopt;
    fd_.emplace(std::move(opened));
  }
  text_.clear();
  if (!read_up_to(fd_->get(), host_io_max_file_bytes + 1, off_t{0}, text_) ||
      text_.size() > host_io_max_file_bytes) {
    fd_.reset();
    text_ = std::string(); // not a MiB kept for the samples after an oversized file
    return std::nullopt;
  }
  return std::string_view(text_);
}

bool HostIoReader::kind_of(std::string_view name, Kinds &previous, Kinds &now,
                           const std::function<bool(std::string_view)> &counts) {
  std::string key(name);
  auto known = previous.find(key);
  bool kind = known != previous.end() ? known->second : counts(name);
  now.emplace(std::move(key), kind);
  return kind;
}

HostIoReader::HostIoReader(std::string root)
    : root_(root.empty() || root.back() != '/' ? std::move(root) + '/' : std::move(root)),
      diskstats_(root_ + "proc/diskstats"), net_dev_(root_ + "proc/net/dev") {}

void HostIoReader::read(Host &host) {
  // A whole disk is in sys/block (a partition is not); loop, ram, zram, dm and md devices are
  // virtual: their bytes are counted again on the disks beneath them.
  auto whole_disk = [&](std::string_view name) {
    std::string in_sys(name);
    std::replace(in_sys.begin(), in_sys.end(), '/', '!'); // cciss/c0d0 is sys/block/cciss!c0d0
    return exists(root_ + "sys/block/" + in_sys) &&
           !exists(root_ + "sys/devices/virtual/block/" + in_sys);
  };
  auto is_virtual = [&](std::string_view name) {
    return exists(root_ + "sys/devices/virtual/net/" + std::string(name));
  };
  std::optional<DeviceCounters> disks, interfaces;
  Kinds disk_kinds, net_kinds;
  if (std::optional<std::string_view> text = diskstats_.read())
    disks = read_diskstats(*text, [&](std::string_view name) {
      return kind_of(name, disk_kinds_, disk_kinds, whole_disk);
    });
  disk_kinds_ = std::move(disk_kinds);
  DeviceRates::Rates disk = disks_.update(std::move(disks), DeviceRates::Clock::now());
  if (std::optional<std::string_view> text = net_dev_.read())
    interfaces = read_net_dev(*text, [&](std::string_view name) {
      return kind_of(name, net_kinds_, net_kinds, is_virtual);
    });
  net_kinds_ = std::move(net_kinds);
  DeviceRates::Rates network = network_.update(std::move(interfaces), DeviceRates::Clock::now());
  host.disk_read_bytes_per_second = disk.in;
  host.disk_write_bytes_per_second = disk.out;
  host.network_receive_bytes_per_second = network.in;
  host.network_send_bytes_per_second = network.out;
}

} // namespace nvsmi
