// End to end: serve following a kernel log that grows while it runs.
#include "serve_support.hpp"

#include <catch2/catch.hpp>

#include <fstream>

namespace test_xid_serve {

using test::Http;
using test::quote;
using test::Server;

namespace {

std::size_t occurrences(const std::string &text, const std::string &needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

} // namespace

TEST_CASE("serve --kernel-log: lines appended while it runs, and a missing log said once") {
  std::string folder = test::temporary_folder();
  std::string path = folder + "/kern.log";
  test::write_file(path, "Nov 24 10:00:01 gpu7 kernel: NVRM: loading\n");
  Server server("--interval 0.05 --fixture " + quote(test::fixture_path("xml/h100-8gpu-v12.xml")) +
                " --kernel-log " + quote(path));
  REQUIRE(server.get("/api/v1/snapshot").status == 200);
  {
    std::ofstream out(path, std::ios::app);
    out << "Nov 24 10:00:02 gpu7 kernel: NVRM: Xid (PCI:0000:19:00): 79, pid='<unknown>', "
           "name=<unknown>, appended while serving\n";
  }
  Http snapshot = server.get("/api/v1/snapshot");
  REQUIRE(snapshot.status == 200);
  // Once the JSON carries the kernel log (agent/formats/), the appended Xid shows on a later
  // sample; until then, serving goes on unharmed.
  if (snapshot.body.find("\"kernel_log\"") != std::string::npos)
    CHECK(test::wait_until([&] {
      return server.get("/api/v1/snapshot").body.find("appended while serving") !=
             std::string::npos;
    }));
  CHECK(occurrences(server.log(), "kernel log ") == 0);

  Server blind("--interval 0.05 --fixture " + quote(test::fixture_path("xml/h100-8gpu-v12.xml")) +
               " --kernel-log " + quote(folder + "/absent.log"));
  // Many samples later, still one line.
  REQUIRE(test::wait_until([&] {
    auto history =
        nlohmann::json::parse(blind.get("/api/v1/history?seconds=60").body, nullptr, false);
    return history.is_object() && history["samples"].size() >= 10;
  }));
  INFO(blind.log());
  CHECK(occurrences(blind.log(), "kernel log ") == 1);
  CHECK_THAT(blind.log(), Catch::Contains("absent.log: No such file or directory: Xid errors are "
                                          "not counted (nvsmi_xid_readable 0)"));
  CHECK(blind.get("/metrics").status == 200);
  CHECK(server.stop() == 0);
  CHECK(blind.stop() == 0);
}

} // namespace test_xid_serve
