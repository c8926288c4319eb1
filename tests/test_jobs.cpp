#include "claims_support.hpp"
#include "core/exit_codes.hpp"
#include "files/file_lock.hpp"
#include "jobs/gpu_choice.hpp"
#include "jobs/gpu_claims.hpp"
#include "nvsmi/xml_reader.hpp"
#include "process_support.hpp"
#include "snapshot_builders.hpp"
#include "support.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace test_jobs {

using namespace nvsmi;

namespace {

Snapshot states() { return test::xml_fixture("xml/h100-8gpu-states-v12.xml"); }

std::vector<int> indices(const std::vector<GpuChoice> &choices) {
  std::vector<int> result;
  for (const GpuChoice &choice : choices)
    result.push_back(choice.index);
  return result;
}

} // namespace

TEST_CASE("jobs: the free GPUs, most free memory first, then the coolest") {
  // GPUs 0, 4 and 7 are free: 0 MiB, 12 MiB and 7 MiB used of the same total.
  std::vector<GpuChoice> choices = free_gpus(states(), {});
  CHECK(indices(choices) == std::vector<int>{0, 7, 4});
  CHECK(choices[0].uuid == "GPU-00000000-0000-0000-0000-000000000000");
  CHECK(choices[0].free_mib == 81230); // as nvidia-smi counts it: the reserved memory is not free

  Snapshot same_memory = states();
  for (Gpu &gpu : same_memory.gpus)
    gpu.memory_free_mib = 1000;
  CHECK(indices(free_gpus(same_memory, {})) == std::vector<int>{0, 4, 7}); // 30, 34, 37 C
  same_memory.gpus[0].temperature_c.reset();
  CHECK(indices(free_gpus(same_memory, {})) == std::vector<int>{4, 7, 0}); // unknown last
}

TEST_CASE("jobs: the limits on utilization and free memory, and what is never offered") {
  PickCriteria strict;
  strict.max_utilization_percent = 2; // GPU 4 runs at 3 %
  CHECK(indices(free_gpus(states(), strict)) == std::vector<int>{0, 7});
  PickCriteria roomy;
  roomy.min_free_mib = free_gpus(states(), {})[1].free_mib; // GPU 7's, 5 MiB more than GPU 4's
  CHECK(indices(free_gpus(states(), roomy)) == std::vector<int>{0, 7});

  Snapshot odd = states();
  odd.gpus[0].uuid = std::string("../../etc/passwd");
  odd.gpus[7].uuid.reset();
  odd.gpus[4].processes.reset(); // nobody knows who holds it: not free
  CHECK(free_gpus(odd, {}).empty());
  CHECK(plain_uuid("GPU-5e3a7c21-0b9f-4d7e-9a62-1c0e8f4b2d10"));
  CHECK(plain_uuid("MIG-5e3a7c21-0b9f-4d7e-9a62-1c0e8f4b2d10"));
  CHECK_FALSE(plain_uuid(""));
  CHECK_FALSE(plain_uuid("GPU-1/../x"));
  CHECK_FALSE(plain_uuid(std::string(97, 'a')));
}

