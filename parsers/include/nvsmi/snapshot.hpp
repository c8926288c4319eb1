// The one typed record every reader produces and every output format consumes. Each reading is
// optional: nullopt means nvidia-smi had no value (or was not asked), never zero.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace nvsmi {

using Reading = std::optional<std::int64_t>;
using RealReading = std::optional<double>;
using Text = std::optional<std::string>;

// nvidia-smi prints local wall-clock time without a zone; the offset is attached by whoever knows
// where the output came from (the agent, for the machine it runs on).
struct Timestamp {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  std::optional<int> millisecond;
  std::optional<int> utc_offset_minutes;

  bool operator==(const Timestamp &other) const;
};

struct Clocks {
  Reading graphics_mhz, sm_mhz, memory_mhz, video_mhz;
};

// Which batch job holds a GPU (or a MIG instance), as the scheduler's prolog recorded it
// (docs/SLURM.md): held even while no process runs on it.
struct Allocation {
  std::string scheduler = "slurm";
  std::string job_id; // digits, as the scheduler numbers its jobs
  Text user;          // nullopt where the record names nobody (a DCGM-exporter-only prolog)
  Text account;       // the scheduler's account the job is charged to; nullopt where unrecorded
  // When the record was written (its file's mtime, epoch seconds), and how long before the sample
  // that was; nullopt where the file's time is later than the sample's (a clock set back).
  std::int64_t since_epoch_s = 0;
  Reading held_s;
};

struct MigDevice {
  Reading index, gpu_instance_id, compute_instance_id;
  Reading memory_total_mib, memory_used_mib, memory_free_mib;
  // From `nvidia-smi -L` (nvsmi/gpu_listing.hpp) only, where it was read: "MIG-..." (what
  // CUDA_VISIBLE_DEVICES takes) and the profile ("3g.40gb"); unknown otherwise.
  Text uuid, profile;
  // The job that holds this instance, from the job mapping folder's `<GPU index>.<GPU instance
  // id>` record (host/job_mapping.hpp); nullopt where none does or allocations are not read.
  std::optional<Allocation> allocation;
};

struct Process {
  Reading pid;
  Text type; // "C", "G", "C+G"
  Text name;
  Reading used_memory_mib;
  Reading gpu_instance_id, compute_instance_id;

  // `nvidia-smi pmon -s um`: this process's share of the GPU's SM time and memory bandwidth over
  // pmon's last interval. nullopt where pmon does not run, printed `-`, or did not list the pid.
  Reading sm_utilization_percent, memory_utilization_percent;
  // How old those shares are, in seconds, when the sample goes out: pmon runs at its own interval
  // (every 5 s with --pmon auto), so they may be older than the GPU's readings. nullopt without
  // them, or where their age is not known (a recording).
  RealReading utilization_age_seconds;

  // From this machine's /proc, for the process as it is now. All nullopt where the pid is not
  // visible here (another PID namespace, already exited, a recording from another machine).
  Text user;               // the user name, else the uid as text
  Reading uid;             // real uid
  Text command;            // the full command line, arguments joined by spaces, capped in length
  Text started;            // ISO 8601 with the local offset: "2026-11-23T09:14:02+01:00"
  RealReading cpu_percent; // share of one core since the previous sample; nullopt on the first
  Reading host_memory_mib; // resident set size, MiB rounded to nearest
  // Where it runs, from /proc/PID/cgroup (nullopt where its layout says nothing of it).
  Text container;    // container id (64 hex digits for Docker/containerd/CRI-O)
  Text pod_uid;      // Kubernetes pod UID, dashed form
  Text slurm_job_id; // Slurm job id
  Text systemd_unit; // the systemd unit (service or scope) that holds it
};

// A query field the caller asked for beyond those read into typed members (`watch --fields`),
// kept as nvidia-smi printed it: its type is not known here, and a version string such as
// "535.10" must not become a number. Unknown markers are nullopt.
struct ExtraField {
  std::string name;
  Text value;
};

// Fleet health: what says a GPU is failing before a job dies of it. Every reading nullopt where
// this driver, GPU or source does not report it (`N/A`, absent element, field not queried).
struct EccErrorCounts {
  // Summed over every location the driver lists (SRAM and DRAM, or the old per-unit list);
  // nullopt when none of them is known. Uncorrected = SRAM (parity + SEC-DED) + DRAM.
  Reading corrected, uncorrected;
};

