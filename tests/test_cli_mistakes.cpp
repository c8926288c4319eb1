// A mistake on the command line answered well, through the built agent: every numeric option of
// every subcommand (found in their --help, so that an option added later is covered), the option
// or command meant, check's plugin line, and report on a file that is no log. Hostile values give
// one printable line and the documented code.
#include "support.hpp"

#include "nvsmi/utf8.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <regex>

namespace test_cli_mistakes {

using test::quote;
using test::Run;
using test::run_agent;

namespace {

std::string fixture(const std::string &name) { return quote(test::fixture_path(name)); }

// The one line of a refused command line: stdout empty, `code`, one line on stderr (check: on
// stdout, as its plugin line), valid UTF-8 without a control character, and not a screenful.
std::string refusal(const Run &run, int code, bool plugin = false) {
  INFO("stdout: " << run.out << "\nstderr: " << run.err);
  CHECK(run.exit_code == code);
  const std::string &line = plugin ? run.out : run.err;
  CHECK((plugin ? run.err : run.out).empty());
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);
  CHECK(nvsmi::is_valid_utf8(line));
  CHECK(std::none_of(line.begin(), line.end() - 1,
                     [](char c) { return (static_cast<unsigned char>(c) < 0x20 || c == 0x7f); }));
  CHECK(line.find("\xc2\x9b") == std::string::npos); // C1 CSI
  CHECK(line.size() < 1200);
  CHECK_THAT(line, Catch::StartsWith(plugin ? "GPU UNKNOWN - nvsmi-agent: " : "nvsmi-agent: "));
  return line;
}

// The longest run of digits in `text`: a type's limits said as digits (1.79769e+308, 309 nines)
// would be long.
std::size_t longest_digits(const std::string &text) {
  std::size_t longest = 0, run = 0;
  for (char c : text) {
    run = c >= '0' && c <= '9' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

std::vector<std::string> subcommands() {
  Run help = run_agent("--help");
  REQUIRE(help.exit_code == 0);
  std::vector<std::string> names;
  bool listed = false;
  for (const std::string &line : test::lines_of(help.out)) {
    if (line.rfind("Subcommands:", 0) == 0) {
      listed = true;
      continue;
    }
    std::smatch word;
    if (listed && std::regex_search(line, word, std::regex("^  ([a-z]+)  ")))
      names.push_back(word[1]);
  }
  return names;
}

// An option that takes a value, as its command's --help lists it, and the range that --help
// gives after its line, if any.
struct ValueOption {
  std::string command, name, range;
};

std::vector<ValueOption> value_options(const std::string &command) {
  Run help = run_agent(command + " --help");
  REQUIRE(help.exit_code == 0);
  std::vector<ValueOption> options;
  // "  --interval SECONDS   Seconds between samples (default 1; 0.01 to 86,400 seconds)", or a
  // positional ("  N   How many GPUs ..."), CLI11's layout; a flag has no value word.
  std::regex option_line("^  (--[a-z0-9.-]+|[A-Z]+)( [A-Za-z|:]+)?( \\.\\.\\.)?"
                         "( \\(not with[^)]*\\))?( +(.*))?$");
  std::string previous;
  for (const std::string &line : test::lines_of(help.out)) {
    std::smatch match;
    if (std::regex_match(line, match, option_line)) {
      bool positional = match[1].str().front() != '-';
      if (match[2].matched || positional)
        options.push_back({command, match[1], ""});
      previous = match[6];
    } else if (!options.empty() && line.rfind("      ", 0) == 0) {
      previous += " " + line.substr(line.find_first_not_of(' '));
    } else {
      continue;
    }
    // The range, at the end of the description (which CLI11 may wrap): "(default 1; 1 to 4096)".
    std::smatch range;
    if (!options.empty() &&
        std::regex_search(previous, range, std::regex("[(;] ?([-0-9.,]+ to [^;)]*)\\)$")))
      options.back().range = range[1];
  }
  return options;
}

// The words that give `option` the value `value`: joined to an option (--5 would read as an
// option), after `--` for a positional; then an option no command has, so that whatever the value,
// nothing runs.
std::string given(const ValueOption &option, const std::string &value) {
  return option.command + " " +
         (option.name.front() == '-' ? quote(option.name + "=" + value) + " --no-such-option-at-all"
                                     : "--no-such-option-at-all -- " + quote(value));
}

// The agent run on each of `command_lines` by one shell, each with its own stdout, stderr and
// exit code: a thousand runs through a shell each took minutes on a busy machine.
std::vector<Run> run_each(const std::vector<std::string> &command_lines) {
  std::string folder = test::temporary_folder();
  std::string script;
  for (std::size_t i = 0; i < command_lines.size(); ++i) {
    std::string stem = quote(folder + "/" + std::to_string(i));
    script += "timeout 20 " + quote(AGENT_BIN) + " " + command_lines[i] + " >" + stem + ".out 2>" +
              stem + ".err; echo $? >" + stem + ".rc\n";
  }
  test::write_file(folder + "/script", script);
  REQUIRE(test::run_shell("sh " + quote(folder + "/script")).exit_code == 0);
  std::vector<Run> runs;
  for (std::size_t i = 0; i < command_lines.size(); ++i) {
    std::string stem = folder + "/" + std::to_string(i);
    runs.push_back({std::stoi(test::read_file(stem + ".rc")), test::read_file(stem + ".out"),
                    test::read_file(stem + ".err")});
  }
  return runs;
}

} // namespace

TEST_CASE("every numeric option of every command refuses a word, a negative, a fraction where "
          "whole and a huge number, naming the option, the value and its range in words") {
  std::vector<std::string> commands = subcommands();
  REQUIRE(commands.size() >= 10);
  std::size_t numeric = 0;
  for (const std::string &command : commands) {
    INFO(command);
    bool plugin = command == "check";
    int code = plugin ? 3 : 2;
    std::vector<ValueOption> options = value_options(command);
    std::vector<std::string> probes;
    for (const ValueOption &option : options)
      probes.push_back(given(option, "lots"));
    std::vector<Run> words = run_each(probes);
    // Each numeric option, whether whole, its range as refused, and the four values.
    std::vector<std::pair<const ValueOption *, bool>> found;
    std::vector<std::string> ranges, tries;
    for (std::size_t i = 0; i < options.size(); ++i) {
      const ValueOption &option = options[i];
      INFO(option.name);
      // A word: a numeric option says so in the one form; any other option refuses it in its
      // own words or takes it (then the unknown option after it is what is refused), never with
      // CLI11's "Could not convert" or a range in a type's digits.
      std::string word = refusal(words[i], code, plugin);
      for (const char *cli11 : {"Could not convert", "not in range", "out of range", "Value lots",
                                "e+", "FLOAT", "INT", "UINT"})
        CHECK_THAT(word, !Catch::Contains(cli11));
      CHECK(longest_digits(word) < 16);
      std::smatch form;
      if (!std::regex_search(word, form,
                             std::regex(": 'lots' is not (a|a whole) number from ([^(]*) \\(see ")))
        continue;
      ++numeric;
      CHECK_THAT(word, Catch::Contains(option.name + ": 'lots' is not "));
      bool whole = form[1] == "a whole";
      // The range in words is the one --help gives.
      CHECK_THAT(form[2].str(), Catch::StartsWith(option.range));
      for (const std::string &value :
           {std::string("-5"), std::string(400, '9'), std::string(whole ? "1.5" : "1e400")}) {
        found.emplace_back(&option, whole);
        ranges.push_back(form[2]);
        tries.push_back(given(option, value));
      }
    }
    std::vector<Run> runs = run_each(tries);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const ValueOption &option = *found[i].first;
      INFO(tries[i]);
      std::string line = refusal(runs[i], code, plugin);
      CHECK_THAT(line, Catch::Contains(option.name + ": '"));
      CHECK_THAT(line, Catch::Contains(std::string(found[i].second ? " is not a whole number from "
                                                                   : " is not a number from ") +
                                       ranges[i] + " (see nvsmi-agent " + command + " --help)"));
      CHECK(longest_digits(line) < 24);
    }
  }
  // pick N, --min-free-mib, --interval, --timeout ...: far more than these, were the enumeration
  // to miss them.
  CHECK(numeric >= 40);
}

TEST_CASE("a number is decimal digits: nan, inf, hex, spaces and other shapes are refused in the "
          "rule's words") {
  // A whole option, a whole positional, a real option.
  for (const ValueOption &option :
       {ValueOption{"pick", "--min-free-mib", ""}, ValueOption{"pick", "N", ""},
        ValueOption{"snapshot", "--timeout", ""}}) {
    bool whole = option.command == "pick";
    for (const std::string value : {"nan", "inf", "-inf", "1e400", "0x10", "0x1p3", " 5", "5 ",
                                    "--5", "1,5", "1_000", "+", "-", ".", "1e", "e5"}) {
      INFO(option.name << " " << quote(value));
      std::string line = refusal(run_agent(given(option, value)), 2);
      CHECK_THAT(line, Catch::Contains(
                           option.name + ": '" + value +
                           (whole ? "' is not a whole number from " : "' is not a number from ")));
    }
  }
}

TEST_CASE("the refusals of the issue, each in one line with the option, the value and the range") {
  std::string line = refusal(run_agent("pick 2 --min-free-mib lots"), 2);
  CHECK(line == "nvsmi-agent: --min-free-mib: 'lots' is not a whole number from 0 to 10,000,000 "
                "MiB (see nvsmi-agent pick --help)\n");
  // The value is said as typed, cut where long, with its length.
  line = refusal(run_agent("watch --count " + std::string(10000, '7')), 2);
  CHECK_THAT(line, Catch::Contains("--count: '77777777777777777777777…' (10,000 bytes) is not a "
                                   "whole number from 1 to 1,000,000,000"));
  // An unsigned size given -1 was 18446744073709551615 bytes: never rotated.
  refusal(run_agent("watch --csv-max-bytes -1"), 2);
  line = refusal(run_agent("serve --history nan"), 2);
  CHECK_THAT(line, Catch::Contains("--history: 'nan' is not a number from 0 to 604,800 seconds"));
}

TEST_CASE("a whole number is read in decimal: 010 is ten, not octal eight") {
  // CLI11 alone read 010 as 8 and refused 08; a sign and -0 are the numbers they say.
  for (const auto &[given, samples] :
       std::map<std::string, std::size_t>{{"010", 10}, {"08", 8}, {"+3", 3}}) {
    INFO(given);
    Run run = run_agent("watch --count " + given + " --interval 0.01 --format json --fixture " +
                        fixture("xml/h100-8gpu-v12.xml"));
    CHECK(run.exit_code == 0);
    CHECK(test::lines_of(run.out).size() == samples);
  }
}

TEST_CASE("a misspelt option is answered from that command's options, a GPU spelling with the "
          "command's way to choose GPUs, a far word with the list") {
  std::string line = refusal(run_agent("top --gpu 3"), 2);
  CHECK_THAT(line, Catch::StartsWith("nvsmi-agent: top: unknown option '--gpu': top has no option "
                                     "that chooses GPUs; top's options: "));
  CHECK_THAT(line, Catch::Contains("--interval, "));
  CHECK_THAT(line, !Catch::Contains("did you mean"));
  // Commands that choose GPUs are told the spelling they take.
  CHECK_THAT(refusal(run_agent("report --gpus 0 x.csv"), 2),
             Catch::Contains("report: unknown option '--gpus'; did you mean '--gpu'?"));
  CHECK_THAT(refusal(run_agent("check --gpu-ids 0"), 3, true),
             Catch::Contains("check: unknown option '--gpu-ids'; did you mean '--gpu'?"));
  CHECK_THAT(refusal(run_agent("pick 1 -i 0"), 2),
             Catch::Contains("pick: unknown option '-i': pick has no option that chooses GPUs"));
  // A slip, a swap of two letters.
  CHECK_THAT(refusal(run_agent("watch --intervla 2"), 2),
             Catch::Contains("watch: unknown option '--intervla'; did you mean '--interval'?"));
  // A word like no option: the command's options, never a far guess.
  line = refusal(run_agent("snapshot --zzzzzz"), 2);
  CHECK_THAT(line, Catch::Contains("snapshot: unknown option '--zzzzzz'; snapshot's options: "
                                   "--source, --format, --fixture, "));
  CHECK_THAT(line, !Catch::Contains("--help,"));
}

TEST_CASE("run names the GPUs in the spelling typed: --gpu-ids answers about --gpu-ids") {
  std::string folder = test::temporary_folder();
  Run run = test::run_shell("NVSMI_LOCK_DIR=" + quote(folder) + " " + quote(AGENT_BIN) +
                            " run --gpu-ids 9 --fixture " +
                            fixture("xml/h100-8gpu-states-v12.xml") + " -- true");
  CHECK(refusal(run, 2) == "nvsmi-agent: --gpu-ids: nvidia-smi lists no GPU 9\n");
  Run both = run_agent("run --gpu 1 --gpu-ids 2 -- true");
  CHECK_THAT(refusal(both, 2), Catch::Contains("run: --gpu cannot go with --gpu-ids"));
}

TEST_CASE("check refuses a GPU that is no index, UUID or bus id, and any bad option, as UNKNOWN "
          "in one plugin line, exit 3") {
  const std::string xml =
      " --stale-warning none --stale-critical none --fixture " + fixture("xml/h100-8gpu-v12.xml");
  for (const std::string gpu : {"1.5", "gpu0", "all", "GPU-", "0x1", "-1"}) {
    INFO(gpu);
    std::string line = refusal(run_agent("check " + quote("--gpu=" + gpu) + xml), 3, true);
    CHECK_THAT(line, Catch::Contains("--gpu: '" + gpu + "' is not a GPU's index"));
    CHECK(line.find('|') == std::string::npos);
  }
  CHECK(
      run_agent("check --gpu 0,GPU-00000000-0000-0000-0000-000000000001,39:00.0" + xml).exit_code ==
      0);
  for (const std::string &arguments :
       {std::string("--timeout lots"), std::string("--expected-gpus 1.5"),
        std::string("--memory-warning 101"), std::string("--bogus"), std::string("extra"),
        std::string("--timeout")}) {
    INFO(arguments);
    refusal(run_agent("check " + arguments + xml), 3, true);
  }
  // A misspelt check in a monitor's config is the plugin's failure too, not a CRITICAL GPU.
  std::string line = refusal(run_agent("chek" + xml), 3, true);
  CHECK_THAT(line, Catch::Contains("unknown command 'chek'; did you mean 'check'?"));
}

TEST_CASE("a misspelt command gets the one meant and the list; a far word gets the list") {
  const std::string list = "snapshot, watch, report, job, serve, top, pick, run, check, fleet";
  for (const auto &[typed, meant] : std::map<std::string, std::string>{
           {"tpo", "top"}, {"snapsot", "snapshot"}, {"wach", "watch"}, {"reprot", "report"}}) {
    INFO(typed);
    CHECK(refusal(run_agent(typed), 2) ==
          "nvsmi-agent: unknown command '" + typed + "'; did you mean '" + meant +
              "'? The commands: " + list + " (see nvsmi-agent --help)\n");
  }
  CHECK(refusal(run_agent("frobnicate"), 2) ==
        "nvsmi-agent: unknown command 'frobnicate'; the commands: " + list +
            " (see nvsmi-agent --help)\n");
}

TEST_CASE("report on a file that is not a log says so in one line and what a log is, exit 6") {
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/README.md", "# nvsmi-agent\n\nA tool.\n");
  test::write_file(folder + "/people.csv", "name,age\nbob,3\n");
  test::write_file(folder + "/package.json", "{\n  \"name\": \"x\"\n}\n");
  test::write_file(folder + "/binary", std::string("\x7f"
                                                   "ELF\x02\x01\x01\0\0\0",
                                                   10) +
                                           "x\n");
  test::write_file(folder + "/empty.csv", "");
  const std::string expected = " (a CSV log starts with a header such as 'timestamp,index,...'; "
                               "a JSON log has one JSON object per line)\n";
  auto report = [&](const std::string &name) {
    return run_agent("report " + quote(folder + "/" + name));
  };
  CHECK(refusal(report("README.md"), 6) ==
        "nvsmi-agent: " + folder +
            "/README.md is not a log of watch or serve: its first line is '# nvsmi-agent'" +
            expected);
  CHECK(refusal(report("people.csv"), 6) ==
        "nvsmi-agent: " + folder +
            "/people.csv is not a log of watch or serve: its first line is 'name,age'" + expected);
  CHECK_THAT(refusal(report("package.json"), 6),
             Catch::Contains("package.json is not a log of watch or serve: its first line is '{'"));
  CHECK(refusal(report("binary"), 6) ==
        "nvsmi-agent: " + folder + "/binary is not a log of watch or serve: it is not text" +
            expected);
  CHECK(refusal(report("empty.csv"), 6) ==
        "nvsmi-agent: " + folder + "/empty.csv is empty: no sample in it yet" + expected);
  // Beside a log, an empty file is one just rotated: no refusal.
  CHECK(
      run_agent("report " + quote(folder + "/empty.csv") + " " + fixture("logs/training-2gpu.csv"))
          .exit_code == 0);
  // A first line with escapes is shown harmless.
  test::write_file(folder + "/escapes.txt", "\x1b[2J\x1b]0;owned\x07 hello\n");
  refusal(report("escapes.txt"), 6);
  // Every log the reader knows still reads: CSV with a header, nvidia-smi's with units, JSON.
  for (const char *log : {"logs/training-2gpu.csv", "logs/nvidia-smi-units.csv",
                          "logs/h100-tiny.jsonl", "logs/bad-rows.csv"})
    CHECK(run_agent(std::string("report ") + fixture(log)).exit_code == 0);
}

TEST_CASE("hostile values on the command line: one printable line, the usage code, no crash") {
  const std::vector<std::string> values = {std::string(10000, '9'),
                                           "NaN",
                                           "-inf",
                                           "-0x1p3",
                                           "+",
                                           "\xff\xfe\xfd",
                                           "\x1b[2J\x1b]0;x\x07",
                                           "1\n2",
                                           "\xc2\x9b"
                                           "31m",
                                           std::string(5000, 'a') + "\x1b[2J"};
  // After each, an option no command has: whatever an option takes, nothing runs.
  const std::string stop = " --no-such-option-at-all";
  for (const std::string &value : values) {
    INFO("value: " << nvsmi::valid_utf8(value.substr(0, 40)) << " (" << value.size() << " bytes)");
    for (const std::string &option :
         {std::string("snapshot --timeout"), std::string("snapshot --format"),
          std::string("report --gpu"), std::string("watch --fields"), std::string("pick"),
          std::string("job"), std::string("watch --json-max-bytes")}) {
      INFO(option);
      refusal(run_agent(option + " " + quote(value) + stop), 2);
    }
    refusal(run_agent("check --gpu " + quote(value) + stop), 3, true);
    refusal(run_agent("check --temperature-warning " + quote(value) + stop), 3, true);
    refusal(run_agent(quote(value) + stop), 2);
    refusal(run_agent("top " + quote("--" + value)), 2);
  }
}

} // namespace test_cli_mistakes
