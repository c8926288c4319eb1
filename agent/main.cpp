// nvsmi-agent: runs nvidia-smi, reads what it prints into typed records, and hands them on.
#include "cli/cli.hpp"
#include "core/exit_codes.hpp"

#include "nvsmi/utf8.hpp"

#include <cstdio>
#include <string>
#include <vector>

namespace {

// "nvsmi-agent 0.1.0 (git 1a2b3c4)", or "nvsmi-agent 0.1.0" when built outside a git checkout.
std::string version() {
  std::string commit = NVSMI_GIT_COMMIT;
  return std::string("nvsmi-agent ") + NVSMI_VERSION +
         (commit.empty() ? "" : " (git " + commit + ")");
}

void report(const std::string &message) {
  std::fprintf(stderr, "nvsmi-agent: %s\n", nvsmi::valid_utf8(message).c_str());
}

} // namespace

int main(int argc, char **argv) {
  using namespace nvsmi;
  CLI::App app{"nvsmi-agent: reads nvidia-smi into typed records and hands them on as the legacy "
               "UI's JSON, typed JSON or CSV."};
  app.set_version_flag("--version", version());
  app.require_subcommand(1);
  use_plain_help(app);

  Subcommands subcommands = add_subcommands(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success &done) {
    return app.exit(done);
  } catch (const CLI::ParseError &error) {
    std::string message =
        usage_error(app, subcommands, error, std::vector<std::string>(argv + 1, argv + argc));
    const Subcommand *chosen = subcommands.chosen();
    if (chosen && chosen->chosen->parse_failed)
      return chosen->chosen->parse_failed(message);
    // One line, as every other failure: CLI11's own adds a second.
    report(message);
    return exit_usage;
  }

  try {
    if (const Subcommand *chosen = subcommands.chosen())
      return chosen->chosen->run();
    return exit_ok;
  } catch (const AgentError &error) {
    report(error.what());
    return error.code();
  } catch (const std::exception &error) {
    report(std::string("internal error: ") + error.what());
    return exit_internal;
  }
}