// One thing wrong with a GPU that a person or the scheduler must act on (nvsmi/gpu_state.hpp's
// gpu_faults): what the drain hook (--on-unhealthy) is told, once per fault.
struct GpuFault {
  // Stays the same while the fault lasts, whatever its figures do ("ecc_uncorrected" while the
  // count grows): lost, ecc_uncorrected, row_remap_failed, row_remap_pending,
  // page_retirement_pending, recovery_action, xid_<code>.
  std::string key;
  std::string reason; // in words: gpu_failures' words, "lost: GPU is lost", "Xid 79 x1 ..."
  // What to do, as recovery_action_key words: the driver's own recovery action where it gives
  // one, gpu_reset, node_reboot (a lost GPU that does not say a reset is enough), replace_gpu (a
  // row remap that failed: the GPU is out of spare rows).
  std::string action;

  bool operator==(const GpuFault &other) const;
};

// A fault of the GPU's health that an earlier sample read and this one can neither confirm nor
// clear, its reading unknown now: a GPU failing at its last known reading stays failing, "as of"
// then, until a known reading clears it (nvsmi/health_memory.hpp). Only the long-running commands
// remember; a one-shot sample has none.
struct EarlierFault {
  GpuFault fault;                 // as that sample read it: "2 uncorrectable ECC errors"
  std::optional<Timestamp> as_of; // that sample's time; nullopt where nvidia-smi printed none

  bool operator==(const EarlierFault &other) const;
};

struct GpuHealth {
  std::optional<bool> ecc_enabled;         // ecc_mode/current_ecc, ecc.mode.current
  std::optional<bool> ecc_pending_enabled; // ecc_mode/pending_ecc (after the next reboot)
  EccErrorCounts ecc_volatile;             // since the driver was loaded
  EccErrorCounts ecc_aggregate;            // over the GPU's life
  // Dynamic page retirement (before Ampere).
  Reading retired_pages_single_bit, retired_pages_double_bit;
  std::optional<bool> retired_pages_pending; // a retirement waits for a reboot or reset
  // Row remapping (Ampere and later).
  Reading remapped_rows_correctable, remapped_rows_uncorrectable;
  std::optional<bool> remapped_rows_pending; // a remap waits for a GPU reset
  std::optional<bool> remapped_rows_failure; // a remap failed: the GPU should be replaced
  // PCIe link: current against the most the GPU can train at.
  Reading pcie_link_gen, pcie_link_gen_max;
  Reading pcie_link_width, pcie_link_width_max; // lanes: "16x" is 16
  // Absolute thresholds (temperature/gpu_temp_slow_threshold, gpu_temp_max_threshold); nullopt
  // where the driver gives them only relative to T.Limit.
  Reading temperature_slowdown_c, temperature_shutdown_c;
  // What the driver asks an operator to do: "None", "GPU Reset Required", "Node Reboot Required",
  // "Drain P2P", "Drain and Reset", ... as printed (gpu_recovery_action). Older drivers'
  // gpu_reset_status reads as "GPU Reset Required" (reset_required Yes), "Drain and Reset"
  // (drain_and_reset_recommended Yes) or "None" (both No).
  Text recovery_action;
  // Packets the PCIe link had to resend (XML pci/replay_counter, as the driver counts them): a
  // count that keeps rising says a bad riser, slot or cable. No CSV query field on driver 580.
  Reading pcie_replay_count;
  // What earlier samples read of the faults whose readings above are unknown now (EarlierFault);
  // empty where nothing is carried.
  std::vector<EarlierFault> earlier_faults;

  // Every member above but those of the field table (nvsmi/gpu_fields.hpp: compared by
  // same_field_readings, or kept per sample where they move every sample, as the PCIe throughput
  // does): what changes seldom, so that where many samples keep one copy of it (serve's history)
  // two can be compared. A member added above and not to the table belongs here too, or the
  // history drops it unseen.
  auto settled_members() const {
    return std::tie(ecc_enabled, ecc_pending_enabled, ecc_volatile.corrected,
                    ecc_volatile.uncorrected, ecc_aggregate.corrected, ecc_aggregate.uncorrected,
                    retired_pages_single_bit, retired_pages_double_bit, retired_pages_pending,
                    remapped_rows_correctable, remapped_rows_uncorrectable, remapped_rows_pending,
                    remapped_rows_failure, pcie_link_gen, pcie_link_gen_max, pcie_link_width,
                    pcie_link_width_max, earlier_faults);
  }
};

