// The per-job ledger (issue 29 item 2): `job JOBID` and `report --by-job` from a JSON log whose
// GPUs carry the allocations that watch --job-mapping-dir writes. The log is
// fixtures/logs/shared-3users.jsonl (4 GPUs, 19 samples 10 minutes apart) with allocations added
// here, so that each figure is known:
//   job 1234 of alice (account physics): GPUs 0 (95 %, 600 W, 31232 MiB) and 1 (0 %, 80 W,
//     20992 MiB), all along;
//   job 77 of bob (account chem): GPU 3 for its first 10 samples (90 %, 500 W, 8704 of 81559 MiB);
//   job 55 of dave (no account recorded): GPU 3 at 11:40, 11:50 and 12:00, when it has no process
//     (0 %, 60 W).
#include "support.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace test_report_jobs {

using nlohmann::json;
using test::quote;
using test::run_agent;

std::string jobs_log(const std::vector<std::string> &names = {});

namespace {

json allocation(const std::string &job, const std::string &user,
                const std::optional<std::string> &account = std::nullopt) {
  json out = {{"scheduler", "slurm"},
              {"job_id", job},
              {"user", user},
              {"since", nullptr},
              {"held_s", 3600}};
  if (account)
    out["account"] = *account;
  return out;
}

} // namespace

// The fixture with the allocations above, written to a temporary file; its path. With `names`,
// job 1234's job id, user and account are those three instead (the HTML page's escaping).
// The browser suite's screenshots read it too.
std::string jobs_log(const std::vector<std::string> &names) {
  std::string out;
  int sample = 0;
  std::vector<std::string> first =
      names.size() == 3 ? names : std::vector<std::string>{"1234", "alice", "physics"};
  for (const std::string &line :
       test::non_empty_lines_of(test::read_file(test::fixture_path("logs/shared-3users.jsonl")))) {
    json snapshot = json::parse(line);
    for (json &gpu : snapshot["gpus"]) {
      int index = gpu["index"].get<int>();
      gpu["allocation"] = nullptr;
      if (index == 0 || index == 1)
        gpu["allocation"] = allocation(first[0], first[1], first[2]);
      if (index == 3 && sample < 10)
        gpu["allocation"] = allocation("77", "bob", "chem");
      if (index == 3 && sample >= 10 && sample <= 12)
        gpu["allocation"] = allocation("55", "dave");
    }
    out += snapshot.dump() + "\n";
    ++sample;
  }
  std::string path = test::temporary_folder() + "/gpu-log.jsonl";
  test::write_file(path, out);
  return path;
}

TEST_CASE("job: one job's GPUs, time, utilization, idle and unused time, memory, energy, finding") {
  std::string log = jobs_log();
  test::Run run = run_agent("job 1234 --format json --log " + quote(log));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  json out = json::parse(run.out);
  CHECK(out["schema"] == "nvsmi-agent.job/1");
  const json &job = out["job"];
  CHECK(job["job_id"] == "1234");
  CHECK(job["user"] == "alice");
  REQUIRE(job["gpus"].size() == 2);
  CHECK(job["gpus"][0]["index"] == 0);
  CHECK(job["gpus"][1]["index"] == 1);
  // 18 stretches of 10 minutes on each GPU (the first sample closes none).
  CHECK(job["held_gpu_hours"].get<double>() == Approx(6.0));
  CHECK(job["wall_hours"].get<double>() == Approx(3.0));
  CHECK(job["utilization_percent"].get<double>() == Approx(47.5));
  CHECK(job["idle_percent"].get<double>() == Approx(50.0));
  CHECK(job["idle_gpu_hours"].get<double>() == Approx(3.0));
  CHECK(job["unused_percent"].get<double>() == Approx(0.0));
  CHECK(job["gpus"][0]["peak_memory_mib"] == 31232);
  CHECK(job["gpus"][0]["memory_total_mib"] == 81559);
  CHECK(job["energy_wh"].get<double>() == Approx((600 + 80) * 3.0));
  CHECK(job["finding"]["severity"] == "warning");
  CHECK_THAT(job["finding"]["text"].get<std::string>(), Catch::StartsWith("idle:"));
  CHECK_FALSE(job["advice"].is_null());

  test::Run text = run_agent("job 1234 --log " + quote(log));
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out,
             Catch::StartsWith("job 1234 of alice: 2 GPUs (0, 1) for 3 h, account physics, "));
  CHECK_THAT(text.out, Catch::Contains("utilization  47.5 % on average"));
}

