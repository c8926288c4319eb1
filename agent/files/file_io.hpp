#pragma once

#include "core/descriptor.hpp"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace nvsmi {

// Throws AgentError(exit_io): "WHAT PATH: strerror(errno)".
[[noreturn]] void io_failure(const std::string &what, const std::string &path);

// What a file of `mode` is, for a message: "a FIFO", "a symbolic link", "a character device", ...
const char *file_kind(mode_t mode);

// Renames `from` to `to`, or to `to`.2, .3 ... where that name is taken: never over another
// file. Returns the name it took. Throws AgentError(exit_io) naming `what` when it cannot.
std::string rename_without_replacing(const std::string &from, const std::string &to,
                                     const std::string &what);

// A whole file's bytes, in a buffer of their own that the caller may overwrite (a reader that
// parses where they lie), never filled with anything before them.
struct FileBytes {
  std::unique_ptr<char[]> data;
  std::size_t size = 0;
  std::string_view view() const { return {data.get(), size}; }
};

// Reads a whole file ("-" for standard input). Throws AgentError: exit_io when it cannot be read,
// exit_bad_output when it holds more than `max_bytes`.
FileBytes read_capped(const std::string &path, std::size_t max_bytes);

// The file that writing `path` replaces: `path` with its symbolic links followed, as cp and
// editors follow them, so that the link stays a link. Throws AgentError(exit_io) when that file
// exists and is not a regular file (a device, a FIFO, a folder: replacing it would destroy it), or
// when `path` is a symbolic link to nothing (cp refuses to write through one as well).
std::string output_target(const std::string &path);

// Replaces output_target(path) with `content` atomically: a temporary file in the target's own
// folder, flushed to disk, then renamed over it. Readers see the old file or the new one, never a
// part. The new file keeps the mode of the one it replaces, and its owner and group where this
// process may give them; a new file gets 0644 less the umask. On failure the old file is untouched
// and the temporary removed. Throws AgentError(exit_io).
void replace_file_atomically(const std::string &path, const std::string &content);

// Whether replace_file_atomically(path, ...) could write now: output_target(path), then a
// temporary file made and removed in its folder. For a file written only at the end of a long
// run, so that a folder that is missing, read-only, is said at the start.
// Throws AgentError(exit_io) as replace_file_atomically would.
void check_replaceable(const std::string &path);

// Writes `text` to stdout and flushes it; a reader that left (EPIPE) took what it wanted. Throws
// AgentError(exit_io) for any other failure.
void write_stdout(const std::string &text);

} // namespace nvsmi
