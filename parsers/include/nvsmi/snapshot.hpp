// The one typed record every reader produces and every output format consumes. Each reading is
// optional: nullopt means nvidia-smi had no value (or was not asked), never zero.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
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

struct MigDevice {
  Reading index, gpu_instance_id, compute_instance_id;
  Reading memory_total_mib, memory_used_mib, memory_free_mib;
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

struct Gpu {
  int index = 0; // position in nvidia-smi's XML, or its `index` column
  Text uuid, name, pci_bus_id, pstate;
  Reading temperature_c;
  Reading memory_total_mib, memory_used_mib, memory_free_mib;
  Reading utilization_gpu_percent, utilization_memory_percent;
  RealReading power_draw_w, power_limit_w;
  Reading fan_speed_percent;
  Clocks clocks;
  std::optional<bool> mig_enabled;
  // nullopt where the source does not report them (the CSV query), empty where there are none.
  std::optional<std::vector<MigDevice>> mig_devices;
  std::optional<std::vector<Process>> processes;
  // Short names ("gpu_idle", "sw_power_cap") of the clock event (throttle) reasons now active.
  std::optional<std::vector<std::string>> clock_event_reasons_active;
  std::vector<ExtraField> extras; // in the order asked for

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
};

enum class Source { xml, csv };

struct Snapshot {
  Source source = Source::xml;
  std::optional<Timestamp> timestamp;
  Text driver_version, cuda_version;
  std::vector<Gpu> gpus;
  // nullopt for a recording (--fixture): it was not taken on this machine.
  std::optional<Host> host;
};

} // namespace nvsmi
