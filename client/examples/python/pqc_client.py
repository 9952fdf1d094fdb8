#!/usr/bin/python3
"""Calling pqcd from Python with Debian's python3-grpcio (no grpc_tools needed).

The message classes come from `protoc --python_out` (protobuf-compiler); the gRPC stubs are three
lines each with channel.unary_unary(path, request_serializer, response_deserializer).

    /usr/bin/python3 pqc_client.py --target 127.0.0.1:50051 --proto-dir /path/to/pqcd/proto

Runs a smoke round trip (ML-KEM keygen/encaps/decaps, ML-DSA sign/verify, SHA3-256 and SHA-256
hashes, checked against Python's hashlib) and exits 0 when everything matched.
"""
import argparse
import hashlib
import os
import subprocess
import sys
import tempfile

import grpc


def load_messages(proto_dir):
    """Generates pqc/v1/*_pb2.py into a temporary folder and imports them."""
    out = tempfile.mkdtemp(prefix="pqc-py-")
    protos = [os.path.join("pqc", "v1", n) for n in ("common.proto", "crypto.proto", "keys.proto")]
    subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={out}", *protos],
                   check=True)
    sys.path.insert(0, out)
    from pqc.v1 import common_pb2, crypto_pb2  # noqa: E402  (generated above)
    return common_pb2, crypto_pb2


class CryptoStub:
    """Hand-written stub of service pqc.v1.Crypto (unary methods)."""

    def __init__(self, channel, pb):
        def unary(name, req, resp):
            return channel.unary_unary(f"/pqc.v1.Crypto/{name}",
                                       request_serializer=req.SerializeToString,
                                       response_deserializer=resp.FromString)
        self.KeyGen = unary("KeyGen", pb.KeyGenRequest, pb.KeyGenResponse)
        self.Encaps = unary("Encaps", pb.EncapsRequest, pb.EncapsResponse)
        self.Decaps = unary("Decaps", pb.DecapsRequest, pb.DecapsResponse)
        self.Sign = unary("Sign", pb.SignRequest, pb.SignResponse)
        self.Verify = unary("Verify", pb.VerifyRequest, pb.VerifyResponse)
        self.Hash = unary("Hash", pb.HashRequest, pb.HashResponse)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="127.0.0.1:50051", help="host:port or unix:PATH")
    parser.add_argument("--connect-timeout", type=float, default=5.0,
                        help="seconds to wait for a connection to the daemon (default 5)")
    parser.add_argument("--proto-dir", default=os.path.join(os.path.dirname(__file__),
                                                            "..", "..", "..", "proto"))
    args = parser.parse_args()

    common, pb = load_messages(os.path.abspath(args.proto_dir))
    channel = grpc.insecure_channel(args.target)
    try:
        grpc.channel_ready_future(channel).result(timeout=args.connect_timeout)
    except grpc.FutureTimeoutError:
        print(f"pqc_client.py: cannot connect to pqcd at {args.target} within "
              f"{args.connect_timeout:g} s (is it running? give its address with --target, "
              "e.g. --target unix:/run/pqcd/pqcd.sock)", file=sys.stderr)
        return 3
    stub = CryptoStub(channel, pb)
    timeout = 30  # every call gets a deadline
    failures = 0

    def expect(what, ok):
        nonlocal failures
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        failures += 0 if ok else 1

    # ML-KEM-768: key pair, encapsulate to the public key, decapsulate with the private key.
    kp = stub.KeyGen(pb.KeyGenRequest(algorithm=common.ML_KEM_768), timeout=timeout)
    expect("ML-KEM-768 keygen sizes", len(kp.public_key) == 1184 and len(kp.private_key) == 2400)
    enc = stub.Encaps(pb.EncapsRequest(algorithm=common.ML_KEM_768, public_key=kp.public_key),
                      timeout=timeout)
    dec = stub.Decaps(pb.DecapsRequest(algorithm=common.ML_KEM_768, private_key=kp.private_key,
                                       ciphertext=enc.ciphertext), timeout=timeout)
    expect("ML-KEM-768 encaps/decaps shared secret", dec.shared_secret == enc.shared_secret)

    # Deterministic key generation from a seed gives the same key twice.
    seed = bytes(range(64))
    a = stub.KeyGen(pb.KeyGenRequest(algorithm=common.ML_KEM_768, seed=seed), timeout=timeout)
    b = stub.KeyGen(pb.KeyGenRequest(algorithm=common.ML_KEM_768, seed=seed), timeout=timeout)
    expect("ML-KEM-768 keygen from a seed is deterministic", a.public_key == b.public_key)

    # ML-DSA-65: sign with a context, verify; a different message does not verify.
    kp = stub.KeyGen(pb.KeyGenRequest(algorithm=common.ML_DSA_65), timeout=timeout)
    msg, ctx = b"hello from python", b"example"
    sig = stub.Sign(pb.SignRequest(algorithm=common.ML_DSA_65, private_key=kp.private_key,
                                   message=msg, context=ctx), timeout=timeout)
    expect("ML-DSA-65 signature size", len(sig.signature) == 3309)
    ok = stub.Verify(pb.VerifyRequest(algorithm=common.ML_DSA_65, public_key=kp.public_key,
                                      message=msg, signature=sig.signature, context=ctx),
                     timeout=timeout)
    expect("ML-DSA-65 verify", ok.valid)
    bad = stub.Verify(pb.VerifyRequest(algorithm=common.ML_DSA_65, public_key=kp.public_key,
                                       message=msg + b"!", signature=sig.signature, context=ctx),
                      timeout=timeout)
    expect("ML-DSA-65 verify rejects another message", not bad.valid)

    # Hashes, compared with hashlib.
    data = b"The quick brown fox jumps over the lazy dog"
    for alg, ref in ((common.SHA3_256, hashlib.sha3_256), (common.SHA256, hashlib.sha256),
                     (common.SHA3_512, hashlib.sha3_512)):
        r = stub.Hash(pb.HashRequest(algorithm=alg, data=data), timeout=timeout)
        expect(f"{common.Algorithm.Name(alg)} equals hashlib", r.digest == ref(data).digest())
    r = stub.Hash(pb.HashRequest(algorithm=common.SHAKE256, data=data, output_length=100),
                  timeout=timeout)
    expect("SHAKE256 (100 bytes) equals hashlib", r.digest == hashlib.shake_256(data).digest(100))

    # Errors are gRPC status codes.
    try:
        stub.Encaps(pb.EncapsRequest(algorithm=common.ML_KEM_768, public_key=b"short"),
                    timeout=timeout)
        expect("short public key is rejected", False)
    except grpc.RpcError as e:
        expect("short public key is INVALID_ARGUMENT", e.code() == grpc.StatusCode.INVALID_ARGUMENT)

    print("python smoke test:", "PASSED" if failures == 0 else f"{failures} FAILED")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