TEST_CASE("jobs: a claim is held while it lives, by one holder, and the folder is shared") {
  std::string folder = test::temporary_folder() + "/claims";
  std::string uuid = "GPU-00000000-0000-0000-0000-000000000003";
  CHECK_FALSE(claimed(folder, uuid)); // the folder is not even there yet
  {
    std::optional<GpuClaim> claim = GpuClaim::try_take(folder, uuid);
    REQUIRE(claim);
    CHECK(claim->uuid() == uuid);
    struct stat info {};
    REQUIRE(::stat(folder.c_str(), &info) == 0);
    CHECK((info.st_mode & 07777) == 01777);
    REQUIRE(::stat((folder + "/" + uuid + ".lock").c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0644);
    // A second claim, even from this process, is refused while the first lives.
    CHECK_FALSE(GpuClaim::try_take(folder, uuid));
  }
  CHECK(GpuClaim::try_take(folder, uuid));
}

TEST_CASE("jobs: another process's claim is seen, skipped, and dropped when it dies") {
  std::string folder = test::temporary_folder();
  std::string held = "GPU-00000000-0000-0000-0000-000000000000";
  std::string path = folder + "/" + held + ".lock";
  // util-linux flock(1) takes the same kind of lock for another process, which then becomes the
  // sleep that holds it.
  test::Background holder("exec 9<>" + test::quote(path) + " && flock -n 9 && exec sleep 300");
  test::wait_until([&] { return claimed(folder, held); });
  CHECK(claim_holder(folder, held).has_value());

  std::vector<GpuChoice> choices = free_gpus(states(), {});
  std::vector<GpuClaim> taken = take_claims(folder, choices, 2);
  REQUIRE(taken.size() == 2);
  CHECK(taken[0].uuid() == "GPU-00000000-0000-0000-0000-000000000007");
  CHECK(taken[1].uuid() == "GPU-00000000-0000-0000-0000-000000000004");
  CHECK(take_claims(folder, choices, 3).empty()); // all three held now

  ::kill(holder.pid(), SIGKILL);
  test::wait_until([&] { return !claimed(folder, held); });
  CHECK(GpuClaim::try_take(folder, held));
}

TEST_CASE("jobs: the claims folder comes from the option, then NVSMI_LOCK_DIR, then /run/lock") {
  CHECK(claims_folder(std::string("/tmp/x")) == "/tmp/x");
  ::setenv("NVSMI_LOCK_DIR", "/tmp/from-environment", 1);
  CHECK(claims_folder(std::nullopt) == "/tmp/from-environment");
  ::setenv("NVSMI_LOCK_DIR", "", 1);
  CHECK(claims_folder(std::nullopt) == "/run/lock/nvsmi-agent");
  ::unsetenv("NVSMI_LOCK_DIR");
  CHECK(claims_folder(std::nullopt) == "/run/lock/nvsmi-agent");
  CHECK_THROWS_AS(GpuClaim::try_take("/proc/no-such-folder/claims", "GPU-1"), AgentError);
}

TEST_CASE("jobs: every GPU is offered or has its reason, in the sample's order") {
  std::vector<GpuVerdict> verdicts = judge_gpus(states(), {});
  REQUIRE(verdicts.size() == 8);
  std::vector<std::string> reasons;
  for (const GpuVerdict &verdict : verdicts) {
    CHECK(verdict.choice.has_value() == verdict.reason.empty());
    reasons.push_back(verdict.reason);
  }
  CHECK(reasons == std::vector<std::string>{"", "GPU 1 in use (10% >= 5%)", "GPU 2 hot",
                                            "GPU 3 idle but held", "", "GPU 5 at power limit",
                                            "GPU 6 in use (99% >= 5%)", ""});
  PickCriteria lenient;
  lenient.max_utilization_percent = 12.5;
  CHECK(judge_gpus(states(), lenient)[1].reason.empty());

  Snapshot mig = test::xml_fixture("xml/a100-mig-v12.xml");
  mig.gpus[0].processes = std::vector<Process>{}; // even with nothing running on it
  REQUIRE(judge_gpus(mig, {}).size() == 1);
  CHECK(judge_gpus(mig, {})[0].reason == "GPU 0 has MIG on (2 of 2 instances free; their UUIDs "
                                         "unknown: nvidia-smi -L not read)");
  CHECK(free_gpus(mig, {}).empty());
}

TEST_CASE("jobs: a lock in /proc/locks is a file's only where both device and inode match") {
  const std::string locks = "1: FLOCK  ADVISORY  WRITE 4242 08:01:1311766 0 EOF\n"
                            "2: FLOCK  ADVISORY  READ  5151 08:01:1311766 0 EOF\n"
                            "2: -> FLOCK  ADVISORY  WRITE 6161 08:01:1311766 0 EOF\n"
                            "3: FLOCK  ADVISORY  WRITE 7373 00:2a:1311766 0 EOF\n"
                            "4: POSIX  ADVISORY  WRITE 8484 08:01:1311766 0 EOF\n"
                            "5: FLOCK  ADVISORY  WRITE 0 08:01:1311766 0 EOF\n";
  std::vector<Flock> here = flocks_in(locks, makedev(8, 1), 1311766);
  REQUIRE(here.size() == 3); // the waiter and the POSIX lock left out
  CHECK((here[0].pid == 4242 && here[0].exclusive));
  CHECK((here[1].pid == 5151 && !here[1].exclusive));
  CHECK((here[2].pid == 0 && here[2].exclusive)); // a holder the kernel does not name
  // The same inode number on another file system (device 0:42) is another file.
  std::vector<Flock> elsewhere = flocks_in(locks, makedev(0, 0x2a), 1311766);
  REQUIRE(elsewhere.size() == 1);
  CHECK(elsewhere[0].pid == 7373);
  CHECK(flocks_in(locks, makedev(0, 0x2b), 1311766).empty());
}

TEST_CASE("jobs: a UUID listed twice is one GPU, offered once and only when free both times") {
  Snapshot twice = states();
  twice.gpus[7].uuid = twice.gpus[0].uuid;
  CHECK(indices(free_gpus(twice, {})) == std::vector<int>{0, 4});
  CHECK(judge_gpus(twice, {})[7].reason == "GPU 7 is GPU 0 listed again (same UUID)");
  twice.gpus[4].uuid = twice.gpus[1].uuid; // GPU 1, in use, listed again as free GPU 4
  CHECK(indices(free_gpus(twice, {})) == std::vector<int>{0});
  twice.gpus[1].uuid = twice.gpus[0].uuid; // free GPU 0 listed again in use; GPU 4 alone again
  CHECK(indices(free_gpus(twice, {})) == std::vector<int>{4});
  CHECK(judge_gpus(twice, {})[0].reason == "GPU 1 in use (10% >= 5%)");
}

TEST_CASE("jobs: the shipped tmpfiles.d line makes the claims folder root's and sticky") {
  std::string root = test::root_made_by_shipped_tmpfiles();
  if (root.empty())
    return;
  std::string folder = root + "/run/lock/nvsmi-agent";
  struct stat info {};
  REQUIRE(::stat(folder.c_str(), &info) == 0);
  CHECK(S_ISDIR(info.st_mode));
  CHECK((info.st_mode & 07777) == 01777);
  CHECK(info.st_uid == 0);
  CHECK(info.st_gid == 0);
  CHECK(GpuClaim::try_take(folder, "GPU-00000000-0000-0000-0000-000000000003"));
  CHECK(claims_folder(std::nullopt) == "/run/lock/nvsmi-agent"); // the folder it makes
}

} // namespace test_jobs
