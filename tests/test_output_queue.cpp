// The watch command's standard output: asynchronous on a pipe, bounded, direct on a file.
#include "files/output_queue.hpp"
#include "support.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <unistd.h>

namespace test_output_queue {

using nvsmi::OutputQueue;

namespace {

struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() { REQUIRE(::pipe(fds) == 0); }
  ~Pipe() {
    for (int fd : fds)
      if (fd >= 0)
        ::close(fd);
  }
  std::string drain() const {
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    std::string out;
    char buffer[65536];
    for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
      out.append(buffer, static_cast<std::size_t>(n));
    return out;
  }
};

} // namespace

TEST_CASE("output queue: a reader that does not keep up loses whole samples, said once") {
  Pipe pipe;
  boost::asio::io_context context;
  std::vector<std::string> logs;
  int error = 0;
  {
    OutputQueue queue(
        context, pipe.fds[1], 1000, [&](const std::string &line) { logs.push_back(line); },
        [&](int e) { error = e; });
    // Fill the pipe so that nothing more can be written until it is read.
    ::fcntl(pipe.fds[1], F_SETFL, O_NONBLOCK);
    std::string filler(4096, 'f');
    std::size_t filled = 0;
    for (ssize_t n; (n = ::write(pipe.fds[1], filler.data(), filler.size())) > 0;)
      filled += static_cast<std::size_t>(n);
    for (int i = 0; i < 5; ++i)
      queue.push(std::string(400, static_cast<char>('a' + i)) + "\n");
    context.poll();
    CHECK(queue.dropped() == 3); // 2 x 401 bytes fit under 1000, the other three do not
    REQUIRE(logs.size() == 1);
    CHECK_THAT(logs[0], Catch::Contains("not keeping up"));

    // Once the reader catches up, what was kept arrives whole and the loss is reported.
    std::string read = pipe.drain();
    CHECK(read.size() == filled);
    context.restart();
    context.poll();
    queue.push("f\n");
    bool flushed = false;
    // Returns once the flush is done and nothing is left to run, or at the deadline.
    queue.flush(test::patience, [&] { flushed = true; });
    context.restart();
    context.run_for(test::patience);
    CHECK(flushed);
    CHECK(pipe.drain() == std::string(400, 'a') + "\n" + std::string(400, 'b') + "\nf\n");
    REQUIRE(logs.size() == 2);
    CHECK_THAT(logs[1], Catch::Contains("3 sample(s) were dropped"));
  }
  CHECK(error == 0);
}

TEST_CASE("output queue: a regular file is written at once") {
  std::string path = test::temporary_folder() + "/out";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  boost::asio::io_context context;
  {
    OutputQueue queue(
        context, fd, 1000, [](const std::string &) {}, [](int) {});
    queue.push("one\n");
    queue.push("two\n");
    CHECK(test::read_file(path) == "one\ntwo\n"); // before the context has run at all
  }
  ::close(fd);
}

TEST_CASE("output queue: a reader that went away is an error, reported once") {
  ::signal(SIGPIPE, SIG_IGN); // as the agent does, so that a write fails with EPIPE instead
  Pipe pipe;
  ::close(pipe.fds[0]);
  pipe.fds[0] = -1;
  boost::asio::io_context context;
  int error = 0, errors = 0;
  OutputQueue queue(
      context, pipe.fds[1], 1000, [](const std::string &) {},
      [&](int e) {
        error = e;
        ++errors;
      });
  queue.push("one\n");
  queue.push("two\n");
  context.run_for(test::patience); // returns once nothing is left to run
  CHECK(error == EPIPE);
  CHECK(errors == 1);
}

} // namespace test_output_queue
