// A process's command line as a person looks for it: the program's name without its folder and,
// for an interpreter (python3, perl, node, bash, java -jar...), the script it runs rather than
// the interpreter, so that a narrow column shows `train.py` and not `/usr/bin/python3 /ho…`.
#pragma once

#include <string>
#include <string_view>

namespace nvsmi {

// `command_line` (arguments joined by spaces, as /proc gives them here) shown from what it runs:
//   "/usr/bin/python3 -u /home/a/train.py --lr 1" -> "train.py --lr 1"
//   "python3 -m torch.distributed.run x.py"      -> "torch.distributed.run x.py"
//   "/usr/bin/env python3 train.py"              -> "train.py"
//   "java -Xmx4g -jar /opt/app.jar serve"        -> "app.jar serve"
//   "/usr/bin/torchrun --nproc 8 train.py"       -> "torchrun --nproc 8 train.py"
// An interpreter given code rather than a script (`python3 -c ...`, `perl -e ...`) or nothing
// keeps its own name: "python3 -c print(1)", "python3". The text is not made printable here.
std::string shown_command(std::string_view command_line);

} // namespace nvsmi
