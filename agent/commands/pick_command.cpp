#include "commands/pick_command.hpp"

#include "core/exit_codes.hpp"
#include "core/log_line.hpp"
#include "core/screen_text.hpp"
#include "files/file_io.hpp"
#include "formats/json_writer.hpp"
#include "jobs/gpu_claims.hpp"
#include "nvidia_smi/stop_signals.hpp"

#include "nvsmi/gpu_state.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace nvsmi {
namespace {

using Clock = std::chrono::steady_clock;

// 1.5 as "1.5", 2 as "2", then `unit`.
std::string number_text(double value, const char *unit) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.')
    text.pop_back();
  return text + unit;
}

AgentError not_enough(const GpuAvailability &availability, const PickOptions &options) {
  std::string when = options.wait_seconds
                         ? " when --wait's " + number_text(*options.wait_seconds, " s") + " were up"
                         : "";
  return AgentError(options.wait_seconds ? exit_not_enough_in_time : exit_not_enough,
                    availability.shortage(options.count, when));
}

std::string devices_text(const std::vector<GpuChoice> &chosen, const PickOptions &options) {
  std::string devices;
  for (const GpuChoice &choice : chosen)
    // An instance is named by its UUID alone: CUDA has no index for it.
    devices += (devices.empty() ? "" : ",") +
               (options.uuid || choice.mig_device ? choice.uuid : std::to_string(choice.index));
  return devices;
}

void write_choices(JsonWriter &json, const std::vector<GpuChoice> &chosen) {
  json.key("gpus");
  json.begin_array();
  for (const GpuChoice &choice : chosen) {
    json.begin_object();
    json.key("index");
    json.value(choice.index);
    json.key("uuid");
    json.value(choice.uuid);
    json.key("free_mib");
    json.value(choice.free_mib);
    json.key("temperature_c");
    json.value(choice.temperature_c);
    if (choice.mig_device) {
      json.key("mig_device");
      json.value(*choice.mig_device);
      json.key("profile");
      json.value(choice.profile);
    }
    json.end_object();
  }
  json.end_array();
}

// UUIDs are plain_uuid and indices digits: nothing here needs quoting for a shell.
std::string output_text(const std::vector<GpuChoice> &chosen, const PickOptions &options) {
  std::string devices = devices_text(chosen, options);
  switch (options.format) {
  case PickFormat::list:
    return devices + "\n";
  case PickFormat::env:
    // Exported, so that the job `eval` is followed by sees it. CUDA numbers GPUs fastest first
    // unless told PCI_BUS_ID, the order of nvidia-smi's indices; UUIDs need no order.
    return std::string("export ") +
           (options.uuid || options.criteria.mig_profile ? "" : "CUDA_DEVICE_ORDER=PCI_BUS_ID ") +
           "CUDA_VISIBLE_DEVICES=" + devices + "\n";
  case PickFormat::json:
    break;
  }
  std::string text;
  JsonWriter json(text);
  json.begin_object();
  write_choices(json, chosen);
  json.key("cuda_visible_devices");
  json.value(devices);
  json.end_object();
  return text + "\n";
}

// Worth sampling again before the deadline: nvidia-smi failed, or did not answer in time. A
// fixture does not change, and a signal stops the agent.
bool retry_later(const AgentError &error, const PickOptions &options) {
  return !options.sample.fixture && nvidia_smi_failure(error);
}

Clock::duration seconds(double value) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(value));
}

} // namespace

void run_pick(const PickOptions &options) {
  ignore_write_signals();
  std::optional<Clock::time_point> deadline;
  if (options.wait_seconds)
    deadline = Clock::now() + seconds(*options.wait_seconds);
  GpuAvailability decision;
  std::optional<AgentError> failure; // of the latest sample
  bool failure_said = false;         // once: a failing nvidia-smi may fail at every sample
  for (;;) {
    Clock::time_point sampled_at = Clock::now();
    try {
      decision =
          available_gpus(read_one_sample(options.sample), options.criteria, options.claims_folder);
      failure.reset();
    } catch (const AgentError &error) {
      if (!deadline || !retry_later(error, options))
        throw;
      if (!failure_said)
        log_line(std::string("sampling again until --wait's time is up: ") + error.what());
      failure_said = true;
      failure = error;
    }
    if (!failure && decision.available.size() >= options.count) {
      decision.available.resize(options.count);
      write_stdout(output_text(decision.available, options));
      return;
    }
    if (!deadline)
      throw not_enough(decision, options);
    // The last sample starts before the deadline, and the agent leaves at it, never later.
    Clock::time_point next = sampled_at + seconds(options.interval_seconds);
    if (next >= *deadline) {
      std::this_thread::sleep_until(*deadline);
      break;
    }
    std::this_thread::sleep_until(next);
  }
  if (failure)
    throw *failure;
  throw not_enough(decision, options);
}

void run_pick_ssh(const PickOptions &options) {
  ignore_write_signals();
  struct Offer {
    std::string host;
    std::size_t free = 0;
    std::vector<GpuChoice> gpus;
  };
  std::vector<Offer> offers;
  std::string short_of;
  for (const HostReading &reading : sample_ssh_hosts_once(*options.ssh)) {
    std::string host = printable_text(reading.host.label());
    if (reading.status != HostStatus::ok || !reading.last_good) {
      short_of += "; " + host + " " + std::string(host_status_key(reading.status)) +
                  (reading.problem.empty() ? "" : ": " + printable_text(reading.problem));
      continue;
    }
    std::vector<GpuChoice> gpus = free_gpus(*reading.last_good, options.criteria);
    if (gpus.size() < options.count) {
      short_of += "; " + host + ": " + std::to_string(gpus.size()) + " free";
      continue;
    }
    std::size_t free = gpus.size();
    gpus.resize(options.count);
    offers.push_back({host, free, std::move(gpus)});
  }
  if (offers.empty())
    throw AgentError(exit_not_enough, "no host has " + std::to_string(options.count) + " free GPU" +
                                          (options.count == 1 ? "" : "s") + short_of);
  std::stable_sort(offers.begin(), offers.end(),
                   [](const Offer &a, const Offer &b) { return a.free > b.free; });
  std::string text;
  if (options.format == PickFormat::json) {
    JsonWriter json(text);
    json.begin_object();
    json.key("hosts");
    json.begin_array();
    for (const Offer &offer : offers) {
      json.begin_object();
      json.key("host");
      json.value(offer.host);
      json.key("free");
      json.value(static_cast<std::int64_t>(offer.free));
      write_choices(json, offer.gpus);
      json.key("cuda_visible_devices");
      json.value(devices_text(offer.gpus, options));
      json.end_object();
    }
    json.end_array();
    json.end_object();
    text += "\n";
  } else {
    for (const Offer &offer : offers)
      text += offer.host + " " + devices_text(offer.gpus, options) + "\n";
  }
  write_stdout(text);
}

} // namespace nvsmi
