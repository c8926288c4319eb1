#!/usr/bin/env bash
# scripts/test's order of stages, with every stage a stand-in that only records what ran: the fuzz
# and sanitizer builds run beside the Release tests and the fresh install beside the sanitizer tests
# (docs/PERFORMANCE.md, "CI time"); a stage beside another that fails fails CI with one line and
# its output; a stage that fails while one runs beside it ends that one; a stage over its budget
# fails CI with one line; NVSMI_QUICK=1 starts neither. Nothing is built, installed or tested for
# real.
#
# Usage: tests/test_ci_stages.sh SOURCE_DIR
# shellcheck disable=SC2016 # the stand-ins written with printf expand their own arguments
set -euo pipefail
source_dir=$(readlink -f "$1")
patience=60 # seconds: the deadline of every wait, far past what each takes
work=$(mktemp -d "${TMPDIR:-/tmp}/nvsmi-ci-stages.XXXXXX")
trap 'rm -rf "$work"' EXIT
[ -n "${KEEP:-}" ] && trap - EXIT

fail() {
  echo "test_ci_stages: $*" >&2
  exit 1
}

# The tree: scripts/test itself, and stand-ins for what it calls. Each stand-in appends
# "NAME start" and "NAME end" to events; STUB_FAIL=NAME makes that one exit 3.
tree=$work/tree
mkdir -p "$tree/scripts" "$tree/bin" "$tree/build"
cp "$source_dir/scripts/test" "$tree/scripts/test"
cat >"$tree/bin/stub" <<'SH'
#!/usr/bin/env bash
# stub NAME: records its start and end; waits for the file NAME.go where told to (STUB_WAIT_FOR).
set -euo pipefail
name=$1
echo "$name start $$" >>"$STUB_EVENTS"
echo "$name's output"
case " ${STUB_WAIT_FOR:-} " in
*" $name "*)
  for _ in $(seq 1 $((STUB_PATIENCE * 10))); do
    [ -e "$STUB_EVENTS.$name.go" ] && break
    sleep 0.1
  done
  ;;
esac
# A test stage waits for the stage meant to be beside it to begin, up to the deadline (STUB_BESIDE:
# "STAGE=BESIDE ..."): beside means begun before this one ends.
for pair in ${STUB_BESIDE:-}; do
  [ "$name" = "${pair%%=*}" ] || continue
  for _ in $(seq 1 $((STUB_PATIENCE * 10))); do
    grep -q "^${pair#*=} start" "$STUB_EVENTS" && break
    sleep 0.1
  done
done
# STUB_SLEEP="NAME=SECONDS ...": that stand-in takes so long (a stage over its budget).
for pair in ${STUB_SLEEP:-}; do
  [ "$name" = "${pair%%=*}" ] && sleep "${pair#*=}"
done
# STUB_BURN="NAME=SECONDS ...": that stand-in uses so many CPU seconds (however long that takes).
for pair in ${STUB_BURN:-}; do
  [ "$name" = "${pair%%=*}" ] && /usr/bin/python3 -c "
