#!/usr/bin/env bash
# Issue 25: what the four services cost at rest. Starts them as separate processes (this checkout's
# build, or BIN=…) on empty data folders and a throwaway dev PKI, lets them settle, then prints each
# one's CPU time over SECONDS (default 60) from /proc, as a share of one core. Goal: at most 0.5% each.
#
#   bench/idle-cpu.sh                  # debug build: swift build first
#   SECONDS_IDLE=20 BIN=$(swift build -c release --show-bin-path) bench/idle-cpu.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BIN:-$(cd "$root" && swift build --show-bin-path)}
window=${SECONDS_IDLE:-60}
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT

"$root/deploy/dev-pki.sh" "$work/pki" >/dev/null
declare -A port=([account]=17301 [content]=17302 [booking]=17303 [chat]=17304)
declare -A executable=([account]=AccountService [content]=ContentService [booking]=BookingService [chat]=ChatService)
peers=()
for service in account content booking chat; do peers+=(--peer "$service=127.0.0.1:${port[$service]}"); done
declare -A pid_of
for service in account content booking chat; do
    "$bin/${executable[$service]}" --port "${port[$service]}" --metrics-port 0 --data "$work/$service" \
        --pki "$work/pki" --log-level error "${peers[@]}" >"$work/$service.log" 2>&1 &
    pid_of[$service]=$!
    pids+=($!)
done
for service in account content booking chat; do
    for _ in $(seq 150); do "$bin/yedi-probe" health "127.0.0.1:${port[$service]}" --ca "$work/pki/ca.pem" \
        >/dev/null 2>&1 && break; sleep 0.2; done
done
sleep 5
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
declare -A before
for service in account content booking chat; do before[$service]=$(ticks "${pid_of[$service]}"); done
sleep "$window"
hz=$(getconf CLK_TCK)
for service in account content booking chat; do
    used=$(($(ticks "${pid_of[$service]}") - ${before[$service]}))
    awk -v s="$service" -v t="$used" -v hz="$hz" -v w="$window" \
        'BEGIN { printf "idle %-8s %5.2f CPU-s over %d s = %.2f%% of a core\n", s, t / hz, w, 100 * t / hz / w }'
done
