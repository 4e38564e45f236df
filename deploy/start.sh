#!/usr/bin/env bash
# Starts the Yedi backend on this machine: AccountService, ContentService, BookingService and
# ChatService as four processes, each serving TLS (certificates from a dev PKI made on first run)
# and keeping its data under data/<service>/. Ctrl-C (or SIGTERM) stops them gracefully.
#
#   deploy/start.sh            # build (release), then run in the foreground
#
# Ports (RPC over TLS / metrics and health over plain HTTP on loopback):
#   account 7001/9101   content 7002/9102   booking 7003/9103   chat 7004/9104
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
deploy/dev-pki.sh deploy/pki >/dev/null

services=(account content booking chat)
declare -A target=([account]=AccountService [content]=ContentService [booking]=BookingService [chat]=ChatService)
declare -A port=([account]=7001 [content]=7002 [booking]=7003 [chat]=7004)
declare -A metrics=([account]=9101 [content]=9102 [booking]=9103 [chat]=9104)

echo "building (release)..." >&2
for service in "${services[@]}"; do
  swift build -c release --product "${target[$service]}" >&2
done
swift build -c release --product yedi-probe >&2 2>/dev/null || true
bin=$(swift build -c release --show-bin-path)

mkdir -p data/logs
pids=()
stop() {
  trap - INT TERM
  echo "stopping..." >&2
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  echo "stopped" >&2
}
trap stop INT TERM

for service in "${services[@]}"; do
  "$bin/${target[$service]}" \
    --host 127.0.0.1 --port "${port[$service]}" --metrics-port "${metrics[$service]}" \
    --pki deploy/pki --data "data/$service" \
    >>"data/logs/$service.log" 2>&1 &
  pids+=($!)
done

# Ready when every /healthz answers 200.
for service in "${services[@]}"; do
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/${metrics[$service]}" && printf 'GET /healthz HTTP/1.0\r\n\r\n' >&3 &&
      head -1 <&3 | grep -q ' 200 ') 2>/dev/null; then
      break
    fi
    sleep 0.1
  done
done

echo "Yedi is up (logs in data/logs/):"
for service in "${services[@]}"; do
  printf '  %-8s rpc 127.0.0.1:%s   metrics http://127.0.0.1:%s/metrics\n' "$service" "${port[$service]}" "${metrics[$service]}"
done
echo "try: $bin/yedi-probe health 127.0.0.1:7001 --ca deploy/pki/ca.pem"
wait "${pids[@]}"
