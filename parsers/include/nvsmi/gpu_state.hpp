// What a GPU is doing, as one word people read at a glance and `pick` decides by: one definition
// for the table, `top`, the dashboard, the JSON and (later) `pick`, so that they never disagree.
#pragma once

#include "nvsmi/snapshot.hpp"
#include "nvsmi/thresholds.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nvsmi {

enum class GpuState {
  lost,           // nvidia-smi could not read it (Gpu::lost_reason)
  failing,        // its health says it needs a reset or worse (gpu_failure below)
  free,           // no compute process and utilization under the idle threshold
  in_use,         // utilization at or over the threshold, or compute processes and no reading
  idle_held,      // compute processes hold it, utilization under the threshold
  allocated_idle, // a batch job has held it for a while with no compute process on it
  idle,           // utilization under the threshold, who holds it not known (no process list)
  hot,            // temperature at or over the hot threshold (whatever else it is doing)
  at_power_limit, // drawing at least the given fraction of its power limit
  unknown,        // neither utilization nor processes known, or free but for a health reading
                  // that decides failing and is unknown (undecided_health below)
};

// The table's (nvsmi/thresholds.hpp); only `pick` changes one (its --max-utilization).
struct GpuStateThresholds {
  double idle_below_percent = gpu_thresholds::idle_below_percent;
  std::int64_t hot_at_c = gpu_thresholds::hot_c;
  double power_limit_fraction = gpu_thresholds::power_limit_fraction;
  std::int64_t allocated_idle_after_s = gpu_thresholds::allocated_idle_after_s;
};

// Whether a process holds its GPU for compute work: any type but graphics alone ("G", a desktop's
// Xorg). The one rule for the states, the holders and the metrics' process counts.
bool for_compute(const Process &process);

// Whether compute processes hold the GPU (for_compute); nullopt when the sample has no process
// list (nobody can say it has none).
std::optional<bool> held_for_compute(const Gpu &gpu);

// Whether the process is on the MIG instance: its GPU and compute instance ids known and the
// device's.
bool on_instance(const Process &process, const MigDevice &device);

// Most serious first: lost, failing, hot, at power limit, allocated but idle, idle but held, in
// use, idle, free, unknown. Free is what `pick` hands out, so it needs the health known that
// decides failing: a GPU that would be free while undecided_health says why not is unknown.
// Allocated but idle needs the process list (nobody can say a GPU has no process without it) and
// the allocation's age; a younger allocation with no process is free (its job may still be
// starting). Graphics processes (type "G" alone, such as a desktop's Xorg) do not hold a GPU for
// compute work.
GpuState gpu_state(const Gpu &gpu, const GpuStateThresholds &thresholds = {});

// The processes that name this instance by their GPU and compute instance ids (on_instance), in
// the GPU's order; none where the process list is unknown. What a screen lists under it.
std::vector<const Process *> placed_on(const Gpu &gpu, const MigDevice &device);

// The processes on one MIG instance of the GPU: those whose GPU and compute instance ids are the
// device's. nullopt where that cannot be told: the GPU's process list unknown, the device's ids
// unknown, or a compute process on the GPU without its ids (it could be on any instance).
std::optional<std::vector<const Process *>> instance_processes(const Gpu &gpu,
                                                               const MigDevice &device);

// A MIG instance's state by the GPU's rules: the GPU's lost or failing is its instances' too
// (they share its memory and its health); otherwise compute processes on it make it in use (an
// instance has no utilization reading of its own: nvidia-smi prints N/A, so never idle but held
// from a guess), none make it free (unknown while the health that decides failing is), and an
// unknown process list or instance ids, or a compute process without its ids, leave it unknown. Hot
// and at power limit stay the GPU's: another instance's work heats the whole GPU, and an instance
// is still free to take. An instance with no compute process that a batch job has held for
// allocated_idle_after_s or longer (MigDevice::allocation) is allocated but idle, as a GPU is.
GpuState mig_state(const Gpu &gpu, const MigDevice &device,
                   const GpuStateThresholds &thresholds = {});

// Why a readable GPU is failing, in words ("2 uncorrectable ECC errors", "row remap pending",
// "recovery action: GPU Reset Required"), or nullopt when nothing says so: uncorrected volatile
// ECC errors, a pending or failed row remap, a pending page retirement, a recovery action other
// than "None". The first that applies. This is the one meaning of failing: the state, the
// table, top, the JSON's "failure", /metrics and check's `failing` count all ask it. Where this
// sample's reading is unknown, an earlier sample's fault stands (GpuHealth::earlier_faults), said
// "2 uncorrectable ECC errors as of 2024-03-12 14:03:27".
std::optional<std::string> gpu_failure(const Gpu &gpu);

// When the reading behind gpu_failure was taken, where it is an earlier sample's (its reading
// unknown now); nullopt where this sample read it, or the earlier one had no time.
std::optional<Timestamp> gpu_failure_as_of(const Gpu &gpu);

