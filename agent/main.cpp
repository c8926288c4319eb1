// nvsmi-agent: runs nvidia-smi, reads what it prints into typed records, and hands them on.
#include "cli/cli.hpp"
#include "core/exit_codes.hpp"

#include "nvsmi/utf8.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
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

// The top-level app, before its subcommands.
std::unique_ptr<CLI::App> make_app() {
  auto app = std::make_unique<CLI::App>(
      "nvsmi-agent: reads nvidia-smi into typed records and hands them on as the legacy UI's "
      "JSON, typed JSON or CSV.");
  app->set_version_flag("--version", version());
  app->require_subcommand(1);
  nvsmi::use_plain_help(*app);
  return app;
}

int run_chosen(const nvsmi::Subcommands &subcommands) {
  using namespace nvsmi;
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

// Ends the process once the command has run, with its exit code. What main still holds then is
// memory alone (CLI11's app with every option and subcommand, the arguments): freeing it piece by
// piece cost 45 k instructions of a cron snapshot's 2.2 M, and the process's end frees it at
// once. std::exit still runs what a return from main would: static destructors, atexit handlers,
// the flush of stdout.
[[noreturn]] void finish(int code) { std::exit(code); }

} // namespace

int main(int argc, char **argv) {
  using namespace nvsmi;
  // Every child the agent starts (nvidia-smi, a hook, run's job) is waited for, to learn how it
  // ended and what it cost. SIG_IGN for SIGCHLD, passed on through exec by a parent that ignores
  // it, has the kernel reap them instead: a failed nvidia-smi then read as exit 0.
  std::signal(SIGCHLD, SIG_DFL);
  std::vector<std::string> arguments(argv + 1, argv + argc);

  // A command line that names one subcommand and no other is parsed with that one alone. Where
  // that parse does not simply succeed (--help, --version, any error), it is thrown away and the
  // command line parsed again with every subcommand, below: what it prints and its exit code are
  // then those of the whole command line, as always. Nothing runs before a parse succeeds.
  if (std::optional<std::string> lone = lone_subcommand(arguments)) {
    std::unique_ptr<CLI::App> app = make_app();
    Subcommands subcommands = add_subcommands(*app, *lone);
    bool parsed = false;
    try {
      app->parse(argc, argv);
      parsed = true;
    } catch (const CLI::Error &) {
    }
    if (parsed)
      finish(run_chosen(subcommands));
  }

  std::unique_ptr<CLI::App> app = make_app();
  Subcommands subcommands = add_subcommands(*app);
  try {
    app->parse(argc, argv);
  } catch (const CLI::Success &done) {
    return app->exit(done);
  } catch (const CLI::ParseError &error) {
    std::string message = usage_error(*app, subcommands, error, arguments);
    const Subcommand *chosen = subcommands.chosen();
    if (chosen && chosen->chosen->parse_failed)
      return chosen->chosen->parse_failed(message);
    // A misspelt command is refused as the one meant refuses a bad command line (check: UNKNOWN,
    // exit 3): a typo in a monitor's config is the plugin's failure, not a CRITICAL GPU.
    if (const Subcommand *meant = chosen ? nullptr : meant_subcommand(subcommands, arguments))
      if (SubcommandRun run = meant->add_options(meant->command); run.parse_failed)
        return run.parse_failed(message);
    // One line, as every other failure: CLI11's own adds a second.
    report(message);
    return exit_usage;
  }
  finish(run_chosen(subcommands));
}
