#include "serve/basic_auth.hpp"

#include "core/log_line.hpp"
#include "core/number_text.hpp"

#include <boost/asio/post.hpp>

#include <cmath>
#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cctype>
#include <ctime>
#include <optional>

namespace nvsmi {
namespace {

// Remembered pairs: enough for every scraper and person of a machine; past it, all are forgotten
// at once, which costs one slow check each.
constexpr std::size_t max_passed = 256;

// A salt and digest no password matches (a valid salt, an impossible digest): behind "$2b$NN$",
// the hash checked for unknown users, so that the time of an answer does not say whether a user
// exists.
constexpr const char *decoy_salt_and_digest =
    "abcdefghijklmnopqrstuu4T826PRnz0Hu6YlprUuxkZxOOj5Fw5S";

unsigned bcrypt_cost(const std::string &hash) {
  return static_cast<unsigned>(std::stoi(hash.substr(4, 2)));
}

// The cost most of `users` are hashed at, the higher of those as common: checking a decoy at it
// takes what checking most users takes.
unsigned common_cost(const std::map<std::string, std::string> &users) {
  std::map<unsigned, std::size_t> count;
  for (const auto &[user, hash] : users)
    ++count[bcrypt_cost(hash)];
  unsigned best = 10;
  std::size_t most = 0;
  for (const auto &[cost, how_many] : count)
    if (how_many >= most) {
      best = cost;
      most = how_many;
    }
  return best;
}

double thread_cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

bool bcrypt_matches(const std::string &password, const std::string &hash) {
  auto data = std::make_unique<crypt_data>();
  const char *made = ::crypt_rn(password.c_str(), hash.c_str(), data.get(), sizeof *data);
  return made && std::string_view(made).size() == hash.size() &&
         CRYPTO_memcmp(made, hash.data(), hash.size()) == 0;
}

// "Basic BASE64(user:password)" into its user and password.
std::optional<std::pair<std::string, std::string>> credentials(std::string_view header) {
  constexpr std::string_view scheme = "Basic ";
  if (header.size() <= scheme.size() || header.size() > 4096)
    return std::nullopt;
  for (std::size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) !=
        std::tolower(static_cast<unsigned char>(scheme[i])))
      return std::nullopt;
  std::string encoded(header.substr(scheme.size()));
  if (encoded.size() % 4 != 0)
    return std::nullopt;
  std::string decoded(encoded.size() / 4 * 3, '\0');
  int size = EVP_DecodeBlock(reinterpret_cast<unsigned char *>(decoded.data()),
                             reinterpret_cast<const unsigned char *>(encoded.data()),
                             static_cast<int>(encoded.size()));
  if (size < 0)
    return std::nullopt;
  // EVP_DecodeBlock counts the padding's zero bytes.
  std::size_t padding = encoded.size() - encoded.find_last_not_of('=') - 1;
  if (padding > 2)
    return std::nullopt;
  decoded.resize(static_cast<std::size_t>(size) - padding);
  std::size_t colon = decoded.find(':');
  if (colon == std::string::npos || decoded.find('\0') != std::string::npos)
    return std::nullopt;
  return std::pair{decoded.substr(0, colon), decoded.substr(colon + 1)};
}

} // namespace

bool is_bcrypt_hash(const std::string &hash) {
  if (hash.size() != 60 ||
      !(hash.rfind("$2a$", 0) == 0 || hash.rfind("$2b$", 0) == 0 || hash.rfind("$2y$", 0) == 0))
    return false;
  auto data = std::make_unique<crypt_data>();
  // The hash is its own setting: a malformed one (a cost out of range, a bad salt) fails here.
  const char *made = ::crypt_rn("", hash.c_str(), data.get(), sizeof *data);
  return made && made[0] != '*' && std::string_view(made).substr(0, 29) == hash.substr(0, 29);
}

BasicAuth::BasicAuth(boost::asio::io_context &context, std::map<std::string, std::string> users,
                     Limits limits)
    : context_(context), users_(std::move(users)), limits_(limits),
      decoy_cost_(common_cost(users_)), salt_(32, '\0') {
  std::string cost = std::to_string(decoy_cost_);
  decoy_ = "$2b$" + std::string(cost.size() < 2 ? "0" : "") + cost + "$" + decoy_salt_and_digest;
  RAND_bytes(reinterpret_cast<unsigned char *>(salt_.data()), static_cast<int>(salt_.size()));
}

BasicAuth::~BasicAuth() { stop(); }

void BasicAuth::stop() {
  if (stopped_)
    return;
  stopped_ = true;
  checker_->stop();
  checker_->join();
  checker_.reset();
  clients_.clear(); // the waiting checks' callbacks hold connections
  turns_.clear();
}

std::string BasicAuth::pair_key(const std::string &user, const std::string &password) const {
  std::string input = salt_ + user + '\0' + password;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned size = 0;
  EVP_Digest(input.data(), input.size(), digest, &size, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char *>(digest), size);
}

