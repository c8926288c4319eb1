// Hand-made snapshots, GPUs, processes and hosts for the tests, and the fixtures read into
// snapshots: every test builds its samples from these, changing only what it is about.
#pragma once

#include "support.hpp"

#include "nvsmi/snapshot.hpp"
#include "nvsmi/xml_reader.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace test {

// fixtures/`name` (an nvidia-smi XML document) as the XML reader reads it.
inline nvsmi::Snapshot xml_fixture(const std::string &name) {
  return nvsmi::read_xml(read_file(fixture_path(name)));
}

// 2024-03-12 14:03:27, `utc_offset_minutes` east of UTC: when every hand-made sample is taken.
inline nvsmi::Timestamp sample_time(int utc_offset_minutes = 0) {
  nvsmi::Timestamp t;
  t.year = 2024, t.month = 3, t.day = 12, t.hour = 14, t.minute = 3, t.second = 27;
  t.utc_offset_minutes = utc_offset_minutes;
  return t;
}

// GPU `index` of a quiet machine (bus 19 + 16 x index): 40 C, 1000 of 80000 MiB used, idle, no
// volatile ECC error; every other reading unknown.
inline nvsmi::Gpu quiet_gpu(int index) {
  nvsmi::Gpu gpu;
  gpu.index = index;
  char bus[32];
  std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x19 + 0x10 * index);
  gpu.pci_bus_id = bus;
  gpu.temperature_c = 40;
  gpu.memory_total_mib = 80000;
  gpu.memory_used_mib = 1000;
  gpu.utilization_gpu_percent = 0;
  gpu.health.ecc_volatile.corrected = 0;
  gpu.health.ecc_volatile.uncorrected = 0;
  return gpu;
}

// `count` quiet GPUs (quiet_gpu), sampled at sample_time().
inline nvsmi::Snapshot quiet_machine(int count) {
  nvsmi::Snapshot snapshot;
  snapshot.timestamp = sample_time();
  for (int i = 0; i < count; ++i)
    snapshot.gpus.push_back(quiet_gpu(i));
  return snapshot;
}

// A readable, healthy H100 with every health reading known, free, at `bus_id`.
inline nvsmi::Gpu fully_known_gpu(int index, const char *bus_id) {
  nvsmi::Gpu g = quiet_gpu(index);
  g.uuid = "GPU-" + std::to_string(index);
  g.name = "NVIDIA H100 80GB HBM3";
  g.pci_bus_id = bus_id;
  g.pstate = "P0";
  g.temperature_c = 45;
  g.memory_total_mib = 81559;
  g.memory_used_mib = 0;
  g.memory_free_mib = 81559;
  g.power_draw_w = 70;
  g.power_limit_w = 700;
  g.pcie_tx_bytes_per_second = 585 * 1024;
  g.pcie_rx_bytes_per_second = 244 * 1024;
  g.processes = std::vector<nvsmi::Process>{};
  g.clock_event_reasons_reported =
      std::vector<std::string>{"gpu_idle", "sw_power_cap", "hw_thermal_slowdown"};
  g.clock_event_reasons_active = std::vector<std::string>{"gpu_idle"};
  nvsmi::GpuHealth &h = g.health;
  h.ecc_enabled = true;
  h.ecc_pending_enabled = false;
  h.ecc_volatile = {3, 0};
  h.ecc_aggregate = {12, 1};
  h.retired_pages_single_bit = 2;
  h.retired_pages_double_bit = 0;
  h.retired_pages_pending = false;
  h.remapped_rows_correctable = 1;
  h.remapped_rows_uncorrectable = 0;
  h.remapped_rows_pending = false;
  h.remapped_rows_failure = false;
  h.pcie_link_gen = 5;
  h.pcie_link_gen_max = 5;
  h.pcie_link_width = 8;
  h.pcie_link_width_max = 16;
  h.temperature_slowdown_c = 90;
  h.temperature_shutdown_c = 95;
  h.recovery_action = "None";
  return g;
}

// A busy Tesla T4 (99 %, 8493 of 15079 MiB, 72 C, 67.03 of 70 W); its health unknown.
inline nvsmi::Gpu t4_gpu(int index) {
  nvsmi::Gpu gpu;
  gpu.index = index;
  gpu.uuid = "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(index);
  gpu.name = "Tesla T4";
  gpu.pci_bus_id = "00000000:00:1E.0";
  gpu.pstate = "P0";
  gpu.temperature_c = 72;
  gpu.memory_total_mib = 15079;
  gpu.memory_used_mib = 8493;
  gpu.memory_free_mib = 6586;
  gpu.utilization_gpu_percent = 99;
  gpu.utilization_memory_percent = 40;
  gpu.power_draw_w = 67.03;
  gpu.power_limit_w = 70.0;
  return gpu;
}

// One T4 (t4_gpu) read from nvidia-smi's XML at sample_time(60), driver 550.54.15, CUDA 12.4.
inline nvsmi::Snapshot t4_snapshot() {
  nvsmi::Snapshot s;
  s.source = nvsmi::Source::xml;
  s.timestamp = sample_time(60);
  s.driver_version = "550.54.15";
  s.cuda_version = "12.4";
  s.gpus = {t4_gpu(0)};
  return s;
}

inline nvsmi::Process observed_process(std::int64_t pid, const std::string &user,
                                       std::int64_t used_mib,
                                       const std::string &command = "python3 train.py") {
  nvsmi::Process p;
  p.pid = pid;
  p.type = "C";
  p.name = "python3";
  p.used_memory_mib = used_mib;
  p.sm_utilization_percent = 87;
  p.memory_utilization_percent = 35;
  p.utilization_age_seconds = 6.2;
  p.user = user;
  p.uid = 1000 + pid % 7;
  p.command = command;
  p.started = "2026-11-23T09:14:02+01:00";
  p.cpu_percent = 101.25;
  p.host_memory_mib = 5120;
  p.container = std::string(64, 'a');
  p.pod_uid = "6f1c1c2e-4b1a-4a0e-9d57-3f7a8c2d1b00";
  p.slurm_job_id = "81234";
  p.systemd_unit = "docker-aaaa.scope";
  return p;
}

inline nvsmi::Host observed_host() {
  // The disk and network rates unknown, as on a first sample.
  return {std::string("gpu07"), 64,           12.5,         3.25,        515000, 123456,
          std::nullopt,         std::nullopt, std::nullopt, std::nullopt};
}

} // namespace test
