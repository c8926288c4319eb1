#include "commands/snapshot_command.hpp"

#include "files/file_io.hpp"
#include "files/file_lock.hpp"
#include "nvidia_smi/stop_signals.hpp"

namespace nvsmi {

void run_snapshot(const SnapshotOptions &options) {
  ignore_write_signals();
  std::optional<FileLock> lock;
  if (options.lock)
    lock.emplace(*options.lock);
  Snapshot snapshot = read_one_sample(options);
  std::string text = format_snapshot(snapshot, options.format, options.table_style);
  if (options.output)
    replace_file_atomically(*options.output, text);
  else
    write_stdout(text);
}

} // namespace nvsmi
