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