// What a long-running command (watch, serve, top, run) has added up of a GPU over every sample it
// read since it started (nvsmi/usage_counters.hpp), so that a scraper that sees one sample in 15
// still gets the whole curve. Each pair is nullopt until its reading was known in one sample, then
// only grows: `*_sampled_seconds` are the seconds covered by samples that knew the reading, the
// other member of the pair what the reading added over them. A one-shot sample has none.
struct GpuCounters {
  // utilization.gpu: busy seconds are its share (0-1) times the seconds each sample stands for.
  std::optional<double> sampled_seconds, busy_seconds;
  // dmon's GPM activity, counted over the samples that knew SM, tensor and DRAM activity all three.
  std::optional<double> gpm_sampled_seconds, sm_active_seconds, tensor_active_seconds,
      dram_active_seconds;
  // power.draw times seconds: nvidia-smi gives no energy counter of the driver's (the query fields
  // of driver 580 have none, fixtures/recorded/*/help-query-gpu.txt), so it is integrated here.
  std::optional<double> power_sampled_seconds, energy_joules;
};

struct Gpu {
  int index = 0; // position in nvidia-smi's XML, or its `index` column
  Text uuid, name, pci_bus_id, pstate;
  Reading temperature_c;
  Reading memory_total_mib, memory_used_mib, memory_free_mib;
  Reading utilization_gpu_percent, utilization_memory_percent;
  RealReading power_draw_w, power_limit_w;
  Reading fan_speed_percent;
  Clocks clocks;
  // What the GPU's units did over the last interval (`nvidia-smi dmon`'s GPM metrics, Hopper and
  // newer), shares 0-100: SMs with a warp resident (smutil), resident warps over the SMs' most
  // (smocc), any tensor pipe (mmaact), DRAM bandwidth (dram), the FP16/32/64 pipes. nullopt
  // where dmon does not run, this GPU has no GPM, or GPM's first interval ("-"): never
  // utilization.gpu, which counts any kernel on any SM as busy.
  Reading sm_active_percent, sm_occupancy_percent, tensor_active_percent, dram_active_percent;
  Reading fp16_active_percent, fp32_active_percent, fp64_active_percent;
  // Traffic in bytes per second: PCIe from dmon `-s t` (MB/s, meant as MiB/s) or the XML's
  // tx_util/rx_util (KB/s, meant as KiB/s); NVLink summed over the links from GPM (nvlrx/nvltx).
  Reading pcie_rx_bytes_per_second, pcie_tx_bytes_per_second;
  Reading nvlink_rx_bytes_per_second, nvlink_tx_bytes_per_second;
  // What its active NVLink links carry at most, each way, in bytes per second (`nvidia-smi nvlink
  // -s`, read once when sampling starts: link speeds do not change while it runs); nullopt where
  // no link is active, the output was not understood, or nothing asked.
  Reading nvlink_bandwidth_bytes_per_second;
  std::optional<bool> mig_enabled;
  // nullopt where the source does not report them (the CSV query), empty where there are none.
  std::optional<std::vector<MigDevice>> mig_devices;
  std::optional<std::vector<Process>> processes;
  // Short names ("gpu_idle", "sw_power_cap") of the clock event (throttle) reasons now active.
  std::optional<std::vector<std::string>> clock_event_reasons_active;
  // Every reason the driver reported, active or not, in its order (same short names); nullopt
  // where it reports none.
  std::optional<std::vector<std::string>> clock_event_reasons_reported;
  GpuHealth health;
  // Why nvidia-smi could not read this GPU ("GPU is lost", "Unknown Error", "GPU requires
  // reset", as it said it); nullopt for a GPU it read. A lost GPU stays in the snapshot with
  // what is known of it (at least its bus id or index), never silently dropped.
  Text lost_reason;
  std::vector<ExtraField> extras; // in the order asked for
  // Its running totals over the samples a long-running command read; nullopt in a one-shot sample.
  std::optional<GpuCounters> counters;
  // The job that holds it; nullopt where none does, or where allocations are not read
  // (Snapshot::allocations_read tells the two apart).
  std::optional<Allocation> allocation;

