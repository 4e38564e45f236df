#!/usr/bin/env bash
# Installs the Debian packages the build, the generator and the tests need (Debian 12, Swift toolchain
# already installed). Does nothing when they are all present.
set -euo pipefail

packages=(
  libprotobuf-c-dev protobuf-c-compiler # protobuf-c: the message codec and protoc-c
  protobuf-compiler libprotobuf-dev     # protoc: descriptor sets for the generator, interop tests
  python3 python3-protobuf              # the Swift-bindings generator (proto/generator)
  libssl-dev openssl                    # TLS (OpenSSL 3) and the dev PKI script
  libsqlite3-dev                        # each service's embedded database
  postgresql-15 postgresql-contrib      # the PostgreSQL engine's tests (deploy/postgres-dev.sh; pg_trgm)
  libvips-dev                           # ContentService's image variants (libvips 8.14, Sources/CVips)
  tzdata                                # IANA zones for BookingService's shop time zones (DST rules)
  pkg-config
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
((${#missing[@]} == 0)) && exit 0

sudo=""
if ((EUID != 0)); then sudo="sudo"; fi
echo "installing: ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
