// HTTP basic auth against bcrypt hashes (the web config's basic_auth_users). Checking a bcrypt
// hash takes tens of milliseconds by design, so it runs on a thread of its own, never on the
// server's: at most `max_pending` checks wait at a time and more are answered "busy" at once,
// and a (user, password) pair that passed is remembered (as a salted SHA-256, never as text),
// so that a flood of wrong passwords cannot starve the server nor a scraper that knows its own.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace nvsmi {

// Whether `hash` is a bcrypt hash ($2a$, $2b$, $2y$) that libcrypt can check against.
bool is_bcrypt_hash(const std::string &hash);

class BasicAuth {
public:
  enum class Verdict { allowed, denied, busy };

  BasicAuth(boost::asio::io_context &context, std::map<std::string, std::string> users,
            std::size_t max_pending = 4);
  ~BasicAuth();
  BasicAuth(const BasicAuth &) = delete;
  BasicAuth &operator=(const BasicAuth &) = delete;

  // Judges an Authorization header's value (empty where there is none) and calls `done` with
  // the verdict on the server's thread, at once or when the check is done.
  void check(std::string_view authorization, std::function<void(Verdict)> done);
  // Waits for the check under way and drops those not started; `done` is not called for them.
  void stop();

private:
  std::string pair_key(const std::string &user, const std::string &password) const;

  boost::asio::io_context &context_;
  std::map<std::string, std::string> users_;
  std::size_t max_pending_, pending_ = 0;
  std::string salt_;
  std::set<std::string> passed_; // pair_key of pairs that passed
  // Reset at stop: the checks it dropped hold connections, which hold this (a cycle to break).
  std::optional<boost::asio::thread_pool> checker_{std::in_place, 1};
  bool stopped_ = false;
};

} // namespace nvsmi
