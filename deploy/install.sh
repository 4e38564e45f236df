#!/usr/bin/env bash
# Installs Yedi services on this host under systemd (run as root, from a checkout or an unpacked release):
#
#   deploy/install.sh                          # all four services on this host
#   deploy/install.sh account                  # one host per service: name the ones this host runs
#   deploy/install.sh --bin DIR content chat   # executables from DIR (default: a fresh release build)
#   deploy/install.sh --plan [SERVICES]        # print the owners and modes it sets, change nothing
#   deploy/install.sh --replicas 3 [SERVICES]  # 3 replicas of each on PostgreSQL (docs/postgres.md)
#
# What it does, idempotently:
#   - creates one system user per service, yedi-<service> (no login, no home, its own group), and the
#     group `yedi` they all belong to (it may read what every service needs: CA, token public key, log key);
#   - copies the executables to /opt/yedi/bin and links /opt/yedi/bin/yedi-<service> to each;
#   - copies deploy/systemd/yedi@.service to /etc/systemd/system (User=yedi-%i) and reloads systemd;
#   - installs deploy/journald/yedi.conf (log retention) as /etc/systemd/journald.conf.d/yedi.conf;
#   - copies deploy/env/<service>.env to /etc/yedi/<service>.env unless one exists (edit it: peers, paths);
#   - makes /etc/yedi/pki/log.key (32 random bytes) unless one exists: copy the same file to every host;
#   - with --replicas N: installs deploy/systemd/yedi-replica@.service as yedi-<service>@.service, and
#     writes /etc/yedi/<service>-<n>.env for n = 1…N unless one exists: replica n listens on the ports of
#     <service>.env + 10·(n−1) and is named <service>-<n>@<host>;
#   - makes /etc/yedi/pki/image-url.key for ContentService unless one exists: copy it to every host
#     running ContentService (an image URL one replica signs, the others serve);
#   - checks /etc/yedi/pki has the CA, the service's certificate and key, and the token keys it needs,
#     and sets the owners and modes of `--plan`: each service reads only its own key, only AccountService
#     the token signing key.
# It does not start anything: `systemctl enable --now yedi@<service>` (or yedi-<service>@1 … @N with
# --replicas) once the settings are right; PostgreSQL's databases and roles: deploy/postgres/databases.sql.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A executable=([account]=AccountService [content]=ContentService [booking]=BookingService [chat]=ChatService)
bin=""
plan_only=0
replicas=0
replica_env_of=()
services=()
while (($#)); do
  case $1 in
  --bin) bin=$2; shift 2 ;;
  --plan) plan_only=1; shift ;;
  --replicas) (($# >= 2)) || set -- "$1" ""; replicas=$2; shift 2 ;;
  # What install.sh writes as /etc/yedi/SERVICE-N.env, from ENV_FILE (DeploymentFilesTests reads it).
  --replica-env)
    (($# >= 4)) || { echo "install: --replica-env takes ENV_FILE SERVICE N" >&2; exit 2; }
    replica_env_of=("$2" "$3" "$4"); shift 4 ;;
  account | content | booking | chat) services+=("$1"); shift ;;
  -h | --help) sed -n '2,27p' "$0"; exit 0 ;;
  *) echo "install: unknown argument $1 (services: account content booking chat)" >&2; exit 2 ;;
  esac
