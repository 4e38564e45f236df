#!/usr/bin/env bash
# Starts a PostgreSQL 15 for development and tests from Debian's package (issue 31, docs/postgres.md):
# one database, one role (owning it) and one password file (mode 0600) per service, plus a `yedi_test`
# role that may create databases, for the tests' throwaway databases. Socket only (no TCP), in its own
# short folder. A second run reuses the cluster (and starts it again if it is stopped).
#
#   deploy/postgres-dev.sh              # start (or reuse) and print each service's URL
#   deploy/postgres-dev.sh --test       # the same with fsync off (tests: speed over durability)
#   deploy/postgres-dev.sh --env        # print only `export …` lines (scripts/test.sh evals them)
#   deploy/postgres-dev.sh --stop       # stop the server (the data stays)
#   deploy/postgres-dev.sh --dir DIR    # the cluster's folder (default: YEDI_POSTGRES_DIR, else
#                                       # /tmp/yedi-pg-<uid>-<hash of this checkout's path>)
#   deploy/postgres-dev.sh --tls CERT KEY
#                                       # also TCP on 127.0.0.1:PORT, TLS only, with that certificate
#                                       # (the TLS tests start a cluster of their own this way)
#
# As root, initdb, pg_ctl and the server run as the package's `postgres` user (initdb refuses root).
# `-E UTF8 --locale=C.UTF-8`: Hangul needs a UTF-8 ctype for pg_trgm; the C collation sorts as SQLite.
# max_connections 200: 4 services x 3 replicas x (pool 6 + 1 listener) = 84, plus the tests' pools
# and an admin margin (docs/postgres.md, "Connection budget").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

mode=start
fsync=on
env_only=0
dir=${YEDI_POSTGRES_DIR:-}
port=${YEDI_POSTGRES_PORT:-5432}
tls_cert=
tls_key=
while (($#)); do
  case $1 in
  --test) fsync=off ;;
  --env) env_only=1 ;;
  --stop) mode=stop ;;
  --dir) dir=${2:?--dir needs a folder}; shift ;;
  --port) port=${2:?--port needs a number}; shift ;;
  --tls) tls_cert=${2:?--tls needs a certificate and a key}; tls_key=${3:?--tls needs a certificate and a key}; shift 2 ;;
  -h | --help) sed -n '2,20p' "$0"; exit 0 ;;
  *) echo "postgres-dev: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[[ $port =~ ^[0-9]+$ ]] || { echo "postgres-dev: --port must be a number, got '$port'" >&2; exit 2; }

say() { ((env_only)) && echo "$*" >&2 || echo "$*"; }