void BasicAuth::refill(Client &client, Clock::time_point now) const {
  double elapsed = std::chrono::duration<double>(now - client.updated).count();
  client.budget =
      std::min(limits_.failure_budget_seconds,
               client.budget + std::max(elapsed, 0.0) * limits_.failure_refill_per_second);
  client.updated = now;
}

BasicAuth::Client &BasicAuth::client_named(const std::string &name, Clock::time_point now) {
  auto found = clients_.find(name);
  if (found != clients_.end()) {
    refill(found->second, now);
    return found->second;
  }
  if (clients_.size() >= limits_.max_clients) {
    // Forget the client seen longest ago that has nothing waiting: a bounded table, whose cost
    // is that a client with thousands of addresses regains budget as its oldest are forgotten.
    auto oldest = clients_.end();
    for (auto at = clients_.begin(); at != clients_.end(); ++at)
      if (at->second.waiting.empty() && !at->second.running &&
          (oldest == clients_.end() || at->second.updated < oldest->second.updated))
        oldest = at;
    if (oldest != clients_.end())
      clients_.erase(oldest);
  }
  return clients_.emplace(name, Client{limits_.failure_budget_seconds, now, {}, false, false})
      .first->second;
}

void BasicAuth::check(std::string_view authorization, const std::function<std::string()> &client,
                      std::function<void(Verdict, unsigned)> done) {
  auto given = credentials(authorization);
  if (!given)
    return done(Verdict::denied, 0);
  std::string key = pair_key(given->first, given->second);
  if (passed_.count(key))
    return done(Verdict::allowed, 0);
  if (stopped_)
    return done(Verdict::busy, 0);
  std::string name = client();
  Client &asking = client_named(name, Clock::now());
  if (asking.budget <= 0) {
    if (!asking.said)
      log_line("password checks for " + name + " are limited: its wrong passwords took the " +
                   trimmed_text(limits_.failure_budget_seconds, 3) +
                   " s of checking a client may use at once; it is answered 429 unchecked until "
                   "it regains time (" +
                   trimmed_text(limits_.failure_refill_per_second, 3) + " s a second)",
               LogRate::repeating);
    asking.said = true;
    double wait = -asking.budget / limits_.failure_refill_per_second;
    return done(Verdict::limited, static_cast<unsigned>(std::max(1.0, std::ceil(wait))));
  }
  asking.said = false;
  if (pending_ >= limits_.max_pending ||
      asking.waiting.size() + (asking.running ? 1 : 0) >= limits_.max_pending_per_client)
    return done(Verdict::busy, 0);
  auto user = users_.find(given->first);
  bool known = user != users_.end();
  asking.waiting.push_back(Job{std::move(given->second), known ? user->second : decoy_,
                               std::move(key), known, std::move(done)});
  if (asking.waiting.size() == 1 && !asking.running)
    turns_.push_back(name);
  ++pending_;
  start_next();
}

void BasicAuth::start_next() {
  while (!checking_ && !stopped_ && !turns_.empty()) {
    std::string name = std::move(turns_.front());
    turns_.pop_front();
    Client &next = clients_.at(name);
    Job job = std::move(next.waiting.front());
    next.waiting.pop_front();
    refill(next, Clock::now());
    if (next.budget <= 0) {
      // Its earlier checks, wrong, spent its time while this one waited.
      --pending_;
      if (!next.waiting.empty())
        turns_.push_back(name);
      double wait = -next.budget / limits_.failure_refill_per_second;
      job.done(Verdict::limited, static_cast<unsigned>(std::max(1.0, std::ceil(wait))));
      continue;
    }
    next.running = true;
    checking_ = true;
    boost::asio::post(*checker_, [this, name = std::move(name), job = std::move(job)]() mutable {
      double started = thread_cpu_seconds();
      bool matches = bcrypt_matches(job.password, job.hash) && job.known;
      double took = thread_cpu_seconds() - started;
      // Back on the server's thread, which alone touches the queue, the clients and passed_;
      // `done` holds the connection, which holds the server, which holds this.
      boost::asio::post(
          context_, [this, name = std::move(name), matches, took, job = std::move(job)]() mutable {
            finished(name, matches, took, std::move(job));
          });
    });
  }
}

void BasicAuth::finished(const std::string &name, bool matches, double seconds, Job job) {
  if (stopped_)
    return;
  --pending_;
  checking_ = false;
  Client &client = clients_.at(name);
  client.running = false;
  refill(client, Clock::now());
  if (matches) {
    if (passed_.size() >= max_passed)
      passed_.clear();
    passed_.insert(job.key);
  } else {
    client.budget -= seconds;
  }
  if (!client.waiting.empty())
    turns_.push_back(name);
  start_next();
  job.done(matches ? Verdict::allowed : Verdict::denied, 0);
}

} // namespace nvsmi
