#!/bin/sh
# Writes the ending job's GPU summary (`nvsmi-agent job JOBID` from the agent's JSON log) into the
# job's working folder, as nvsmi-agent-job-<JOBID>.txt, where its user finds it beside the job's
# output. Called by epilog.sh. Off unless the site sets NVSMI_JOB_SUMMARY_LOG (the JSON log of
# `watch --json-log`, or serve's; its rotated files .1, .2 ... are read with it). See
# docs/SLURM.md, "At job end". NVSMI_AGENT names the agent (default /usr/bin/nvsmi-agent),
# NVSMI_JOB_SUMMARY_TIMEOUT the seconds each step may take (default 30).
#
# slurmd runs it as root, fed from the job's environment, and the working folder is the user's:
# they may have put a link, a FIFO, a folder or a file of their own where the summary goes, made
# the folder unwritable, or put it on a filesystem that hangs. So the file is written by the job's
# user (setpriv, the user's own ids and groups), never by root: a temporary file that mktemp makes
# new, then a rename over the name, which replaces a link or FIFO rather than opening it; whatever
# the user planted, the writer can reach only what the user could write anyway. The agent and the
# writer each run under a deadline, so a hung filesystem never holds slurmd. It always exits 0 (a
# failing epilog drains the node); what it refuses it says on stderr, one line each, starting
# "nvsmi-agent job-summary:".
set -u
set -f
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 077

say() { printf 'nvsmi-agent job-summary: %s\n' "$1" >&2; }

# Digits only, 1 to $2 of them.
digits() {
  case $1 in '' | *[!0-9]*) return 1 ;; esac
  [ "${#1}" -le "$2" ]
}

# An absolute path of printable characters (no line break, no control character), at most 4096.
plain_path() {
  case $1 in /*) ;; *) return 1 ;; esac
  [ "${#1}" -le 4096 ] || return 1
  # (Counted, not captured: a command substitution would drop a trailing line break.)
  [ "$(printf '%s' "$1" | tr -d '[:print:]' | wc -c)" -eq 0 ]
}

log=${NVSMI_JOB_SUMMARY_LOG:-}
[ -n "$log" ] || exit 0 # off: the site has not asked for it
agent=${NVSMI_AGENT:-/usr/bin/nvsmi-agent}
deadline=${NVSMI_JOB_SUMMARY_TIMEOUT:-30} # seconds, for the agent and for the writing, each
job=${SLURM_JOB_ID:-}
if ! digits "$job" 20; then
  say "SLURM_JOB_ID is not a job id (digits): no summary"
  exit 0
fi
uid=${SLURM_JOB_UID:-}
gid=${SLURM_JOB_GID:-}
if ! digits "$uid" 10 || ! digits "$gid" 10; then
  say "job $job: SLURM_JOB_UID or SLURM_JOB_GID is not a number: no summary"
  exit 0
fi
if ! digits "$deadline" 4 || [ "$deadline" -eq 0 ]; then
  say "NVSMI_JOB_SUMMARY_TIMEOUT is not a number of seconds: no summary"
  exit 0
fi
if [ "$uid" -eq 0 ] || [ "$gid" -eq 0 ]; then
  say "job $job: a job of root: no summary (it is never written as root)"
  exit 0
fi
if ! plain_path "$log" || ! plain_path "$agent"; then
  say "job $job: NVSMI_JOB_SUMMARY_LOG and NVSMI_AGENT must be absolute paths: no summary"
  exit 0
fi
# The working folder: slurmd sets SLURM_JOB_WORK_DIR for the epilog in newer Slurm; before that
# (Debian 12's 22.05) squeue still lists the completing job with it (%Z).
folder=${SLURM_JOB_WORK_DIR:-}
if [ -z "$folder" ]; then
  folder=$(timeout -k 2 "$deadline" squeue -h -t all -j "$job" -o %Z 2>/dev/null | head -c 8192 | head -n 1)
fi
if ! plain_path "$folder"; then
  say "job $job: its working folder is unknown or not a plain absolute path: no summary"
  exit 0
fi

set -- "$log"
i=1
while [ "$i" -le 99 ]; do # watch keeps path.1 (newest) .. path.N
  [ -f "$log.$i" ] && set -- "$@" "$log.$i"
  i=$((i + 1))
done
# At most 64 KiB of summary: the job command prints a few lines; more is not its.
summary=$(timeout -k 2 "$deadline" "$agent" job "$job" --format text --log "$@" </dev/null 2>/dev/null |
  head -c 65536)
if [ -z "$summary" ]; then
  say "job $job: no summary from $agent (no sample of the job in $log?)"
  exit 0
fi

# As the job's user, in their folder: a new temporary file, then renamed over the name.
name="nvsmi-agent-job-$job.txt"
# shellcheck disable=SC2016 # the user's shell expands them, from its own arguments
if ! printf '%s\n' "$summary" | timeout -k 2 "$deadline" setpriv --reuid="$uid" --regid="$gid" \
  --init-groups --reset-env -- /bin/sh -c '
    tmp=$(mktemp "$1/.$2.XXXXXX" 2>/dev/null) || exit 1
    if cat >"$tmp" && mv -f -T -- "$tmp" "$1/$2" 2>/dev/null; then exit 0; fi
    rm -f -- "$tmp"
    exit 1' sh "$folder" "$name"; then
  say "job $job: cannot write $name in its working folder as its user (not writable, not a folder, or too slow)"
fi
exit 0
