#!/usr/bin/env bash
# Issue 25: what the Swift runtime is asked to do per echo call, counted instead of sampled. Runs the
# release echo-bench (server and client over TLS, C=64/K=4) and counts, with uprobes on one side, the
# runtime's entry points below, divided by the calls that side handled in the same window (a probe on
# the server's `requestReceived` or the client's `startCall`, which run once per call).
#
#   bench/runtime-calls.sh [server|client] [seconds]      # as root; needs perf with uprobes
#
# A profile says where time goes; this says how often: retains and releases (`swift_retain` and
# `swift_release` only: not `swift_retain_n`, bridge or unknown-object retains), executor switches (each
# reads a task's executor preference under its status lock), jobs run, tasks started with
# `Task.immediate`, objects allocated with `swift_allocObject` (not ByteBuffers: malloc).
# Every probe hit traps into the kernel, so the counted side runs ~50 times slower: each read then
# brings about one call, and what NIO and TLS do once per read (about 16 calls at full speed) counts
# in full for every call. Compare counts of one build with another's, not with a profile's shares.
set -euo pipefail
side=${1:-server}
window=${2:-2}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BIN:-$(cd "$root" && swift build -c release --show-bin-path)}/echo-bench
core=$(ldd "$bin" | awk '/libswiftCore.so/ { print $3 }')
concurrency=$(ldd "$bin" | awk '/libswift_Concurrency.so/ { print $3 }')
work=$(mktemp -d)
pids=()
cleanup() {
    set +e
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
    perf probe -q -d 'yedirt:*' 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
perf probe -q -d 'yedirt:*' 2>/dev/null || true  # left by a run that was killed

# A probe on a symbol that is local or whose name perf cannot parse: by its address in the file.
address() {
    local found
    found=$(nm "$1" | awk -v pattern="$2" '$3 ~ pattern { print "0x" $1; exit }')
    [[ -n $found ]] || { echo "runtime-calls: no symbol matching $2 in $1" >&2; exit 1; }
    echo "$found"
}
probe() { perf probe -q -x "$1" -a "yedirt:$2=$3"; }
if [[ -z $core || -z $concurrency ]]; then
    echo "runtime-calls: $bin does not link the Swift runtime dynamically" >&2
    exit 1
fi
probe "$core" retain swift_retain
probe "$core" release swift_release
# The same two again, to count only those of a reference that is not nil (an optional copied or
# destroyed while nil costs no atomic): these get a filter below.
probe "$core" retainNonNil "swift_retain object=%di:x64"
probe "$core" releaseNonNil "swift_release object=%di:x64"
probe "$core" allocate swift_allocObject
probe "$concurrency" switch swift_task_switch
preference=$(address "$concurrency" '^_ZN5swift9AsyncTask24getPreferredTaskExecutorEb$')
probe "$concurrency" preference "$preference"
probe "$concurrency" job swift_job_run
probe "$concurrency" jobOnTaskExecutor swift_job_run_on_task_executor
probe "$concurrency" task swift_task_immediate
if [[ $side == server ]]; then
    call=$(address "$bin" '^[$]s7RPCCore23ServerConnectionHandlerC15requestReceived.*InboundFrameVF$')
else
    call=$(address "$bin" '^[$]s7RPCCore23ClientConnectionHandlerC9startCallyyAA08OutgoingF0CF$')
fi
probe "$bin" call "$call"

"$root/deploy/dev-pki.sh" "$work/pki" >/dev/null
port=$((40000 + RANDOM % 10000))
"$bin" server --port "$port" --cert "$work/pki/account.pem" --key "$work/pki/account.key" >/dev/null 2>&1 &
server=$!
pids+=("$server")
sleep 1
"$bin" client --port "$port" --ca "$work/pki/ca.pem" --duration $((window + 3)) --warmup 1 >/dev/null 2>&1 &
client=$!
pids+=("$client")
sleep 2
target=$([[ $side == server ]] && echo "$server" || echo "$client")
perf stat -x, -o "$work/counts" -p "$target" \
    -e yedirt:retain -e yedirt:release -e yedirt:allocate -e yedirt:switch -e yedirt:preference \
    -e yedirt:job -e yedirt:jobOnTaskExecutor -e yedirt:task -e yedirt:call \
    -e yedirt:retainNonNil --filter 'object != 0' -e yedirt:releaseNonNil --filter 'object != 0' \
    -- sleep "$window"
awk -F, -v side="$side" '
    $3 ~ /^yedirt:/ { count[substr($3, 8)] = $1 }
    END {
        calls = count["call"]
        if (calls == 0) { print "no calls were counted"; exit 1 }
        count["job"] += count["jobOnTaskExecutor"]
        printf "%s side, %d calls counted; per call:\n", side, calls
        split("retain retainNonNil release releaseNonNil allocate switch preference job task", names, " ")
        for (i = 1; i <= 9; i++) printf "  %-14s %6.2f\n", names[i], count[names[i]] / calls
    }' "$work/counts"
