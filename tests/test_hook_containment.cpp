// The drain hook contained (issue 40 item 4), through the built agent: nothing it starts outlives
// its deadline or the agent, `setsid` or a double fork included, and the agent names what it
// killed; it holds no descriptor of the agent's but 0-2 (serve's listening socket among them, so a
// restarted serve binds its port); its environment's values are at most 256 bytes of valid UTF-8
// whatever name the driver gives the GPU.
#include "process_support.hpp"
#include "serve_support.hpp"
#include "support.hpp"

#include "nvsmi/utf8.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <dirent.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace test_hook_containment {

using test::quote;

namespace {

// The 8-GPU sample with one fault: GPU 0's 2 uncorrectable ECC errors. `name`, where given, is GPU
// 0's name.
std::string one_fault(const std::string &dir, const std::string &name = "") {
  std::string xml = test::read_file(test::fixture_path("xml/h100-8gpu-v12.xml"));
  std::string zero = "<dram_uncorrectable>0<";
  xml.replace(xml.find(zero), zero.size(), "<dram_uncorrectable>2<");
  if (!name.empty()) {
    std::string tag = "<product_name>";
    std::size_t start = xml.find(tag) + tag.size();
    xml.replace(start, xml.find("</product_name>", start) - start, name);
  }
  std::string path = dir + "/sample.xml";
  test::write_file(path, xml);
  return path;
}

// A hook script in `dir`, executable: it writes its pid in $1/hook and its NVSMI_ variables in
// $1/env, starts `setsid sleep 1000` and a double-forked `sleep 1000`, their pids in $1/setsid and
// $1/double, then runs `body` (sh).
std::string write_hook(const std::string &dir, const std::string &body) {
  std::string path = dir + "/hook.sh";
  test::write_file(path,
                   "#!/bin/sh\n"
                   "echo $$ >\"$1/hook.part\"; mv \"$1/hook.part\" \"$1/hook\"\n"
                   "env | grep '^NVSMI_' >\"$1/env\"\n"
                   "setsid sleep 1000 & echo $! >\"$1/setsid.part\"\n"
                   "sh -c 'sleep 1000 & echo $! >\"$1/double.part\"' sh \"$1\"\n"
                   "mv \"$1/setsid.part\" \"$1/setsid\"; mv \"$1/double.part\" \"$1/double\"\n" +
                       body);
  REQUIRE(::chmod(path.c_str(), 0755) == 0);
  return path;
}

// Both of the hook's sleeps, once written: still there or not.
bool both_ended(const std::string &dir) {
  int setsid = test::pid_in_file(dir + "/setsid"), twice = test::pid_in_file(dir + "/double");
  return setsid > 0 && twice > 0 && test::process_ended(setsid) && test::process_ended(twice);
}

// What each open descriptor of `pid` points to, as /proc says: "0 /dev/null", ...
std::vector<std::string> descriptors_of(int pid) {
  std::vector<std::string> found;
  std::string folder = "/proc/" + std::to_string(pid) + "/fd";
  DIR *listing = ::opendir(folder.c_str());
  if (!listing)
    return found;
  while (dirent *entry = ::readdir(listing)) {
    if (entry->d_name[0] == '.')
      continue;
    char target[4096];
    ssize_t length = ::readlink((folder + "/" + entry->d_name).c_str(), target, sizeof target);
    if (length > 0)
      found.push_back(std::string(entry->d_name) + " " + std::string(target, length));
  }
  ::closedir(listing);
  return found;
}

// 0, 1 and 2 on /dev/null; any other is the shell's own script (dash keeps it on 10, bash on
// 255), never the agent's pipes, sockets, epoll or files.
void check_only_standard_descriptors(int pid, const std::string &hook) {
  std::vector<std::string> descriptors = descriptors_of(pid);
  INFO("pid " << pid);
  CHECK(descriptors.size() >= 3);
  for (const std::string &entry : descriptors) {
    INFO(entry);
    std::string fd = entry.substr(0, entry.find(' ')), target = entry.substr(entry.find(' ') + 1);
    if (fd == "0" || fd == "1" || fd == "2")
      CHECK(target == "/dev/null");
    else
      CHECK(target == hook);
  }
}

void kill_left(const std::string &dir) {
  for (const char *name : {"/setsid", "/double"})
    if (int pid = test::pid_in_file(dir + name); pid > 0 && !test::process_ended(pid))
      ::kill(pid, SIGKILL);
}

} // namespace

