#include "serve/web_config.hpp"

#include "core/descriptor.hpp"
#include "core/exit_codes.hpp"
#include "core/log_line.hpp"
#include "serve/basic_auth.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/ssl/context.hpp>
#include <openssl/crypto.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <pwd.h>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace nvsmi {
namespace {

[[noreturn]] void refuse(const std::string &path, const std::string &problem) {
  throw AgentError(exit_usage, "--web.config.file " + path + ": " + problem);
}

// Refuses any key of `node` not in `known`, so that a misspelt or unsupported setting (a
// `basic_auth_user`, a `client_ca_file` this server would not check) is not silently ignored.
void only_keys(const YAML::Node &node, const std::set<std::string> &known, const std::string &where,
               const std::string &path) {
  if (!node.IsMap())
    refuse(path, where + " must be a mapping");
  for (const auto &entry : node) {
    std::string key = entry.first.Scalar();
    // The key is quoted from the file, cut short: any file named here could be one that is not
    // a web config at all.
    if (!known.count(key))
      refuse(
          path, "unknown or unsupported key \"" + printable_message(key, 64) + "\" in " + where +
                    " (supported: " +
                    [&] {
                      std::string list;
                      for (const std::string &name : known)
                        list += (list.empty() ? "" : ", ") + name;
                      return list;
                    }() +
                    ")");
  }
}

// A web config, a certificate chain or a key is a few KiB; a file past this is not one.
constexpr std::size_t max_file_bytes = 1 << 20;

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::string user_called(uid_t uid) {
  std::vector<char> buffer(16384);
  passwd entry{}, *found = nullptr;
  std::string text = "uid " + std::to_string(uid);
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found)
    text += " (" + printable_message(found->pw_name, 64) + ")";
  return text;
}

// The bytes of a file the web config rests on (the config itself, cert_file, key_file,
// client_ca_file), checked as sshd's StrictModes checks its keys: a regular file (a FIFO or a
// device would hang or feed serve without end; it is opened without blocking), owned by root or
// by the user serve runs as, and writable by nobody else, since whoever can write it can choose
// who may log in or which key serve proves itself with. Read from the descriptor that was
// checked. `what` is empty for the config, else its key ("key_file"); a key that every user can
// read is said once, not refused (moving it is the operator's to do).
std::string read_guarded(const std::string &file, const std::string &what, const std::string &path,
                         bool secret = false) {
  std::string named = what.empty() ? std::string() : what + " " + file + " ";
  Descriptor fd(::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (fd.get() < 0)
    refuse(path, named + "cannot be read: " + std::strerror(errno));
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0)
    refuse(path, named + "cannot be read: " + std::strerror(errno));
  if (!S_ISREG(status.st_mode))
    refuse(path, named +
                     (S_ISDIR(status.st_mode)    ? "is a folder"
                      : S_ISFIFO(status.st_mode) ? "is a FIFO"
                      : S_ISSOCK(status.st_mode) ? "is a socket"
                                                 : "is a device") +
                     ", not a regular file");
  if (status.st_uid != 0 && status.st_uid != ::geteuid())
    refuse(path, named + "is owned by " + user_called(status.st_uid) +
                     ", neither root nor the user serve runs as (" + user_called(::geteuid()) +
                     ")");
  if (status.st_mode & (S_IWGRP | S_IWOTH))
    refuse(path, named +
                     ((status.st_mode & S_IWOTH) ? "can be written by every user"
                                                 : "can be written by its group") +
                     " (mode " + octal_mode(status.st_mode) + "): chmod go-w it");
  if (secret && (status.st_mode & S_IROTH))
    log_line("warning: --web.config.file " + path + ": " + named +
             "can be read by every user (mode " + octal_mode(status.st_mode) + "): chmod o-r it");
  std::string content;
  if (!read_up_to(fd.get(), max_file_bytes + 1, std::nullopt, content))
    refuse(path, named + "cannot be read: " + std::strerror(errno));
  if (content.size() > max_file_bytes)
    refuse(path, named + "is larger than " + std::to_string(max_file_bytes >> 10) + " KiB");
  return content;
}

std::string scalar(const YAML::Node &node, const std::string &name, const std::string &path) {
  if (!node.IsScalar() || node.Scalar().empty())
    refuse(path, name + " must be a non-empty string");
  return node.Scalar();
}

