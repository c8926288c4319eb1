// A `nvsmi-agent serve` started in the background for a test, and HTTP requests to it (curl).
#pragma once

#include "support.hpp"

#include <string>

namespace test {

struct Http {
  int status = 0;
  std::string headers, body;
};

class Server {
public:
  // Starts `serve --listen 127.0.0.1:0 ARGUMENTS` with ENVIRONMENT before it and waits until it
  // says where it listens.
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
  bool stopped_ = false;
};

// A loopback TCP port that was free a moment ago.
int free_port();

} // namespace test