// The faults of the GPU's health that this sample's own readings show, without earlier ones: what
// nvsmi/health_memory.hpp remembers.
std::vector<GpuFault> faults_read(const Gpu &gpu);

// Whether this sample knows the reading that decides the health fault `key` (ecc_uncorrected:
// the volatile uncorrectable count, row_remap_failed, ...): only a known reading clears a fault.
bool fault_reading_known(const GpuHealth &health, std::string_view key);

// Why the GPU's health cannot be called good from this sample, where a reading that decides
// failing is unknown although the GPU has it: "uncorrectable ECC count unknown" (ECC on, its
// count N/A); nullopt where nothing is known to be missing, or an earlier fault stands for it.
// (Row remapping, page retirement and the recovery action are N/A on whole generations and
// drivers, so their absence says nothing.)
std::optional<std::string> undecided_health(const Gpu &gpu);

// What names a GPU across samples: its UUID, else its bus id, else "index N" (a lost GPU may have
// only the last two).
std::string gpu_identity(const Gpu &gpu);

// Every reason of gpu_failure, in its order; without `with_ecc` all but the uncorrectable ECC
// errors (for check, which says those with their count and their own thresholds).
std::vector<std::string> gpu_failures(const Gpu &gpu, bool with_ecc = true);

// Every fault of the GPU at `position`, in gpu_failures' order after "lost", then each Xid that
// needs a reset (xid_needs_reset) logged for its bus id where the kernel log was read. The one
// judgement: gpu_failures and gpu_state are this, less the Xids.
std::vector<GpuFault> gpu_faults(const Snapshot &snapshot, std::size_t position);

// The recovery action as a label value: none, gpu_reset, node_reboot, drain_p2p, drain_and_reset
// for the driver's known words (any case or spacing), else the words in lower_snake_case (ASCII
// letters lowered, every run of other ASCII than letters and digits one `_`, other UTF-8 kept).
// nullopt where unknown or nothing is left.
std::optional<std::string> recovery_action_key(const Text &action);

// "lost", "failing", "free", "in use", "idle but held", "allocated but idle", "idle", "hot",
// "at power limit", "unknown".
std::string_view gpu_state_name(GpuState state);

// The same words with underscores ("idle_but_held"), for labels, CSS classes and JSON consumers.
std::string_view gpu_state_key(GpuState state);

// A fleet at a glance: how many GPUs are in each state, and who holds the idle-but-held ones. The
// one answer the table, `top`, the dashboard and the report give in their first line.
struct FleetSummary {
  std::size_t gpus = 0;
  // The MIG instances of those GPUs. Where there are any, the states count what a job is given:
  // each GPU without MIG devices, and each instance (by mig_state) in place of its GPU.
  std::size_t mig_instances = 0;
  std::size_t count[static_cast<std::size_t>(GpuState::unknown) + 1] = {};
  // The users of the compute processes on idle-but-held GPUs, each once, in GPU order; a
  // process whose user is not known adds nobody here (its GPU still counts).
  std::vector<std::string> idle_holders;
  // The jobs on allocated-but-idle GPUs, each once, in GPU order: "job 1234 of alice" ("job 1234"
  // where the record names no user).
  std::vector<std::string> idle_jobs;
  // Across several hosts (`top --hosts`, serve's /fleet): how many hosts were asked (0: one
  // machine's own summary, said without hosts), how many of them gave no fresh sample, and how
  // many GPUs those had at their last good sample. Those GPUs count in `gpus` and in no state:
  // what they do now is not known.
  std::size_t hosts = 0;
  std::size_t silent_hosts = 0;
  std::size_t silent_gpus = 0;

  std::size_t of(GpuState state) const { return count[static_cast<std::size_t>(state)]; }
  // Adds another host's GPUs, states, holders and jobs (each name once) and its host counts.
  void add(const FleetSummary &other);
};
FleetSummary fleet_summary(const Snapshot &snapshot, const GpuStateThresholds &thresholds = {});

// "8 GPUs: 3 free · 2 in use · 1 idle but held (alice, bob) · 1 hot · 1 failing": the states with
// a count; with MIG, "8 GPUs, 14 MIG instances: 5 free · 15 in use" (the states of 6 GPUs and 14
// instances); in the order free, in use, idle but held, allocated but idle (its jobs), idle, at
// power limit, hot, failing, lost, unknown (what is usable first, then what needs a look); "1 GPU:
// ...", "no GPUs". At most three holders are named, then "+N more". Across hosts: "40 GPUs on 5
// hosts: 12 free · ... · 8 on 1 host without a fresh sample" ("· 1 host without a fresh sample"
// where it never gave one; "no GPUs on 2 hosts").
std::string fleet_summary_text(const FleetSummary &summary);

} // namespace nvsmi
