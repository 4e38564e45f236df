#!/usr/bin/env bash
# Starts the Yedi backend on this machine: AccountService, ContentService, BookingService and
# ChatService as four processes, each serving TLS (certificates and token keys from a dev PKI made on
# first run in deploy/pki) and keeping its data under data/<service>/ (a second start reuses it).
# Ctrl-C (or SIGTERM) stops them gracefully. A service that dies is reported at once with the last
# lines of its log, and the others are stopped.
#
#   deploy/start.sh               # build (release), then run in the foreground
#   deploy/start.sh --dev-clock   # development mode, and let the operator's certificate move the clocks
#                                 # (`yedi.runtime.DevClock/AdvanceClock`, for demos; see README.md)
#   deploy/start.sh --debug       # a debug build instead (quicker to build while developing)
#   deploy/start.sh --postgres [--replicas N]
#                                 # the services that run on PostgreSQL (Account, Booking, Content) on
#                                 # the development PostgreSQL (deploy/postgres-dev.sh), N processes
#                                 # each (1-9, default 1) sharing one database, one log key and one
#                                 # image URL key; ChatService stays one process on SQLite
#                                 # (docs/postgres.md)
#
# Ports (RPC over TLS / metrics and health over plain HTTP on loopback):
#   account 7001/9101   content 7002/9102   booking 7003/9103   chat 7004/9104
# (replica k of a service adds 10*(k-1) to both: account's second replica is 7011/9111)
# and ContentService's images by URL over HTTPS on 8002 (8012, … for its replicas; docs/platform.md,
# "Images").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

extra=()
configuration=release
postgres=0
replicas=1
while (($#)); do
  case $1 in
  --dev-clock) extra+=(--development --dev-clock) ;;
  --debug) configuration=debug ;;
  --postgres) postgres=1 ;;
  --replicas) replicas=${2:-}; shift ;;
  -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
  *) echo "start: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if ! [[ $replicas =~ ^[1-9]$ ]]; then
  echo "start: --replicas takes a number from 1 to 9, got '$replicas'" >&2
  exit 2
fi
if ((replicas > 1 && !postgres)); then
  echo "start: --replicas needs --postgres (replicas share one PostgreSQL database; SQLite is one process's)" >&2
  exit 2
fi

scripts/install-deps.sh

kinds=(account content booking chat)
declare -A target=([account]=AccountService [content]=ContentService [booking]=BookingService [chat]=ChatService)
declare -A base_port=([account]=7001 [content]=7002 [booking]=7003 [chat]=7004)
declare -A base_metrics=([account]=9101 [content]=9102 [booking]=9103 [chat]=9104)
# The services that have a PostgreSQL store for everything they keep (the others refuse a PostgreSQL
# --database at start).
declare -A on_postgres=([account]=1 [booking]=1 [content]=1 [chat]=1)

# Every process: its name (the first replica keeps the service's name, so data/account/sent-mail stays
# where the probe looks), kind, ports.
services=()
declare -A kind_of=() port=() metrics=()
declare -A addresses=()
for kind in "${kinds[@]}"; do
  count=1
  ((postgres)) && [[ -n ${on_postgres[$kind]:-} ]] && count=$replicas
  for ((k = 1; k <= count; k++)); do
    name=$kind
    ((k > 1)) && name="$kind-$k"
    services+=("$name")
    kind_of[$name]=$kind
    port[$name]=$((base_port[$kind] + 10 * (k - 1)))
    metrics[$name]=$((base_metrics[$kind] + 10 * (k - 1)))
    addresses[$kind]+="${addresses[$kind]:+,}127.0.0.1:${port[$name]}"
  done
done
peers=()
for kind in "${kinds[@]}"; do peers+=(--peer "$kind=${addresses[$kind]}"); done

echo "== building ($configuration)" >&2
for product in "${target[@]}" yedi-probe; do
  if ! swift build -c "$configuration" --product "$product"; then
    echo "start: building $product failed (the compiler's messages are above); nothing was started" >&2
    exit 1
  fi
done
bin=$(swift build -c "$configuration" --show-bin-path)

pki="$root/deploy/pki"
deploy/dev-pki.sh "$pki" >&2
data="$root/data"
mkdir -p "$data/logs"

declare -A database_options=()
if ((postgres)); then
  echo "== the development PostgreSQL (deploy/postgres-dev.sh)" >&2
  exports=$(deploy/postgres-dev.sh --env)
  eval "$exports"
  # One log key for every replica: page cursors signed by one replica are read by the others; one image
  # URL key for every ContentService replica: an image URL signed by one is served by the others.
  for key in log.key image-url.key; do
    if [[ ! -s $data/$key ]]; then
      (umask 077 && head -c 32 /dev/urandom >"$data/$key")
    fi
  done
  for kind in "${!on_postgres[@]}"; do
    url_variable="YEDI_${kind^^}_DATABASE"
    file_variable="YEDI_${kind^^}_DATABASE_PASSWORD_FILE"
    database_options[$kind]="--database ${!url_variable} --database-password-file ${!file_variable} --log-key $data/log.key"
  done
  database_options[content]+=" --image-url-key $data/image-url.key"
  # BookingService's replicas share one development payment gateway (without a provider configured).
  database_options[booking]+=" --dev-payments-folder $data/dev-payments"
