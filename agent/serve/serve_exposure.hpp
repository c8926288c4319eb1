// What `serve` lets out about the people behind the GPU processes. A process's full command line
// carries whatever its owner typed (`--db-password=...`), and a user name says who works on what:
// both leave the machine only when the operator asks (`--expose`), and a command line never
// becomes a /metrics label, whatever is asked.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <string>
#include <string_view>

namespace nvsmi {

struct Exposure {
  bool command_lines = false; // else each process's program name only
  bool users = false;         // user name, uid and systemd unit (user@UID.service names a uid)
};

// The default for a listen address: user names on loopback, where only this machine's users
// reach them (as they can in `ps`); nothing beyond program names elsewhere.
Exposure default_exposure(bool loopback_only);

// `snapshot` with what `exposure` withholds taken out: each command line cut to its program name
// (program_name), and the user fields (of the processes and of the GPUs' allocations) made
// unknown.
void limit_exposure(Snapshot &snapshot, const Exposure &exposure);

// The base name of a command line's first word ("/usr/bin/python3 train.py --key=x" is
// "python3"), cut at the first space: less than the program's name where that holds a space,
// never more.
std::string program_name(std::string_view command);

} // namespace nvsmi
