// Shared by the tests: fixture paths, files, and running the built agent.
#pragma once

#include <string>

namespace test {

std::string fixture_path(const std::string &relative);
std::string read_file(const std::string &path);
void write_file(const std::string &path, const std::string &content);
// A fresh empty folder under the system's temporary folder.
std::string temporary_folder();

struct Run {
  int exit_code;
  std::string out, err;
};
// Runs `command` through /bin/sh with stdout and stderr captured.
Run run_shell(const std::string &command);
// Runs the built nvsmi-agent with `arguments` (already shell-quoted where needed).
Run run_agent(const std::string &arguments);
std::string quote(const std::string &word);
// Whether `program` is on PATH (tests that need it warn and skip where it is not).
bool installed(const std::string &program);
// Runs headless Chromium, with a fresh profile and no network of its own, on `arguments`.
Run chromium(const std::string &arguments);

} // namespace test
