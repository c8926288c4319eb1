// What `serve` lets out about the people behind the GPU processes. A process's full command line
// carries whatever its owner typed (`--db-password=...`), and a user name says who works on what:
// both leave the machine only when the operator asks (`--expose`), and a command line never
// becomes a /metrics label, whatever is asked.
#pragma once

#include "nvsmi/snapshot.hpp"

namespace nvsmi {

struct Exposure {
  bool command_lines = false; // else each process's name only (core/command_text's)
  bool users = false;         // user name, uid and systemd unit (user@UID.service names a uid)
};

// The default for a listen address: user names on loopback, where only this machine's users
// reach them (as they can in `ps`); nothing beyond program names elsewhere.
Exposure default_exposure(bool loopback_only);

// `snapshot` with what `exposure` withholds taken out: each command line cut to the name every
// screen gives it, the script or program launched (launched_name: "/usr/bin/python3 train.py
// --key=x" is "train.py", "python3 -c ... --key=x" is "python3"; never an option or its value),
// and the user fields (of the processes and of the GPUs' allocations) made unknown.
void limit_exposure(Snapshot &snapshot, const Exposure &exposure);

} // namespace nvsmi
