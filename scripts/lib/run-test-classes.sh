#!/usr/bin/env bash
# Runs the tests named on stdin (one `Module.Class/test` a line) from the XCTest bundle $1: one process
# per test class, two at a time, taken from one queue, the known-slow classes first
# (scripts/lib/slow-test-classes.txt), so both cores stay busy until the end.
#
# Why not `swift test --parallel`: it starts a process per test, which costs more than most tests (under
# ThreadSanitizer, more than running them all in one process). Why not two fixed halves: one half got the
# slow classes and ran 460 s while the other was done after 266 s.
#
# Prints the tests run and the fifteen slowest classes (to keep the slow list current: it only orders the
# queue, so a stale list costs balance, never a test), and the whole log of every class that failed (a
# ThreadSanitizer report ends its process with a non-zero status). Exits non-zero if any class failed.
set -euo pipefail
bundle=$1
export bundle
work=$(mktemp -d)
export work
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/logs"
cat >"$work/all"
[[ -s $work/all ]] || { echo "run-test-classes: no tests to run" >&2; exit 1; }

# One line per class, in first-seen order: `Module.Class<TAB>Module.Class/a,Module.Class/b,…`; then the
# slow classes moved to the front, in the list's order.
awk -F/ '!($1 in tests) { order[++n] = $1; tests[$1] = $0; next } { tests[$1] = tests[$1] "," $0 }
  END { for (i = 1; i <= n; i++) print order[i] "\t" tests[order[i]] }' "$work/all" >"$work/classes"
slow_list="$(dirname "$0")/slow-test-classes.txt"
awk -F'\t' 'NR == FNR { if ($0 !~ /^(#|$)/) rank[$0] = FNR; next }
  { print (($1 in rank) ? rank[$1] : 1000000 + FNR) "\t" $0 }' "$slow_list" "$work/classes" |
  sort -n -k1,1 | cut -f2- >"$work/queue"

run_class() {
  local class=${1%%$'\t'*} tests=${1#*$'\t'} started=$SECONDS status=0
  "$bundle" "$tests" >"$work/logs/$class.log" 2>&1 || status=$?
  printf '%d\t%s\n' $((SECONDS - started)) "$class" >>"$work/times"
  if ((status != 0)); then printf '%s\t%d\n' "$class" "$status" >>"$work/failed"; fi
}
export -f run_class
xargs -d '\n' -P 2 -n 1 bash -c 'run_class "$1"' _ <"$work/queue"

# Each log's last "Executed" line is the summary of its selected tests.
executed=$(for log in "$work/logs/"*.log; do grep -E '^[[:space:]]*Executed [0-9]+ tests?,' "$log" | tail -n1; done |
  sed -nE 's/^[[:space:]]*Executed ([0-9]+) tests?, with ([0-9]+) failures?.*/\1 \2/p' |
  awk '{ tests += $1; failures += $2 } END { printf "%d tests, %d failures", tests, failures }')
echo "run-test-classes: $(wc -l <"$work/queue") classes, $executed; the slowest classes (s):" >&2
# sed reads to the end (head would exit early, and sort's next write would die of SIGPIPE: 141 under
# pipefail, seen once in CI after every test had passed).
sort -rn "$work/times" | sed -n '1,15s/^/  /p' >&2
if [[ -s $work/failed ]]; then
  while IFS=$'\t' read -r class code; do
    cat "$work/logs/$class.log" >&2
    echo "run-test-classes: $class failed (exit $code)" >&2
  done <"$work/failed"
  exit 1
fi