TEST_CASE("job: allocated but unused, and a job that used little memory, each with its advice") {
  std::string log = jobs_log();
  json unused = json::parse(run_agent("job 55 --format json --log " + quote(log)).out)["job"];
  CHECK(unused["user"] == "dave");
  CHECK(unused["unused_percent"].get<double>() == Approx(100.0));
  CHECK(unused["unused_gpu_hours"].get<double>() == Approx(0.5));
  CHECK(unused["finding"]["severity"] == "warning");
  CHECK_THAT(unused["finding"]["text"].get<std::string>(),
             Catch::StartsWith("allocated but unused"));
  CHECK_THAT(unused["advice"].get<std::string>(), Catch::Contains("--gres=gpu"));

  json small = json::parse(run_agent("job 77 --format json --log " + quote(log)).out)["job"];
  CHECK(small["utilization_percent"].get<double>() == Approx(90.0));
  CHECK(small["finding"]["severity"] == "info");
  CHECK_THAT(small["finding"]["text"].get<std::string>(), Catch::Contains("peak memory 8.5 GiB"));
  CHECK_THAT(small["advice"].get<std::string>(), Catch::Contains("MIG"));
}

TEST_CASE("report --by-job: every job of the log, in text and JSON; without it, no jobs key") {
  std::string log = jobs_log();
  test::Run run = run_agent("report --by-job --format json " + quote(log));
  REQUIRE(run.exit_code == 0);
  json report = json::parse(run.out);
  REQUIRE(report["jobs"].size() == 3);
  CHECK(report["jobs"][0]["job_id"] == "1234");
  CHECK(report["jobs"][1]["job_id"] == "77");
  CHECK(report["jobs"][2]["job_id"] == "55");
  CHECK_FALSE(json::parse(run_agent("report --format json " + quote(log)).out).contains("jobs"));
  test::Run text = run_agent("report --by-job " + quote(log));
  REQUIRE(text.exit_code == 0);
  CHECK_THAT(text.out, Catch::Contains("\nJobs (") && Catch::Contains("job 55 of dave: 1 GPU (3)"));
}

TEST_CASE("report --by-job --format html: each job's finding and figures, then the accounts; "
          "without --by-job, no jobs section") {
  std::string log = jobs_log();
  test::Run run = run_agent("report --by-job --format html " + quote(log));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const std::string &page = run.out;
  REQUIRE(page.find("<section id=\"jobs\"><h2>Jobs</h2>") != std::string::npos);
  // After the users' ledger, before the first GPU's section.
  CHECK(page.find("id=\"jobs\"") > page.find("<h2>Users</h2>"));
  CHECK(page.find("id=\"jobs\"") < page.find("id=\"gpu-0\""));
  CHECK_THAT(page, Catch::Contains("</span> slurm 1234 (alice): idle: utilization under 5 %"));
  CHECK_THAT(page, Catch::Contains("</span> slurm 55 (dave): allocated but unused") &&
                       Catch::Contains("<span class=\"advice\">ask for fewer GPUs (--gres=gpu:N)"));
  CHECK_THAT(page, Catch::Contains("<tr><td>slurm 1234</td><td>alice</td><td>physics</td><td>0, "
                                   "1</td><td>3 h</td><td>6.00</td><td>47.5%</td><td>3.00 "
                                   "(50.0%)</td><td>0.00 (0.0%)</td><td>2040.00</td></tr>"));
  CHECK_THAT(page, Catch::Contains("<tr><td>slurm 55</td><td>dave</td><td>none</td>"));
  CHECK_THAT(page, Catch::Contains("<h3>Accounts</h3>") &&
                       Catch::Contains("<tr><td>physics</td><td>1</td><td>6.00</td><td>6.00</td>"
                                       "<td>3.00</td><td>0.00</td></tr>") &&
                       Catch::Contains("<tr><td>(no account)</td><td>1</td><td>0.50</td>"));
  test::Run plain = run_agent("report --format html " + quote(log));
  REQUIRE(plain.exit_code == 0);
  CHECK(plain.out.find("id=\"jobs\"") == std::string::npos);
}

