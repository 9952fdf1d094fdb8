#!/usr/bin/env bash
# grpc_floor (bench/grpc_floor.cc) on a free loopback port and a Unix socket, in three
# configurations (--api async; --api callback; --api async with 3 CQ threads and glibc's malloc):
#   - pqc-load must report no errors: unary, batch, stream (packed, and single-form where pqc-load
#     has --pack) for ML-KEM-768 decaps, then mixes that need KeyGen, Encaps, Sign and Hash
#     answers too; where pqc-load has --server-pid, its report must carry the server's CPU per
#     operation, above zero in a run of fixed duration;
#   - python3 grpcio, where installed, checks answer sizes, Batch, HashStream UNIMPLEMENTED and both
#     Stream forms (a packed request answered by one packed response), 1,000 messages deep;
#   - SIGTERM or SIGINT must stop the server with exit status 0 and remove the socket.
# No timing is asserted.
#   run_floor.sh GRPC_FLOOR PQC_LOAD [PROTO_DIR [PROTOC]]
set -euo pipefail
floor=$1
load=$2
proto_dir=${3:-}
protoc=${4:-}
[[ -n $protoc ]] || protoc=$(command -v protoc || true)
dir=$(mktemp -d "${TMPDIR:-/tmp}/grpc-floor.XXXXXX")
pid=
cleanup() {
  if [[ -n $pid ]]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  [[ -f $dir/floor.err ]] && cat "$dir/floor.err" >&2
  exit 1
}

# Flags newer pqc-loads have: the server's CPU per operation, and Stream packing (its default
# packs; --pack 1 is the single form).
help=$("$load" --help)
server_pid_flag=0
grep -q -- '--server-pid' <<<"$help" && server_pid_flag=1
pack_flag=0
grep -q -- '--pack' <<<"$help" && pack_flag=1

# A python3 with grpcio and protobuf, and the messages compiled for it (no grpc_tools needed: the
# test calls methods by name with the messages' own serializers). The system's interpreter is
# tried first: it is the one Debian's python3-grpcio serves, and a version manager's shim in
# front of it can take seconds to start, once per report checked.
py=
for cand in /usr/bin/python3 python3; do
  if "$cand" -c 'import grpc, google.protobuf' 2>/dev/null; then
    py=$cand
    break
  fi
done
pyjson=${py:-python3}
[[ -n $proto_dir && -n $protoc ]] || py=
if [[ -n $py ]]; then
  mkdir -p "$dir/py"
  "$protoc" --proto_path="$proto_dir" --python_out="$dir/py" pqc/v1/common.proto pqc/v1/crypto.proto
else
  echo "note: no python3 with grpcio (or no protoc): the packed-Stream checks are skipped"
fi

# load_run TARGET STYLE OP [FLAGS...]: one pqc-load run of 200 requests that must succeed with 0
# errors. With --server-pid the report must carry server_cpu_us_per_op; it must be above zero only
# in runs of a fixed duration (load_run ... --duration 500ms), since /proc counts CPU in 10 ms ticks
# and 200 packed operations can cost the server less than one.
load_run() {
  local target=$1 style=$2 op=$3 extra=("${@:4}") timed=0
  [[ " ${extra[*]} " == *" --duration "* ]] && timed=1 || extra+=(--requests 200)
  ((server_pid_flag)) && extra+=(--server-pid "$pid")
  "$load" --targets "$target" --op "$op" --warmup 0 --style "$style" --concurrency 4 \
    --batch-size 16 --inflight 32 --timeout 10 --json --quiet "${extra[@]}" \
    >"$dir/report.json" 2>"$dir/load.err" ||
    { cat "$dir/report.json" "$dir/load.err" >&2; fail "pqc-load $style $op on $target"; }
  "$pyjson" - "$dir/report.json" "$server_pid_flag" "$timed" <<'EOF' ||
import json, sys
r = json.load(open(sys.argv[1]))
assert r["error_total"] == 0, r["errors"]
assert r["requests"] >= (1 if sys.argv[3] == "1" else 200) and r["ops"] >= r["requests"], r
if sys.argv[2] == "1":
    cpu = r["server_cpu_us_per_op"]
    assert cpu is not None and (cpu > 0 or sys.argv[3] == "0"), cpu
EOF
    fail "report of $style $op on $target ${extra[*]}"
}

