#include "core/privilege.hpp"

#include "core/exit_codes.hpp"

#include <cstdlib>
#include <unistd.h>

namespace nvsmi {

std::optional<std::string> elevated_privilege() {
  // sudo sets SUDO_UID for the command it runs; the caller cannot unset it there, and an admin in
  // a `sudo -i` shell who wants the options back can (env -u SUDO_UID).
  if (const char *sudo = std::getenv("SUDO_UID"); sudo != nullptr)
    return std::string("under sudo (SUDO_UID is set)");
  // The other ways a rule runs a command as root say so too: doas sets DOAS_USER, pkexec
  // PKEXEC_UID. (su and a root cron job are the administrator's own, and set neither.)
  if (const char *doas = std::getenv("DOAS_USER"); doas != nullptr)
    return std::string("under doas (DOAS_USER is set)");
  if (const char *pkexec = std::getenv("PKEXEC_UID"); pkexec != nullptr)
    return std::string("under pkexec (PKEXEC_UID is set)");
  if (::geteuid() != ::getuid())
    return "as setuid (effective user " + std::to_string(::geteuid()) + ", real user " +
           std::to_string(::getuid()) + ")";
  if (::getegid() != ::getgid())
    return "as setgid (effective group " + std::to_string(::getegid()) + ", real group " +
           std::to_string(::getgid()) + ")";
  return std::nullopt;
}

std::optional<std::string> caller_named_variable(const char *name) {
  const char *value = std::getenv(name);
  if (value == nullptr || *value == '\0')
    return std::nullopt;
  if (std::optional<std::string> why = elevated_privilege())
    throw AgentError(exit_usage, std::string(name) + " is set, and it is refused " + *why +
                                     ": it names what to run or read with the rights of another "
                                     "user; unset it (sudo -E and env_keep pass it on), or " +
                                     privilege_advice);
  return std::string(value);
}

} // namespace nvsmi
