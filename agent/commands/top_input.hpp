#pragma once
// What both of top's screens (one machine's, and --hosts') wait for from the terminal on their
// event loop: the window's new size (SIGWINCH) and keys on the keyboard.
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>

#include <functional>

namespace nvsmi {

class TopInput {
public:
  // `on_resize` runs after each SIGWINCH; `on_keys` each time keys wait to be read, until
  // `stopping` says the screen is ending.
  TopInput(boost::asio::io_context &context, std::function<bool()> stopping,
           std::function<void()> on_resize, std::function<void()> on_keys);

  // SIGWINCH caught: call before ncurses starts, so that ncurses leaves it to this loop.
  void catch_resize();
  // The keyboard (a copy of stdin's descriptor) waited on: call once the screen is taken.
  // Throws AgentError(exit_io) where stdin cannot be copied.
  void read_keyboard();
  // Neither waited for any more.
  void cancel();

private:
  void wait_for_resize();
  void wait_for_key();

  std::function<bool()> stopping_;
  std::function<void()> on_resize_, on_keys_;
  boost::asio::signal_set resize_signal_;
  boost::asio::posix::stream_descriptor keyboard_;
};

} // namespace nvsmi
