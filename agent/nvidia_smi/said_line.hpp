// What an error message quotes of nvidia-smi's own words (or a wrapper's): one line of what it
// printed, so that the agent's message stays one short, printable line however much it said.
#pragma once

#include "nvidia_smi/bounded_command.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace nvsmi {

// The first line of `bytes` that says something: trimmed, cut at 300 bytes, made printable
// (printable_text). nullopt when every line is blank.
std::optional<std::string> first_said_line(std::string_view bytes);
// The same for the last such line.
std::optional<std::string> last_said_line(std::string_view bytes);
// What a one-shot run said of its failure: nvidia-smi explains it on stdout ("No devices were
// found"), so the first said line of stdout, else of stderr, else "(no message)".
std::string first_message_line(const CommandResult &result);

} // namespace nvsmi
