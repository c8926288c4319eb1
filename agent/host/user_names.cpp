#include "host/user_names.hpp"

#include <cerrno>
#include <pwd.h>
#include <unistd.h>

namespace nvsmi {
namespace {

// getpwuid_r, not getpwuid (as libproc2's PIDS_ID_RUSER calls): another thread of the agent may
// look a user up at the same time. Its buffer grows while the entry does not fit.
std::string look_up(unsigned uid) {
  long suggested = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::string buffer(suggested > 0 ? static_cast<std::size_t>(suggested) : 1024, '\0');
  constexpr std::size_t most = 1 << 20;
  for (;;) {
    passwd entry{};
    passwd *found = nullptr;
    int error = ::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found);
    if (error == ERANGE && buffer.size() < most) {
      buffer.resize(buffer.size() * 2);
      continue;
    }
    if (error == 0 && found && found->pw_name && *found->pw_name)
      return found->pw_name;
    return std::to_string(uid);
  }
}

} // namespace

std::unordered_map<unsigned, std::string> UserNames::names(const std::vector<unsigned> &uids) {
  std::unordered_map<unsigned, std::string> now;
  for (unsigned uid : uids) {
    if (now.count(uid))
      continue;
    auto before = known_.find(uid);
    now[uid] = before != known_.end() ? before->second : look_up(uid);
  }
  known_ = now;
  return now;
}

} // namespace nvsmi
