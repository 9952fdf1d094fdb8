#!/usr/bin/env bash
# Runs a client example against a real pqcd on a free loopback port.
#   run_example.sh PQCD_BINARY EXAMPLE_BINARY
set -euo pipefail
pqcd=$1
example=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/pqcd-example.XXXXXX")
"$pqcd" --listen 127.0.0.1:0 --port-file "$dir/port" --metrics-listen none --workers 1 \
  --log-level warn 2>"$dir/pqcd.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 300); do
  [[ -s $dir/port ]] && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/pqcd.log" >&2; exit 1; }
  sleep 0.1
done
port=$(head -n 1 "$dir/port")
[[ -n $port ]] || { echo "pqcd did not report its port" >&2; cat "$dir/pqcd.log" >&2; exit 1; }
"$example" "127.0.0.1:$port"
# --help is the usage, not a target (exit 0); a stray option is a usage error (exit 2).
usage=$("$example" --help)
[[ $usage == usage:* ]] || { echo "$example --help printed no usage: $usage" >&2; exit 1; }
rc=0
"$example" --bogus 2>/dev/null || rc=$?
[[ $rc -eq 2 ]] || { echo "$example --bogus: exit $rc, expected 2" >&2; exit 1; }
