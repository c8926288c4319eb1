// The command line builds only the options of the subcommand it names: a cron snapshot does not
// pay for watch's, serve's and check's (docs/PERFORMANCE.md, "A snapshot's instructions").
#include "cli/cli.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {

// Its options besides --help, which CLI11 gives every subcommand.
std::size_t own_options(const CLI::App *command) {
  return command
      ->get_options(
          [command](const CLI::Option *option) { return option != command->get_help_ptr(); })
      .size();
}

} // namespace

TEST_CASE("a run builds the options of the subcommand it names and no other's") {
  CLI::App app;
  app.require_subcommand(1);
  nvsmi::Subcommands subcommands = nvsmi::add_subcommands(app);
  REQUIRE(subcommands.all().size() == 10);
  CHECK(subcommands.chosen() == nullptr);
  for (const nvsmi::Subcommand &subcommand : subcommands.all()) {
    INFO(subcommand.command->get_name());
    CHECK(own_options(subcommand.command) == 0); // nothing built before the command line is read
    CHECK_FALSE(subcommand.chosen->run);
  }

  app.parse("snapshot --format legacy --no-host", false);
  REQUIRE(subcommands.chosen() != nullptr);
  CHECK(subcommands.chosen()->command->get_name() == "snapshot");
  for (const nvsmi::Subcommand &subcommand : subcommands.all()) {
    INFO(subcommand.command->get_name());
    if (subcommand.command->get_name() == "snapshot") {
      CHECK(subcommand.command->parsed());
      CHECK(own_options(subcommand.command) >= 8); // --source, --format, --fixture, ...
      CHECK(subcommand.chosen->run);
    } else {
      CHECK(own_options(subcommand.command) == 0);
      CHECK_FALSE(subcommand.chosen->run);
    }
  }
}

TEST_CASE("every subcommand's options are there once it is named") {
  for (const char *name :
       {"snapshot", "watch", "report", "job", "serve", "top", "pick", "run", "check", "fleet"}) {
    INFO(name);
    CLI::App app;
    nvsmi::Subcommands subcommands = nvsmi::add_subcommands(app);
    // --help stops the parse once the command's options are in place, as `NAME --help` does.
    CHECK_THROWS_AS(app.parse(std::string(name) + " --help", false), CLI::CallForHelp);
    CLI::App *command = app.get_subcommand(name);
    CHECK(own_options(command) > 0);
  }
}

TEST_CASE("the chosen subcommand is known when the parse fails in its options, and none when none "
          "is named") {
  CLI::App app;
  app.require_subcommand(1);
  nvsmi::Subcommands subcommands = nvsmi::add_subcommands(app);
  CHECK_THROWS_AS(app.parse("watch --interval 0.5 --bogus", false), CLI::ParseError);
  REQUIRE(subcommands.chosen() != nullptr);
  CHECK(subcommands.chosen()->command->get_name() == "watch");
  CHECK(subcommands.chosen()->chosen->run);

  CLI::App other;
  other.require_subcommand(1);
  nvsmi::Subcommands none = nvsmi::add_subcommands(other);
  CHECK_THROWS_AS(other.parse("wach --interval 1", false), CLI::ParseError);
  CHECK(none.chosen() == nullptr);
}
