#include "serve_support.hpp"

#include <csignal>
#include <fstream>
#include <netinet/in.h>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>

namespace test {
namespace {

bool running(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, name, state;
  if (!(stat >> pid_field >> name >> state))
    return false;
  return state != "Z"; // a zombie has left; its parent (not us) reaps it
}

} // namespace

Server::Server(const std::string &arguments, const std::string &environment)
    : folder_(temporary_folder()), err_(folder_ + "/err") {
  // A subshell that waits for the agent keeps its exit code for stop().
  std::string code = quote(folder_ + "/code");
  run_shell("( " + environment + " " + quote(AGENT_BIN) + " serve --listen 127.0.0.1:0 " +
            arguments + " 2>" + quote(err_) + " & echo $! >" + quote(folder_ + "/pid") +
            "; wait $!; echo $? >" + code + ".part; mv " + code + ".part " + code +
            " ) >/dev/null 2>&1 &");
  wait_until([&] {
    std::ifstream pid(folder_ + "/pid");
    return static_cast<bool>(pid >> pid_);
  });
  bool left = false;
  wait_until([&] {
    std::string text = log();
    std::size_t at = text.find("serving http://127.0.0.1:");
    if (at != std::string::npos)
      port_ = std::stoi(text.substr(at + 25));
    left = port_ == 0 && !running(pid_);
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
  return "http://127.0.0.1:" + std::to_string(port_) + path;
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
