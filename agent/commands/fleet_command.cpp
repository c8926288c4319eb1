#include "commands/fleet_command.hpp"

#include "core/exit_codes.hpp"
#include "files/file_io.hpp"
#include "fleet/fleet_view.hpp"

#include <boost/asio/io_context.hpp>

namespace nvsmi {
int run_fleet(const FleetOptions &options) {
  if (options.ssh) {
    std::vector<HostReading> hosts = sample_ssh_hosts_once(*options.ssh);
    auto now = std::chrono::system_clock::now();
    write_stdout(options.json ? format_fleet_json(hosts, now)
                              : format_fleet_text(hosts, now, options.table_style));
    return exit_ok;
  }
  if (options.prometheus) {
    std::vector<PrometheusInstance> instances = ask_prometheus(*options.prometheus, options.client);
    write_stdout(options.json ? format_prometheus_fleet_json(*options.prometheus, instances)
                              : format_prometheus_fleet_text(instances, options.table_style));
    return exit_ok;
  }
  boost::asio::io_context context;
  FleetPoller poller(context, options.client);
  poller.poll([] {});
  // Every request ends by its deadline, so this returns within the timeout (name resolution
  // aside, which the C library does on a thread of Asio's that no deadline can stop).
  context.run();
  auto now = std::chrono::system_clock::now();
  write_stdout(options.json ? format_fleet_json(poller.hosts(), now)
                            : format_fleet_text(poller.hosts(), now, options.table_style));
  return exit_ok;
}

} // namespace nvsmi