if [[ -z $dir ]]; then
  dir="/tmp/yedi-pg-$(id -u)-$(printf '%s' "$root" | sha256sum | cut -c1-8)"
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
data="$dir/data"
socket="$dir/run"
secrets="$dir/secrets"
logs="$dir/log"
# A Unix socket's path is limited to 107 bytes; the server's is "$socket/.s.PGSQL.$port".
if ((${#socket} + 13 + ${#port} > 107)); then
  echo "postgres-dev: the socket folder $socket is too long for a Unix socket (107 bytes); use --dir with a shorter path" >&2
  exit 2
fi

if ! command -v pg_config >/dev/null || [[ ! -x "$(pg_config --bindir)/initdb" ]]; then
  echo "postgres-dev: installing postgresql-15 (Debian's package)" >&2
  sudo=""
  ((EUID == 0)) || sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql-15 postgresql-contrib >/dev/null
fi
bin=$(pg_config --bindir)
if [[ ! -x $bin/initdb || ! -x $bin/pg_ctl ]]; then
  echo "postgres-dev: no initdb/pg_ctl in $bin (pg_config --bindir); is postgresql-15 installed?" >&2
  exit 1
fi
version=$("$bin/postgres" --version | grep -o '[0-9]\+' | head -1)
[[ $version == 15 ]] || echo "postgres-dev: warning: PostgreSQL $version in $bin, 15 expected" >&2

# The server's user: `postgres` as root (initdb refuses root), else whoever runs this.
if ((EUID == 0)); then
  owner=postgres
  as_owner() { runuser -u postgres -- "$@"; }
else
  owner=$(id -un)
  as_owner() { "$@"; }
fi
mkdir -p "$data" "$socket" "$logs"
chmod 0700 "$data"
chown "$owner" "$data" "$socket" "$logs"
chmod 0755 "$socket"
# The owner must reach its folders (it cannot as `postgres` under a root-only parent).
if ! as_owner test -w "$data"; then
  echo "postgres-dev: $owner cannot write $data (a parent folder shuts it out); use --dir under /tmp" >&2
  exit 1
fi

pg_ctl() { as_owner "$bin/pg_ctl" -D "$data" "$@"; }
# The superuser speaks through the socket with peer authentication, as the server's OS user.
psql_admin() { as_owner "$bin/psql" -h "$socket" -p "$port" -U "$owner" -d postgres -v ON_ERROR_STOP=1 -qAt "$@"; }

if [[ $mode == stop ]]; then
  if [[ -f $data/PG_VERSION ]] && pg_ctl status >/dev/null 2>&1; then
    pg_ctl stop -m fast -w >/dev/null
    say "postgres-dev: stopped ($data)"
  else
    say "postgres-dev: not running ($data)"
  fi
  exit 0
fi

if [[ ! -f $data/PG_VERSION ]]; then
  say "postgres-dev: creating a cluster in $data"
  as_owner "$bin/initdb" -D "$data" -U "$owner" -E UTF8 --locale=C.UTF-8 --auth-local=peer \
    --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    echo "postgres-dev: initdb failed (its log is above)" >&2
    exit 1
  }
  # The superuser by peer; every other role by password (scram), over the socket, or over TCP from
  # loopback with TLS (only when started with --tls: otherwise nothing listens on TCP).
  as_owner sh -c "cat >'$data/pg_hba.conf'" <<EOF
local all $owner peer
local all all scram-sha-256
hostssl all all 127.0.0.1/32 scram-sha-256
EOF
fi

if ! pg_ctl status >/dev/null 2>&1; then
  # Settings on the command line, so that each start chooses them (fsync off only for tests).
  options="-c listen_addresses='' -c unix_socket_directories='$socket' -p $port -c max_connections=200"
  options+=" -c fsync=$fsync -c password_encryption=scram-sha-256"
  if [[ $fsync == off ]]; then options+=" -c synchronous_commit=off -c full_page_writes=off"; fi
  if [[ -n $tls_cert ]]; then
    # The server reads its key as its own user, and refuses a key others may read.
    mkdir -p "$dir/tls"
    cp "$tls_cert" "$dir/tls/server.pem"
    cp "$tls_key" "$dir/tls/server.key"
    chown "$owner" "$dir/tls" "$dir/tls/server.pem" "$dir/tls/server.key"
    chmod 0600 "$dir/tls/server.key"
    options+=" -c listen_addresses='127.0.0.1' -c ssl=on -c ssl_cert_file='$dir/tls/server.pem'"
    options+=" -c ssl_key_file='$dir/tls/server.key'"
  fi
  # No inherited descriptor reaches the server: a caller reading this script's output through a pipe
  # (the tests do) would otherwise wait for the server's end, not this script's.
  pg_ctl start -w -t 60 -l "$logs/server.log" -o "$options" </dev/null >"$logs/pg_ctl.log" 2>&1 || {
    cat "$logs/pg_ctl.log" >&2
    tail -n 20 "$logs/server.log" >&2
    echo "postgres-dev: the server did not start (pg_ctl's output and the end of $logs/server.log are above)" >&2
    exit 1
  }
  say "postgres-dev: started (socket $socket, port $port, fsync $fsync)"
else
  say "postgres-dev: already running ($data)"
fi

# One role and one database per service, and a password file each (0600, readable by whoever ran this).
mkdir -p "$secrets"
chmod 0700 "$secrets"
url() { echo "postgresql://$1@localhost:$port/$2?host=$socket"; }
ensure_role() { # name, then extra role attributes
  local role=$1 attributes=${2:-} file="$secrets/$1.password"
  if [[ ! -s $file ]]; then
    (umask 077 && openssl rand -hex 24 >"$file")
  fi
  chmod 0600 "$file"
  local password
  password=$(<"$file")
  local verb=alter
  [[ $(psql_admin -c "select 1 from pg_roles where rolname = '$role'") == 1 ]] || verb=create
  # The password goes through standard input into a psql variable (quoted by psql), never onto a
  # command line that `ps` shows.
  printf "\\set password '%s'\n%s role %s login %s password :'password';\n" \
    "$password" "$verb" "$role" "$attributes" | psql_admin
}
services=(account content booking chat)
# The services' roles and databases: deploy/postgres/databases.sql, the file a production cluster is set
# up with, its passwords set first on standard input.
{
  for service in "${services[@]}"; do
    file="$secrets/yedi_$service.password"
    [[ -s $file ]] || (umask 077 && openssl rand -hex 24 >"$file")
    chmod 0600 "$file"
    printf "\\set %s_password '%s'\n" "$service" "$(<"$file")"
  done
  cat "$root/deploy/postgres/databases.sql"
} | psql_admin >/dev/null
exports=()
for service in "${services[@]}"; do
  role="yedi_$service"
  upper=${service^^}
  exports+=("export YEDI_${upper}_DATABASE='$(url "$role" "$role")'")
  exports+=("export YEDI_${upper}_DATABASE_PASSWORD_FILE='$secrets/$role.password'")
  say "$service: --database '$(url "$role" "$role")' --database-password-file $secrets/$role.password"
done
# The tests' role: creates and drops its own throwaway databases (never a service's).
ensure_role yedi_test "nosuperuser createdb nocreaterole"
exports+=("export YEDI_TEST_POSTGRES_URL='$(url yedi_test postgres)'")
exports+=("export YEDI_TEST_POSTGRES_PASSWORD_FILE='$secrets/yedi_test.password'")
say "tests: YEDI_TEST_POSTGRES_URL='$(url yedi_test postgres)' YEDI_TEST_POSTGRES_PASSWORD_FILE=$secrets/yedi_test.password"
say "stop with: deploy/postgres-dev.sh --stop --dir $dir"
if ((env_only)); then printf '%s\n' "${exports[@]}"; fi