// A file named in the config, relative to the config's folder as the exporters read it.
std::string beside(const std::string &file, const std::string &path) {
  std::size_t slash = path.rfind('/');
  if (file.front() == '/' || slash == std::string::npos)
    return file;
  return path.substr(0, slash + 1) + file;
}

} // namespace

WebConfig read_web_config(const std::string &path) {
  std::string text = read_guarded(path, "", path);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception &error) {
    refuse(path, "not YAML: " + error.msg + " (line " + std::to_string(error.mark.line + 1) + ")");
  }
  WebConfig config;
  if (root.IsNull())
    return config; // an empty file: plain HTTP without authentication, as the exporters do
  only_keys(root, {"tls_server_config", "basic_auth_users"}, "the file", path);
  if (const YAML::Node tls = root["tls_server_config"]; tls && !tls.IsNull()) {
    only_keys(tls, {"cert_file", "key_file", "client_ca_file", "client_auth_type"},
              "tls_server_config", path);
    if (!tls["cert_file"] || !tls["key_file"])
      refuse(path, "tls_server_config needs both cert_file and key_file");
    config.cert_file = beside(scalar(tls["cert_file"], "cert_file", path), path);
    config.key_file = beside(scalar(tls["key_file"], "key_file", path), path);
    if (tls["client_auth_type"]) {
      std::string type = scalar(tls["client_auth_type"], "client_auth_type", path);
      // The kinds that take a certificate without checking it would only look like a check.
      if (type != "NoClientCert" && type != "VerifyClientCertIfGiven" &&
          type != "RequireAndVerifyClientCert")
        refuse(path, "client_auth_type \"" + type +
                         "\" is not supported (NoClientCert, VerifyClientCertIfGiven, "
                         "RequireAndVerifyClientCert)");
      if (type != "NoClientCert")
        config.client_auth_type = type;
    }
    if (tls["client_ca_file"])
      config.client_ca_file = beside(scalar(tls["client_ca_file"], "client_ca_file", path), path);
    if (config.client_ca_file.empty() != config.client_auth_type.empty())
      refuse(path, config.client_ca_file.empty()
                       ? "client_auth_type " + config.client_auth_type + " needs client_ca_file"
                       : "client_ca_file needs client_auth_type VerifyClientCertIfGiven or "
                         "RequireAndVerifyClientCert");
  }
  if (const YAML::Node users = root["basic_auth_users"]; users && !users.IsNull()) {
    if (!users.IsMap())
      refuse(path, "basic_auth_users must map user names to bcrypt hashes");
    for (const auto &entry : users) {
      std::string user = scalar(entry.first, "a user name", path);
      std::string hash = scalar(entry.second, "the hash of " + user, path);
      if (user.find(':') != std::string::npos)
        refuse(path, "user name \"" + user + "\" holds a colon, which basic auth cannot send");
      if (!is_bcrypt_hash(hash))
        refuse(path, "the hash of " + user + " is not a bcrypt hash ($2a$, $2b$ or $2y$)");
      config.basic_auth_users[user] = hash;
    }
  }
  return config;
}

std::shared_ptr<boost::asio::ssl::context> tls_context(const WebConfig &config,
                                                       const std::string &path) {
  namespace ssl = boost::asio::ssl;
  if (config.cert_file.empty())
    return nullptr;
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                       ssl::context::single_dh_use);
  boost::system::error_code error;
  std::string chain = read_guarded(config.cert_file, "cert_file", path);
  context->use_certificate_chain(boost::asio::buffer(chain), error);
  if (error)
    refuse(path, "cert_file " + config.cert_file + ": " + error.message());
  std::string key = read_guarded(config.key_file, "key_file", path, true);
  context->use_private_key(boost::asio::buffer(key), ssl::context::pem, error);
  OPENSSL_cleanse(key.data(), key.size());
  if (error)
    refuse(path, "key_file " + config.key_file + ": " + error.message());
  if (!config.client_ca_file.empty()) {
    std::string authorities = read_guarded(config.client_ca_file, "client_ca_file", path);
    context->add_certificate_authority(boost::asio::buffer(authorities), error);
    if (error)
      refuse(path, "client_ca_file " + config.client_ca_file + ": " + error.message());
    context->set_verify_mode(config.client_auth_type == "RequireAndVerifyClientCert"
                                 ? ssl::verify_peer | ssl::verify_fail_if_no_peer_cert
                                 : ssl::verify_peer);
  }
  return context;
}

} // namespace nvsmi
