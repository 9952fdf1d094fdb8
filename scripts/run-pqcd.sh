#!/usr/bin/env bash
# Sets up a Debian 12 machine, builds pqcd (Release) and runs the daemon in the foreground with
# sensible defaults: gRPC on 127.0.0.1:50051, metrics on 127.0.0.1:9464/metrics, memory-only keys.
# Extra arguments are passed to pqcd (see `pqcd --help`), e.g. scripts/run-pqcd.sh --unix /tmp/pqcd.sock
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --runtime-only
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target pqcd pqc
exec build/server/pqcd "$@"
