#include "host/job_mapping.hpp"

#include "core/descriptor.hpp"

#include "nvsmi/allocation.hpp"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace nvsmi {
namespace {

// A node has at most a few dozen GPUs; a folder with more entries than this is not a prolog's,
// and reading it all would let whoever filled it slow every sample.
constexpr std::size_t max_entries = 4096;
constexpr std::size_t max_index_digits = 4;
constexpr std::size_t max_file_bytes = 4096;

// A GPU index as the file's name: 1 to max_index_digits digits (DCGM's reader takes any number).
bool is_gpu_index(std::string_view text) {
  return !text.empty() && text.size() <= max_index_digits && is_job_id(text);
}

// What a record's name says it is for: a GPU by its index ("2"), or a MIG instance by its GPU's
// index and its GPU instance id ("2.1", the DCGM exporter's form since its #602); nullopt for
// any other name (`2.user`, `.2.tmp`, `2.1.5`).
struct RecordName {
  int gpu_index = 0;
  std::optional<int> gpu_instance_id;
};
std::optional<RecordName> record_name(std::string_view name) {
  std::size_t dot = name.find('.');
  std::string_view gpu = name.substr(0, dot);
  if (!is_gpu_index(gpu))
    return std::nullopt;
  RecordName record;
  record.gpu_index = std::stoi(std::string(gpu));
  if (dot != std::string_view::npos) {
    std::string_view instance = name.substr(dot + 1);
    if (!is_gpu_index(instance))
      return std::nullopt;
    record.gpu_instance_id = std::stoi(std::string(instance));
  }
  return record;
}

// The first line of a regular file in the folder, never through a link, and its mtime.
struct FirstLine {
  std::string text;
  std::int64_t mtime_s = 0;
};
std::optional<FirstLine> read_first_line(int dir_fd, const char *name) {
  int fd = ::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    return std::nullopt;
  Descriptor file(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return std::nullopt; // a FIFO or device would block or never end
  std::string bytes;
  if (!read_up_to(fd, max_file_bytes, off_t{0}, bytes))
    return std::nullopt;
  FirstLine line;
  line.text = bytes.substr(0, bytes.find('\n'));
  if (!line.text.empty() && line.text.back() == '\r')
    line.text.pop_back();
  line.mtime_s = static_cast<std::int64_t>(st.st_mtime);
  return line;
}

} // namespace

JobMapping read_job_mapping(const std::string &dir, std::chrono::system_clock::time_point now) {
  JobMapping mapping;
  int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) {
    mapping.error = std::strerror(errno);
    return mapping;
  }
  Descriptor dir_descriptor(dir_fd);
  // fdopendir takes the descriptor over; a duplicate keeps ours for openat.
  int listing_fd = ::dup(dir_fd);
  DIR *listing = listing_fd < 0 ? nullptr : ::fdopendir(listing_fd);
  if (!listing) {
    mapping.error = std::strerror(errno);
    if (listing_fd >= 0)
      ::close(listing_fd);
    return mapping;
  }
  std::unique_ptr<DIR, int (*)(DIR *)> closer(listing, ::closedir);
  std::int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::map<int, Allocation> by_index;
  std::map<std::pair<int, int>, Allocation> by_instance;
  std::size_t seen = 0;
  while (const dirent *entry = ::readdir(listing)) {
    if (++seen > max_entries)
      break;
    std::string_view name = entry->d_name;
    std::optional<RecordName> record = record_name(name);
    if (!record)
      continue;
    std::optional<FirstLine> job = read_first_line(dir_fd, entry->d_name);
    if (!job || !is_job_id(job->text))
      continue;
    Allocation allocation;
    allocation.job_id = job->text;
    allocation.since_epoch_s = job->mtime_s;
    if (now_s >= job->mtime_s)
      allocation.held_s = now_s - job->mtime_s;
    std::string user_file = std::string(name) + ".user";
    if (std::optional<FirstLine> user = read_first_line(dir_fd, user_file.c_str()))
      if (is_account_name(user->text))
        allocation.user = user->text;
    // The Slurm account the prolog recorded beside it (a name DCGM's reader skips, as .user).
    std::string account_file = std::string(name) + ".account";
    if (std::optional<FirstLine> account = read_first_line(dir_fd, account_file.c_str()))
      if (is_account_name(account->text))
        allocation.account = account->text;
    if (record->gpu_instance_id)
      by_instance[{record->gpu_index, *record->gpu_instance_id}] = std::move(allocation);
    else
      by_index[record->gpu_index] = std::move(allocation);
  }
  mapping.by_gpu_index = std::move(by_index);
  mapping.by_instance = std::move(by_instance);
  return mapping;
}

void attach_allocations(Snapshot &snapshot, const std::map<int, Allocation> &by_gpu_index,
                        const std::map<std::pair<int, int>, Allocation> &by_instance) {
  for (Gpu &gpu : snapshot.gpus) {
    auto found = by_gpu_index.find(gpu.index);
    gpu.allocation =
        found == by_gpu_index.end() ? std::nullopt : std::optional<Allocation>(found->second);
    if (!gpu.mig_devices)
      continue;
    for (MigDevice &device : *gpu.mig_devices) {
      device.allocation = std::nullopt;
      // Which record is its cannot be told without its id; one no record name can have (over
      // four digits) has none.
      if (!device.gpu_instance_id || *device.gpu_instance_id < 0 || *device.gpu_instance_id > 9999)
        continue;
      auto held = by_instance.find({gpu.index, static_cast<int>(*device.gpu_instance_id)});
      if (held != by_instance.end())
        device.allocation = held->second;
    }
  }
  snapshot.allocations_read = true;
}

std::string attach_job_mapping(Snapshot &snapshot, const std::string &dir) {
  JobMapping mapping = read_job_mapping(dir, std::chrono::system_clock::now());
  if (!mapping.by_gpu_index)
    return "job mapping folder " + dir + ": " + mapping.error + ": allocations unknown";
  attach_allocations(snapshot, *mapping.by_gpu_index, mapping.by_instance);
  return "";
}

} // namespace nvsmi
