#!/usr/bin/env bash
# Builds the libFuzzer targets under Fuzz/ with the fuzzer and AddressSanitizer and runs them.
#
#   scripts/fuzz.sh [frame|message|json|tls|all] [seconds]     (defaults: all, 60 seconds each)
#   scripts/fuzz.sh build                                     (builds every target, runs none)
#
# Each target runs on a temporary copy of its committed seeds (Fuzz/corpus/<target>), with the
# dictionary Fuzz/yedi.dict, until `seconds` pass or YEDI_FUZZ_RUNS executions (default 10,000,000).
# Per target it prints the executions, exec/s and coverage (cov: edges, ft: features) at start and end.
# Exits non-zero on any crash, leak, timeout or out-of-memory; the input is kept and its path printed.
# Builds and runs under `nice` (NICE, default 15) so a CI run on the same machine keeps priority.
#
# A release build (-c release) by default: the debug build's NIO and protobuf paths ran several times
# slower per input. YEDI_FUZZ_CONFIGURATION=debug builds in a third of the time, for CI's brief runs
# on the seeds (scripts/fuzz-ci.sh), where the build, not the executions, is the cost. Package.swift's fuzz section adds the coverage instrumentation Swift targets otherwise lack.
# The fuzz targets are declared in Package.swift only when YEDI_FUZZ=1 (they have no `main`, libFuzzer
# provides it); this script sets it. Scratch path: .build-fuzz (ignored by git), or YEDI_FUZZ_SCRATCH.
#
# YEDI_FUZZ_WRITE_SEEDS=<dir> <binary> writes a target's seed corpus to <dir> instead of fuzzing
# (scripts/fuzz.sh seeds regenerates Fuzz/corpus/ that way).
set -euo pipefail
cd "$(dirname "$0")/.."

what=${1:-all}
seconds=${2:-60}
runs=${YEDI_FUZZ_RUNS:-10000000}
# SwiftPM signs build commands with the environment: keep it the same from run to run, or .build-fuzz
# rebuilds every dependency (minutes). Only the run uses these two, so the build gets neither.
unset YEDI_FUZZ_WRITE_SEEDS
export YEDI_FUZZ_RUNS=10000000
nice_level=${NICE:-15}
scratch=${YEDI_FUZZ_SCRATCH:-.build-fuzz}
configuration=${YEDI_FUZZ_CONFIGURATION:-release}
all_targets=(frame message json tls)

product() { echo "$1-fuzzer"; }
max_len() {
    case $1 in
        frame) echo 8192 ;;
        message) echo 4096 ;;
        json) echo 8192 ;;
        tls) echo 8192 ;;
    esac
}

build() {
    # ld.gold warns once per ASan check symbol ("Cannot export local symbol"): harmless, filtered. The
    # sanitizer options stay out of the build's environment (scripts/test.sh exports them, and builds
    # these targets ahead, before it does).
    env -u ASAN_OPTIONS -u LSAN_OPTIONS YEDI_FUZZ=1 nice -n "$nice_level" swift build -c "$configuration" --sanitize=fuzzer --sanitize=address \
        --scratch-path "$scratch" --product "$(product "$1")" 2>&1 | { grep -v 'Cannot export local symbol' || true; } >&2
    echo "$(env -u ASAN_OPTIONS -u LSAN_OPTIONS YEDI_FUZZ=1 swift build -c "$configuration" --sanitize=fuzzer --sanitize=address --scratch-path "$scratch" \
        --show-bin-path)/$(product "$1")"
}

case $what in
    all) targets=("${all_targets[@]}") ;;
    build)
        for target in "${all_targets[@]}"; do build "$target" >/dev/null; done
        exit 0
        ;;
    seeds)
        for target in "${all_targets[@]}"; do
            binary=$(build "$target")
            rm -rf "Fuzz/corpus/$target" && mkdir -p "Fuzz/corpus/$target"
            env YEDI_FUZZ_WRITE_SEEDS="$PWD/Fuzz/corpus/$target" "$binary"
            echo "$target: $(ls "Fuzz/corpus/$target" | wc -l) seeds"
        done
        exit 0
        ;;
    frame | message | json | tls) targets=("$what") ;;
    *)
        echo "usage: $0 [frame|message|json|tls|all|seeds|build] [seconds]" >&2
        exit 2
        ;;
esac

failed=()
summary=()
for target in "${targets[@]}"; do
    binary=$(build "$target")
    work=$(mktemp -d "${TMPDIR:-/tmp}/yedi-fuzz-$target.XXXXXX")
    mkdir -p "$work/corpus" "$work/artifacts"
    cp -R "Fuzz/corpus/$target/." "$work/corpus/"
    log="$work/fuzz.log"
    echo "== $target: $binary, ${seconds}s or $runs runs, log $log"
    status=0
    # A 16 MB quarantine and 5-frame allocation stacks: ASan's per-malloc unwinding, and the fresh pages
    # that a 256 MB quarantine keeps touching, were a quarter to a third of the frame and tls targets'
    # time. Re-run a finding's input with plain ASAN_OPTIONS for full allocation stacks.
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=16:malloc_context_size=5" \
        nice -n "$nice_level" "$binary" "$work/corpus" \
        -dict=Fuzz/yedi.dict -max_len="$(max_len "$target")" -rss_limit_mb=2048 -timeout=10 \
        -max_total_time="$seconds" -runs="$runs" -print_final_stats=1 \
        -artifact_prefix="$work/artifacts/" >"$log" 2>&1 || status=$?
    inited=$(grep -m1 -E '^#[0-9]+[[:space:]]+INITED' "$log" || true)
    last=$(grep -E '^#[0-9]+[[:space:]]+[A-Z]+[[:space:]]+cov:' "$log" | tail -n1 || true)
    start_cov=$(sed -nE 's/.*cov: ([0-9]+) ft: ([0-9]+).*/cov \1 ft \2/p' <<<"$inited")
    end_cov=$(sed -nE 's/.*cov: ([0-9]+) ft: ([0-9]+).*/cov \1 ft \2/p' <<<"$last")
    executions=$(sed -nE 's/^stat::number_of_executed_units:[[:space:]]+([0-9]+)/\1/p' "$log" | tail -n1)
    [ -n "$executions" ] || executions=$(sed -nE 's/^Done ([0-9]+) runs.*/\1/p' "$log" | tail -n1)
    per_second=$(sed -nE 's/^stat::average_exec_per_sec:[[:space:]]+([0-9]+)/\1/p' "$log" | tail -n1)
    line="$target: ${executions:-?} executions, ${per_second:-?} exec/s, start ${start_cov:-?}, end ${end_cov:-?}"
    if [ "$status" -ne 0 ]; then
        line="$line, FAILED (exit $status)"
        failed+=("$target")
        grep -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|SUMMARY:|Fatal error|artifact_prefix|Test unit written' \
            "$log" | head -n 20 || true
    fi
    echo "$line"
    summary+=("$line")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "failed: ${failed[*]}" >&2
    exit 1
fi