done
((${#services[@]})) || services=(account content booking chat)
if [[ $replicas != 0 ]] && ! [[ $replicas =~ ^[1-9]$ ]]; then
  echo "install: --replicas takes a number from 1 to 9, got '$replicas'" >&2
  exit 2
fi

# The files' owners and modes, one `PATH OWNER GROUP MODE` line each: what the services may read is
# decided here and nowhere else (Tests/ServiceRuntimeTests/DeploymentFilesTests.swift checks it).
plan() {
  echo "/etc/yedi root root 0755"
  echo "/etc/yedi/pki root yedi 0750"
  echo "/etc/yedi/pki/ca.pem root yedi 0644"
  echo "/etc/yedi/pki/token-signing.pub.pem root yedi 0644"
  echo "/etc/yedi/pki/log.key root yedi 0640"
  echo "/etc/yedi/apps root yedi 0755"
  for file in deploy/apps/*.json; do echo "/etc/yedi/apps/${file##*/} root yedi 0644"; done
  for service in "${services[@]}"; do
    echo "/etc/yedi/pki/$service.pem root yedi 0644"
    echo "/etc/yedi/pki/$service.key root yedi-$service 0640"
    echo "/etc/yedi/$service.env root yedi-$service 0640"
    # PostgreSQL: the service's role's password (YEDI_DATABASE_PASSWORD_FILE), only when it runs there.
    echo "/etc/yedi/pki/$service.database-password root yedi-$service 0640"
    [[ $service != account ]] || echo "/etc/yedi/pki/token-signing.key root yedi-account 0640"
    for ((n = 1; n <= replicas; n++)); do echo "/etc/yedi/$service-$n.env root yedi-$service 0640"; done
    [[ $service != content ]] || echo "/etc/yedi/pki/image-url.key root yedi-content 0640"
  done
  # The CA PostgreSQL's certificate is verified against (YEDI_DATABASE_CA), if it is not the system's.
  echo "/etc/yedi/pki/database-ca.pem root yedi 0644"
}

# Replica n's settings, read after the service's env file: its name, its own state folder (a YEDI_DATA
# set in the service's file would otherwise be shared), and every port of that file (YEDI_PORT,
# YEDI_METRICS_PORT, YEDI_IMAGE_PORT, YEDI_PAYMENT_WEBHOOK_PORT, …) + 10·(n−1), as deploy/start.sh
# --replicas does on one host.
replica_env() { # service env file, service, n
  local ports
  # Each port variable's last value (systemd's rule for a variable set twice), quoted or not.
  ports=$(sed -n 's/^\(YEDI_[A-Z_]*PORT\)="\{0,1\}\([0-9][0-9]*\)"\{0,1\}$/\1 \2/p' "$1" | tac | sort -s -u -k1,1)
  if ! grep -q '^YEDI_PORT ' <<<"$ports"; then
    echo "install: $1 sets no YEDI_PORT: the replicas' ports are that file's + 10·(n−1)" >&2
    return 1
  fi
  echo "# Replica $3 of $2 (yedi-$2@$3.service), read after $1."
  echo "YEDI_REPLICA=$2-$3@$(hostname -s)"
  echo "YEDI_DATA=/var/lib/yedi/$2-$3"
  local variable value
  while read -r variable value; do
    echo "$variable=$((value + 10 * ($3 - 1)))"
  done <<<"$ports"
}
if ((plan_only)); then plan; exit 0; fi
if ((${#replica_env_of[@]})); then replica_env "${replica_env_of[@]}"; exit 0; fi
[[ $(id -u) == 0 ]] || { echo "install: run as root" >&2; exit 1; }

if [[ -z $bin ]]; then
  for service in "${services[@]}"; do swift build -c release --product "${executable[$service]}"; done
  bin=$(swift build -c release --show-bin-path)
fi

getent group yedi >/dev/null || groupadd --system yedi
for service in "${services[@]}"; do
  user=yedi-$service
  getent group "$user" >/dev/null || groupadd --system "$user"
  getent passwd "$user" >/dev/null ||
    useradd --system --gid "$user" --groups yedi --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$user"
done

install -d -m 0755 /opt/yedi/bin /etc/yedi
install -d -m 0750 -g yedi /etc/yedi/pki
# The apps served (docs/platform.md, "Apps as tenants"): replaced on every install, like the binaries.
install -d -m 0755 -g yedi /etc/yedi/apps
install -m 0644 -g yedi deploy/apps/*.json /etc/yedi/apps/
for service in "${services[@]}"; do
  install -m 0755 "$bin/${executable[$service]}" "/opt/yedi/bin/${executable[$service]}"
  ln -sfn "${executable[$service]}" "/opt/yedi/bin/yedi-$service"
  if [[ ! -e /etc/yedi/$service.env ]]; then
    install -m 0640 -g "yedi-$service" "deploy/env/$service.env" "/etc/yedi/$service.env"
    echo "install: wrote /etc/yedi/$service.env from the example: set its peers and paths" >&2
  fi
done
if [[ ! -s /etc/yedi/pki/log.key ]]; then
  (umask 0077 && head -c 32 /dev/urandom >/etc/yedi/pki/log.key)
  echo "install: made /etc/yedi/pki/log.key: copy it to the other hosts, so a user has one tag in all logs" >&2
fi
install -m 0644 deploy/systemd/yedi@.service /etc/systemd/system/yedi@.service
if ((replicas)); then
  for service in "${services[@]}"; do
    install -m 0644 deploy/systemd/yedi-replica@.service "/etc/systemd/system/yedi-$service@.service"
    for ((n = 1; n <= replicas; n++)); do
      file=/etc/yedi/$service-$n.env
      [[ ! -e $file ]] || continue
      settings=$(replica_env "/etc/yedi/$service.env" "$service" "$n")
      install -m 0640 -g "yedi-$service" /dev/stdin "$file" <<<"$settings"
      echo "install: wrote $file" >&2
    done
  done
fi
if [[ " ${services[*]} " == *" content "* && ! -s /etc/yedi/pki/image-url.key ]]; then
  (umask 0077 && head -c 32 /dev/urandom >/etc/yedi/pki/image-url.key)
  echo "install: made /etc/yedi/pki/image-url.key: copy it to every host running ContentService" \
    "(YEDI_IMAGE_URL_KEY in content.env: an image URL one replica signs, the others serve)" >&2
fi
install -d -m 0755 /etc/systemd/journald.conf.d
install -m 0644 deploy/journald/yedi.conf /etc/systemd/journald.conf.d/yedi.conf
if command -v systemctl >/dev/null; then
  systemctl daemon-reload
  systemctl try-restart systemd-journald || true
fi

missing=()
for file in ca.pem token-signing.pub.pem; do [[ -s /etc/yedi/pki/$file ]] || missing+=("$file"); done
for service in "${services[@]}"; do
  for file in "$service.pem" "$service.key"; do [[ -s /etc/yedi/pki/$file ]] || missing+=("$file"); done
  [[ $service != account || -s /etc/yedi/pki/token-signing.key ]] || missing+=(token-signing.key)
done
while read -r path owner group mode; do
  [[ -e $path ]] && chown "$owner:$group" "$path" && chmod "$mode" "$path"
done < <(plan)
if ((${#missing[@]})); then
  echo "install: /etc/yedi/pki still needs: ${missing[*]} (see deploy/README.md, \"Certificates\"); run" \
    "install.sh again to set their owners and modes" >&2
fi
if ((replicas)); then
  units=()
  for service in "${services[@]}"; do for ((n = 1; n <= replicas; n++)); do units+=("yedi-$service@$n"); done; done
  echo "install: each replica opens YEDI_DATABASE_POOL_SIZE (6) + 1 connections: keep every host's sum" \
    "under PostgreSQL's max_connections (docs/postgres.md, \"Connection budget\")" >&2
  echo "install: done. Start with: systemctl enable --now ${units[*]}" >&2
else
  echo "install: done. Start with: systemctl enable --now $(printf 'yedi@%s ' "${services[@]}")" >&2
fi