TEST_CASE("report --by-job --format html: a job id, user or account that holds markup or control "
          "bytes never reaches the page") {
  // The scheduler's records come from the prolog, but a log is a file anyone may have edited. A
  // user or account that is no account name is unknown, and a job id that is not digits is no job:
  // neither becomes markup or terminal control on the page.
  auto page_of = [](const std::vector<std::string> &names) {
    test::Run run = run_agent("report --by-job --format html " + quote(jobs_log(names)));
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    for (const char *markup : {"<script", "<img", "<b>eve", "\x1b"})
      CHECK(run.out.find(markup) == std::string::npos);
    return run.out;
  };
  std::string names = page_of({"9", "<b>eve</b>", "acct\x1b[31m<img src=x onerror=y>"});
  CHECK_THAT(names, Catch::Contains("</span> slurm 9 (unknown user): "));
  CHECK_THAT(names, Catch::Contains("<tr><td>slurm 9</td><td>unknown</td><td>none</td>"));
  std::string id = page_of({"9<script>alert(1)</script>", "alice", "physics"});
  CHECK(id.find("alert") == std::string::npos);
  CHECK_THAT(id, Catch::Contains("<tr><td>slurm 77</td>"));
}

TEST_CASE("report --by-job --format csv: the accounting rows, GPU-hours held, used, idle, unused") {
  std::string log = jobs_log();
  test::Run run = run_agent("report --by-job --format csv " + quote(log));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> rows = test::non_empty_lines_of(run.out);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0] == "job_id,scheduler,user,account,gpus,first,last,held_gpu_hours,used_gpu_hours,"
                   "idle_gpu_hours,unused_gpu_hours,energy_wh");
  CHECK(rows[1] == "1234,slurm,alice,physics,2,2026-11-23T10:10:00.000+01:00,"
                   "2026-11-23T13:00:00.000+01:00,6.000,6.000,3.000,0.000,2040.000");
  CHECK(rows[3] == "55,slurm,dave,,1,2026-11-23T11:40:00.000+01:00,2026-11-23T12:00:00.000+01:00,"
                   "0.500,0.000,0.500,0.500,30.000");
  test::Run without = run_agent("report --format csv " + quote(log));
  CHECK(without.exit_code == 2);
  CHECK_THAT(without.err, Catch::Contains("--format csv needs --by-job"));
}

TEST_CASE("job: a job id that is not digits is refused (exit 2); one not in the logs is exit 6") {
  std::string log = jobs_log();
  for (const char *id : {"12a", "../1", "-1", "1;2", "123456789012345678901"}) {
    test::Run run = run_agent(std::string("job ") + quote(id) + " --log " + quote(log));
    CHECK(run.exit_code == 2);
    CHECK_THAT(run.err, Catch::Contains("job id"));
  }
  test::Run missing = run_agent("job 999 --log " + quote(log));
  CHECK(missing.exit_code == 6);
  CHECK_THAT(missing.err, Catch::Contains("job 999: no sample of it"));
}

