#!/usr/bin/env bash
# Issue 25: the whole system under `yedi-probe load --scenario yedi-mix`, release builds.
# Starts the four services as separate processes (BIN, default this checkout's release build) on empty
# data folders with a throwaway dev PKI, as deploy/start.sh does, except that AccountService allows more
# sign-ups per address and connection (only the seeding signs up; the mix never does). Then:
#   1. idle CPU of each service over IDLE seconds (default 20);
#   2. one open-model run per rate in RATES (default "250 500 750 1000 1500"), each seeding its own cast
#      (DESIGNERS/CUSTOMERS) with STREAMS live chat streams, DURATION seconds timed; CPU ticks of each
#      service are read when the timed part starts (the probe's first progress line) and when it ends;
#   3. idle CPU again.
# Prints the probe's JSON per rate (results in OUT, default bench/results/system-<stamp>/) and a summary.
#
#   swift build -c release --product yedi-probe  # and the four services
#   BIN=$(swift build -c release --show-bin-path) bench/system-load.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BIN:-$(cd "$root" && swift build -c release --show-bin-path)}
rates=${RATES:-"250 500 750 1000 1500"}
duration=${DURATION:-10}
streams=${STREAMS:-1000}
designers=${DESIGNERS:-4}
customers=${CUSTOMERS:-60}
idle=${IDLE:-20}
out=${OUT:-$root/bench/results/system-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

"$root/deploy/dev-pki.sh" "$work/pki" >/dev/null
services=(account content booking chat)
declare -A port=([account]=17401 [content]=17402 [booking]=17403 [chat]=17404)
declare -A executable=([account]=AccountService [content]=ContentService [booking]=BookingService [chat]=ChatService)
peers=()
for service in "${services[@]}"; do peers+=(--peer "$service=127.0.0.1:${port[$service]}"); done
declare -A pid_of
for service in "${services[@]}"; do
  extra=()
  [[ $service == account ]] && extra=(--sign-in-rate-per-address 100000/60 --sign-in-rate-per-connection 100000/60)
  "$bin/${executable[$service]}" --port "${port[$service]}" --metrics-port 0 --data "$work/$service" \
    --pki "$work/pki" --log-level error "${peers[@]}" "${extra[@]}" >"$out/$service.log" 2>&1 &
  pid_of[$service]=$!
  pids+=($!)
done
for service in "${services[@]}"; do
  for _ in $(seq 150); do
    "$bin/yedi-probe" health "127.0.0.1:${port[$service]}" --ca "$work/pki/ca.pem" >/dev/null 2>&1 && break
    sleep 0.2
  done
done
sleep 5

hz=$(getconf CLK_TCK)
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
snapshot() { for service in "${services[@]}"; do printf '%s ' "$(ticks "${pid_of[$service]}")"; done; }
idle_cpu() { # label
  local before after
  read -ra before <<<"$(snapshot)"
  sleep "$idle"
  read -ra after <<<"$(snapshot)"
  local i=0
  for service in "${services[@]}"; do
    awk -v s="$service" -v b="${before[$i]}" -v a="${after[$i]}" -v hz="$hz" -v w="$idle" -v l="$1" \
      'BEGIN { printf "idle %s %s: %.2f%% of a core over %d s\n", l, s, 100 * (a - b) / hz / w, w }'
    i=$((i + 1))
  done | tee -a "$out/summary.txt"
}

idle_cpu before
probe=(
  "$bin/yedi-probe" load --scenario yedi-mix --ca "$work/pki/ca.pem" --cert "$work/pki/yedi-probe.pem"
  --key "$work/pki/yedi-probe.key" --account "127.0.0.1:${port[account]}" --content "127.0.0.1:${port[content]}"
  --booking "127.0.0.1:${port[booking]}" --chat "127.0.0.1:${port[chat]}" --sent-mail "$work/account/sent-mail"
  --designers "$designers" --customers "$customers" --streams "$streams" --duration "$duration" --json
)
for rate in $rates; do
  "${probe[@]}" --rate "$rate" -c 400 >"$out/rate-$rate.json" 2>"$out/rate-$rate.err" &
  probe_pid=$!
  until grep -q '^\[' "$out/rate-$rate.err" 2>/dev/null || ! kill -0 "$probe_pid" 2>/dev/null; do sleep 0.05; done
  read -ra start <<<"$(snapshot)"
  wait "$probe_pid" || echo "rate $rate: the probe failed (see $out/rate-$rate.err)" | tee -a "$out/summary.txt"
  read -ra end <<<"$(snapshot)"
  i=0
  for service in "${services[@]}"; do
    echo "rate $rate cpu $service $(((end[i] - start[i]))) ticks" >>"$out/summary.txt"
    i=$((i + 1))
  done
  python3 - "$out/rate-$rate.json" "$rate" "$hz" "$out/summary.txt" <<'PY'
import json, sys, collections
path, rate, hz, summary = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
report = json.load(open(path))
lines = [l.split() for l in open(summary) if l.startswith(f"rate {rate} cpu ")]
ticks = {l[3]: int(l[4]) for l in lines}
calls = collections.Counter()
worst = ("", 0.0)
for name, operation in report.get("operations", {}).items():
    parts = name.split(".")
    service = parts[1] if len(parts) > 2 else ""
    calls[service] += operation.get("calls", 0)
    if (operation.get("p99") or 0) > worst[1]:
        worst = (name, operation["p99"])
out = [f"rate {rate}: {report.get('callsPerSecond', 0):.0f} calls/s, p99 {report.get('p99')} ms, "
       f"worst method p99 {worst[1]} ms ({worst[0]})"]
for service, count in sorted(calls.items()):
    if count and service in ticks:
        out.append(f"rate {rate}: {service} {ticks[service] / hz / count * 1e6:.0f} µs CPU per call ({count} calls)")
for name, operation in sorted(report.get("operations", {}).items()):
    if name.endswith("/GetFeed") or name.endswith("/ListFreeSlots"):
        out.append(f"rate {rate}: {name} p50 {operation.get('p50')} p99 {operation.get('p99')} ms")
s2d = report.get("sendToDeliver")
if s2d:
    out.append(f"rate {rate}: send→deliver p50 {s2d.get('p50')} p99 {s2d.get('p99')} ms, {s2d.get('count')} of {s2d.get('expected')}")
print("\n".join(out))
open(summary, "a").write("\n".join(out) + "\n")
PY
done
idle_cpu after
echo "results: $out"
