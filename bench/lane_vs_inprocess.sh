#!/usr/bin/env bash
# One operation over a shared-memory lane beside the engine in-process, strictly alternated
# (issue 29): pqcd --workers 1 pinned to CPU 1, pqc-load --style lane on CPU 0; the in-process
# run on both CPUs. Prints, per repeat, ops/s and CPU µs per operation of each, and their ratios.
#
#   bench/lane_vs_inprocess.sh [BUILD=build] [OP=ML-KEM-768:decaps] [KEY=held] [REPEATS=5] [C=32]
#
# Loopback only: a Unix socket in a temporary directory; every run stops by itself.
set -euo pipefail
build=${1:-build} op=${2:-ML-KEM-768:decaps} key=${3:-held} repeats=${4:-5} c=${5:-32}
load=$build/bench/pqc-load
dir=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
field() { python3 -c "import json,sys; j=json.load(sys.stdin); print(j['ops_per_second'], j['server_cpu_us_per_op'])"; }
echo "repeat lane_ops lane_cpu_us inproc_ops inproc_cpu_us cpu_ratio ops_ratio"
for rep in $(seq 1 "$repeats"); do
  rm -f "$dir"/p.sock*
  taskset -c 1 "$build/server/pqcd" --listen none --unix "$dir/p.sock" --metrics-listen none \
    --workers 1 --log-level warn 2>"$dir/pqcd.log" &
  pid=$!
  for _ in $(seq 1 200); do [[ -S $dir/p.sock.lane ]] && break; sleep 0.05; done
  read -r lops lcpu < <(taskset -c 0 "$load" --target "unix:$dir/p.sock" --style lane -c "$c" \
    --duration 2s --warmup 0.5s --op "$op" --private-key "$key" --server-pid "$pid" --json -q | field)
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  read -r iops icpu < <(taskset -c 0,1 "$load" --in-process --workers 1 -c "$c" --duration 2s \
    --warmup 0.5s --op "$op" --private-key "$key" --json -q | field)
  python3 -c "print('$rep', round($lops), round($lcpu, 2), round($iops), round($icpu, 2), round($lcpu / $icpu, 2), round($lops / $iops, 2))"
done
