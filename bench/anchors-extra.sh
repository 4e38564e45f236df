# Plugs Yedi's echo-bench (RPCCore on the anchors' workload) into ../shared/anchors/run-anchors.sh.
# Sourced by run-anchors.sh with anchors/ as the working directory; defines what its header asks for:
# a port, a build step, and a server and a client command taking the anchors' flags.
#
#   ANCHORS_EXTRA=$PWD/bench/anchors-extra.sh IMPLS="openssl grpc ours" ../shared/anchors/run-anchors.sh
#   ... IMPLS="openssl grpc ours floor floortask"   (adds the transport floor, see echo-bench floor-server)
YEDI_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PORT[ours]=50053

build_ours() {
  (cd "$YEDI_ROOT" && swift build -c release --product echo-bench)
  YEDI_BIN=$(cd "$YEDI_ROOT" && swift build -c release --show-bin-path)
}

server_ours() { exec "$YEDI_BIN/echo-bench" server --port "$1" --cert certs/cert.pem --key certs/key.pem; }
client_ours() { "$YEDI_BIN/echo-bench" client --port "$1" --ca certs/cert.pem "${@:2}"; }

# The transport alone (NIO + RPCCore's TLSHandler + a 4-byte length prefix, no RPC layer), and the same
# with one Task.immediate per call: what this stack can reach at all, to read ours against.
PORT[floor]=50055
PORT[floortask]=50056
build_floor() { [[ -n ${YEDI_BIN:-} ]] || build_ours; }
build_floortask() { build_floor; }
server_floor() { exec "$YEDI_BIN/echo-bench" floor-server --port "$1" --cert certs/cert.pem --key certs/key.pem; }
client_floor() { "$YEDI_BIN/echo-bench" floor-client --port "$1" --ca certs/cert.pem "${@:2}"; }
server_floortask() {
  exec "$YEDI_BIN/echo-bench" floor-server --task-per-call --port "$1" --cert certs/cert.pem --key certs/key.pem
}
client_floortask() { client_floor "$@"; }

# The services' authentication on the same workload (issue 25): the interceptor with Echo open to
# anonymous callers, and with Echo needing a user's token (cached verification). Read oursauth as a
# fraction of oursanon, measured in the same run.
PORT[oursanon]=50057
PORT[oursauth]=50058
build_oursanon() { [[ -n ${YEDI_BIN:-} ]] || build_ours; }
build_oursauth() { build_oursanon; }
server_oursanon() {
  exec "$YEDI_BIN/echo-bench" server --auth anyone --token-file certs/bench-token-anon \
    --port "$1" --cert certs/cert.pem --key certs/key.pem
}
client_oursanon() { client_ours "$@"; }
server_oursauth() {
  exec "$YEDI_BIN/echo-bench" server --auth user --token-file certs/bench-token \
    --port "$1" --cert certs/cert.pem --key certs/key.pem
}
client_oursauth() { client_ours "$@" --token-file certs/bench-token; }

# The RPC core as it was at 4b41267, the last commit before the hardening work (issue 25's A/B): built
# once from a worktree under .build/, so old and new run in the same round on the same machine.
PORT[ours-4b41267]=50059
OLD_REV=4b41267
OLD_TREE=$YEDI_ROOT/.build/anchors-$OLD_REV
build_ours-4b41267() {
  [[ -d $OLD_TREE ]] || git -C "$YEDI_ROOT" worktree add --detach "$OLD_TREE" "$OLD_REV" >&2
  (cd "$OLD_TREE" && swift build -c release --product echo-bench)
  OLD_BIN=$(cd "$OLD_TREE" && swift build -c release --show-bin-path)
}
server_ours-4b41267() { exec "$OLD_BIN/echo-bench" server --port "$1" --cert certs/cert.pem --key certs/key.pem; }
client_ours-4b41267() { "$OLD_BIN/echo-bench" client --port "$1" --ca certs/cert.pem "${@:2}"; }
