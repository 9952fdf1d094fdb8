#!/usr/bin/env bash
# Runs lane/examples/python/lane_example.py (ctypes over libpqcd_lane.so) against a real pqcd on a
# Unix socket in a temporary directory.
#   run_lane_python_example.sh PQCD_BINARY LIBPQCD_LANE EXAMPLE
set -euo pipefail
pqcd=$1 lib=$2 example=$3
dir=$(mktemp -d)
pid=
cleanup() {
  if [[ -n $pid ]]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
"$pqcd" --listen none --metrics-listen none --unix "$dir/pqcd.sock" --log-level warn \
  2>"$dir/pqcd.log" &
pid=$!
for _ in $(seq 1 600); do  # up to 60 s (ASan, emulators)
  [[ -S $dir/pqcd.sock.lane ]] && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/pqcd.log" >&2; exit 1; }
  sleep 0.1
done
[[ -S $dir/pqcd.sock.lane ]] || { echo "no lane socket after 60 s" >&2; cat "$dir/pqcd.log" >&2; exit 1; }
python3 "$example" --socket "$dir/pqcd.sock" --lib "$lib"
