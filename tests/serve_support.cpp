#include "serve_support.hpp"
#include "process_support.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <fstream>
#include <netinet/in.h>
#include <regex>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace test {

Server::Server(const std::string &arguments, const std::string &environment)
    : folder_(temporary_folder()), err_(folder_ + "/err") {
  // A subshell that waits for the agent keeps its exit code for stop().
  std::string code = quote(folder_ + "/code");
  std::string listen =
      arguments.find("--listen") == std::string::npos ? "--listen 127.0.0.1:0 " : "";
  run_shell("( " + environment + " " + quote(AGENT_BIN) + " serve " + listen + arguments + " 2>" +
            quote(err_) + " & echo $! >" + quote(folder_ + "/pid") + "; wait $!; echo $? >" + code +
            ".part; mv " + code + ".part " + code + " ) >/dev/null 2>&1 &");
  wait_until([&] {
    std::ifstream pid(folder_ + "/pid");
    return static_cast<bool>(pid >> pid_);
  });
  bool left = false;
  wait_until([&] {
    std::string text = log();
    // "serving http://127.0.0.1:PORT/", https with a web config, any address with --listen
    std::size_t at = text.find("serving http");
    std::size_t slash = at == std::string::npos ? at : text.find('/', text.find("://", at) + 3);
    std::size_t colon = slash == std::string::npos ? slash : text.rfind(':', slash);
    if (colon != std::string::npos && colon > at) {
      port_ = std::stoi(text.substr(colon + 1));
      tls_ = text.compare(at, 13, "serving https") == 0;
    }
    left = port_ == 0 && process_ended(pid_);
    return port_ != 0 || left;
  });
  if (left)
    throw std::runtime_error("serve left before listening: " + log());
  if (port_ == 0)
    throw std::runtime_error("serve did not start listening: " + log());
}

Server::~Server() {
  if (!stopped_ && stop() < 0)
    ::kill(pid_, SIGKILL);
}

int Server::stop() {
  stopped_ = true;
  ::kill(pid_, SIGTERM);
  int value = -1;
  wait_until([&] {
    std::ifstream code(folder_ + "/code");
    int read = 0;
    if (!(code >> read))
      return false;
    value = read;
    return true;
  });
  return value;
}

std::string Server::url(const std::string &path) const {
  return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_) + path;
}

Http Server::get(const std::string &path, const std::string &curl_options) const {
  std::string headers = folder_ + "/headers", body = folder_ + "/body";
  Run run = run_shell("curl -s --max-time 60 -D " + quote(headers) + " -o " + quote(body) +
                      " -w '%{http_code}' " + curl_options + " " + quote(url(path)));
  Http http;
  http.status = run.out.empty() ? 0 : std::stoi(run.out);
  http.headers = read_file(headers);
  http.body = read_file(body);
  return http;
}

std::string Server::log() const {
  try {
    return read_file(err_);
  } catch (const std::runtime_error &) {
    return ""; // not created yet
  }
}

Prometheus::Prometheus(const std::vector<int> &agent_ports, const std::string &scrape)
    : folder_(temporary_folder()) {
  std::string targets;
  for (int port : agent_ports)
    targets += (targets.empty() ? "'127.0.0.1:" : ", '127.0.0.1:") + std::to_string(port) + "'";
  write_file(folder_ + "/prometheus.yml",
             "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
             "scrape_configs:\n  - job_name: nvsmi-agent\n" +
                 scrape +
                 "    static_configs:\n"
                 "      - targets: [" +
                 targets + "]\n");
  for (int attempt = 0; attempt < 5; ++attempt) {
    port_ = free_port();
    Run started = run_shell("prometheus --config.file=" + quote(folder_ + "/prometheus.yml") +
                            " --storage.tsdb.path=" + quote(folder_ + "/data") +
                            " --web.listen-address=127.0.0.1:" + std::to_string(port_) + " >" +
                            quote(folder_ + "/prometheus.log") + " 2>&1 & echo $!");
    pid_ = std::stoi(started.out);
    bool ready = wait_until(
        [&] {
          return run_shell("curl -sf --max-time 10 http://127.0.0.1:" + std::to_string(port_) +
                           "/-/ready")
                         .exit_code == 0 ||
                 process_ended(pid_);
        },
        patience, std::chrono::milliseconds(250));
    if (ready && !process_ended(pid_))
      return;
    ::kill(pid_, SIGKILL);
    if (log().find("address already in use") == std::string::npos)
      break;
  }
  throw std::runtime_error("prometheus did not start: " + log());
}

