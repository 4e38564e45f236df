#!/usr/bin/env bash
# Runs the whole test suite: the debug build's tests, then AddressSanitizer (with leak detection) over
# the codec, frame-reader, crypto, token and TLS tests, then ThreadSanitizer over the RPC targets (RPCCore,
# RPCTLS, RPCObservability, RPCAccess, the cache), the service runtime, the outside senders' adapters and
# the two services with the most concurrency (Chat's live streams, Booking's reservation races).
# Installs what it needs first. Tests run a process per test class, two at a time
# (scripts/lib/run-test-classes.sh); each sanitizer build compiles only what its tests need, and the
# sanitizer and fuzz builds run on idle CPU time only (SCHED_IDLE) from the start, beside the debug build
# and the plain tests (those wait on sockets and timers much of the time, and the builds take what they
# leave).
#
#   scripts/test.sh           # everything (what CI runs)
#   scripts/test.sh --quick   # the plain test run only
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

# Each step says how long the one before it took: CI's budget is 45 minutes for the whole run.
started=$SECONDS
step() {
  printf '\n== %s (the step before took %d s; %d s so far)\n' "$*" $((SECONDS - ${step_started:-$started})) $((SECONDS - started)) >&2
  step_started=$SECONDS
}

# The PostgreSQL engine's tests (Tests/PostgresEngineTests, docs/postgres.md) share one server, named to
# them in YEDI_TEST_POSTGRES_URL/_PASSWORD_FILE; stopped at the end if this run started it. In CI a
# PostgreSQL that does not start fails the run: nothing is skipped.
step "PostgreSQL for the engine's tests (deploy/postgres-dev.sh --test)"
postgres_log=$(mktemp)
if ! postgres_env=$(deploy/postgres-dev.sh --test --env 2>"$postgres_log"); then
  cat "$postgres_log" >&2
  echo "test: the development PostgreSQL did not start (above); the PostgreSQL engine's tests need it" >&2
  exit 1
