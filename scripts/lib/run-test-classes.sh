#!/usr/bin/env bash
# Runs the tests named on stdin (one `Module.Class/test` a line) from the XCTest bundle $1 in two
# processes at once, each running its half in one go (alternate lines, so slow classes spread over both).
# `swift test --parallel` starts a process per test, which costs more than most tests (under
# ThreadSanitizer, more than running them all in one process); two processes keep both cores busy.
# Prints each half's summary, and the whole log of a half that failed (a ThreadSanitizer report ends
# its process with a non-zero status). Exits non-zero if either half failed.
set -euo pipefail
bundle=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/all"
[[ -s $work/all ]] || { echo "run-in-two-processes: no tests to run" >&2; exit 1; }
# One half's tests, 300 names to a process at most: the names go in one argument, which Linux caps at
# 128 KiB.
run_half() {
  awk -v half="$1" 'NR % 2 == half' "$work/all" | split -l 300 - "$work/$1.chunk."
  for chunk in "$work/$1.chunk."*; do
    "$bundle" "$(paste -sd, "$chunk")" || return
  done
}
pids=()
for half in 0 1; do
  run_half $half >"$work/$half.log" 2>&1 &
  pids+=($!)
done
status=0
for half in 0 1; do
  if wait "${pids[$half]}"; then
    grep -E "^Test Suite 'Selected tests' passed" -A1 "$work/$half.log" | grep -E "Executed" >&2
  else
    code=$?
    cat "$work/$half.log" >&2
    echo "run-in-two-processes: half $((half + 1)) failed (exit $code)" >&2
    status=1
  fi
done
exit $status
