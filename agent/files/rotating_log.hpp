// A log file that `watch` appends to (the CSV log, the JSON log): locked while open, each block
// in one write or not at all, rotated by size, reopened on SIGHUP. What a block holds, and what
// a file it finds at the path must hold, is its owner's business (csv_log.hpp, json_log.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace nvsmi {

struct RotationSettings {
  std::uint64_t max_bytes = 0; // rotate before passing this size; 0: never
  int keep = 5;                // rotated files kept: path.1 (newest) .. path.keep
};

// What `watch` rotates each of its logs at unless told otherwise (--csv-max-bytes, --json-keep
// ...): 100 MB, five rotated files kept, so that a log left running cannot fill the disk.
inline constexpr RotationSettings default_log_rotation{100'000'000, 5};

class RotatingLog {
public:
  // Where a file found at the path goes instead of being appended to: path + suffix (or
  // path + suffix + ".2" and up where that is taken: nothing is replaced), and why, for the log
  // line that says so ("has the columns of an earlier nvsmi-agent").
  struct MoveAside {
    std::string suffix, reason;
  };
  // Looks at the non-empty file found at the path when it is opened, through its locked
  // descriptor: nullopt to append to it, or where to move it aside before starting a new file.
  // Throws AgentError to refuse it.
  using FoundFile = std::function<std::optional<MoveAside>(int fd)>;

  // Opens (or creates) the log and locks it (flock) for as long as it is open. `what` names it in
  // messages ("CSV log"); `header` (with its newline; may be empty) begins every new or emptied
  // file. Throws AgentError(exit_io) when it cannot, or when another process holds the lock (a
  // second `watch` on one log).
  RotatingLog(std::string what, std::string path, RotationSettings rotation, std::string header,
              FoundFile found = {});
  ~RotatingLog();
  RotatingLog(const RotatingLog &) = delete;
  RotatingLog &operator=(const RotatingLog &) = delete;

  // Appends `block` (whole lines) in a single write, after the header where the file is empty,
  // rotating first where it would pass max_bytes. A failed write is taken back, so that the file
  // holds whole blocks only. Throws AgentError(exit_io).
  void append(const std::string &block);
  // Closes and opens the path again, as logrotate expects on SIGHUP.
  void reopen();
  const std::string &path() const { return path_; }

private:
  void open();
  void rotate();
  std::uint64_t size() const;
  std::string what_, path_;
  RotationSettings rotation_;
  std::string header_;
  FoundFile found_;
  int fd_ = -1;
};

} // namespace nvsmi