# Each server configuration, and the signal that must stop it.
configs=("--api async:TERM" "--api callback:INT" "--api async --threads 3 --malloc default:TERM")
for config in "${configs[@]}"; do
  args=${config%:*} signal=${config##*:}
  sock=$dir/floor.sock
  # shellcheck disable=SC2086 # args are words
  "$floor" $args --listen 127.0.0.1:0 --unix "$sock" >"$dir/floor.out" 2>"$dir/floor.err" &
  pid=$!
  for _ in $(seq 1 100); do
    grep -q 'listening on' "$dir/floor.out" && break
    kill -0 "$pid" 2>/dev/null || fail "grpc_floor $args did not start"
    sleep 0.1
  done
  port=$(sed -n 's/^grpc_floor: listening on 127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$dir/floor.out")
  [[ -n $port && $port != 0 ]] || fail "no port in: $(cat "$dir/floor.out")"
  [[ -S $sock ]] || fail "no Unix socket at $sock"

  for target in "127.0.0.1:$port" "unix:$sock"; do
    for style in unary batch stream; do
      load_run "$target" "$style" ML-KEM-768:decaps=100
    done
    ((pack_flag)) && load_run "$target" stream ML-KEM-768:decaps=100 --pack 1
    load_run "$target" unary ML-KEM-768:decaps=100 --duration 500ms
  done
  load_run "127.0.0.1:$port" unary \
    ML-KEM-768:keygen,ML-KEM-768:encaps,ML-DSA-65:sign,ML-DSA-65:verify,SHA3-256:hash
  load_run "unix:$sock" stream ML-KEM-512:decaps,ML-DSA-87:verify,SHAKE256:hash

  if [[ -n $py ]]; then
    "$py" - "$dir/py" "127.0.0.1:$port" "unix:$sock" <<'EOF' || fail "python checks, $args"
import sys
sys.path.insert(0, sys.argv[1])
import grpc
from pqc.v1 import common_pb2 as cm, crypto_pb2 as c

for target in sys.argv[2:]:
    ch = grpc.insecure_channel(target)
    def unary(name, rq, rs):
        return ch.unary_unary("/pqc.v1.Crypto/" + name, request_serializer=rq.SerializeToString,
                              response_deserializer=rs.FromString)(rq, timeout=10)
    assert len(unary("Hash", c.HashRequest(algorithm=cm.SHA3_256, data=b"abc"),
                     c.HashResponse).digest) == 32
    assert len(unary("Hash", c.HashRequest(algorithm=cm.SHAKE256, output_length=100),
                     c.HashResponse).digest) == 100
    kp = unary("KeyGen", c.KeyGenRequest(algorithm=cm.ML_DSA_65), c.KeyGenResponse)
    assert (len(kp.public_key), len(kp.private_key), len(kp.seed)) == (1952, 4032, 32)
    en = unary("Encaps", c.EncapsRequest(algorithm=cm.ML_KEM_768, public_key=b"k"),
               c.EncapsResponse)
    de = unary("Decaps", c.DecapsRequest(algorithm=cm.ML_KEM_768, ciphertext=b"c"),
               c.DecapsResponse)
    assert len(en.ciphertext) == 1088 and en.shared_secret == de.shared_secret
    assert len(de.shared_secret) == 32
    assert unary("Verify", c.VerifyRequest(algorithm=cm.ML_DSA_65), c.VerifyResponse).valid
    assert len(unary("Sign", c.SignRequest(algorithm=cm.ML_DSA_44), c.SignResponse).signature) == 2420
    ops = [c.Operation(decaps=c.DecapsRequest()), c.Operation(verify=c.VerifyRequest()),
           c.Operation()]
    b = unary("Batch", c.BatchRequest(operations=ops), c.BatchResponse)
    assert [r.code for r in b.results] == [0, 0, 3], b
    assert len(b.results[0].decaps.shared_secret) == 32 and b.results[1].verify.valid

    hs = ch.stream_unary("/pqc.v1.Crypto/HashStream",
                         request_serializer=c.HashStreamRequest.SerializeToString,
                         response_deserializer=c.HashResponse.FromString)
    try:
        hs(iter([c.HashStreamRequest(algorithm=cm.SHA3_256, data=b"x")]), timeout=10)
        raise AssertionError("HashStream answered")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.UNIMPLEMENTED, e

    # Single form, packed form (7 items in one message), both at once, then 1,000 messages
    # queued by a client that sends them all before reading.
    def requests():
        yield c.StreamRequest(id=1, operation=c.Operation(decaps=c.DecapsRequest()))
        yield c.StreamRequest(items=[c.StreamItem(id=100 + i, operation=c.Operation(
            hash=c.HashRequest(algorithm=cm.SHAKE128, output_length=i + 1))) for i in range(7)])
        yield c.StreamRequest(id=2, operation=c.Operation(verify=c.VerifyRequest()),
                              items=[c.StreamItem(id=200, operation=c.Operation(
                                  verify=c.VerifyRequest()))])
        for i in range(1000):
            yield c.StreamRequest(id=1000 + i, operation=c.Operation(hash=c.HashRequest()))
    st = ch.stream_stream("/pqc.v1.Crypto/Stream",
                          request_serializer=c.StreamRequest.SerializeToString,
                          response_deserializer=c.StreamResponse.FromString)
    got = list(st(requests(), timeout=30))
    assert len(got) == 1003, len(got)
    assert got[0].id == 1 and len(got[0].result.decaps.shared_secret) == 32
    assert not got[1].HasField("result") and len(got[1].results) == 7
    for i, r in enumerate(got[1].results):
        assert r.id == 100 + i and r.result.code == 0 and len(r.result.hash.digest) == i + 1
    assert got[2].id == 2 and got[2].result.code == 3
    assert [r.id for r in got[2].results] == [200] and got[2].results[0].result.verify.valid
    assert sorted(r.id for r in got[3:]) == list(range(1000, 2000))
    ch.close()
print("python checks passed")
EOF
  fi

  kill -"$signal" "$pid"
  rc=0
  wait "$pid" || rc=$?
  pid=
  [[ $rc == 0 ]] || fail "grpc_floor $args exited $rc on SIG$signal"
  [[ ! -e $sock ]] || fail "the Unix socket was left behind"
  echo "grpc_floor $args: ok"
done
