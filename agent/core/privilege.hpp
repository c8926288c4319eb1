// Whether the agent runs with rights its caller does not have (a sudo rule, a setuid or setgid
// copy): then nothing the caller names, a program, a file or a folder, may reach it, from the
// command line or from the environment, or the monitoring user's sudo rule would be a root shell.
#pragma once

#include <optional>
#include <string>

namespace nvsmi {

// Why the caller is not to be trusted with paths: "under sudo (SUDO_UID is set)" (or doas, or
// pkexec) or "as setuid (effective user 0, real user 1000)"; nullopt when the agent runs as whoever
// started it.
std::optional<std::string> elevated_privilege();

// What a refusal says to do instead, after its reason.
inline constexpr const char *privilege_advice =
    "give sudo the fixed command line (docs/FLEET-HEALTH.md, \"Reading the kernel log as the "
    "monitoring user\"), "
    "or run it as yourself (in a root shell from sudo -i: env -u SUDO_UID nvsmi-agent ...)";

// The environment variable `name`, which names a program or a file: nullopt when unset or empty.
// Under elevated privilege a set one is refused (AgentError, exit_usage), since `sudo -E` or an
// env_keep rule would let the caller choose it.
std::optional<std::string> caller_named_variable(const char *name);

// Where a program given by bare name is looked up under elevated privilege instead of the
// caller's PATH: sudo's secure_path on Debian.
inline constexpr const char *trusted_program_path =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

} // namespace nvsmi
