#include "files/output_queue.hpp"

#include "core/exit_codes.hpp"
#include "files/file_io.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <cerrno>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace nvsmi {

namespace asio = boost::asio;

OutputQueue::OutputQueue(asio::io_context &context, int fd, std::size_t max_bytes, LogHandler log,
                         std::function<void(int)> on_error)
    : out_(context), flush_deadline_(context), original_flags_(::fcntl(fd, F_GETFL)),
      max_bytes_(max_bytes), log_(std::move(log)), on_error_(std::move(on_error)) {
  // A duplicate, so that closing ours leaves fd 1 to the process.
  int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (copy < 0)
    throw AgentError(exit_io, "standard output is not open");
  struct stat info {};
  bool watchable = ::fstat(copy, &info) == 0 &&
                   (S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode) || ::isatty(copy));
  if (watchable)
    out_.assign(copy);
  else
    direct_fd_ = copy;
}

OutputQueue::~OutputQueue() {
  if (direct_fd_ >= 0)
    ::close(direct_fd_);
  // Non-blocking mode belongs to the open file, shared with whoever gave us stdout (a shell's
  // terminal): give it back as it was.
  if (out_.is_open() && original_flags_ >= 0)
    ::fcntl(out_.native_handle(), F_SETFL, original_flags_);
}

void OutputQueue::push(std::string text) {
  if (failed_)
    return;
  if (queued_bytes_ + text.size() > max_bytes_) {
    if (dropped_now_++ == 0)
      log_("standard output is not keeping up: dropping samples until it does");
    ++dropped_total_;
    return;
  }
  if (dropped_now_ > 0) {
    log_("standard output caught up; " + std::to_string(dropped_now_) + " sample(s) were dropped");
    dropped_now_ = 0;
  }
  queued_bytes_ += text.size();
  queue_.push_back(std::move(text));
  write_next();
}

void OutputQueue::write_next() {
  if (writing_ || failed_)
    return;
  if (direct_fd_ >= 0)
    write_blocking();
  if (queue_.empty() || failed_) {
    finish_flush();
    return;
  }
  writing_ = true;
  asio::async_write(out_, asio::buffer(queue_.front()),
                    [this](boost::system::error_code error, std::size_t) {
                      writing_ = false;
                      if (failed_) // given up on at the flush deadline
                        return;
                      if (error) {
                        fail(error.value());
                        return;
                      }
                      queued_bytes_ -= queue_.front().size();
                      queue_.pop_front();
                      write_next();
                    });
}

void OutputQueue::write_blocking() {
  while (!queue_.empty() && !failed_) {
    if (!write_all(direct_fd_, queue_.front())) {
      fail(errno);
      return;
    }
    queued_bytes_ -= queue_.front().size();
    queue_.pop_front();
  }
}

void OutputQueue::fail(int error) {
  failed_ = true;
  queue_.clear();
  queued_bytes_ = 0;
  finish_flush();
  // Posted, so that a failure found inside push() does not re-enter whoever called it.
  asio::post(out_.get_executor(), [this, error] { on_error_(error); });
}

void OutputQueue::flush(std::chrono::milliseconds deadline, std::function<void()> done) {
  on_flushed_ = std::move(done);
  if (queue_.empty() || failed_) {
    finish_flush();
    return;
  }
  flush_deadline_.expires_after(deadline);
  flush_deadline_.async_wait([this](boost::system::error_code error) {
    if (error)
      return;
    log_("standard output did not take the last " + std::to_string(queue_.size()) +
         " sample(s) in time; leaving without them");
    boost::system::error_code ignored;
    out_.cancel(ignored);
    failed_ = true;
    finish_flush();
  });
}

void OutputQueue::finish_flush() {
  if (!on_flushed_ || (!queue_.empty() && !failed_))
    return;
  flush_deadline_.cancel();
  auto done = std::move(on_flushed_);
  on_flushed_ = nullptr;
  done();
}

} // namespace nvsmi
