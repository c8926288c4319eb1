// The command line builds only the options of the subcommand it names: a cron snapshot does not
// pay for watch's, serve's and check's (docs/PERFORMANCE.md, "A snapshot's instructions").
#include "cli/cli.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace test_cli_subcommands {

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

TEST_CASE("a command line that names one subcommand and no other is parsed with that one alone") {
  using Words = std::vector<std::string>;
  CHECK(nvsmi::lone_subcommand(Words{"snapshot", "--format", "legacy"}) == "snapshot");
  CHECK(nvsmi::lone_subcommand(Words{"check"}) == "check");
  // Anything else takes the whole parse: no subcommand first, an unknown or misspelt one, a
  // top-level option first, and a second subcommand's name anywhere (CLI11 ends an option's
  // values there, which it can only do with every subcommand registered).
  CHECK_FALSE(nvsmi::lone_subcommand(Words{}));
  CHECK_FALSE(nvsmi::lone_subcommand(Words{"--help"}));
  CHECK_FALSE(nvsmi::lone_subcommand(Words{"--version", "snapshot"}));
  CHECK_FALSE(nvsmi::lone_subcommand(Words{"wach", "--interval", "1"}));
  CHECK_FALSE(nvsmi::lone_subcommand(Words{"Snapshot"}));
  CHECK_FALSE(nvsmi::lone_subcommand(Words{"report", "--hosts", "a", "watch"}));
  CHECK_FALSE(nvsmi::lone_subcommand(Words{"run", "--", "top"}));
}

TEST_CASE("each subcommand alone is the one of its name, with the options it has among all") {
  CLI::App all;
  nvsmi::Subcommands every = nvsmi::add_subcommands(all);
  REQUIRE(every.all().size() == 10);
  for (const nvsmi::Subcommand &subcommand : every.all()) {
    std::string name = subcommand.command->get_name();
    INFO(name);
    CHECK(nvsmi::lone_subcommand({name}) == name);
    CLI::App app;
    nvsmi::Subcommands alone = nvsmi::add_subcommands(app, name);
    REQUIRE(alone.all().size() == 1);
    CHECK(alone.all().front().command->get_name() == name);
    CHECK(alone.all().front().command->get_description() == subcommand.command->get_description());
    CHECK_THROWS_AS(app.parse(name + " --help", false), CLI::CallForHelp);
    CHECK(own_options(alone.all().front().command) > 0);
  }
}

TEST_CASE(
    "a number on the command line: decimal digits, handed on as written in decimal, its range "
    "in words") {
  nvsmi::NumberRule whole{true, 0, 10000000, "MiB", {}};
  CHECK(whole.accept("010") == "10"); // CLI11 alone reads octal 8
  CHECK(whole.accept("08") == "8");   // which it refused
  CHECK(whole.accept("+7") == "7");
  CHECK(whole.accept("-0") == "0");
  CHECK(whole.accept(std::string(400, '0') + "5") == "5");
  for (const char *refused : {"", "-1", "1.5", "1e3", "0x10", " 5", "5 ", "lots", "10000001", "+",
                              "--5", "99999999999999999999999"})
    CHECK_FALSE(whole.accept(refused));
  CHECK(whole.refusal("lots") == "'lots' is not a whole number from 0 to 10,000,000 MiB");

  nvsmi::NumberRule real{false, 0.01, 86400, "seconds", {}};
  CHECK(real.accept("0.5") == "0.5");
  CHECK(real.accept("1e-2") == "1e-2");
  CHECK(real.accept(".5") == ".5");
  for (const char *refused :
       {"nan", "inf", "-inf", "1e400", "0x1p3", "0.001", "86401", "1,5", "1e", "e5", "."})
    CHECK_FALSE(real.accept(refused));
  CHECK(real.range() == "0.01 to 86,400 seconds");

  nvsmi::NumberRule threshold{false, 0, 100, "%", {"slowdown", "none"}};
  CHECK(threshold.accept("none") == "none");
  CHECK(threshold.accept("-0") == "0"); // never a zero with a sign
  CHECK(threshold.range() == "0 to 100%, slowdown or none");

  CHECK(nvsmi::range_number(4096) == "4096");
  CHECK(nvsmi::range_number(1e12) == "1,000,000,000,000");
  CHECK(nvsmi::range_number(0.001) == "0.001");
  CHECK(nvsmi::shown_value("a\x1b[2Jb") == "'a\xEF\xBF\xBD[2Jb'");
  CHECK(nvsmi::shown_value(std::string(10000, '9')) ==
        "'" + std::string(23, '9') + "\xE2\x80\xA6' (10,000 bytes)");
}

} // namespace test_cli_subcommands
