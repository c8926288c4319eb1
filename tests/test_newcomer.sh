#!/usr/bin/env bash
# A newcomer's path through the README, from its first line: the quick start's commands (the
# install into a staging root, after which the README's bare `nvsmi-agent` examples run as
# printed), then each command of "Try it without a GPU" (the table, watch, top, serve's dashboard
# and /metrics, pick, run, report), each checked for a sensible result, and nothing of the demo
# left running at the end. Each command is looked up in the README first, so that the README cannot show a command
# this script does not run. It runs the agent under test: the quick start's build is CI's own.
#
# Usage: tests/test_newcomer.sh AGENT_BIN SOURCE_DIR
set -euo pipefail
agent=$(readlink -f "$1")
cd "$2"
readme=README.md
patience=60 # seconds: the deadline of every wait, far past what each takes
work=$(mktemp -d "${TMPDIR:-/tmp}/nvsmi-newcomer.XXXXXX")
tmux_socket=nvsmi-newcomer-$$
pids_seen=()

cleanup() {
  tmux -L "$tmux_socket" kill-server 2>/dev/null || true
  [ -n "${serve_pid:-}" ] && kill -TERM "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "test_newcomer: $*" >&2
  exit 1
}
step() { echo "--- $*"; }
# The README must still say this, word for word.
documented() {
  grep -qF -- "$1" "$readme" || fail "the README no longer says: $1"
}
# Waits until the command succeeds, up to the deadline.
wait_until() {
  local deadline=$((SECONDS + patience))
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}
# The JSON documents on stdin (one a line): the pids of their processes, for the end's check.
note_pids() {
  local pid
  for pid in $(python3 -c '
import json, sys
for line in sys.stdin:
    for gpu in json.loads(line)["gpus"]:
        for p in gpu["processes"] or []:
            print(p["pid"])'); do
    pids_seen+=("$pid")
  done
}
export NVSMI_DEMO_AGENT=${agent%/*} # scripts/demo's agent: the one under test
export NVSMI_LOCK_DIR=$work/claims   # run's claims, away from the machine's
unset NVIDIA_SMI FAKE_NVSMI_MODE FAKE_NVSMI_DEMO_PROCESSES NO_COLOR
if [ "$(id -u)" = 0 ]; then users="nobody daemon root"; else users=$(id -un); fi

step "the first line, and the quick start"
[ "$(head -1 "$readme")" = "# nvsmi-agent" ] || fail "the README's first line is not its title"
for command in scripts/snapshot scripts/install scripts/test scripts/demo; do
  documented "$command"
  [ -x "$command" ] || fail "$command is not there to run"
done
grep -q '^exec scripts/test$' .ci/run || fail ".ci/run does not run scripts/test, as the README says"
# scripts/snapshot without nvidia-smi: the bundled recording's table, and a word on stderr.
env PATH=/usr/bin:/bin NVSMI_SNAPSHOT_AGENT="$agent" scripts/snapshot >"$work/snapshot" 2>"$work/snapshot.err" ||
  fail "scripts/snapshot failed: $(cat "$work/snapshot.err")"
[ "$(grep -c '^\[[0-7]\] H100 80GB' "$work/snapshot")" = 8 ] || fail "scripts/snapshot: not 8 GPUs: $(cat "$work/snapshot")"
grep -q 'no nvidia-smi on this machine' "$work/snapshot.err" || fail "scripts/snapshot did not say it shows a recording"

step "the install: nvsmi-agent on PATH"
documented "scripts/install"
[ -x scripts/install ] || fail "scripts/install is not there to run"
# Into a staging root rather than /usr/local; from the build under test, built already.
build_dir=$(dirname "$(dirname "$agent")")
DESTDIR="$work/root" NVSMI_INSTALL_BUILD="$build_dir" scripts/install >"$work/install.out" 2>"$work/install.err" ||
  fail "scripts/install failed: $(cat "$work/install.err")"
installed="$work/root/usr/local/bin/nvsmi-agent"
[ -x "$installed" ] || fail "scripts/install did not install $installed: $(cat "$work/install.err")"
grep -q 'installed /usr/local/bin/nvsmi-agent' "$work/install.err" || fail "scripts/install did not say what it installed"
[ -s "$work/root/usr/local/share/man/man1/nvsmi-agent.1.gz" ] || fail "scripts/install installed no man page"
grep -qx 'ExecStart=/usr/local/bin/nvsmi-agent serve --listen 127.0.0.1:9437 --interval 5' \
  "$work/root/usr/local/lib/systemd/system/nvsmi-agent.service" || fail "the unit does not run the installed program"
export PATH="$work/root/usr/local/bin:$PATH"
[ "$(command -v nvsmi-agent)" = "$installed" ] || fail "nvsmi-agent on PATH is not the installed one"

step "the README's examples, as printed"
# Each `<!-- example: nvsmi-agent ... -->` runs from the repository root as a reader types it,
# through the nvsmi-agent on PATH, and prints the first line the README shows under it.
examples=0
while IFS= read -r command; do
  examples=$((examples + 1))
  shown=$(awk -v marker="<!-- example: $command -->" '
    $0 == marker { found = 1; next }
    found && /^```/ { if (open) exit; open = 1; next }
    found && open { print; exit }' "$readme")
  status=0
  printed=$(env -u NVIDIA_SMI sh -c "$command" 2>"$work/example.err") || status=$?
  # check exits with its plugin status (0 to 3); every other command with 0.
  case "$command" in
  "nvsmi-agent check "*) [ "$status" -le 3 ] || fail "'$command' exited with $status: $(cat "$work/example.err")" ;;
  *) [ "$status" = 0 ] || fail "'$command' exited with $status: $(cat "$work/example.err")" ;;
  esac
  [ "${printed%%$'\n'*}" = "$shown" ] || [ "${printed:0:24}" = "${shown:0:24}" ] ||
    fail "'$command' printed '${printed%%$'\n'*}', where the README shows '$shown'"
done < <(sed -n 's/^<!-- example: \(nvsmi-agent [^>]*\) -->$/\1/p' "$readme")
[ "$examples" -ge 3 ] || fail "the README has only $examples examples of a bare nvsmi-agent"

step "the table"
documented '`scripts/demo nvsmi-agent snapshot`'
tmux -L "$tmux_socket" -f /dev/null new-session -d -x 100 -y 30 "env PS1='$ ' sh"
screen() { tmux -L "$tmux_socket" capture-pane -p; }
# From a variable, not a pipe: grep -q leaving early would fail the pipe (pipefail).
shows() {
  local now
  now=$(screen)
  grep -qF -- "$1" <<<"$now"
}
# A command's end: its echoed exit code, a digit, which the typed line (`$?`) does not show.
ended() {
  local now
  now=$(screen)
  grep -qE -- "$1=[0-9]" <<<"$now"
}
type_line() {
  tmux -L "$tmux_socket" send-keys -l "$1"
  tmux -L "$tmux_socket" send-keys Enter
}
type_line "clear; scripts/demo nvsmi-agent snapshot; echo snapshot-exit=\$?"
wait_until ended snapshot-exit || fail "the table did not come: $(screen)"
shows "snapshot-exit=0" || fail "the table's command failed: $(screen)"
[ "$(screen | grep -c '^\[[0-7]\] H100 80GB')" = 8 ] || fail "the table has not 8 GPUs: $(screen)"
for user in $users; do
  shows " $user:" || shows ' more' || fail "the table names no process of $user: $(screen)"
done
shows "free" && shows "in use" || fail "the table shows no free GPU or no GPU in use: $(screen)"

step "watch, 5 samples"
documented '`scripts/demo nvsmi-agent watch --format json --count 5`'
scripts/demo nvsmi-agent watch --format json --count 5 >"$work/watch" 2>"$work/watch.err" ||
  fail "watch failed: $(cat "$work/watch.err")"
[ "$(wc -l <"$work/watch")" = 5 ] || fail "watch printed not 5 lines: $(cat "$work/watch")"
note_pids <"$work/watch"
python3 - "$work/watch" "$users" <<'EOF' || fail "watch's samples are not what the demo makes"
import json, sys
samples = [json.loads(line) for line in open(sys.argv[1])]
users = set(sys.argv[2].split())
for sample in samples:
    assert len(sample["gpus"]) == 8, sample
busy = {gpu["index"] for gpu in samples[-1]["gpus"] if gpu["processes"]}
assert busy == {1, 2, 3, 5}, busy
# The readings move: GPU 1's memory changes every second.
assert len({s["gpus"][1]["memory_used_mib"] for s in samples}) > 1, "GPU 1's memory never moved"
seen = {p["user"] for gpu in samples[-1]["gpus"] for p in gpu["processes"] or []}
assert seen == users, (seen, users)
EOF

step "top"
documented '`scripts/demo nvsmi-agent top`'
type_line "clear; scripts/demo nvsmi-agent top; echo top-exit=\$?"
wait_until shows "train.py --model" || fail "top shows no demo process: $(screen)"
shows "GPU" || fail "top shows no GPU: $(screen)"
tmux -L "$tmux_socket" send-keys q
wait_until ended top-exit || fail "top did not quit on q: $(screen)"
shows "top-exit=0" || fail "top exited with an error: $(screen)"

step "serve: the dashboard and /metrics"
documented '`scripts/demo nvsmi-agent serve`, then open <http://127.0.0.1:9437/>'
# Port 0 rather than the README's 9437, which a machine running tests may have taken.
scripts/demo nvsmi-agent serve --listen 127.0.0.1:0 2>"$work/serve.err" &
serve_pid=$!
serving() { grep -q 'serving http://' "$work/serve.err"; }
wait_until serving || fail "serve did not start: $(cat "$work/serve.err")"
url=$(grep -o 'http://127.0.0.1:[0-9]*/' "$work/serve.err" | head -1)
curl -fsS --max-time 10 "$url" >"$work/dashboard" || fail "no answer at $url"
grep -q '<title>nvsmi-agent' "$work/dashboard" || fail "no dashboard at $url"
metrics_name_users() {
  curl -fsS --max-time 10 "${url}metrics" >"$work/metrics" || return 1
  local user
  for user in $users; do
    grep -q "^nvsmi_user_gpus{user=\"$user\"}" "$work/metrics" || return 1
  done
  grep -q '^nvsmi_gpu_utilization_ratio{gpu="1"' "$work/metrics"
}
wait_until metrics_name_users || fail "/metrics does not name the demo's users: $(head -50 "$work/metrics")"
curl -fsS --max-time 10 "${url}api/v1/snapshot" >"$work/served.json" || fail "no /api/v1/snapshot"
tr -d '\n' <"$work/served.json" | note_pids
kill -TERM "$serve_pid"
wait "$serve_pid" || true
serve_pid=""

step "pick"
documented '`scripts/demo nvsmi-agent pick 2`'
picked=$(scripts/demo nvsmi-agent pick 2) || fail "pick failed"
[[ "$picked" =~ ^[0467],[0467]$ ]] || fail "pick did not print two of the free GPUs 0, 4, 6, 7: '$picked'"

step "run"
documented "\`scripts/demo nvsmi-agent run -- sh -c 'echo on GPU \$CUDA_VISIBLE_DEVICES; sleep 5'\`"
scripts/demo nvsmi-agent run -- sh -c 'echo on GPU $CUDA_VISIBLE_DEVICES; sleep 5' >"$work/run" 2>"$work/run.err" ||
  fail "run failed: $(cat "$work/run.err")"
grep -qx 'on GPU [0467]' "$work/run" || fail "the job did not run on a free GPU: $(cat "$work/run")"
grep -q '^Job  sh -c' "$work/run.err" "$work/run" || fail "run gave no report of the job: $(cat "$work/run.err")"

step "report"
# The README's minute is 60 samples; 5 say as much here.
documented '`scripts/demo nvsmi-agent watch --count 60 --json-log /tmp/gpus.jsonl.gz`, then `scripts/demo nvsmi-agent report /tmp/gpus.jsonl.gz`'
scripts/demo nvsmi-agent watch --count 5 --json-log "$work/gpus.jsonl.gz" 2>"$work/log.err" ||
  fail "watch --json-log failed: $(cat "$work/log.err")"
gzip -dc "$work/gpus.jsonl.gz" >"$work/gpus.jsonl" || fail "the JSON log is not whole gzip"
note_pids <"$work/gpus.jsonl"
scripts/demo nvsmi-agent report "$work/gpus.jsonl.gz" >"$work/report" 2>"$work/report.err" ||
  fail "report failed: $(cat "$work/report.err")"
# The answer first: the summary line of 8 GPUs, the log too short for advice, the findings.
[[ "$(head -n 1 "$work/report")" == "8 GPUs: "* ]] || fail "the report does not open with its summary: $(cat "$work/report")"
grep -q '^advice needs 5 min of samples; this log covers ' "$work/report" ||
  fail "the report does not say its log is too short for advice: $(cat "$work/report")"
grep -q '^Findings, most serious first$' "$work/report" || fail "the report has no findings: $(cat "$work/report")"
for user in $users; do
  grep -q "$user" "$work/report" || fail "the report's ledger does not name $user: $(cat "$work/report")"
done

step "nothing left running"
tmux -L "$tmux_socket" kill-server
[ ${#pids_seen[@]} -gt 0 ] || fail "no demo process was ever seen"
for pid in "${pids_seen[@]}"; do
  [ ! -d "/proc/$pid" ] || [ "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" = Z ] ||
    fail "the demo's process $pid still runs: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
done
echo "test_newcomer: every step of the README's path works"
