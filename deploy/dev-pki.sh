#!/usr/bin/env bash
# Makes the Yedi development PKI with the openssl CLI: a CA, one certificate per service (usable as
# both TLS server and TLS client, since services call each other), one client certificate for the
# CLI probe and one for the operator's calls through it (operator.pem: DevClock). All keys are ECDSA
# P-256, all signatures SHA-256. Also the access token signing key
# (Ed25519): token-signing.key (PKCS#8) and token-signing.pub.pem, which services verify tokens with.
#
# Usage: deploy/dev-pki.sh [DIR]     (DIR defaults to deploy/pki, which git ignores)
#
# Idempotent: files that exist are left alone; only what is missing is made. A leaf certificate
# that no longer verifies against the CA in DIR (say the CA was deleted and remade) is re-issued,
# keeping its key. Private keys are written mode 0600. NOT for production.
set -euo pipefail

readonly SERVICES=(account content booking chat)
readonly PROBE=yedi-probe
readonly CA_DAYS=3650
readonly LEAF_DAYS=366  # at most a year: a leaked dev key stops working soon

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pki_dir="${1:-${script_dir}/pki}"

command -v openssl >/dev/null || {
    echo "dev-pki: the openssl CLI is required (apt-get install openssl)" >&2
    exit 1
}

mkdir -p "$pki_dir"
chmod 0700 "$pki_dir"
work_dir="$(mktemp -d)"
trap 'rm -rf "$work_dir"' EXIT

made=()

# quiet CMD...: runs CMD, showing its chatter only if it fails.
quiet() {
    if ! "$@" >"$work_dir/log" 2>&1; then
        cat "$work_dir/log" >&2
        echo "dev-pki: failed: $*" >&2
        exit 1
    fi
}

# new_key FILE: an ECDSA P-256 private key, mode 0600, unless FILE exists.
new_key() {
    local key="$1"
    [[ -s "$key" ]] && return 0
    (umask 077 && quiet openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$key")
    chmod 0600 "$key"
    made+=("$key")
}

# make_ca: the self-signed development CA (ca.key, ca.pem).
make_ca() {
    local key="$pki_dir/ca.key" cert="$pki_dir/ca.pem"
    if [[ -s "$cert" && ! -s "$key" ]]; then
        echo "dev-pki: $cert exists but its key $key is missing; delete $cert to make a new CA" >&2
        exit 1
    fi
    [[ -s "$cert" && -s "$key" ]] && return 0
    rm -f "$cert"
    new_key "$key"
    quiet openssl req -new -x509 -sha256 -days "$CA_DAYS" -key "$key" -out "$cert" \
        -subj "/O=Yedi/CN=Yedi Development CA" \
        -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -addext "subjectKeyIdentifier=hash"
    made+=("$cert")
}

# make_leaf NAME CN SAN EKU: NAME.key and NAME.pem signed by the CA, unless a valid pair exists.
make_leaf() {
    local name="$1" cn="$2" san="$3" eku="$4"
    local key="$pki_dir/$name.key" cert="$pki_dir/$name.pem"
    new_key "$key"
    if [[ -s "$cert" ]] && openssl verify -CAfile "$pki_dir/ca.pem" "$cert" >/dev/null 2>&1; then
        return 0
    fi
    local ext="$work_dir/$name.ext" csr="$work_dir/$name.csr"
    cat >"$ext" <<EOF
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = $eku
subjectAltName = $san
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
    quiet openssl req -new -sha256 -key "$key" -subj "/O=Yedi/CN=$cn" -out "$csr"
    quiet openssl x509 -req -sha256 -days "$LEAF_DAYS" -in "$csr" -CA "$pki_dir/ca.pem" -CAkey "$pki_dir/ca.key" \
        -set_serial "0x$(openssl rand -hex 16)" -extfile "$ext" -out "$cert"
    made+=("$cert")
}

# make_token_key: the Ed25519 key access tokens are signed with (token-signing.key, 0600) and its
# public half (token-signing.pub.pem), each made only if missing. A public file that is not the
# key's own (the key was replaced) is remade from the key.
make_token_key() {
    local key="$pki_dir/token-signing.key" pub="$pki_dir/token-signing.pub.pem"
    if [[ ! -s "$key" ]]; then
        (umask 077 && quiet openssl genpkey -algorithm ED25519 -out "$key")
        chmod 0600 "$key"
        made+=("$key")
    fi
    quiet openssl pkey -in "$key" -pubout -out "$work_dir/token-signing.pub.pem"
    if ! cmp -s "$work_dir/token-signing.pub.pem" "$pub"; then
        cp "$work_dir/token-signing.pub.pem" "$pub"
        chmod 0644 "$pub"
        made+=("$pub")
    fi
}

make_ca
for service in "${SERVICES[@]}"; do
    make_leaf "$service" "$service-service" \
        "DNS:$service-service, DNS:localhost, IP:127.0.0.1, URI:spiffe://yedi/service/$service" \
        "serverAuth, clientAuth"
done
make_leaf "$PROBE" "$PROBE" "URI:spiffe://yedi/client/$PROBE" "clientAuth"
# The operator's certificate, for the probe's operator-only calls (yedi.runtime.DevClock): a client-only
# service identity that no service process runs as.
make_leaf operator operator "URI:spiffe://yedi/service/operator" "clientAuth"
make_token_key

if ((${#made[@]} == 0)); then
    echo "dev-pki: $pki_dir is complete; nothing to do"
else
    printf 'dev-pki: made %s\n' "${made[@]}"
fi