import time
while time.process_time() < ${pair#*=}: pass"
done
# STUB_ORPHAN_BURN="NAME=SECONDS": that stand-in leaves a process that uses so many CPU seconds
# and is never waited for by it (reaped by init, as the servers and browsers tests start are).
for pair in ${STUB_ORPHAN_BURN:-}; do
  [ "$name" = "${pair%%=*}" ] || continue
  (/usr/bin/python3 -c "
import time
while time.process_time() < ${pair#*=}: pass
open('$STUB_EVENTS.orphan', 'w').close()" </dev/null >/dev/null 2>&1 &)
  for _ in $(seq 1 $((STUB_PATIENCE * 10))); do
    [ -e "$STUB_EVENTS.orphan" ] && break
    sleep 0.1
  done
done
echo "$name end" >>"$STUB_EVENTS"
[ "${STUB_FAIL:-}" != "$name" ] || exit 3
SH
for script in install-deps build package-test measure-fresh-install; do
  printf '#!/bin/sh\nexec "%s/bin/stub" %s\n' "$tree" "$script" >"$tree/scripts/$script"
done
printf '#!/bin/sh\nexec "%s/bin/stub" asan-build\n' "$tree" >"$tree/scripts/build-sanitizer"
# scripts/fuzz: fuzz-build with --build-only, else fuzz-run.
printf '#!/bin/sh\n[ "$1" = --build-only ] && exec "%s/bin/stub" fuzz-build\nexec "%s/bin/stub" fuzz-run\n' \
  "$tree" "$tree" >"$tree/scripts/fuzz"
# ctest: ctest-build or ctest-build-asan, from --test-dir, its arguments kept in EVENTS.ctest;
# scripts/build: its arguments kept in EVENTS.build.
printf '#!/bin/sh\necho "$*" >>"$STUB_EVENTS.ctest"\nexec "%s/bin/stub" "ctest-$2"\n' "$tree" \
  >"$tree/bin/ctest"
printf '#!/bin/sh\necho "$*" >>"$STUB_EVENTS.build"\nexec "%s/bin/stub" build\n' "$tree" \
  >"$tree/scripts/build"
chmod +x "$tree/bin/"* "$tree/scripts/"*

# run NAME [VAR=VALUE...]: scripts/test in the tree with the stand-ins; its status in $status, its
# stderr in $work/NAME.err, its events in $work/NAME.events.
run() {
  local name=$1
  shift
  status=0
  rm -f "$tree/build/"*
  # Without the caller's own settings of scripts/test (a CI run with NVSMI_QUICK=1 would skip the
  # stages beside the tests here too); each run names those it wants.
  env -u NVSMI_QUICK -u NVSMI_BUDGET_PERCENT -u NVSMI_TEST_JOBS -u NVSMI_FUZZ_SECONDS "$@" \
    PATH="$tree/bin:$PATH" STUB_EVENTS="$work/$name.events" STUB_PATIENCE=$patience \
    timeout $((patience * 4)) "$tree/scripts/test" >/dev/null 2>"$work/$name.err" || status=$?
  touch "$work/$name.events"
}
# line_of NAME EVENT: the line number of EVENT ("fuzz-build start") in NAME's events, or fails.
line_of() {
  local line
  line=$(grep -n "^$2\b" "$work/$1.events" | head -n 1 | cut -d: -f1)
  [ -n "$line" ] || fail "$1: no '$2' in the events: $(tr '\n' ';' <"$work/$1.events")"
  echo "$line"
}
before() { # before NAME A B: event A came before event B
  local a b
  a=$(line_of "$1" "$2") || exit 1
  b=$(line_of "$1" "$3") || exit 1
  [ "$a" -lt "$b" ] ||
    fail "$1: '$2' not before '$3': $(tr '\n' ';' <"$work/$1.events")"
}

echo "--- every stage, the three beside the test stages, each line with the CPU seconds so far"
run all STUB_BESIDE="ctest-build=fuzz-build ctest-build=asan-build ctest-build-asan=measure-fresh-install" \
  STUB_BURN="package-test=2" STUB_ORPHAN_BURN="install-deps=2"
[ "$status" -eq 0 ] || fail "all: exit status $status: $(cat "$work/all.err")"
before all "fuzz-build start" "ctest-build end"          # beside the Release tests
before all "asan-build start" "ctest-build end"          # beside the Release tests
before all "asan-build end" "ctest-build-asan start"     # waited for before the sanitizer tests
before all "fuzz-build end" "ctest-build-asan start"
before all "asan-build end" "measure-fresh-install start" # needs the CPU the build used
before all "measure-fresh-install start" "ctest-build-asan end" # beside the sanitizer tests
before all "measure-fresh-install end" "fuzz-run start"   # the fuzzers get the cores alone
before all "ctest-build-asan end" "fuzz-run start"
# Each test where it proves most: the Release build runs those labelled release, and builds only
# what they need; the sanitizer build runs every suite it has.
grep -qx -- "--test-dir build --label-regex ^release\$ .*" "$work/all.events.ctest" ||
  fail "all: the Release tests are not those labelled release: $(cat "$work/all.events.ctest")"
grep -qx -- "--test-dir build-asan --output-on-failure .*" "$work/all.events.ctest" ||
  fail "all: the sanitizer tests are not every suite: $(cat "$work/all.events.ctest")"
grep -q -- "--target nvsmi-agent --target manpage --target cli_tests --target serve_tests" \
  "$work/all.events.build" || fail "all: the Release build builds more: $(cat "$work/all.events.build")"
grep -q "stage 'fresh install (begun with the sanitizer tests)'" "$work/all.err" ||
  fail "all: no stage line for the fresh install"
# The stand-ins up to the Release tests use about a CPU second at most; the package test 2. The
# machine's busy seconds count the 2 of the process that install-deps left to init; CPU does not.
grep -q "^scripts/test: stage 'install packages' took [0-9]* s (total [0-9]* s, CPU [01] s, machine busy \([2-9]\|[1-9][0-9][0-9]*\) s)$" \
  "$work/all.err" || fail "all: the machine's busy seconds miss an orphan's: $(cat "$work/all.err")"
grep -q "^scripts/test: stage 'test' took [0-9]* s (total [0-9]* s, CPU [01] s, machine busy [0-9]* s)$" \
  "$work/all.err" ||
  fail "all: the Release tests' line has no CPU seconds or too many: $(cat "$work/all.err")"
grep -q "^scripts/test: stage 'package test' took [0-9]* s (total [0-9]* s, CPU [2-9] s, machine busy [0-9]* s)$" \
  "$work/all.err" || fail "all: the package test's 2 CPU seconds are not counted: $(cat "$work/all.err")"
grep -q "^scripts/test: every stage passed in [0-9]* s$" "$work/all.err" ||
  fail "all: no line with the whole run's time: $(cat "$work/all.err")"

echo "--- a stage over its budget fails CI with one line, and nothing runs after it"
# The package test's budget, 300 s, at 1 percent is 3 s; its stand-in takes 4.
run slow STUB_SLEEP="package-test=4" NVSMI_BUDGET_PERCENT=1
[ "$status" -eq 1 ] || fail "slow: exit status $status, not 1"
grep -q "^scripts/test: stage 'package test' took [4-9] s, over its budget of 3 s" "$work/slow.err" ||
  fail "slow: no line saying so: $(cat "$work/slow.err")"
! grep -q "^ctest-build-asan" "$work/slow.events" || fail "slow: tested on after the budget was passed"
run slow_unbounded STUB_SLEEP="package-test=4" NVSMI_BUDGET_PERCENT=0
[ "$status" -eq 0 ] || fail "slow_unbounded: NVSMI_BUDGET_PERCENT=0 did not lift the budgets"
run bad_percent NVSMI_BUDGET_PERCENT=lots
[ "$status" -eq 2 ] && grep -q "^scripts/test: NVSMI_BUDGET_PERCENT is 'lots', not a whole number" \
  "$work/bad_percent.err" || fail "bad_percent: exit status $status: $(cat "$work/bad_percent.err")"

# beside_fails NAME STUB WHAT LATER: the stage STUB, begun beside another, fails: scripts/test
# fails with one line naming WHAT, prints STUB's output, and starts no LATER stage.
beside_fails() {
  local name=$1 stub=$2 what=$3 later=$4
  run "$name" STUB_FAIL="$stub"
  [ "$status" -ne 0 ] || fail "$name: exit status 0"
  grep -qF "scripts/test: $what failed (exit status 3" "$work/$name.err" ||
    fail "$name: no line saying so: $(cat "$work/$name.err")"
  grep -q "^$stub's output" "$work/$name.err" || fail "$name: its output was not printed"
  ! grep -q "^$later" "$work/$name.events" || fail "$name: $later ran after the failure"
}
echo "--- the fresh install fails: one line, its output, and no fuzzing after it"
beside_fails fresh_fails measure-fresh-install "the fresh install (scripts/measure-fresh-install)" \
  fuzz-run
echo "--- the fuzz build fails: one line, its output, and no sanitizer tests after it"
beside_fails fuzz_build_fails fuzz-build "the fuzz targets' build (scripts/fuzz --build-only)" \
  ctest-build-asan
echo "--- the sanitizer build fails: one line, its output, and no sanitizer tests after it"
beside_fails asan_build_fails asan-build "the sanitizer build (scripts/build-sanitizer)" \
  ctest-build-asan

echo "--- the sanitizer tests fail while the fresh install runs: it is ended"
run asan_fails STUB_FAIL=ctest-build-asan STUB_WAIT_FOR=measure-fresh-install \
  STUB_BESIDE="ctest-build-asan=measure-fresh-install"
[ "$status" -eq 3 ] || fail "asan_fails: exit status $status, not the sanitizer tests' 3"
pid=$(awk '$1 == "measure-fresh-install" && $2 == "start" {print $3}' "$work/asan_fails.events")
[ -n "$pid" ] || fail "asan_fails: the fresh install never began"
for _ in $(seq 1 $((patience * 10))); do
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
! kill -0 "$pid" 2>/dev/null || fail "asan_fails: the fresh install (pid $pid) still runs"

echo "--- NVSMI_QUICK=1: the Release tests alone, nothing beside them"
run quick NVSMI_QUICK=1
[ "$status" -eq 0 ] || fail "quick: exit status $status"
! grep -q "^fuzz-build\|^asan-build\|^measure-fresh-install\|^package-test" "$work/quick.events" ||
  fail "quick: ran more than the tests: $(tr '\n' ';' <"$work/quick.events")"
grep -qx -- "--test-dir build --output-on-failure .*" "$work/quick.events.ctest" ||
  fail "quick: not every suite in the Release build: $(cat "$work/quick.events.ctest")"
! grep -q -- "--target" "$work/quick.events.build" ||
  fail "quick: the Release build leaves suites out: $(cat "$work/quick.events.build")"
echo "test_ci_stages: passed"
