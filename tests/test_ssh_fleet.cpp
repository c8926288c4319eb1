// `--ssh`'s pure parts: the host list, the ssh command lines, and what a host's ps printed. The
// real thing (sshd on loopback, fleet and top against it) is tests/test_fleet_ssh.py.
#include "support.hpp"

#include "core/exit_codes.hpp"
#include "fleet/fleet_hosts.hpp"
#include "fleet/ssh_fleet.hpp"
#include "nvidia_smi/nvidia_smi_stream.hpp"
#include "nvidia_smi/source.hpp"
#include "nvsmi/utf8.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

namespace {

bool shell_safe(const std::string &word) {
  return !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("=,._-:").find(c) != std::string_view::npos;
  });
}

} // namespace

TEST_CASE("ssh: a host is [USER@]HOST[:PORT], and nothing ssh would read as an option") {
  auto hosts = nvsmi::parse_ssh_hosts("gpu7, alice@gpu8:2222,[::1]:22,bob@[fe80::1%eth0],lab-3");
  REQUIRE(hosts.size() == 5);
  CHECK(hosts[0].label() == "gpu7");
  CHECK(hosts[0].port.empty());
  CHECK(hosts[1].user == "alice");
  CHECK(hosts[1].port == "2222");
  CHECK(hosts[1].label() == "alice@gpu8:2222");
  CHECK(hosts[2].host == "::1");
  CHECK(hosts[2].label() == "[::1]:22");
  CHECK(hosts[3].label() == "bob@[fe80::1%eth0]");
  for (const char *bad :
       {"-oProxyCommand=sh", "gpu7:0", "gpu7:65536", "gpu7:", "-l@gpu7", "al ice@gpu7", "@gpu7",
        "gpu7 -p 1", "gpu7;reboot", "$(reboot)", "gpu\x1b[2J", "::1", "[::1", "[::1]x", "gpu7,gpu7",
        "", "a@-gpu7", "gpu7/x", "gpu7:22:22"}) {
    INFO(bad);
    try {
      nvsmi::parse_ssh_hosts(bad);
      FAIL("accepted");
    } catch (const nvsmi::AgentError &error) {
      CHECK(error.code() == nvsmi::exit_usage);
      CHECK(std::string(error.what()).rfind("--ssh: ", 0) == 0);
      CHECK(std::string(error.what()).find('\x1b') == std::string::npos);
    }
  }
  std::string many;
  for (int i = 0; i <= 64; ++i)
    many += "gpu" + std::to_string(i) + ",";
  CHECK_THROWS_WITH(nvsmi::parse_ssh_hosts(many), Catch::Contains("more than 64 hosts"));
  std::string folder = test::temporary_folder();
  test::write_file(folder + "/hosts", "# the lab\ngpu1\n\n  alice@gpu2:2222  \n");
  CHECK(nvsmi::read_ssh_hosts_file(folder + "/hosts").size() == 2);
  test::write_file(folder + "/bad", "gpu1\n-oProxyCommand=x\n");
  CHECK_THROWS_WITH(nvsmi::read_ssh_hosts_file(folder + "/bad"),
                    Catch::Contains("--ssh-hosts-file") && Catch::Contains("line 2"));
}

TEST_CASE("ssh: the commands check host keys as the user's config says and never ask") {
  nvsmi::SshFleetOptions options;
  options.timeout = std::chrono::milliseconds(2500);
  options.ssh_config = "/etc/lab/ssh_config";
  nvsmi::FleetHost host = nvsmi::parse_ssh_host("alice@gpu7:2222");
  std::vector<std::string> master = nvsmi::ssh_master_command(options, host, "/tmp/x/0");
  std::vector<std::string> session =
      nvsmi::ssh_session_command(options, host, "/tmp/x/0", {"nvidia-smi"});
  for (const auto *argv : {&master, &session}) {
    auto has = [&](const std::string &word) {
      return std::find(argv->begin(), argv->end(), word) != argv->end();
    };
    CHECK(argv->front() == "ssh");
    CHECK(has("BatchMode=yes"));
    CHECK(has("ConnectTimeout=3")); // rounded up to whole seconds
    CHECK(has("ControlPath=/tmp/x/0"));
    CHECK(has("/etc/lab/ssh_config"));
    // Host keys as known_hosts and the user's config say: never turned off.
    for (const std::string &word : *argv) {
      CHECK(word.find("StrictHostKeyChecking") == std::string::npos);
      CHECK(word.find("UserKnownHostsFile") == std::string::npos);
    }
    // The host comes after `--`: whatever it is, ssh reads no option from it.
    auto dashes = std::find(argv->begin(), argv->end(), "--");
    REQUIRE(dashes != argv->end());
    CHECK(*(dashes + 1) == "gpu7");
  }
  CHECK(std::find(master.begin(), master.end(), "-M") != master.end());
  CHECK(std::find(master.begin(), master.end(), "-N") != master.end());
  CHECK(session.back() == "nvidia-smi");
  // What the sampler adds after `nvidia-smi` reaches the remote shell joined by spaces: every word
  // must mean itself there.
  std::vector<std::vector<std::string>> remote = {
      nvsmi::loop_arguments(nvsmi::Source::csv, std::chrono::milliseconds(1000)),
      nvsmi::loop_arguments(nvsmi::Source::csv, std::chrono::milliseconds(250)),
      nvsmi::compute_apps_loop_arguments(std::chrono::milliseconds(1000))};
  for (const auto &words : remote)
    for (const std::string &word : words) {
      INFO(word);
      CHECK(shell_safe(word));
    }
}

TEST_CASE("ssh: a host's ps is read for the pids asked, its text printable and bounded") {
  std::string out = "  4242     0 root     python train.py --lr 0.1\n"
                    " 4243  1000 alice    \x1b]0;owned\x07torchrun\t--x \xff\n"
                    "9999 0 root not asked for\n"
                    "garbage line\n"
                    "4244 -5 eve negative uid\n"
                    "4242 1 mallory the same pid twice\n"
                    "4245 7 " +
                    std::string(200, 'u') + " " + std::string(100000, 'a') + "\n";
  std::vector<nvsmi::RemoteProcess> found = nvsmi::read_remote_ps(out, {4242, 4243, 4244, 4245});
  REQUIRE(found.size() == 3);
  CHECK(found[0].pid == 4242);
  CHECK(found[0].user == "root");
  CHECK(found[0].command == "python train.py --lr 0.1");
  CHECK(found[1].uid == 1000);
  CHECK(found[1].user == "alice");
  for (const auto &process : found) {
    CHECK(nvsmi::is_valid_utf8(process.command));
    CHECK(process.command.size() <= 4096);
    CHECK(process.user.size() <= 64);
    for (char c : process.command + process.user)
      CHECK(static_cast<unsigned char>(c) >= 0x20);
  }
  CHECK(nvsmi::read_remote_ps("", {1}).empty());
}
