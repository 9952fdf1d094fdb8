#!/usr/bin/env bash
# run_interop.sh node|python PQCD_BINARY SOURCE_DIR WORK_DIR
# Starts the real pqcd on a free loopback port, runs the Node.js or Python client against it and
# returns the client's exit status. Exit 77 (ctest SKIP) only when node/npm are not installed.
set -euo pipefail
lang=$1 pqcd=$2 src=$3 work=$4
mkdir -p "$work"

if [[ $lang == node ]]; then
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "SKIP: node and npm are required for the Node.js interop test (not found on PATH)"
    exit 77
  fi
  nodedir=$work/node
  mkdir -p "$nodedir"
  cp "$src/tests/interop/node/interop.mjs" "$nodedir/"
  if ! cmp -s "$src/tests/interop/node/package.json" "$nodedir/package.json" ||
     [[ ! -d $nodedir/node_modules ]]; then
    cp "$src/tests/interop/node/package.json" "$nodedir/"
    (cd "$nodedir" && npm install --no-audit --no-fund --loglevel=error)
  fi
fi

run=$(mktemp -d "${TMPDIR:-/tmp}/pqcd-interop.XXXXXX")
pid=
cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$run"
}
trap cleanup EXIT

"$pqcd" --listen 127.0.0.1:0 --port-file "$run/port" --metrics-listen 127.0.0.1:0 --workers 2 \
  2>"$run/pqcd.log" &
pid=$!
for _ in $(seq 300); do
  [[ -s $run/port ]] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "pqcd exited early:"; cat "$run/pqcd.log"; exit 1
  fi
  sleep 0.1
done
if [[ ! -s $run/port ]]; then echo "pqcd did not write its port file"; cat "$run/pqcd.log"; exit 1; fi
target=127.0.0.1:$(head -n1 "$run/port" | tr -d '[:space:]')
echo "pqcd listening on $target"

status=0
case $lang in
  node)
    PQCD_TARGET=$target PQCD_PROTO_DIR=$src/proto node "$nodedir/interop.mjs" || status=$?
    ;;
  python)
    /usr/bin/python3 "$src/client/examples/python/pqc_client.py" --target "$target" \
      --proto-dir "$src/proto" || status=$?
    # A target where nothing listens: a message naming --target and exit 3 within the connect
    # timeout, not a bare traceback after 30 s.
    dead_rc=0
    /usr/bin/python3 "$src/client/examples/python/pqc_client.py" --target 127.0.0.1:1 \
      --proto-dir "$src/proto" --connect-timeout 1 >"$run/dead.out" 2>&1 || dead_rc=$?
    if [[ $dead_rc -ne 3 ]] || ! grep -q -- "--target" "$run/dead.out" ||
      grep -q "Traceback" "$run/dead.out"; then
      echo "pqc_client.py against a dead target: exit $dead_rc, said:"; cat "$run/dead.out"
      status=1
    fi
    ;;
  *) echo "unknown language $lang"; exit 2 ;;
esac
if [[ $status -ne 0 ]]; then echo "--- pqcd log ---"; tail -50 "$run/pqcd.log"; fi
exit $status
