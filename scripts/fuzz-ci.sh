#!/usr/bin/env bash
# CI's brief fuzz pass (issue 15): builds the four libFuzzer targets (a debug build with the fuzzer and
# AddressSanitizer, scratch path .build-fuzz-debug: the release build alone took 11 of CI's minutes) and runs each on its committed seeds for a short while, so
# that a decoder change that crashes, leaks or hangs on a known or nearby input fails the next CI run.
# Exits non-zero on any finding (scripts/fuzz.sh prints the input's path and the sanitizer report).
#
#   scripts/fuzz-ci.sh               # YEDI_FUZZ_CI_SECONDS (default 20) per target, two at a time
#   scripts/fuzz-ci.sh --build-only  # the build alone (scripts/test.sh runs it ahead, in the background)
#
# The long runs (ten million executions per target) are done by hand: see docs/fuzzing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export YEDI_FUZZ_CONFIGURATION=debug YEDI_FUZZ_SCRATCH=${YEDI_FUZZ_SCRATCH:-.build-fuzz-debug}
[[ ${1:-} == "--build-only" ]] && exec scripts/fuzz.sh build
# Two lanes at once (libFuzzer uses one core per run; the machine has two), each a fuzz.sh run of its own
# with its own log, printed when both are done.
seconds=${YEDI_FUZZ_CI_SECONDS:-20}
logs=$(mktemp -d)
pids=()
for lane in "frame json" "message tls"; do
  # Every target of the lane runs, even after one failed: each finding is reported.
  (
    rc=0
    for target in $lane; do scripts/fuzz.sh "$target" "$seconds" || rc=1; done
    exit $rc
  ) >"$logs/${lane%% *}.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
cat "$logs"/*.log
rm -rf "$logs"
exit $status
