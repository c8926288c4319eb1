#!/bin/sh
# Records which Slurm job holds which GPU, for nvsmi-agent (--job-mapping-dir) and the DCGM
# exporter (--hpc-job-mapping-dir): in the folder $NVSMI_JOB_MAPPING_DIR (default
# /run/nvsmi-agent/slurm-jobs), a file per GPU named by its index holding the job id, or per MIG
# instance named `<GPU index>.<GPU instance id>` (the exporter's form), and beside it
# `<name>.user` holding the job's user and `<name>.account` its Slurm account (names the DCGM
# exporter skips). See docs/SLURM.md.
#
#   job-mapping.sh record   from the prolog (prolog.sh): write the job's files
#   job-mapping.sh clear    from the epilog (epilog.sh): remove the files that name this job
#
# slurmd runs it as root with the job's SLURM_JOB_ID, SLURM_JOB_USER, SLURM_JOB_ACCOUNT and
# SLURM_JOB_GPUS (else CUDA_VISIBLE_DEVICES); on a MIG node the site's wrapper sets
# NVSMI_JOB_GPUS first, to the job's `<GPU index>.<GPU instance id>` list from its gres layout
# (Slurm numbers MIG gres its own way): values a job's owner may have shaped, so each is
# checked before it names or fills a file, and nothing is ever written through a link. It always
# exits 0: a prolog or epilog that fails makes slurmd drain the node, which a bad record is not
# worth. What it refuses it says on stderr, one line each, starting "nvsmi-agent job-mapping:".
set -u
set -f # a GPU list is split on commas: no pattern in it may expand
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 022

say() { printf 'nvsmi-agent job-mapping: %s\n' "$1" >&2; }

# Digits only, 1 to $2 of them.
digits() {
  case $1 in '' | *[!0-9]*) return 1 ;; esac
  [ "${#1}" -le "$2" ]
}

# A record's name: a GPU index, or a GPU index and a GPU instance id joined by a dot (4 digits
# at most each).
record_name() {
  case $1 in
  *.*) digits "${1%%.*}" 4 && digits "${1#*.}" 4 ;;
  *) digits "$1" 4 ;;
  esac
}

# An account name as useradd takes it: letters, digits, '.', '_', '-', not starting with '-'.
plain_user() {
  case $1 in '' | -* | *[!A-Za-z0-9._-]*) return 1 ;; esac
  [ "${#1}" -le 64 ]
}

# The folder: made if missing; used only if it is a real folder (not a link), root's, and writable
# by nobody else, so that no user can have planted a file or link in it.
usable_dir() {
  # umask 022 makes it and any missing parent 0755.
  [ -e "$dir" ] || [ -L "$dir" ] || mkdir -p "$dir" 2>/dev/null
  if [ -L "$dir" ] || [ ! -d "$dir" ]; then
    say "$dir is not a folder (or is a link): nothing recorded"
    return 1
  fi
  if [ "$(stat -c %u "$dir")" != 0 ] ||
    [ -n "$(find "$dir" -maxdepth 0 \( -perm -g+w -o -perm -o+w \) -print)" ]; then
    say "$dir is not root's alone (owner or group or others may write to it): nothing recorded"
    return 1
  fi
}

# The job's first line in a GPU's file, read only from a regular file (never through a link).
recorded_job() {
  [ -f "$1" ] && [ ! -L "$1" ] && head -n 1 -c 64 "$1"
}

# Replaces $dir/$1 with the line $2 atomically: a temporary file of its own (mktemp creates it
# new, never opening one a user made), then a rename, which replaces a link rather than following
# it.
write_atomically() {
  tmp=$(mktemp "$dir/.$1.XXXXXX") || return 1
  if printf '%s\n' "$2" >"$tmp" && chmod 0644 "$tmp" && mv -f "$tmp" "$dir/$1"; then
    return 0
  fi
  rm -f "$tmp"
  return 1
}

action=${1:-}
case $action in
record | clear) ;;
*)
  say "usage: job-mapping.sh record|clear"
  exit 0
  ;;
esac
dir=${NVSMI_JOB_MAPPING_DIR:-/run/nvsmi-agent/slurm-jobs}
case $dir in
/*) ;;
*)
  say "NVSMI_JOB_MAPPING_DIR must be an absolute path: nothing done"
  exit 0
  ;;
esac
job=${SLURM_JOB_ID:-}
if ! digits "$job" 20; then
  say "SLURM_JOB_ID is not a job id (digits): nothing done"
  exit 0
fi
gpus=${NVSMI_JOB_GPUS:-${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}}
[ -n "$gpus" ] || exit 0 # a job without GPUs
usable_dir || exit 0

# At most this many GPUs per job: a node has a few dozen; a longer list is not Slurm's, and is
# refused whole before any file is touched (each record costs a few processes).
max_gpus=64
old_ifs=$IFS
IFS=,
count=0
for gpu in $gpus; do count=$((count + 1)); done
if [ "$count" -gt "$max_gpus" ]; then
  IFS=$old_ifs
  say "job $job: more than $max_gpus GPUs listed: nothing done"
  exit 0
fi
for gpu in $gpus; do # the list is split once, here: the body runs with the usual IFS
  IFS=$old_ifs
  if ! record_name "$gpu"; then
    shown=$(printf '%s' "$gpu" | head -c 32 | tr -c 'A-Za-z0-9._-' '?')
    say "job $job: GPU '$shown' is not an index (or GPU.INSTANCE): skipped"
    continue
  fi
  case $action in
  record)
    user=${SLURM_JOB_USER:-}
    if plain_user "$user"; then
      write_atomically "$gpu.user" "$user" || say "job $job: cannot write $dir/$gpu.user"
    else
      rm -f "$dir/$gpu.user" # an earlier job's user must not be taken for this one's
      say "job $job: SLURM_JOB_USER is not an account name: user not recorded"
    fi
    # The account the job is charged to, for the accounting export: checked as the user is.
    account=${SLURM_JOB_ACCOUNT:-}
    if plain_user "$account"; then
      write_atomically "$gpu.account" "$account" || say "job $job: cannot write $dir/$gpu.account"
    else
      rm -f "$dir/$gpu.account" # an earlier job's account must not be charged for this one
      [ -z "$account" ] || say "job $job: SLURM_JOB_ACCOUNT is not an account name: account not recorded"
    fi
    write_atomically "$gpu" "$job" || say "job $job: cannot write $dir/$gpu"
    ;;
  clear)
    # Only this job's record: a later job's on the same GPU stays.
    if [ "$(recorded_job "$dir/$gpu")" = "$job" ]; then
      rm -f "$dir/$gpu.user" "$dir/$gpu.account" "$dir/$gpu"
    fi
    ;;
  esac
done
IFS=$old_ifs
exit 0
