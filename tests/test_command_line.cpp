#include "nvidia_smi/command_line.hpp"

#include <catch2/catch.hpp>

namespace test_command_line {

using nvsmi::split_command;
using words = std::vector<std::string>;

TEST_CASE("commands split like a shell would, without running one") {
  CHECK(split_command("nvidia-smi") == words{"nvidia-smi"});
  CHECK(split_command("  sudo -n   nvidia-smi ") == words{"sudo", "-n", "nvidia-smi"});
  CHECK(split_command("ssh gpu7 'nvidia-smi -i 0'") == words{"ssh", "gpu7", "nvidia-smi -i 0"});
  CHECK(split_command(R"("/opt/my tools/nvidia-smi" -x)") ==
        words{"/opt/my tools/nvidia-smi", "-x"});
  CHECK(split_command(R"(a\ b "c\"d" 'e\f')") == words{"a b", "c\"d", "e\\f"});
  CHECK(split_command("echo $(rm -rf /); ls | cat") ==
        words{"echo", "$(rm", "-rf", "/);", "ls", "|", "cat"});
  CHECK(split_command("''") == words{""});
  CHECK(split_command("").empty());
}

TEST_CASE("an unclosed quote is refused") {
  CHECK_THROWS_AS(split_command("ssh 'gpu7"), std::invalid_argument);
  CHECK_THROWS_AS(split_command("ssh \"gpu7"), std::invalid_argument);
}

} // namespace test_command_line
