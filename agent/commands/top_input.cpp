#include "commands/top_input.hpp"

#include "core/exit_codes.hpp"

#include <csignal>
#include <unistd.h>

namespace nvsmi {

namespace asio = boost::asio;

TopInput::TopInput(asio::io_context &context, std::function<bool()> stopping,
                   std::function<void()> on_resize, std::function<void()> on_keys)
    : stopping_(std::move(stopping)), on_resize_(std::move(on_resize)),
      on_keys_(std::move(on_keys)), resize_signal_(context, SIGWINCH), keyboard_(context) {}

void TopInput::catch_resize() { wait_for_resize(); }

void TopInput::read_keyboard() {
  int input = ::dup(STDIN_FILENO);
  if (input < 0)
    throw AgentError(exit_io, "cannot read the keyboard");
  keyboard_.assign(input);
  wait_for_key();
}

void TopInput::cancel() {
  boost::system::error_code ignored;
  keyboard_.cancel(ignored);
  resize_signal_.cancel();
}

void TopInput::wait_for_resize() {
  resize_signal_.async_wait([this](boost::system::error_code error, int) {
    if (error)
      return;
    on_resize_();
    wait_for_resize();
  });
}

void TopInput::wait_for_key() {
  keyboard_.async_wait(asio::posix::stream_descriptor::wait_read,
                       [this](boost::system::error_code error) {
                         if (error || stopping_())
                           return;
                         on_keys_();
                         if (!stopping_())
                           wait_for_key();
                       });
}

} // namespace nvsmi
