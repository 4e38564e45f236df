#!/usr/bin/env bash
# Formats every hand-written Swift file with the toolchain's swift-format (.swift-format).
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files --cached --others --exclude-standard '*.swift' | grep -v '/Generated/' | xargs swift format format --in-place --parallel
