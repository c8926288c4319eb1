// How serious a judgement is, on one scale for every place that judges: `report`'s findings and
// `check`'s statuses, so that a warning in one is a warning in the other. Each says it in its own
// words ("info" in a report, "OK" to Nagios); the order is this one.
#pragma once

namespace nvsmi {

// ok: nothing to act on, or too little to judge. warning: worth a look soon (the GPU's time wasted
// or slowed, a threshold neared). critical: act now (close to a failure, data lost).
enum class Severity { ok, warning, critical };

// The more serious of the two.
constexpr Severity worse(Severity a, Severity b) { return a < b ? b : a; }

} // namespace nvsmi
