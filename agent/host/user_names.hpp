// User names of uids, as the password database (NSS: files, LDAP, sssd) gives them.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

namespace nvsmi {

class UserNames {
public:
  // The name of each uid of `uids` (the uid as text where the database has none), looked up
  // again only for a uid not named in the previous call: a directory service is asked once per
  // user while that user has GPU processes, and a uid no longer seen is forgotten.
  std::unordered_map<unsigned, std::string> names(const std::vector<unsigned> &uids);

private:
  std::unordered_map<unsigned, std::string> known_;
};

} // namespace nvsmi