fi
eval "$postgres_env"
# At exit: stop the background builds (below), and the PostgreSQL if this run started it.
builder=
stop_postgres=false
grep -q '^postgres-dev: started' "$postgres_log" && stop_postgres=true
cleanup() {
  if [[ -n $builder ]]; then pkill -P "$builder" 2>/dev/null || true; kill "$builder" 2>/dev/null || true; fi
  if $stop_postgres; then deploy/postgres-dev.sh --stop >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
rm -f "$postgres_log"

# The sanitizer passes' test targets: each build compiles only these and what they depend on
# (YEDI_TEST_TARGETS, read by Package.swift): a whole-package sanitizer build takes as long as the debug
# build.
asan_targets=ProtoBridgeTests,YediCryptoTests,AccessTokenTests,RPCTLSTests,RPCCoreTests
tsan_targets=RPCCoreTests,RPCTLSTests,RPCObservabilityTests,RPCAccessTests,CountLimitedCacheTests
tsan_targets+=,ServiceRuntimeTests,OutsideSenderTests,ChatServiceTests,BookingServiceTests

# The later passes' builds, one after the other, in the background on idle CPU time only, from the start:
# they take what the debug build leaves (its serial stretches: module interfaces, links) and what the plain
# tests leave; the ThreadSanitizer build (700 s) and the fuzz build (300 s) were a third of CI's time on
# their own. `chrt --idle` (SCHED_IDLE), not `nice`: swift-build starts its compilers at nice 0 again,
# which slowed the tests by a third in a CI run, but they keep the scheduling policy. Each build writes
# its log and, when done, a status file that the pass waiting for it reads.
builds=$(mktemp -d)
background_build() {
  local name=$1
  shift
  if chrt --idle 0 "$@" >"$builds/$name.log" 2>&1; then echo 0 >"$builds/$name.status"; else echo $? >"$builds/$name.status"; fi
}
wait_for_build() {
  local waited=$SECONDS
  until [[ -f $builds/$1.status ]]; do
    kill -0 "$builder" 2>/dev/null || { echo "test: the background builds ended before the $1 build" >&2; exit 1; }
    sleep 2
  done
  echo "($1 build: waited $((SECONDS - waited)) s for it)" >&2
  if [[ $(cat "$builds/$1.status") != 0 ]]; then
    cat "$builds/$1.log" >&2
    echo "test: the $1 build failed (above)" >&2
    exit 1
  fi
}
if [[ ${1:-} != "--quick" ]]; then
  (
    YEDI_TEST_TARGETS=$asan_targets background_build asan \
      swift build --build-tests --sanitize=address --scratch-path .build-asan
    YEDI_TEST_TARGETS=$tsan_targets background_build tsan \
      swift build --build-tests --sanitize=thread --scratch-path .build-tsan
    background_build fuzz scripts/fuzz-ci.sh --build-only
  ) &
  builder=$!
fi

step "swift test"
swift build --build-tests

# Every test, a process per test class, two at a time (scripts/lib/run-test-classes.sh): 390 s here,
# against about twice that with `swift test --parallel`'s process per test.
bundle="$(swift build --show-bin-path)/YediPackageTests.xctest"
"$bundle" --list-tests | grep -E '^[A-Za-z]+Tests\.' | scripts/lib/run-test-classes.sh "$bundle"

[[ ${1:-} == "--quick" ]] && exit 0

export LSAN_OPTIONS="suppressions=$PWD/Tests/lsan-suppressions.txt:print_suppressions=0"
export ASAN_OPTIONS="detect_leaks=1"

step "AddressSanitizer + LeakSanitizer: codec, frame-reader, crypto, token and TLS tests"
wait_for_build asan
# No second `swift build` here: SwiftPM keys its build commands on the environment, which now holds the
# sanitizer options, and would rebuild.
export YEDI_TEST_TARGETS=$asan_targets
swift test --skip-build --sanitize=address --scratch-path .build-asan \
  --filter 'ProtoBridgeTests|YediCryptoTests|AccessTokenTests|RPCTLSTests|RPCCoreTests\.InboundFrameTests'

step "LeakSanitizer still reports a leak of ours (a planted 10-byte leak)"
if output=$(YEDI_PLANT_LEAK=1 swift test --skip-build --sanitize=address --scratch-path .build-asan \
  --filter LeakCanaryTests 2>&1); then
  echo "$output" >&2
  echo "the planted leak was not reported: the LSan suppressions hide our own leaks" >&2
  exit 1
fi
if ! grep -q "Direct leak of 10 byte" <<<"$output"; then
  echo "$output" >&2
  echo "the planted-leak run failed, but not with the expected leak report" >&2
  exit 1
fi
echo "planted leak reported: $(grep -m1 'Direct leak of 10 byte' <<<"$output")" >&2

step "ThreadSanitizer: the RPC targets, service runtime, ChatService and BookingService tests"
wait_for_build tsan
export YEDI_TEST_TARGETS=$tsan_targets
# Left out: the PostgreSQL tests (they run in the plain pass), and the Zipadoo settlement crash test
# (10,000 promises through a real BookingService process: 415 s under ThreadSanitizer, about 40% of the
# pass; the in-process settlement race, testZipadooSettlementByTheWorkerAnd100ConcurrentReadsSettlesOnce,
# stays).
tsan_bundle="$(swift build --sanitize=thread --scratch-path .build-tsan --show-bin-path)/YediPackageTests.xctest"
# Reports ThreadSanitizer cannot judge (Swift's reference counts are invisible to it), each with its why.
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$PWD/scripts/lib/tsan-suppressions.txt"
"$tsan_bundle" --list-tests |
  grep -E "^(${tsan_targets//,/|})\." |
  grep -v -E 'Postgres|ZipadooSettlementCrashTests' |
  scripts/lib/run-test-classes.sh "$tsan_bundle"
unset YEDI_TEST_TARGETS TSAN_OPTIONS
step "libFuzzer: every fuzz target briefly on its seeds (issue 15)"
wait_for_build fuzz
scripts/fuzz-ci.sh
step "done"
