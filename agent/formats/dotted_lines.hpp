// A line of parts joined by " · " (the fleet's summary, a host's status in `fleet`), broken for a
// screen the one way the table breaks its summary line. Defined in format_table.cpp, beside the
// line rendering it shares.
#pragma once

#include "core/tone.hpp"
#include "formats/format_table.hpp"

#include <string>

namespace nvsmi {

// `text` made printable, broken between its " · "-joined parts where it is wider than
// style.width, each further line indented by two columns; a part wider than a line is cut with
// `…`. Every line newline-terminated, in `tone` (a summary line is the bold thing, Tone::heading).
std::string dotted_lines(const std::string &text, const TableStyle &style,
                         Tone tone = Tone::normal);

} // namespace nvsmi
