// What the claims tests share: a claims folder as the package ships it, an unprivileged user to
// attack it with, and fs.protected_regular as Debian 12 sets it.
#pragma once

#include "jobs/gpu_claims.hpp"
#include "process_support.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace test {

// The prefix that runs a command as `nobody`, with no group of root's.
inline const std::string as_nobody = "setpriv --reuid=nobody --regid=nogroup --clear-groups ";

// Whether this test can act as another user; warns that it skips when not.
inline bool can_be_nobody() {
  if (::geteuid() == 0 && run_shell(as_nobody + "true").exit_code == 0)
    return true;
  WARN("skipped: acting as the user nobody needs root and setpriv");
  return false;
}

// A fresh claims folder as systemd-tmpfiles makes /run/lock/nvsmi-agent: root's, mode 1777, in a
// folder that every user may pass through.
inline std::string shared_claims_folder() {
  std::string parent = temporary_folder();
  std::string folder = parent + "/claims";
  REQUIRE(::chmod(parent.c_str(), 0755) == 0);
  REQUIRE(::mkdir(folder.c_str(), 0700) == 0);
  REQUIRE(::chmod(folder.c_str(), 01777) == 0);
  return folder;
}

// fs.protected_regular at 2 (Debian 12's default) while it lives, then back as it was.
class ProtectedRegular {
public:
  ProtectedRegular() {
    std::ifstream in(path);
    in >> before_;
    std::ofstream out(path);
    set_ = static_cast<bool>(out << "2\n" << std::flush);
  }
  ~ProtectedRegular() {
    if (set_)
      std::ofstream(path) << before_ << "\n";
  }
  bool set() const {
    if (!set_)
      WARN("skipped: cannot write " << path);
    return set_;
  }

private:
  static constexpr const char *path = "/proc/sys/fs/protected_regular";
  std::string before_ = "0";
  bool set_ = false;
};

// Whether `unshare ARGUMENTS true` works here (it needs root, and a container may forbid it);
// warns that the test skips when not.
inline bool can_unshare(const std::string &arguments) {
  if (run_shell("unshare " + arguments + " true").exit_code == 0)
    return true;
  WARN("skipped: unshare " << arguments << " is not allowed here");
  return false;
}

// Holds the claim on `uuid` in `folder` from another process, as `run` would, until released or
// gone. util-linux flock(1) takes the same lock; the shell then becomes the sleep that holds it.
struct ClaimHolder {
  ClaimHolder(const std::string &folder, const std::string &uuid)
      : process("exec 9<>" + quote(folder + "/" + uuid + ".lock") +
                " && flock -n 9 && exec sleep 300") {
    REQUIRE(wait_until([&] { return nvsmi::claimed(folder, uuid); }));
  }
  ~ClaimHolder() { release(); }
  void release() {
    if (released_)
      return;
    released_ = true;
    ::kill(process.pid(), SIGKILL);
    process.wait();
  }
  Background process;

private:
  bool released_ = false;
};

// The A100 recording (xml/a100-mig-v12.xml) with its one process gone, written into `folder`:
// both MIG instances free by every other rule. Its path.
inline std::string idle_mig_recording(const std::string &folder) {
  std::string xml = read_file(fixture_path("xml/a100-mig-v12.xml"));
  std::size_t start = xml.find("<processes>"), end = xml.find("</processes>");
  REQUIRE(end != std::string::npos);
  xml.replace(start, end - start, "<processes>");
  write_file(folder + "/idle-mig.xml", xml);
  return folder + "/idle-mig.xml";
}

} // namespace test
