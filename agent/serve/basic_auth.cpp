#include "serve/basic_auth.hpp"

#include <boost/asio/post.hpp>

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cctype>
#include <optional>

namespace nvsmi {
namespace {

// Remembered pairs: enough for every scraper and person of a machine; past it, all are forgotten
// at once, which costs one slow check each.
constexpr std::size_t max_passed = 256;

// A hash no password matches (a valid salt, an impossible digest), checked for unknown users so
// that the time of an answer does not say whether a user exists.
constexpr const char *decoy_hash = "$2b$10$abcdefghijklmnopqrstuu4T826PRnz0Hu6YlprUuxkZxOOj5Fw5S";

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
                     std::size_t max_pending)
    : context_(context), users_(std::move(users)), max_pending_(max_pending), salt_(32, '\0') {
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
}

std::string BasicAuth::pair_key(const std::string &user, const std::string &password) const {
  std::string input = salt_ + user + '\0' + password;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned size = 0;
  EVP_Digest(input.data(), input.size(), digest, &size, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<const char *>(digest), size);
}

void BasicAuth::check(std::string_view authorization, std::function<void(Verdict)> done) {
  auto given = credentials(authorization);
  if (!given)
    return done(Verdict::denied);
  std::string key = pair_key(given->first, given->second);
  if (passed_.count(key))
    return done(Verdict::allowed);
  if (stopped_ || pending_ >= max_pending_)
    return done(Verdict::busy);
  auto user = users_.find(given->first);
  std::string hash = user == users_.end() ? decoy_hash : user->second;
  bool known = user != users_.end();
  ++pending_;
  boost::asio::post(*checker_, [this, password = std::move(given->second), hash, known,
                                key = std::move(key), done = std::move(done)]() mutable {
    bool matches = bcrypt_matches(password, hash) && known;
    // Back on the server's thread, which alone touches pending_ and passed_; `done` holds the
    // connection, which holds the server, which holds this.
    boost::asio::post(context_, [this, matches, key = std::move(key), done = std::move(done)] {
      --pending_;
      if (matches) {
        if (passed_.size() >= max_passed)
          passed_.clear();
        passed_.insert(key);
      }
      done(matches ? Verdict::allowed : Verdict::denied);
    });
  });
}

} // namespace nvsmi
