#!/usr/bin/env bash
# Regenerates every file derived from proto/: protoc-c's C output (Sources/CProtobufC) and the Swift
# bindings (Sources/*/Generated). The output is committed; CI runs this and fails on any difference.
#
#   proto/generate.sh           # regenerate
#   proto/generate.sh --check   # regenerate into a temporary copy and fail if the committed files differ
#
# Needs protoc-c 1.4.1 (protobuf-c-compiler), protoc (protobuf-compiler, libprotobuf-dev) and Debian's
# python3-protobuf; scripts/install-deps.sh installs them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Which Swift module gets the bindings of which .proto file. The RPC envelope and health live in
# RPCCore itself; everything else goes to YediProto, which imports RPCCore for the service stubs.
modules=(
  "RPCCore=rpc.proto,health.proto"
  "YediProto=common.proto,echo.proto,account.proto,content.proto,booking.proto,chat.proto"
)

generate_into() { # output root
  local out=$1 protos=()
  for entry in "${modules[@]}"; do
    IFS=, read -ra files <<<"${entry#*=}"
    protos+=("${files[@]}")
  done

  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN

  mkdir -p "$work/c"
  (cd proto && protoc-c --c_out="$work/c" "${protos[@]}")
  (cd proto && protoc --include_imports --include_source_info --descriptor_set_out="$work/descriptors.pb" "${protos[@]}")

  local c_target="$out/Sources/CProtobufC"
  rm -rf "$c_target"
  mkdir -p "$c_target/include"
  mv "$work"/c/*.pb-c.h "$c_target/include/"
  mv "$work"/c/*.pb-c.c "$c_target/"

  local module_args=()
  for entry in "${modules[@]}"; do module_args+=(--module "$entry"); done
  /usr/bin/python3 "$root/proto/generator/swiftgen.py" \
    --descriptors "$work/descriptors.pb" \
    --c-target "$c_target" \
    --sources "$out/Sources" \
    "${module_args[@]}"
}

generated_paths=(Sources/CProtobufC Sources/RPCCore/Generated Sources/YediProto/Generated)

if [[ ${1:-} == "--check" ]]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/Sources"
  generate_into "$scratch"
  status=0
  for path in "${generated_paths[@]}"; do
    if ! diff -ru "$path" "$scratch/$path"; then status=1; fi
  done
  if ((status != 0)); then
    echo "generated code is stale: run proto/generate.sh and commit the result" >&2
    exit 1
  fi
  echo "generated code is up to date"
else
  generate_into "$root"
  echo "regenerated: ${generated_paths[*]}"
fi
