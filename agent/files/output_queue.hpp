// Standard output for a long run, written asynchronously so that a slow reader never holds up
// sampling. What waits is bounded: past `max_bytes`, new samples are dropped and counted (and
// said so on stderr), never buffered without limit.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>

namespace nvsmi {

class OutputQueue {
public:
  using LogHandler = std::function<void(const std::string &)>;
  // `on_error` gets the errno of a failed write (EPIPE when the reader went away); nothing is
  // written after it.
  OutputQueue(boost::asio::io_context &context, int fd, std::size_t max_bytes, LogHandler log,
              std::function<void(int)> on_error);
  ~OutputQueue();
  OutputQueue(const OutputQueue &) = delete;
  OutputQueue &operator=(const OutputQueue &) = delete;

  void push(std::string text);
  // Calls `done` once everything queued is written, or at the deadline, or after an error.
  void flush(std::chrono::milliseconds deadline, std::function<void()> done);
  std::size_t dropped() const { return dropped_total_; }

private:
  void write_next();
  void write_blocking();
  void fail(int error);
  void finish_flush();

  boost::asio::posix::stream_descriptor out_;
  boost::asio::steady_timer flush_deadline_;
  int original_flags_;
  // Regular files and /dev/null cannot be watched by epoll (and registering them would also break
  // Asio's re-registration in a forked child), and never make a writer wait for a reader either:
  // they are written directly through this descriptor; pipes, sockets and terminals through out_.
  int direct_fd_ = -1;
  std::size_t max_bytes_, queued_bytes_ = 0, dropped_now_ = 0, dropped_total_ = 0;
  std::deque<std::string> queue_;
  bool writing_ = false, failed_ = false;
  LogHandler log_;
  std::function<void(int)> on_error_;
  std::function<void()> on_flushed_;
};

} // namespace nvsmi