Prometheus::~Prometheus() {
  ::kill(pid_, SIGTERM);
  if (!wait_until([&] { return process_ended(pid_); }, patience))
    ::kill(pid_, SIGKILL);
}

nlohmann::json Prometheus::query(const std::string &promql,
                                 const std::function<bool(const nlohmann::json &)> &ready) const {
  nlohmann::json result;
  wait_until(
      [&] {
        Run run =
            run_shell("curl -s --max-time 10 -G --data-urlencode " + quote("query=" + promql) +
                      " http://127.0.0.1:" + std::to_string(port_) + "/api/v1/query");
        auto answer = nlohmann::json::parse(run.out, nullptr, false);
        if (!answer.is_object() || answer.value("status", "") != "success")
          return false;
        result = answer["data"]["result"];
        return ready(result);
      },
      patience * 2, std::chrono::milliseconds(250));
  return result;
}

std::string Prometheus::log() const {
  try {
    return read_file(folder_ + "/prometheus.log");
  } catch (const std::runtime_error &) {
    return "";
  }
}

std::string fixture_with_process_name(const std::string &name) {
  std::string xml = read_file(fixture_path("xml/h100-8gpu-v12.xml"));
  const std::string python = "<process_name>python3</process_name>";
  xml.replace(xml.find(python), python.size(), "<process_name>" + name + "</process_name>");
  std::string path = temporary_folder() + "/renamed-process.xml";
  write_file(path, xml);
  return path;
}

std::string colour_family(const std::string &css) {
  double rgb[3];
  std::smatch found;
  if (std::regex_match(css, found, std::regex(R"re(rgba?\((\d+), (\d+), (\d+)(, [\d.]+)?\))re")))
    for (int i = 0; i < 3; ++i)
      rgb[i] = std::stoi(found[i + 1]) / 255.0;
  else if (std::regex_match(css, found, std::regex("#([0-9a-fA-F]{6})")))
    for (int i = 0; i < 3; ++i)
      rgb[i] = std::stoi(found[1].str().substr(2 * i, 2), nullptr, 16) / 255.0;
  else
    return "";
  double high = std::max({rgb[0], rgb[1], rgb[2]}), low = std::min({rgb[0], rgb[1], rgb[2]});
  double chroma = high - low, lightness = (high + low) / 2;
  double saturation = chroma == 0 ? 0 : chroma / (1 - std::abs(2 * lightness - 1));
  if (saturation < 0.25)
    return "grey";
  double hue = high == rgb[0]   ? 60 * std::fmod((rgb[1] - rgb[2]) / chroma + 6, 6)
               : high == rgb[1] ? 60 * ((rgb[2] - rgb[0]) / chroma + 2)
                                : 60 * ((rgb[0] - rgb[1]) / chroma + 4);
  if (hue < 15 || hue >= 345)
    return "red";
  if (hue >= 30 && hue < 55)
    return "amber";
  if (hue >= 90 && hue < 160)
    return "green";
  if (hue >= 170 && hue < 200)
    return "cyan";
  return "other";
}

std::vector<std::string> browser_steps(const std::string &url, const std::string &size,
                                       const std::string &ready,
                                       const std::vector<std::string> &steps) {
  std::string command = "timeout 150 /usr/bin/python3 " + quote(TESTS_DIR "/browser_actions.py") +
                        " " + quote(url) + " " + quote(size) + " " + quote(ready);
  for (const std::string &step : steps)
    command += " " + quote(step);
  Run run = run_shell(command);
  if (run.exit_code != 0)
    throw std::runtime_error("browser_actions.py exited " + std::to_string(run.exit_code) + ": " +
                             run.err);
  std::vector<std::string> pages;
  const std::string separator = "\n----- step -----\n";
  std::size_t from = 0;
  for (std::size_t at; (at = run.out.find(separator, from)) != std::string::npos;
       from = at + separator.size())
    pages.push_back(run.out.substr(from, at - from));
  pages.push_back(run.out.substr(from));
  if (pages.size() != steps.size() + 1)
    throw std::runtime_error("browser_actions.py answered " + std::to_string(pages.size()) +
                             " pages for " + std::to_string(steps.size()) + " steps");
  return pages;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr *>(&address), size) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &size) != 0)
    throw std::runtime_error("no free port");
  ::close(fd);
  return ntohs(address.sin_port);
}

} // namespace test
