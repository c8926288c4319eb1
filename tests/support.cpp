#include "support.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>

namespace test {

std::string fixture_path(const std::string &relative) {
  return std::string(FIXTURES_DIR) + "/" + relative;
}

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

void write_file(const std::string &path, const std::string &content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

std::string temporary_folder() {
  const char *base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/nvsmi-test.XXXXXX";
  if (!mkdtemp(pattern.data()))
    throw std::runtime_error("mkdtemp failed");
  return pattern;
}

std::string quote(const std::string &word) {
  std::string out = "'";
  for (char c : word)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Run run_shell(const std::string &command) {
  static const std::string folder = temporary_folder();
  std::string out_path = folder + "/out", err_path = folder + "/err";
  int status = std::system(
      ("( " + command + " ) >" + quote(out_path) + " 2>" + quote(err_path) + " </dev/null")
          .c_str());
  Run run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = read_file(out_path);
  run.err = read_file(err_path);
  return run;
}

Run run_agent(const std::string &arguments) {
  return run_shell(quote(AGENT_BIN) + " " + arguments);
}

bool installed(const std::string &program) {
  return run_shell("command -v " + quote(program)).exit_code == 0;
}

Run chromium(const std::string &arguments) {
  return run_shell("timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic "
                   "--no-first-run --disable-background-networking --disable-component-update "
                   "--disable-sync --user-data-dir=" +
                   quote(temporary_folder()) + " " + arguments);
}

} // namespace test
