#!/usr/bin/env bash
# Issue 24 reproduction: one customer sends a chat message of ONE grapheme and 3.5 MB ("e" and 1.75
# million combining accents), then the designer reads the room's newest history page. Prints the send's
# answer, the history page's answer, its size and time, and ChatService's resident memory before and
# after. Before byte limits the message was stored as "1 character" and the page failed for both members
# (a 4.5 MB reply over the frame limit); after, the send is refused naming the field and its limit.
#
#   bench/repro-huge-text.sh                                   # this checkout's debug build
#   BIN=/path/to/other/.build/debug bench/repro-huge-text.sh   # another build (before)
#
# Needs: built AccountService, ChatService and yedi-probe (swift build), openssl, python3.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${BIN:-$(cd "$root" && swift build --show-bin-path)}
probe=${PROBE_BIN:-$bin/yedi-probe}
account_port=${ACCOUNT_PORT:-17201}
chat_port=${CHAT_PORT:-17204}

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT

"$root/deploy/dev-pki.sh" "$work/pki" >/dev/null
export YEDI_PKI=$work/pki
peers=(--peer "account=127.0.0.1:$account_port" --peer "chat=127.0.0.1:$chat_port"
    --peer content=127.0.0.1:1 --peer booking=127.0.0.1:1)
"$bin/AccountService" --port "$account_port" --metrics-port 0 --data "$work/account" --pki "$work/pki" \
    --log-level error "${peers[@]}" >"$work/account.log" 2>&1 &
pids+=($!)
"$bin/ChatService" --port "$chat_port" --metrics-port 0 --data "$work/chat" --pki "$work/pki" \
    --log-level error "${peers[@]}" >"$work/chat.log" 2>&1 &
chat_pid=$!
pids+=("$chat_pid")
for port in "$account_port" "$chat_port"; do
    for _ in $(seq 150); do "$probe" health "127.0.0.1:$port" >/dev/null 2>&1 && break; sleep 0.2; done
done

account=127.0.0.1:$account_port chat=127.0.0.1:$chat_port
rss() { awk '/VmRSS/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$chat_pid/status"; }
millis() { date +%s%3N; }
# SignUp, then CompleteSignUp with the code the development sender wrote; prints the access token.
sign_up() {
    local id
    id=$("$probe" call "$account" yedi.account.AccountService/SignUp "$1" --field verificationId)
    "$probe" call "$account" yedi.account.AccountService/CompleteSignUp --field session.accessToken \
        "{\"verificationId\": \"$id\", \"code\": \"$("$probe" sent-mail --folder "$work/account/sent-mail" \
            --verification-id "$id" --value code)\"}"
}
designer=$(sign_up '{"email": "d@example.com",
  "password": "scissors99", "name": "Designer", "phone": "01098765432", "gender": "GENDER_MALE",
  "birthDate": {"year": 1988, "month": 11, "day": 3}, "role": "ROLE_DESIGNER", "designer": {
  "rank": "DESIGNER_RANK_PRINCIPAL", "shop": {"name": "Shop", "phone": "0255551234",
  "address": {"city": "Seoul", "district": "Gangnam", "detail": "3F"}}}}')
designer_id=$("$probe" call "$account" yedi.account.AccountService/GetMe --token "$designer" --field id)
customer=$(sign_up '{"email": "c@example.com",
  "password": "hair2024!", "name": "Customer", "phone": "01012345678", "gender": "GENDER_FEMALE",
  "birthDate": {"year": 1995, "month": 4, "day": 12}, "role": "ROLE_CUSTOMER"}')
room=$("$probe" call "$chat" yedi.chat.ChatService/OpenRoom --token "$customer" \
    "{\"designerId\": \"$designer_id\"}" --field room.id)

python3 - "$room" >"$work/huge.json" <<'PY'
import json, sys
text = "e" + "\u0301" * 1_750_000
print(json.dumps({"roomId": sys.argv[1], "clientMessageId": "huge", "text": {"text": text}}, ensure_ascii=False))
PY
echo "message: 1 grapheme, $(python3 -c 'print(len(("e" + "\u0301" * 1_750_000).encode()))') bytes of UTF-8"
echo "ChatService RSS before: $(rss)"
send_exit=0
send=$("$probe" call "$chat" yedi.chat.ChatService/SendMessage --token "$customer" "@$work/huge.json" 2>&1 >/dev/null) ||
    send_exit=$?
echo "send: exit $send_exit ${send:+($(head -c 200 <<<"$send"))}"
start=$(millis)
page_exit=0
"$probe" call "$chat" yedi.chat.ChatService/ListMessages --token "$designer" "{\"roomId\": \"$room\"}" \
    >"$work/page.json" 2>"$work/page.err" || page_exit=$?
end=$(millis)
echo "designer's newest history page: exit $page_exit, $(wc -c <"$work/page.json") bytes of JSON, $((end - start)) ms" \
    "$(head -c 200 "$work/page.err")"
echo "ChatService RSS after: $(rss)"
