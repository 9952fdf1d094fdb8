#!/usr/bin/env bash
# The hybrid KEMs through the daemon (Batch and Stream) beside ML-KEM-768 alone, interleaved
# rounds: ops/s and the daemon's CPU per operation (pqc-load --server-pid). The daemon runs pinned
# to CPU 0 on a Unix socket, pqc-load on CPU 1; it stops by itself.
#   bench/hybrids_daemon.sh          (B=BUILD_DIR, default build-main; ROUNDS, default 2)
set -euo pipefail
B=${B:-build-main}
rounds=${ROUNDS:-2}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
taskset -c 0 "$B"/server/pqcd --unix "$dir"/s.sock --unix-mode 0600 --allow-insecure-tcp --listen none --log-level warn > "$dir"/log 2>&1 &
pid=$!
sleep 3
for round in $(seq "$rounds"); do
  for style in batch stream; do
    for op in ML-KEM-768:encaps X25519MLKEM768:encaps X-Wing:encaps SecP256r1MLKEM768:encaps ML-KEM-768:decaps X25519MLKEM768:decaps X-Wing:decaps SecP256r1MLKEM768:decaps; do
      out=$(taskset -c 1 "$B"/bench/pqc-load -t "unix:$dir/s.sock" --op "$op" --style "$style" --batch-size 16 --inflight 32 -c 4 -d 3s -w 500ms --server-pid "$pid" --json -q)
      echo "$round $style $op $(python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(json.dumps({k:d[k] for k in d if k in ("ops_per_second","server_cpu_us_per_op","ops")}))' <<<"$out")"
    done
  done
done
kill "$pid"
wait "$pid" || true
