#!/bin/sh
# nvsmi-agent's drain hook for Slurm: drains this node when a GPU on it fails, so that no new job
# lands on it. Run by the agent (watch, serve, top or run) with
#   --on-unhealthy /etc/slurm/nvsmi-agent/drain-on-unhealthy.sh
# once for each new fault of a GPU, with NVSMI_GPU_INDEX, NVSMI_REASON, NVSMI_ACTION (and
# NVSMI_GPU_UUID, NVSMI_GPU_PCI_BUS_ID, NVSMI_FAULT, NVSMI_HOSTNAME) in its environment. See
# docs/SLURM.md, "Draining a node whose GPU fails".
#
# It runs with the agent's rights, which must be allowed to drain (root, SlurmUser, or an
# operator in slurm.conf's AdminUsers... through `scontrol`). The agent has printable-filtered the
# values; they are checked again here since this script runs whatever a site's agent passes:
# the index is digits, the reason is cut to 128 bytes of letters, digits, blanks and . , : ( ) - _
# (anything else becomes '?'), and nothing reaches a shell. Exit codes: 0 drained (or nothing to
# do), 2 bad input, else scontrol's.
set -eu
# PATH is the agent's: its owner's (the agent refuses --on-unhealthy from a caller with fewer
# rights than it has), so scontrol is found where the site put it.

say() { printf 'nvsmi-agent drain-on-unhealthy: %s\n' "$1" >&2; }

index=${NVSMI_GPU_INDEX:-}
case $index in
'' | *[!0-9]*)
  say "NVSMI_GPU_INDEX is not a GPU index: nothing done"
  exit 2
  ;;
esac
[ "${#index}" -le 4 ] || {
  say "NVSMI_GPU_INDEX is too long: nothing done"
  exit 2
}

reason=$(printf '%s' "${NVSMI_REASON:-unknown fault}" | LC_ALL=C tr -c 'A-Za-z0-9 .,:()_-' '?' |
  head -c 128)
action=$(printf '%s' "${NVSMI_ACTION:-}" | LC_ALL=C tr -c 'a-z0-9_' '?' | head -c 32)

node=$(hostname -s)
case $node in
'' | -* | *[!A-Za-z0-9._-]*)
  say "this host's short name is not a Slurm node name: nothing done"
  exit 2
  ;;
esac
exec scontrol update nodename="$node" state=drain \
  reason="nvsmi-agent: GPU $index $reason${action:+ ($action)}"
