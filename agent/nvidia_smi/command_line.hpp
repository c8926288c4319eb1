#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

// Splits a command the way a POSIX shell splits words: blanks separate, '...' is literal, "..."
// keeps blanks and honours \" and \\, a backslash outside quotes escapes the next character.
// Nothing is expanded and no shell runs. Throws std::invalid_argument on an unclosed quote.
std::vector<std::string> split_command(std::string_view command);

} // namespace nvsmi