  // used / total * 100, rounded to two decimals; nullopt when either is unknown or total is 0.
  RealReading memory_used_percent() const;
};

// The machine beside the GPUs, read from /proc when the sample was taken.
struct Host {
  Text hostname;
  Reading cpu_count;        // online CPUs
  RealReading cpu_percent;  // all CPUs busy, 0-100, since the previous sample; nullopt on the first
  RealReading load1;        // one-minute load average
  Reading memory_total_mib; // MemTotal
  Reading memory_used_mib;  // MemTotal - MemAvailable (what `free` calls used)
  // Bytes a second since the previous sample, of the whole disks (/proc/diskstats) and of the
  // interfaces that leave the machine (/proc/net/dev): host/host_io.hpp says which. nullopt on the
  // first sample, where a counter went back, and where the file or no device could be read.
  RealReading disk_read_bytes_per_second, disk_write_bytes_per_second;
  RealReading network_receive_bytes_per_second, network_send_bytes_per_second;
};

// One kind of NVIDIA Xid error seen in the kernel log for one PCI device.
struct XidTally {
  std::string pci_device; // as the kernel prints it, lower case: "0000:3b:00" (no function)
  int xid = 0;
  std::int64_t count = 0;
  std::string last_message; // the text after the code of the latest one: valid UTF-8, capped
  Text last_seen;           // ISO 8601 with the local offset, where the log says when
};

// What the agent read of the kernel log for Xid errors.
struct KernelLog {
  std::string source;         // "/dev/kmsg" or the file given with --kernel-log
  bool readable = false;      // false: the agent may not read it (its Xid counts are unknown)
  Text error;                 // why not: "Permission denied"
  std::vector<XidTally> xids; // by pci_device, then xid
};

// Which of nvidia-smi's two outputs a sample was read from, and which one the agent asks for.
enum class Source { xml, csv };

// What the monitor itself costs this machine: the agent and each nvidia-smi stream it runs, read
// from its own /proc and its children's (sampling/monitor_cost.hpp). serve and top show it; watch's
// JSON carries it once a minute.
struct StreamCost {
  std::string stream;                        // gpu_query, processes, pmon, dmon, nvlink
  double cpu_seconds = 0;                    // user + system of every run so far, and the running
  std::optional<std::uint64_t> memory_bytes; // the running one's resident memory; none: none runs
  std::uint64_t starts = 0;                  // runs started
  // Seconds between its samples, in force now (--cpu-budget may have lengthened it); none while
  // it does not run as a loop (nvlink's single runs, a stream the budget stopped).
  std::optional<double> interval_seconds;
};

struct AgentCost {
  double cpu_seconds = 0;                    // the agent's own, all its threads
  std::optional<std::uint64_t> memory_bytes; // its resident memory
  std::vector<StreamCost> streams;           // the streams started so far
  // The agent and its streams together, as a percentage of one core over the last window_seconds
  // (a minute, less since the start); nullopt before a second of it.
  RealReading core_percent;
  double window_seconds = 0;
  // --cpu-budget's percent of a core (none: off), and the steps it has taken to keep to it, in
  // the order taken ("pmon every 10 s", "dmon stopped ..."); empty: none.
  std::optional<double> budget_percent;
  std::vector<std::string> budget_steps;
  // The whole cost over the last window the budget judged, in % of a core; none before the first.
  std::optional<double> budget_judged_percent;
};

struct Snapshot {
  Source source = Source::xml;
  std::optional<Timestamp> timestamp;
  Text driver_version, cuda_version;
  std::vector<Gpu> gpus;
  // nullopt for a recording (--fixture): it was not taken on this machine.
  std::optional<Host> host;
  // nullopt where the kernel log was not asked for (a recording without --kernel-log).
  std::optional<KernelLog> kernel_log;
  // Whether the scheduler's job mapping folder was read for this sample (--job-mapping-dir): only
  // then does a GPU without an allocation have none, rather than one nobody knows.
  bool allocations_read = false;
  // Why the GPUs' process lists are unknown (null), where a long-running command's first sample
  // went out without them: their stream had not answered within its wait (sampling/sampler.hpp).
  Text processes_unknown_reason;
  // The monitor's own cost, where the command attaches it (watch, once a minute).
  std::optional<AgentCost> agent;
};

} // namespace nvsmi