TEST_CASE("hook contained: what a hook starts with setsid or a double fork is killed at its "
          "deadline and named") {
  std::string dir = test::temporary_folder();
  std::string hook = write_hook(dir, "exec sleep 600\n"); // hangs past its deadline
  std::string script = quote(AGENT_BIN) +
                       " watch --format json --interval 0.1 --count 100000 --kernel-log none " +
                       "--fixture " + quote(one_fault(dir)) +
                       " --on-unhealthy-timeout 2 --on-unhealthy " + quote(hook + " " + dir);
  test::Background agent(script);
  bool ended = test::wait_until([&] { return agent.err_contains("killed after 2 s"); });
  INFO(agent.err());
  CHECK(ended);
  CHECK(test::wait_until([&] { return both_ended(dir); }));
  kill_left(dir);
  ::kill(agent.pid(), SIGTERM);
  agent.wait();
  // The line names the two sleeps, and the sleep the hook became is the one killed at its deadline.
  std::string err = agent.err();
  std::size_t line = err.find("killed after 2 s");
  REQUIRE(line != std::string::npos);
  std::string said = err.substr(line, err.find('\n', line) - line);
  CHECK_THAT(said, Catch::Contains("with what it started: pid "));
  CHECK_THAT(said, Catch::Contains("pid " + std::to_string(test::pid_in_file(dir + "/setsid")) +
                                   " (sleep)"));
  CHECK_THAT(said, Catch::Contains("pid " + std::to_string(test::pid_in_file(dir + "/double")) +
                                   " (sleep)"));
}

TEST_CASE("hook contained: a hook that ends at once takes what it left running with it") {
  std::string dir = test::temporary_folder();
  std::string hook = write_hook(dir, "exit 0\n");
  test::Run run = test::run_shell(
      quote(AGENT_BIN) + " watch --format json --interval 0.1 --count 3 --kernel-log none " +
      "--fixture " + quote(one_fault(dir)) + " --on-unhealthy " + quote(hook + " " + dir));
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(both_ended(dir));
  kill_left(dir);
  CHECK_THAT(run.err, Catch::Contains("): done; killed what it left running: pid "));
}

TEST_CASE("hook contained: the hook and what it starts hold only descriptors 0-2; a serve killed "
          "while its hook's setsid child runs leaves nothing that holds its port: a serve "
          "restarted on it binds, and the child goes with the agent") {
  std::string dir = test::temporary_folder();
  std::string hook = write_hook(dir, "exec sleep 600\n");
  int port = test::free_port();
  std::string arguments = "--listen 127.0.0.1:" + std::to_string(port) +
                          " --interval 0.1 --kernel-log none --fixture " + quote(one_fault(dir));
  {
    test::Server first(arguments + " --on-unhealthy-timeout 60 --on-unhealthy " +
                       quote(hook + " " + dir));
    REQUIRE(first.port() == port);
    REQUIRE(test::wait_until([&] { return test::pid_in_file(dir + "/double") > 0; }));
    for (const char *name : {"/hook", "/setsid", "/double"})
      check_only_standard_descriptors(test::pid_in_file(dir + name), hook);
    ::kill(first.pid(), SIGKILL); // no clean-up of its own: only what it set up before
    CHECK(first.stop() == 128 + SIGKILL);
  }
  test::Server again(arguments);
  INFO(again.log());
  CHECK(again.port() == port);
  CHECK_THAT(again.log(), !Catch::Contains("Address already in use"));
  // The agent's death ended its hook's keeper's watch: everything the hook started went with it.
  CHECK(test::wait_until([&] { return both_ended(dir); }));
  kill_left(dir);
}

