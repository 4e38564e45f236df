#!/usr/bin/env bash
# Issue 24 reproduction: what an anonymous sign-in flood costs AccountService, and what it does to a
# legitimate sign-in from another address.
#
# Starts one AccountService (production scrypt cost) on a throwaway PKI and data folder, signs a user
# up, times a lone sign-in, then sends FLOOD concurrent sign-ins (wrong passwords, unknown emails)
# from 127.0.0.1 and, FLOOD_HEAD seconds into the flood, times the user's sign-in from this machine's
# other address (LEGIT_IP, connecting to itself: the kernel gives that source address). Prints the
# service's CPU-seconds (/proc) from the flood's start to its last answer and in the 5 s after, both
# latencies and the flood's answers. The 120 yedi-probe processes load the machine too: read the
# figures against each other (before/after on the same machine), not as absolutes.
#
#   bench/repro-signin-flood.sh                                  # this worktree's debug build
#   ACCOUNT_BIN=/path/to/main/AccountService bench/repro-signin-flood.sh     # another build (before)
#
# Needs: a built AccountService and yedi-probe (swift build), openssl, a non-loopback IPv4 address.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BIN:-$(cd "$root" && swift build --show-bin-path)}
account=${ACCOUNT_BIN:-$bin/AccountService}
probe=${PROBE_BIN:-$bin/yedi-probe}
flood=${FLOOD:-120}
head_seconds=${FLOOD_HEAD:-1}
port=${PORT:-17001}
legit_ip=${LEGIT_IP:-$(hostname -I | tr ' ' '\n' | grep -E '^[0-9.]+$' | grep -v '^127\.' | head -1)}
[[ -n $legit_ip ]] || { echo "repro: no non-loopback IPv4 address; set LEGIT_IP" >&2; exit 1; }

work=$(mktemp -d)
pid=
cleanup() {
    [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

# The dev PKI, with the account certificate also naming LEGIT_IP.
"$root/deploy/dev-pki.sh" "$work/pki" >/dev/null
cat >"$work/account.ext" <<EXT
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:account-service, DNS:localhost, IP:127.0.0.1, IP:$legit_ip, URI:spiffe://yedi/service/account
EXT
openssl req -new -sha256 -key "$work/pki/account.key" -subj "/O=Yedi/CN=account-service" -out "$work/account.csr" 2>/dev/null
openssl x509 -req -sha256 -days 2 -in "$work/account.csr" -CA "$work/pki/ca.pem" -CAkey "$work/pki/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -extfile "$work/account.ext" -out "$work/pki/account.pem" 2>/dev/null

"$account" --host 0.0.0.0 --port "$port" --metrics-port 0 --data "$work/data" --pki "$work/pki" \
    --log-level error --peer content=127.0.0.1:1 --peer booking=127.0.0.1:1 --peer chat=127.0.0.1:1 \
    >"$work/service.log" 2>&1 &
pid=$!
export YEDI_PKI=$work/pki
for _ in $(seq 100); do
    "$probe" health "127.0.0.1:$port" yedi.account.AccountService >/dev/null 2>&1 && break
    sleep 0.2
done

call() { "$probe" call "$1:$port" "yedi.account.AccountService/$2" "$3" >/dev/null 2>&1; }
millis() { date +%s%3N; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
legit_sign_in() {
    local start end
    start=$(millis)
    call "$legit_ip" SignIn '{"email": "owner@example.com", "password": "hair2024!"}' || echo "legitimate sign-in FAILED (exit $?)" >&2
    end=$(millis)
    echo $((end - start))
}

# Sign-up is SignUp, then CompleteSignUp with the code the development sender wrote to <data>/sent-mail.
sign_up_id=$("$probe" call "$legit_ip:$port" yedi.account.AccountService/SignUp '{"email": "owner@example.com",
    "password": "hair2024!", "name": "Owner", "phone": "010-1234-5678", "gender": "GENDER_FEMALE",
    "birthDate": {"year": 1995, "month": 4, "day": 12}, "role": "ROLE_CUSTOMER"}' --field verificationId) &&
    code=$("$probe" sent-mail --folder "$work/data/sent-mail" --verification-id "$sign_up_id" --value code) &&
    call "$legit_ip" CompleteSignUp "{\"verificationId\": \"$sign_up_id\", \"code\": \"$code\"}" ||
    { echo "repro: sign-up failed" >&2; cat "$work/service.log" >&2; exit 1; }
alone=$(legit_sign_in)

ticks_before=$(cpu_ticks)
for i in $(seq "$flood"); do
    (
        code=0
        call 127.0.0.1 SignIn "{\"email\": \"victim$i@example.com\", \"password\": \"guess${i}x1\"}" || code=$?
        echo "$code" >"$work/flood.$i"
    ) &
done
sleep "$head_seconds"
during=$(legit_sign_in)
wait $(jobs -p | grep -v "^$pid\$") 2>/dev/null || true
answered=$(cpu_ticks)
sleep 5
after=$(cpu_ticks)
hz=$(getconf CLK_TCK)
seconds() { awk -v t="$1" -v hz="$hz" 'BEGIN { printf "%.1f", t / hz }'; }

echo "flood: $flood sign-ins from 127.0.0.1; legitimate sign-ins from $legit_ip"
echo "AccountService CPU from the flood's start to its last answer: $(seconds $((answered - ticks_before))) s;" \
    "in the 5 s after: $(seconds $((after - answered))) s"
echo "legitimate sign-in alone: ${alone} ms; during the flood: ${during} ms"
echo "flood answers (yedi-probe exit: 26 UNAUTHENTICATED, 18 RESOURCE_EXHAUSTED, 14 DEADLINE_EXCEEDED):"
cat "$work"/flood.* | sort | uniq -c | sed 's/^/  /'
