// HTTP basic auth against bcrypt hashes (the web config's basic_auth_users). Checking a bcrypt
// hash takes milliseconds to a quarter of a second by design, so it runs on a thread of its own,
// never on the server's, and what wrong passwords may cost is bounded per client
// (client_identity.hpp: a remote address, or on loopback the local user):
// - a (user, password) pair that passed is remembered (as a salted SHA-256, never as text) and
//   needs no check again;
// - each client has a budget of checking time for wrong passwords (2 s of the checker's CPU at
//   once, regained at a tenth of a second per second); a client past it gets "limited" (429) with
//   no check made, so that a flood of wrong passwords costs a tenth of a core, not the checker;
// - checks wait in a bounded queue taken in turn by client, at most a few per client, so that a
//   client with a right password is checked after at most one check of each other client;
// - an unknown user is checked against a decoy hash of the configured hashes' cost (the cost
//   most users have), so that the time of a 401 does not say whether the user exists.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <deque>
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
  enum class Verdict { allowed, denied, limited, busy };

  struct Limits {
    std::size_t max_pending = 64;           // checks waiting or under way, in all
    std::size_t max_pending_per_client = 4; // of them, from one client
    // Checking time a client's wrong passwords may take at once, and regain a second.
    double failure_budget_seconds = 2.0;
    double failure_refill_per_second = 0.1;
    std::size_t max_clients = 4096; // clients whose budget is kept; the longest unseen go first
  };

  BasicAuth(boost::asio::io_context &context, std::map<std::string, std::string> users,
            Limits limits);
  BasicAuth(boost::asio::io_context &context, std::map<std::string, std::string> users)
      : BasicAuth(context, std::move(users), Limits{}) {}
  ~BasicAuth();
  BasicAuth(const BasicAuth &) = delete;
  BasicAuth &operator=(const BasicAuth &) = delete;

  // Judges an Authorization header's value (empty where there is none) from the client that
  // `client` names (asked only when a check is needed) and calls `done` with the verdict on the
  // server's thread, at once or when the check is done; with `limited`, the seconds until the
  // client may be checked again.
  void check(std::string_view authorization, const std::function<std::string()> &client,
             std::function<void(Verdict, unsigned retry_after_seconds)> done);
  // Waits for the check under way and drops those not started; `done` is not called for them.
  void stop();

  // The decoy's bcrypt cost ("$2b$10$..." is 10): that of most users, the higher where as many
  // have another.
  unsigned decoy_cost() const { return decoy_cost_; }

private:
  using Clock = std::chrono::steady_clock;
  struct Job {
    std::string password, hash, key;
    bool known;
    std::function<void(Verdict, unsigned)> done;
  };
  struct Client {
    double budget; // seconds of checking time left for wrong passwords (below 0: owed)
    Clock::time_point updated;
    std::deque<Job> waiting;
    bool running = false; // one of its checks is under way
    bool said = false;    // its limit has been logged since it last had budget
  };

  std::string pair_key(const std::string &user, const std::string &password) const;
  Client &client_named(const std::string &name, Clock::time_point now);
  void refill(Client &client, Clock::time_point now) const;
  void start_next();
  void finished(const std::string &name, bool matches, double seconds, Job job);

  boost::asio::io_context &context_;
  std::map<std::string, std::string> users_;
  Limits limits_;
  std::string decoy_;
  unsigned decoy_cost_ = 10;
  std::string salt_;
  std::set<std::string> passed_; // pair_key of pairs that passed
  std::map<std::string, Client> clients_;
  std::deque<std::string> turns_; // clients with checks waiting, in the order they are served
  std::size_t pending_ = 0;       // checks waiting or under way
  bool checking_ = false;
  // Reset at stop: the checks it dropped hold connections, which hold this (a cycle to break).
  std::optional<boost::asio::thread_pool> checker_{std::in_place, 1};
  bool stopped_ = false;
};

} // namespace nvsmi