TEST_CASE("hook contained: every NVSMI_ value is at most 256 bytes of valid UTF-8, a GPU name of "
          "558 bytes in characters of 2 and 4 bytes included") {
  std::string dir = test::temporary_folder();
  std::string name;
  for (int i = 0; i < 93; ++i)
    name += "\u00e9\U0001F600"; // é 😀: 6 bytes, 3 columns
  REQUIRE(name.size() == 558);
  std::string hook = write_hook(dir, "exit 0\n");
  test::Run run = test::run_shell(
      quote(AGENT_BIN) + " watch --format json --interval 0.1 --count 2 --kernel-log none " +
      "--fixture " + quote(one_fault(dir, name)) + " --on-unhealthy " + quote(hook + " " + dir));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  kill_left(dir);
  std::string environment = test::read_file(dir + "/env");
  CHECK_THAT(environment, Catch::Contains("NVSMI_GPU_NAME=\u00e9\U0001F600"));
  for (const std::string &line : test::lines_of(environment)) {
    INFO(line);
    std::string value = line.substr(line.find('=') + 1);
    CHECK(value.size() <= 256);
    CHECK(nvsmi::is_valid_utf8(value));
  }
}

TEST_CASE("hook contained: a hook that cannot be executed is one line per fault, and sampling goes "
          "on") {
  std::string dir = test::temporary_folder();
  std::string hook = dir + "/hook.sh";
  test::write_file(hook, "#!/nonexistent/interpreter\n");
  REQUIRE(::chmod(hook.c_str(), 0755) == 0);
  test::Run run = test::run_shell(
      quote(AGENT_BIN) + " watch --format json --interval 0.05 --count 5 --kernel-log none " +
      "--fixture " + quote(one_fault(dir)) + " --on-unhealthy " + quote(hook));
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(test::non_empty_lines_of(run.out).size() == 5);
  CHECK_THAT(run.err, Catch::Contains("--on-unhealthy for GPU 0 (2 uncorrectable ECC errors): "
                                      "cannot run " +
                                      hook + ": No such file or directory"));
}

TEST_CASE("hook contained: nvidia-smi, which serve keeps running, holds none of serve's sockets") {
  std::string dir = test::temporary_folder();
  // A wrapper that notes each start's pid, then becomes the stand-in.
  std::string wrapper = dir + "/nvidia-smi";
  test::write_file(dir + "/pids", "");
  test::write_file(wrapper, "#!/bin/sh\necho $$ >>" + quote(dir + "/pids") + "\nexec " +
                                quote(SCRIPTS_DIR "/fake-nvidia-smi") + " \"$@\"\n");
  REQUIRE(::chmod(wrapper.c_str(), 0755) == 0);
  test::Server serve("--interval 0.1 --kernel-log none --source xml --nvidia-smi " +
                     quote(wrapper));
  std::vector<std::string> seen;
  // The stream's nvidia-smi runs as long as serve: at least one listed pid is alive, with its
  // descriptors readable.
  bool found = test::wait_until([&] {
    seen.clear();
    for (const std::string &pid : test::non_empty_lines_of(test::read_file(dir + "/pids"))) {
      std::vector<std::string> descriptors = descriptors_of(std::stoi(pid));
      seen.insert(seen.end(), descriptors.begin(), descriptors.end());
    }
    return !seen.empty();
  });
  INFO(serve.log());
  REQUIRE(found);
  for (const std::string &entry : seen) {
    INFO(entry);
    CHECK(entry.find("socket:") == std::string::npos);
  }
  CHECK(serve.stop() == 0);
}

} // namespace test_hook_containment
