// What a batch job's record may say (nvsmi::Allocation): the one check of a job id and of a user
// name, for the job mapping folder the agent reads and the JSON log that `report` reads back, and
// the one way every view names an allocation.
#pragma once

#include "nvsmi/snapshot.hpp"

#include <string>
#include <string_view>

namespace nvsmi {

// A Slurm job id: 1 to 20 digits.
bool is_job_id(std::string_view text);

// An account name as useradd takes it: 1 to 64 of letters, digits, '.', '_', '-', not starting
// with '-'. Anything else (a path, a control character, a newline) is not shown as a user.
bool is_account_name(std::string_view text);

// "job 1234 of alice", or "job 1234" where the record names no user.
std::string allocation_text(const Allocation &allocation);

} // namespace nvsmi
