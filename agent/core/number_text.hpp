// Numbers and durations as text, written one way wherever a person, a log line or a grapher
// reads them.
#pragma once

#include <chrono>
#include <string>

namespace nvsmi {

// `value` through a printf pattern that takes one double ("%.1f", "%.0f s", "%g%%").
std::string number(double value, const char *format);

// `value` with `decimals` digits after the point: fixed_text(97.456, 1) is "97.5".
std::string fixed_text(double value, int decimals);

// `value` rounded to at most `decimals` digits, without trailing zeros or point and never "-0":
// 85, 97.5, 0.01. For perfdata, which every grapher must read.
std::string trimmed_text(double value, int decimals);

// A duration in seconds, exact to the millisecond and no longer: "2", "1.5", "0.25", "1234.567".
std::string seconds_text(std::chrono::milliseconds duration);

// Seconds from the command line or a config as milliseconds, rounded to the nearest, so that 1.001
// is 1001 ms and not the 1000 that cutting 1000.9999999999999 gives.
std::chrono::milliseconds to_ms(double seconds);

} // namespace nvsmi
