#!/usr/bin/env bash
# Reproduces issue 24's "memory is budgeted at admission only": a client sends 64 requests for 4 MiB
# replies and never reads them; prints how much the server process's resident memory grew (16 MiB
# budget), then that a peer whose replies stall is dropped. Runs UnreadRepliesTests (the figures are
# its printed lines); build first with `swift build --build-tests`.
#   Before replies were budgeted: +499 MiB, all 64 handlers run. After: +16 MiB, 3 run.
set -euo pipefail
cd "$(dirname "$0")/.."
swift test --skip-build --filter RPCCoreTests.UnreadRepliesTests 2>&1 |
  grep -E "unread replies|stalled peer|error:|Executed .* tests"
