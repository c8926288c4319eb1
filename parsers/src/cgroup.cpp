#include "nvsmi/cgroup.hpp"

#include <array>
#include <vector>

namespace nvsmi {
namespace {

// The kernel writes one line per hierarchy; hybrid systems have a dozen. More is not a cgroup file.
constexpr std::size_t max_lines = 64;
constexpr std::size_t container_id_length = 64;
constexpr std::size_t max_job_digits = 20;

bool is_hex(std::string_view text) {
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return !text.empty();
}

bool is_digits(std::string_view text) {
  for (char c : text)
    if (c < '0' || c > '9')
      return false;
  return !text.empty();
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    std::size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty() && part != "." && part != "..")
      parts.push_back(part);
    if (slash == std::string_view::npos)
      break;
    path.remove_prefix(slash + 1);
  }
  return parts;
}

// "<64hex>" (cgroupfs drivers: /docker/ID, /kubepods/.../ID) or "<runtime>-<64hex>.scope"
// (systemd drivers). The runtime is named, so that CRI-O's "crio-conmon-ID.scope", its monitor
// beside the container, is not taken for the container.
Text container_in(std::string_view segment) {
  if (segment.size() == container_id_length && is_hex(segment))
    return std::string(segment);
  static constexpr std::array<std::string_view, 6> runtimes = {
      "docker-", "cri-containerd-", "crio-", "containerd-", "libpod-", "nerdctl-"};
  if (!ends_with(segment, ".scope"))
    return std::nullopt;
  std::string_view name = segment.substr(0, segment.size() - 6);
  for (std::string_view runtime : runtimes)
    if (starts_with(name, runtime) && name.size() == runtime.size() + container_id_length &&
        is_hex(name.substr(runtime.size())))
      return std::string(name.substr(runtime.size()));
  return std::nullopt;
}

// A pod UID as the kubelet writes it into a cgroup name: "pod<8-4-4-4-12>" (cgroupfs driver),
// "kubepods-burstable-pod<8_4_4_4_12>.slice" (systemd driver), or 32 hex digits without
// separators (a static pod, whose UID is a hash of its manifest).
Text pod_in(std::string_view segment) {
  if (ends_with(segment, ".slice")) {
    segment.remove_suffix(6);
    std::size_t dash = segment.rfind('-');
    if (dash == std::string_view::npos)
      return std::nullopt;
    segment.remove_prefix(dash + 1);
  }
  if (!starts_with(segment, "pod"))
    return std::nullopt;
  std::string uid(segment.substr(3));
  if (uid.size() == 32 && is_hex(uid))
    return uid;
  if (uid.size() != 36)
    return std::nullopt;
  for (std::size_t i = 0; i < uid.size(); ++i) {
    bool separator = i == 8 || i == 13 || i == 18 || i == 23;
    if (separator && (uid[i] == '-' || uid[i] == '_'))
      uid[i] = '-';
    else if (separator || !is_hex(std::string_view(&uid[i], 1)))
      return std::nullopt;
  }
  return uid;
}

Placement place_path(std::string_view path) {
  Placement found;
  std::vector<std::string_view> parts = segments(path);
  bool under_kubepods = false, under_slurm = false;
  for (std::string_view part : parts) {
    if (Text id = container_in(part))
      found.container = id; // the innermost wins: a container in a container is the inner one
    if (under_kubepods && !found.pod_uid)
      found.pod_uid = pod_in(part);
    if (under_slurm && !found.slurm_job_id && starts_with(part, "job_") &&
        part.size() - 4 <= max_job_digits && is_digits(part.substr(4)))
      found.slurm_job_id = std::string(part.substr(4));
    if ((ends_with(part, ".service") && part.size() > 8) ||
        (ends_with(part, ".scope") && part.size() > 6))
      found.systemd_unit = std::string(part);
    // Kubernetes names its root "kubepods" (cgroupfs) or "kubepods.slice" (systemd); Slurm
    // "slurm", "slurm_<node>" (several slurmd on a node), or slurmstepd.scope on cgroup v2.
    under_kubepods = under_kubepods || starts_with(part, "kubepods");
    under_slurm = under_slurm || starts_with(part, "slurm");
  }
  return found;
}

// Which line speaks first, lowest first: the v1 controllers every container runtime, the kubelet
// and Slurm join, then systemd's own hierarchy, then the v2 line, then any other controller.
int rank(std::string_view controllers, bool unified) {
  if (unified)
    return 4;
  static constexpr std::array<std::string_view, 4> preferred = {"memory", "pids", "cpu",
                                                                "name=systemd"};
  for (std::size_t i = 0; i < preferred.size(); ++i) {
    std::string_view rest = controllers;
    while (!rest.empty()) { // "cpu,cpuacct": any controller of the list
      std::size_t comma = rest.find(',');
      if (rest.substr(0, comma) == preferred[i])
        return static_cast<int>(i);
      rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
    }
  }
  return 5;
}

void take_missing(Placement &into, const Placement &from) {
  if (!into.container)
    into.container = from.container;
  if (!into.pod_uid)
    into.pod_uid = from.pod_uid;
  if (!into.slurm_job_id)
    into.slurm_job_id = from.slurm_job_id;
  if (!into.systemd_unit)
    into.systemd_unit = from.systemd_unit;
}

} // namespace

Placement read_cgroup(std::string_view text) {
  struct Line {
    int rank;
    std::string_view path;
  };
  std::vector<Line> lines;
  while (!text.empty() && lines.size() < max_lines) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    // "ID:CONTROLLERS:PATH"; the path may hold ':' itself.
    std::size_t first = line.find(':');
    std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos || !is_digits(line.substr(0, first)))
      continue;
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string_view path = line.substr(second + 1);
    if (path.empty() || path.front() != '/')
      continue;
    // cgroup v2 marks a cgroup removed while the process still sits in it.
    constexpr std::string_view deleted = " (deleted)";
    if (ends_with(path, deleted))
      path.remove_suffix(deleted.size());
    bool unified = line.substr(0, first) == "0" && controllers.empty();
    lines.push_back({rank(controllers, unified), path});
  }
  Placement placement;
  for (int r = 0; r <= 5; ++r)
    for (const Line &line : lines)
      if (line.rank == r)
        take_missing(placement, place_path(line.path));
  return placement;
}

} // namespace nvsmi
