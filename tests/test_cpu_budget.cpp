// --cpu-budget's judgement (sampling/cpu_budget.hpp) on figures: when a step is taken, when it is
// taken back, and what is said at the last step.
#include "sampling/cpu_budget.hpp"

#include <catch2/catch.hpp>

namespace test_cpu_budget {

using nvsmi::CpuBudget;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// Feeds `budget` a window at `percent` of a core, from `at` on; returns the judgement at its end.
std::optional<CpuBudget::Judgement> window_at(CpuBudget &budget, CpuBudget::Clock::time_point &at,
                                              double &cpu, double percent) {
  // A reading halfway is no judgement: the window is not whole.
  at += seconds(30);
  cpu += 30 * percent / 100;
  CHECK_FALSE(budget.observe(at, cpu));
  at += seconds(30);
  cpu += 30 * percent / 100;
  return budget.observe(at, cpu);
}

} // namespace

TEST_CASE("cpu budget: one step a window while over, none while under, the last said once") {
  CpuBudget budget(1.0, 2, seconds(60));
  CpuBudget::Clock::time_point at{};
  double cpu = 10;
  budget.begin(at, cpu);

  std::optional<CpuBudget::Judgement> judged = window_at(budget, at, cpu, 0.5);
  REQUIRE(judged);
  CHECK(judged->change == 0);
  CHECK(judged->share_percent == Approx(0.5));
  CHECK(judged->window_seconds == Approx(60));

  judged = window_at(budget, at, cpu, 3.0);
  REQUIRE(judged);
  CHECK(judged->change == 1);
  CHECK(judged->share_percent == Approx(3.0));
  CHECK(budget.steps_taken() == 1);
  // Still over after it: the next step, a window later, not at once.
  judged = window_at(budget, at, cpu, 2.0);
  REQUIRE(judged);
  CHECK(judged->change == 1);
  CHECK(budget.steps_taken() == 2);
  // Every step taken and still over: said once, not every window.
  judged = window_at(budget, at, cpu, 1.5);
  REQUIRE(judged);
  CHECK(judged->change == 0);
  CHECK(judged->over_at_last_step);
  judged = window_at(budget, at, cpu, 1.5);
  REQUIRE(judged);
  CHECK_FALSE(judged->over_at_last_step);
  CHECK(budget.steps_taken() == 2);
}

TEST_CASE("cpu budget: a step is taken back only where what it saved still leaves room") {
  CpuBudget budget(1.0, 1, seconds(60));
  CpuBudget::Clock::time_point at{};
  double cpu = 0;
  budget.begin(at, cpu);
  REQUIRE(window_at(budget, at, cpu, 1.6)->change == 1);
  // The step saved 1 % (1.6 before, 0.6 after): 0.6 + 1.0 is over the budget, so it stays.
  CHECK(window_at(budget, at, cpu, 0.6)->change == 0);
  CHECK(window_at(budget, at, cpu, 0.6)->change == 0);
  // What it stopped costs less now (fewer processes): 0.1 + 1.0 is still over 80 % of it.
  CHECK(window_at(budget, at, cpu, 0.1)->change == 0);
  CHECK(budget.steps_taken() == 1);

  // A step that saved less comes back once the cost with it would be within 80 % of the budget.
  CpuBudget small(1.0, 1, seconds(60));
  double cpu2 = 0;
  CpuBudget::Clock::time_point at2{};
  small.begin(at2, cpu2);
  REQUIRE(window_at(small, at2, cpu2, 1.2)->change == 1);
  CHECK(window_at(small, at2, cpu2, 0.9)->change == 0); // 0.9 + 0.3 > 0.8
  std::optional<CpuBudget::Judgement> back = window_at(small, at2, cpu2, 0.4);
  REQUIRE(back);
  CHECK(back->change == -1); // 0.4 + 0.3 <= 0.8
  CHECK(small.steps_taken() == 0);
}

TEST_CASE("cpu budget: a window whose count fell is not judged; the next starts there") {
  CpuBudget budget(1.0, 1, seconds(60));
  CpuBudget::Clock::time_point at{};
  budget.begin(at, 5.0);
  // A run's CPU left the count (reaped by another waiter): that cost is unknown, not 0.
  CHECK_FALSE(budget.observe(at + seconds(60), 4.0));
  std::optional<CpuBudget::Judgement> judged = budget.observe(at + seconds(120), 4.0 + 0.6 * 2);
  REQUIRE(judged);
  CHECK(judged->share_percent == Approx(2.0));
  CHECK(judged->change == 1);
}

TEST_CASE("cpu budget: steps come back last first, each by what it saved") {
  CpuBudget budget(1.0, 2, seconds(60));
  CpuBudget::Clock::time_point at{};
  double cpu = 0;
  budget.begin(at, cpu);
  REQUIRE(window_at(budget, at, cpu, 2.0)->change == 1);  // step 1 taken at 2.0
  REQUIRE(window_at(budget, at, cpu, 1.5)->change == 1);  // saved 0.5; step 2 taken at 1.5
  CHECK(window_at(budget, at, cpu, 0.9)->change == 0);    // step 2 saved 0.6: 1.5 > 0.8
  REQUIRE(window_at(budget, at, cpu, 0.1)->change == -1); // 0.1 + 0.6 <= 0.8: step 2 back
  CHECK(budget.steps_taken() == 1);
  // Step 1 saved 0.5 (2.0 before it, 1.5 after): back once the cost with it is within 0.8.
  CHECK(window_at(budget, at, cpu, 0.4)->change == 0); // 0.4 + 0.5 > 0.8
  REQUIRE(window_at(budget, at, cpu, 0.2)->change == -1);
  CHECK(budget.steps_taken() == 0);
  // Over again: the ladder is taken from the first step anew.
  REQUIRE(window_at(budget, at, cpu, 1.2)->change == 1);
  CHECK(budget.steps_taken() == 1);
}

} // namespace test_cpu_budget
