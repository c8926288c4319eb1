#include "nvidia_smi/child_exit.hpp"

#include <boost/asio/posix/stream_descriptor.hpp>

#include <cerrno>
#include <memory>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nvsmi {
namespace {

namespace asio = boost::asio;

double seconds(const timeval &time) {
  return static_cast<double>(time.tv_sec) + static_cast<double>(time.tv_usec) / 1e6;
}

struct Waiter : std::enable_shared_from_this<Waiter> {
  Waiter(asio::io_context &context, int pidfd, pid_t child, std::function<void(ChildEnd)> then)
      : descriptor(context, pidfd), pid(child), done(std::move(then)) {}

  void wait() {
    // A pidfd reads as readable once its process has ended: then wait4 reaps it at once.
    descriptor.async_wait(
        asio::posix::stream_descriptor::wait_read,
        [self = shared_from_this()](boost::system::error_code error) { self->reap(error); });
  }

  void reap(boost::system::error_code error) {
    int status = 0;
    rusage usage{};
    pid_t got = -1;
    do
      got = ::wait4(pid, &status, WNOHANG, &usage);
    while (got < 0 && errno == EINTR);
    if (got == 0 && !error) { // not yet: readable early is not the kernel's promise, but cheap
      wait();
      return;
    }
    if (got == 0) { // the io_context is going away: the child is someone else's to kill
      return;
    }
    ChildEnd end;
    end.status = status;
    if (got == pid)
      end.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    boost::system::error_code ignored;
    descriptor.close(ignored);
    done(end);
  }

  asio::posix::stream_descriptor descriptor;
  pid_t pid;
  std::function<void(ChildEnd)> done;
};

} // namespace

void async_wait_child(asio::io_context &context, pid_t pid, std::function<void(ChildEnd)> done,
                      const std::function<void()> &fallback) {
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    fallback();
    return;
  }
  std::make_shared<Waiter>(context, pidfd, pid, std::move(done))->wait();
}

} // namespace nvsmi
