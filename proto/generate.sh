#!/usr/bin/env bash
# Regenerates every file derived from proto/: protoc-c's C output (Sources/CProtobufC) and the Swift
# bindings (Sources/*/Generated). The output is committed; CI runs this and fails on any difference.
#
#   proto/generate.sh           # regenerate
#   proto/generate.sh --check   # regenerate into a temporary copy and fail if the committed files differ
#
# Access rules and field sizes (proto/access.proto) are custom method and field options. protoc reads the real files (the Swift
# generator needs the options); protoc-c gets copies without them: protoc-c 1.4.1 would #include a
# descriptor.pb-c.h that does not exist for a file importing descriptor.proto, and protobuf-c keeps no
# method options anyway, so its output is the same without them. access.proto itself has no C code.
#
# Needs protoc-c 1.4.1 (protobuf-c-compiler), protoc (protobuf-compiler, libprotobuf-dev) and Debian's
# python3-protobuf; scripts/install-deps.sh installs them.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Which Swift module gets the bindings of which .proto file. The RPC envelope and health live in
# RPCCore itself; everything else goes to YediProto, which imports RPCCore for the service stubs and
# RPCAccess for their access rules.
modules=(
  "RPCCore=rpc.proto,health.proto"
  "YediProto=common.proto,echo.proto,account.proto,content.proto,booking.proto,chat.proto,runtime.proto,moderation.proto,slp.proto,housetainer.proto,zipadoo.proto"
)

# Copies `proto/<file>` for protoc-c into <dir> without the access rules and field sizes: the
# `import "access.proto";` line, every `option (yedi.rpc.…) = …;` line and every field's
# `[(yedi.rpc.…) = …]`. Fails if an option is left (one not written that way), so protoc-c never sees a
# half-stripped file.
strip_access_rules() { # dir files...
  local dir=$1
  shift
  for file in "$@"; do
    sed -E -e '/^[[:space:]]*import "access\.proto";[[:space:]]*$/d' \
      -e '/^[[:space:]]*option \(yedi\.rpc\.[a-z_]+\) = [^;]*;[[:space:]]*(\/\/.*)?$/d' \
      -e 's/[[:space:]]*\[\(yedi\.rpc\.[^]]*\][[:space:]]*;/;/' \
      "proto/$file" >"$dir/$file"
    if grep -nE 'access\.proto|\(yedi\.rpc\.' "$dir/$file" >&2; then
      echo "proto/$file: put each access option alone on its own line, field sizes in [...] before the ;" >&2
      return 1
    fi
  done
}

generate_into() { # output root
  local out=$1 protos=()
  for entry in "${modules[@]}"; do
    IFS=, read -ra files <<<"${entry#*=}"
    protos+=("${files[@]}")
  done

  local work
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN

  mkdir -p "$work/c" "$work/c-input"
  strip_access_rules "$work/c-input" "${protos[@]}"
  (cd "$work/c-input" && protoc-c --c_out="$work/c" "${protos[@]}")
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
    --limits-doc "$out/docs/services.md" \
    "${module_args[@]}"
}

# docs/services.md is written, not generated: only its field-limits table is (between its markers).
generated_paths=(Sources/CProtobufC Sources/RPCCore/Generated Sources/YediProto/Generated docs/services.md)

if [[ ${1:-} == "--check" ]]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/Sources" "$scratch/docs"
  cp docs/services.md "$scratch/docs/services.md"
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
