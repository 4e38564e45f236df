#!/usr/bin/env bash
# Installs Yedi services on this host under systemd (run as root, from a checkout or an unpacked release):
#
#   deploy/install.sh                          # all four services on this host
#   deploy/install.sh account                  # one host per service: name the ones this host runs
#   deploy/install.sh --bin DIR content chat   # executables from DIR (default: a fresh release build)
#
# What it does, idempotently:
#   - creates the system user and group `yedi` (no login, no home);
#   - copies the executables to /opt/yedi/bin and links /opt/yedi/bin/yedi-<service> to each;
#   - copies deploy/systemd/yedi@.service to /etc/systemd/system and reloads systemd;
#   - copies deploy/env/<service>.env to /etc/yedi/<service>.env unless one exists (edit it: peers, paths);
#   - checks /etc/yedi/pki has the CA, the service's certificate and key, and the token keys it needs,
#     and makes the keys readable by `yedi` only.
# It does not start anything: `systemctl enable --now yedi@<service>` once the settings are right.
set -euo pipefail
cd "$(dirname "$0")/.."

declare -A executable=([account]=AccountService [content]=ContentService [booking]=BookingService [chat]=ChatService)
bin=""
services=()
while (($#)); do
  case $1 in
  --bin) bin=$2; shift 2 ;;
  account | content | booking | chat) services+=("$1"); shift ;;
  -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
  *) echo "install: unknown argument $1 (services: account content booking chat)" >&2; exit 2 ;;
  esac
done
((${#services[@]})) || services=(account content booking chat)
[[ $(id -u) == 0 ]] || { echo "install: run as root" >&2; exit 1; }

if [[ -z $bin ]]; then
  for service in "${services[@]}"; do swift build -c release --product "${executable[$service]}"; done
  bin=$(swift build -c release --show-bin-path)
fi

getent group yedi >/dev/null || groupadd --system yedi
getent passwd yedi >/dev/null ||
  useradd --system --gid yedi --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin yedi

install -d -m 0755 /opt/yedi/bin /etc/yedi
install -d -m 0750 -g yedi /etc/yedi/pki
for service in "${services[@]}"; do
  install -m 0755 "$bin/${executable[$service]}" "/opt/yedi/bin/${executable[$service]}"
  ln -sfn "${executable[$service]}" "/opt/yedi/bin/yedi-$service"
  if [[ ! -e /etc/yedi/$service.env ]]; then
    install -m 0640 -g yedi "deploy/env/$service.env" "/etc/yedi/$service.env"
    echo "install: wrote /etc/yedi/$service.env from the example: set its peers and paths" >&2
  fi
done
install -m 0644 deploy/systemd/yedi@.service /etc/systemd/system/yedi@.service
command -v systemctl >/dev/null && systemctl daemon-reload

missing=()
for file in ca.pem token-signing.pub.pem; do [[ -s /etc/yedi/pki/$file ]] || missing+=("$file"); done
for service in "${services[@]}"; do
  for file in "$service.pem" "$service.key"; do [[ -s /etc/yedi/pki/$file ]] || missing+=("$file"); done
  [[ $service != account || -s /etc/yedi/pki/token-signing.key ]] || missing+=(token-signing.key)
done
for key in /etc/yedi/pki/*.key; do
  [[ -e $key ]] && chown root:yedi "$key" && chmod 0640 "$key"
done
if ((${#missing[@]})); then
  echo "install: /etc/yedi/pki still needs: ${missing[*]} (see deploy/README.md, \"Certificates\")" >&2
fi
echo "install: done. Start with: systemctl enable --now $(printf 'yedi@%s ' "${services[@]}")" >&2