TEST_CASE("report --by-account: the jobs rolled up per Slurm account, in csv, text and JSON; a job "
          "with no account is its own row, never charged to another") {
  std::string log = jobs_log();
  test::Run run = run_agent("report --by-account --format csv " + quote(log));
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> rows = test::non_empty_lines_of(run.out);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0] == "account,jobs,held_gpu_hours,used_gpu_hours,idle_gpu_hours,unused_gpu_hours");
  CHECK(rows[1] == "chem,1,1.500,1.500,0.000,0.000");
  CHECK(rows[2] == "physics,1,6.000,6.000,3.000,0.000");
  CHECK(rows[3] == ",1,0.500,0.000,0.500,0.500");

  json report = json::parse(run_agent("report --by-job --format json " + quote(log)).out);
  CHECK(report["jobs"][0]["account"] == "physics");
  CHECK(report["jobs"][2]["account"].is_null());
  REQUIRE(report["accounts"].size() == 3);
  CHECK(report["accounts"][1] == json({{"account", "physics"},
                                       {"jobs", 1},
                                       {"held_gpu_hours", 6.0},
                                       {"used_gpu_hours", 6.0},
                                       {"idle_gpu_hours", 3.0},
                                       {"unused_gpu_hours", 0.0}}));
  CHECK(report["accounts"][2]["account"].is_null());

  test::Run text = run_agent("report --by-job " + quote(log));
  CHECK_THAT(text.out, Catch::Contains("\nAccounts (") &&
                           Catch::Contains("  physics: 1 job, held 6.00, used 6.00, idle 3.00, "
                                           "unused 0.00\n") &&
                           Catch::Contains("  (no account): 1 job, held 0.50, used 0.00, idle "
                                           "0.50, unused 0.50\n"));
}

namespace {

// fixtures/logs/`name` (an H100's own log with dmon's activity, fixtures/logs/README.md) with its
// GPU held by job 4242 of carol all along; its path.
std::string activity_log(const std::string &name, bool strip_activity = false) {
  std::string out;
  std::istringstream lines(test::read_file(test::fixture_path("logs/" + name)));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty())
      continue;
    json sample = json::parse(line);
    for (json &gpu : sample["gpus"]) {
      gpu["allocation"] = allocation("4242", "carol");
      if (strip_activity)
        for (const char *key :
             {"sm_active_percent", "sm_occupancy_percent", "tensor_active_percent",
              "dram_active_percent", "fp16_active_percent", "fp32_active_percent",
              "fp64_active_percent"})
          gpu[key] = nullptr;
    }
    out += sample.dump() + "\n";
  }
  std::string path = test::temporary_folder() + "/" + name;
  test::write_file(path, out);
  return path;
}

} // namespace

TEST_CASE("job: SM and tensor activity and the GPUs' activity findings, where the log has them; "
          "absent, never 0, where it does not") {
  std::string fp32 = activity_log("h100-fp32.jsonl");
  json job = json::parse(run_agent("job 4242 --format json --log " + quote(fp32)).out)["job"];
  CHECK(job["sm_active_percent"].get<double>() == Approx(96).margin(0.5));
  CHECK(job["tensor_active_percent"].get<double>() == Approx(0).margin(0.5));
  // The same rule and words as the GPU's own finding in `report`.
  json gpu = json::parse(run_agent("report --format json " + quote(fp32)).out)["gpus"][0];
  CHECK(job["activity_finding"]["severity"] == "warning");
  CHECK(job["activity_finding"]["text"] == gpu["finding"]);
  CHECK_THAT(job["activity_finding"]["text"].get<std::string>(), Catch::Contains("FP32 math"));
  test::Run text = run_agent("job 4242 --log " + quote(fp32));
  CHECK_THAT(text.out, Catch::Contains("\n  activity     SM 9") &&
                           Catch::Contains("% while not idle\n") &&
                           Catch::Contains("\n  finding      warning: SMs active 96%"));
  json tensor = json::parse(
      run_agent("report --by-job --format json " + quote(activity_log("h100-tensor.jsonl")))
          .out)["jobs"][0];
  CHECK(tensor["tensor_active_percent"].get<double>() > 50);
  CHECK(tensor["activity_finding"].is_null()); // bf16 on the tensor cores: nothing to say

  std::string stripped = activity_log("h100-fp32.jsonl", true);
  json unknown =
      json::parse(run_agent("job 4242 --format json --log " + quote(stripped)).out)["job"];
  CHECK(unknown["sm_active_percent"].is_null());
  CHECK(unknown["tensor_active_percent"].is_null());
  CHECK(unknown["activity_finding"].is_null());
  CHECK(run_agent("job 4242 --log " + quote(stripped)).out.find("activity") == std::string::npos);
}

} // namespace test_report_jobs