fi

declare -A pid_of=()
stopping=0
stop_all() {
  stopping=1
  local pids=("${pid_of[@]}")
  ((${#pids[@]})) || return 0
  kill -TERM "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
}
on_signal() {
  trap - INT TERM
  echo "stopping (graceful: calls in flight finish)..." >&2
  stop_all
  echo "stopped; data kept in $data" >&2
  exit 0
}
trap on_signal INT TERM

# The service whose process is gone, if any.
dead_service() {
  for service in "${services[@]}"; do
    kill -0 "${pid_of[$service]}" 2>/dev/null || { echo "$service"; return 0; }
  done
  return 1
}

report_death() {
  local service=$1 status=0
  wait "${pid_of[$service]}" 2>/dev/null || status=$?
  echo >&2
  echo "start: $service (${target[${kind_of[$service]}]}) exited with status $status. Last lines of $data/logs/$service.log:" >&2
  tail -n 20 "$data/logs/$service.log" | sed 's/^/  | /' >&2
  unset "pid_of[$service]"
  echo "start: stopping the other services" >&2
  stop_all
  exit 1
}

for service in "${services[@]}"; do
  kind=${kind_of[$service]}
  # shellcheck disable=SC2206 # the options are words without spaces
  database=(${database_options[$kind]:-})
  ((${#database[@]})) && database+=(--replica "$service")
  # ContentService's image port, 8002 + 10*(k-1) like the others.
  images=()
  [[ $kind == content ]] && images=(--image-port $((8002 + port[$service] - base_port[content])))
  echo "--- $(date -u +%FT%TZ) starting" >>"$data/logs/$service.log"
  "$bin/${target[$kind]}" \
    --host 127.0.0.1 --port "${port[$service]}" --metrics-port "${metrics[$service]}" \
    --pki "$pki" --data "$data/$service" --apps "$root/deploy/apps" "${peers[@]}" "${database[@]}" "${images[@]}" "${extra[@]}" \
    >>"$data/logs/$service.log" 2>&1 &
  pid_of[$service]=$!
done

# Ready when every /healthz answers 200 (the RPC server is listening and SERVING).
healthy() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET /healthz HTTP/1.0\r\n\r\n' >&3 && head -1 <&3 | grep -q ' 200 ') \
    2>/dev/null
}
for service in "${services[@]}"; do
  for attempt in $(seq 300); do
    healthy "${metrics[$service]}" && break
    if gone=$(dead_service); then report_death "$gone"; fi
    if ((attempt == 300)); then
      echo "start: $service is not serving after 30 s; see $data/logs/$service.log" >&2
      stop_all
      exit 1
    fi
    sleep 0.1
  done
done

probe="$bin/yedi-probe"
echo "Yedi is up. Data in $data/<service>, logs in $data/logs/."
for service in "${services[@]}"; do
  engine=SQLite
  [[ -n ${database_options[${kind_of[$service]}]:-} ]] && engine=PostgreSQL
  printf '  %-9s rpc 127.0.0.1:%s   metrics http://127.0.0.1:%s/metrics   %s\n' \
    "$service" "${port[$service]}" "${metrics[$service]}" "$engine"
done
cat <<EOF
ContentService's images: https://127.0.0.1:8002/images/
Dev PKI (CA, service and probe certificates, token signing keys; NOT for production): $pki
Mail (sign-up codes) goes to files in $data/account/sent-mail: \`yedi-probe sent-mail\` lists it.
The probe finds it by itself from anywhere in this checkout. Try (sign up with the mailed code, sign in, who am I):

  P=$probe
  ID=\$(\$P call 127.0.0.1:7001 yedi.account.AccountService/SignUp '{"email": "minji@example.com", "password": "hair2024!", "name": "김민지", "phone": "01012345678", "gender": "GENDER_FEMALE", "birthDate": {"year": 1995, "month": 4, "day": 12}, "role": "ROLE_CUSTOMER"}' --field verificationId)
  \$P call 127.0.0.1:7001 yedi.account.AccountService/CompleteSignUp "{\\"verificationId\\": \\"\$ID\\", \\"code\\": \\"\$(\$P sent-mail --verification-id \$ID --value code)\\"}" --field user.id
  TOKEN=\$(\$P call 127.0.0.1:7001 yedi.account.AccountService/SignIn '{"email": "minji@example.com", "password": "hair2024!"}' --field session.accessToken)
  \$P call 127.0.0.1:7001 yedi.account.AccountService/GetMe --token "\$TOKEN"

Ctrl-C stops everything.
EOF

# Until Ctrl-C, or until a service dies.
while true; do
  wait -n "${pid_of[@]}" 2>/dev/null || true
  ((stopping)) && exit 0
  if gone=$(dead_service); then report_death "$gone"; fi
done
