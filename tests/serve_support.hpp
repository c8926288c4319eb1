// A `nvsmi-agent serve` started in the background for a test, and HTTP requests to it (curl).
#pragma once

#include "support.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

namespace test {

struct Http {
  int status = 0;
  std::string headers, body;
};

class Server {
public:
  // Starts `serve --listen 127.0.0.1:0 ARGUMENTS` (without that --listen where ARGUMENTS has
  // one) with ENVIRONMENT before it and waits until it says where it listens.
  explicit Server(const std::string &arguments, const std::string &environment = "");
  ~Server();
  Server(const Server &) = delete;
  Server &operator=(const Server &) = delete;

  Http get(const std::string &path, const std::string &curl_options = "") const;
  std::string url(const std::string &path = "/") const;
  // SIGTERM, then its exit code (or -1 if it did not leave within test::patience).
  int stop();
  std::string log() const;
  int port() const { return port_; }
  int pid() const { return pid_; }

private:
  std::string folder_, err_;
  int pid_ = 0, port_ = 0;
  bool stopped_ = false, tls_ = false; // tls_: it said "serving https://" (a web config)
};

// A real Prometheus server (Debian's `prometheus`) on loopback, scraping `serve` instances every
// second as job "nvsmi-agent"; stopped when it goes.
class Prometheus {
public:
  // Starts it (again on another port, should another program take the free port first) and waits
  // until it is ready; throws when it cannot start.
  // `scrape` is more of the job's settings, as YAML lines indented by four spaces (scheme,
  // tls_config, basic_auth).
  explicit Prometheus(const std::vector<int> &agent_ports, const std::string &scrape = "");
  ~Prometheus();
  Prometheus(const Prometheus &) = delete;
  Prometheus &operator=(const Prometheus &) = delete;

  // The instant query's result vector once `ready` holds for it (within `patience`), else the
  // last one seen. Starting and the first scrapes take seconds on an idle machine, many on a
  // busy one.
  nlohmann::json query(const std::string &promql,
                       const std::function<bool(const nlohmann::json &result)> &ready) const;
  std::string log() const;

private:
  std::string folder_;
  int port_ = 0, pid_ = 0;
};

// A copy of the 8-GPU XML fixture whose first process is called `name` (any bytes).
std::string fixture_with_process_name(const std::string &name);

// A loopback TCP port that was free a moment ago.
int free_port();

// The page at `url` in headless Chromium at `size` ("1400x1000"), driven as a person would
// (tests/browser_actions.py): once the JavaScript `ready` holds, its DOM, then one answer per
// step: the DOM after a click:, key: or wait: step, the JSON value of an eval: step. Throws with
// the script's stderr where a step fails or the browser goes away.
// A CSS colour as the browser computes it ("rgb(197, 34, 31)", or "#c5221f") by the family a
// person names it: "green", "cyan", "amber", "red", "grey", or "other"; "" where it is no colour.
std::string colour_family(const std::string &css);

std::vector<std::string> browser_steps(const std::string &url, const std::string &size,
                                       const std::string &ready,
                                       const std::vector<std::string> &steps);

} // namespace test
