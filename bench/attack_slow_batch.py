#!/usr/bin/python3
"""One caller's slow Batch beside a bystander's cheap calls (issue 45, item 4), on a real pqcd.

Starts pqcd (TCP on a free loopback port and a Unix socket), makes one SLH-DSA key, and sends one
Batch of --signatures signatures with it from an anonymous TCP caller. While the Batch runs, a
bystander on the Unix socket (another identity) calls SHA3-256 Hash in a loop, one call at a time;
a third caller sends one single signature of the same set. Prints the bystander's latencies, the
third caller's wait and the Batch's own duration, as JSON on the last line.

    bench/attack_slow_batch.py --pqcd build/server/pqcd [--slow-job-ms 0] [--signatures 200]

--slow-job-ms 0 turns the slow pool off (every job on the workers, as before issue 45): run both
ways in the same minutes and compare the ratios. Needs python3-grpcio and protoc (Debian's
python3-grpcio, protobuf-compiler); loopback and a Unix socket only; it stops by itself.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import grpc


def load_messages(proto_dir, out):
    protos = [os.path.join("pqc", "v1", n) for n in ("common.proto", "crypto.proto", "keys.proto")]
    subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={out}", *protos],
                   check=True)
    sys.path.insert(0, out)
    from pqc.v1 import common_pb2, crypto_pb2  # noqa: E402  (generated above)
    return common_pb2, crypto_pb2


def unary(channel, name, req, resp):
    return channel.unary_unary(f"/pqc.v1.Crypto/{name}", request_serializer=req.SerializeToString,
                               response_deserializer=resp.FromString)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p / 100))]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pqcd", required=True, help="the pqcd binary")
    parser.add_argument("--proto-dir", default=os.path.join(here, "..", "proto"))
    parser.add_argument("--algorithm", default="SLH_DSA_SHA2_256S", help="pqc.v1.Algorithm name")
    parser.add_argument("--signatures", type=int, default=200, help="signatures in the Batch")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--slow-job-ms", type=float, default=None,
                        help="pqcd --slow-job-ms (0: no slow pool; default: pqcd's own)")
    parser.add_argument("--slow-workers", type=int, default=None,
                        help="pqcd --slow-workers (default: pqcd's own)")
    parser.add_argument("--timeout", type=float, default=900, help="the Batch's deadline, s")
    parser.add_argument("--cpus", default="", help="taskset CPU list for pqcd (default: none)")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="pqcd-attack-")
    try:
        common, pb = load_messages(os.path.abspath(args.proto_dir), work)
        sock = os.path.join(work, "pqcd.sock")
        cmd = [args.pqcd, "--listen", "127.0.0.1:0", "--metrics-listen", "none", "--unix", sock,
               "--port-file", os.path.join(work, "ports"), "--workers", str(args.workers),
               "--log-level", "warn"]
        if args.slow_workers is not None:
            cmd += ["--slow-workers", str(args.slow_workers)]
        if args.slow_job_ms is not None:
            cmd += ["--slow-job-ms", str(args.slow_job_ms)]
        if args.cpus:
            cmd = ["taskset", "-c", args.cpus] + cmd
        log = open(os.path.join(work, "pqcd.log"), "w")
        daemon = subprocess.Popen(cmd, stderr=log)
        try:
            deadline = time.monotonic() + 60
            while not os.path.exists(os.path.join(work, "ports")) or \
                    os.path.getsize(os.path.join(work, "ports")) == 0:
                if daemon.poll() is not None or time.monotonic() > deadline:
                    sys.exit("pqcd did not start; see " + log.name)
                time.sleep(0.05)
            port = open(os.path.join(work, "ports")).read().split()[0]
            tcp = grpc.insecure_channel(f"127.0.0.1:{port}")
            local = grpc.insecure_channel(f"unix:{sock}")
            third = grpc.insecure_channel(f"unix:{sock}", options=[("grpc.use_local_subchannel_pool", 1)])
            alg = common.Algorithm.Value(args.algorithm)
            keygen = unary(tcp, "KeyGen", pb.KeyGenRequest, pb.KeyGenResponse)
            key = keygen(pb.KeyGenRequest(algorithm=alg), timeout=300)

            batch = pb.BatchRequest()
            for i in range(args.signatures):
                batch.operations.add().sign.CopyFrom(
                    pb.SignRequest(algorithm=alg, private_key=key.seed, message=b"slow %d" % i))
            batch_call = unary(tcp, "Batch", pb.BatchRequest, pb.BatchResponse)
            result = {}

            def attacker():
                t0 = time.monotonic()
                answer = batch_call(batch, timeout=args.timeout)
                result["batch_s"] = time.monotonic() - t0
                result["batch_ok"] = sum(1 for r in answer.results if r.code == 0)

            thread = threading.Thread(target=attacker)
            started = time.monotonic()
            thread.start()
            time.sleep(0.5)  # the Batch is queued (or running) by now

            sign = unary(third, "Sign", pb.SignRequest, pb.SignResponse)
            third_wait = {}

            def third_caller():
                t0 = time.monotonic()
                sign(pb.SignRequest(algorithm=alg, private_key=key.seed, message=b"its turn"),
                     timeout=args.timeout)
                third_wait["s"] = time.monotonic() - t0

            third_thread = threading.Thread(target=third_caller)
            third_thread.start()

            hash_call = unary(local, "Hash", pb.HashRequest, pb.HashResponse)
            latencies = []
            while thread.is_alive() and len(latencies) < 100000:
                t0 = time.monotonic()
                hash_call(pb.HashRequest(algorithm=common.SHA3_256, data=b"bystander"), timeout=60)
                latencies.append((time.monotonic() - t0) * 1000)
            thread.join()
            third_thread.join()
            out = {
                "algorithm": args.algorithm,
                "signatures": args.signatures,
                "workers": args.workers,
                "slow_job_ms": args.slow_job_ms,
                "slow_workers": args.slow_workers,
                "batch_s": round(result["batch_s"], 3),
                "batch_ok": result["batch_ok"],
                "third_caller_sign_s": round(third_wait["s"], 3),
                "bystander_hashes": len(latencies),
                "bystander_hash_ms": {
                    "p50": round(statistics.median(latencies), 3),
                    "p99": round(percentile(latencies, 99), 3),
                    "max": round(max(latencies), 3),
                },
                "elapsed_s": round(time.monotonic() - started, 3),
            }
            print(json.dumps(out))
        finally:
            daemon.terminate()
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
