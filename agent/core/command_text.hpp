// A process named as a person knows it: by the script or program they launched rather than by
// the interpreter or launcher that runs it, so that every screen (the table, `top`, run's report,
// `fleet`, the JSON and the dashboard through it) says `train.py` where the command line is
// `/usr/bin/python3 -u /home/a/train.py --lr 1`.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace nvsmi {

// The longest name, in terminal columns: a name longer than this is cut, ending in `…`.
inline constexpr std::size_t launched_name_columns = 40;

// The script or program that `command_line` (arguments joined by spaces, as /proc gives them
// here) launched, made printable (valid UTF-8, each control character or bidirectional control
// U+FFFD, so that a name never holds a space it did not have) and cut to launched_name_columns:
//   "/usr/bin/python3 -u /home/a/train.py --lr 1"          -> "train.py"
//   "python3 -m vllm.entrypoints.openai.api_server ..."   -> "vllm" (a module: its package)
//   "torchrun --nproc-per-node 8 finetune.py --lr 1"      -> "finetune.py" (so accelerate
//        launch, deepspeed and python3 -m torch.distributed.run: the script they start)
//   "bash run.sh", "java -jar /opt/app.jar"               -> "run.sh", "app.jar"
//   "/opt/llama.cpp/llama-server -m x.gguf"               -> "llama-server"
// An interpreter given code rather than a script (`python3 -c ...`, `bash -c ...`, `perl -ne`)
// or nothing is named by itself: "python3"; a launcher without a script by itself: "torchrun".
// nullopt for an empty command line: unknown, never another name.
std::optional<std::string> launched_name(std::string_view command_line);

// `command_line` as `top` shows it: the launched name and the arguments that follow the script
// (the interpreter's and launcher's own options left out), "finetune.py --lr 1". The arguments
// are not made printable here.
std::string shown_command(std::string_view command_line);

// How every screen names a GPU process: launched_name of its command line; where the command line
// is unknown (the pid is not visible here, a recording), of nvidia-smi's name for the process
// (a Windows path by its last part, "C:\...\blender.exe" -> "blender.exe"); nullopt where
// neither is known.
std::optional<std::string> process_name(const Process &process);

} // namespace nvsmi
