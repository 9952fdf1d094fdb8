#!/usr/bin/env python3
"""Calls pqcd over its shared-memory lane from Python, with ctypes and libpqcd_lane.

    python3 lane_example.py --socket /run/pqcd/pqcd.sock [--lib /usr/lib/libpqcd_lane.so]

Hashes "abc" with SHA3-256, runs an ML-KEM-768 key generation, encapsulation and
decapsulation, and an ML-DSA-65 signature and its verification, all on one lane; prints what it
got and exits 0 when every answer is right.
"""
import argparse
import ctypes
import hashlib
import sys

# pqc.v1.Algorithm numbers (proto/pqc/v1/common.proto).
SHA3_256 = 21
ML_KEM_768 = 2
ML_DSA_65 = 11

KEYGEN, ENCAPS, DECAPS, SIGN, VERIFY, HASH = 1, 2, 3, 4, 5, 6
DETERMINISTIC = 2

u8p = ctypes.POINTER(ctypes.c_uint8)


class Request(ctypes.Structure):
    _fields_ = [
        ("op", ctypes.c_uint32), ("algorithm", ctypes.c_uint32), ("flags", ctypes.c_uint32),
        ("pre_hash", ctypes.c_uint32), ("key_version", ctypes.c_uint32),
        ("output_length", ctypes.c_uint32), ("timeout_ms", ctypes.c_uint32),
        ("tag", ctypes.c_uint64), ("owner", ctypes.c_char_p), ("key_id", ctypes.c_char_p),
        ("context", u8p), ("context_len", ctypes.c_size_t),
        ("key", u8p), ("key_len", ctypes.c_size_t),
        ("input", u8p), ("input_len", ctypes.c_size_t),
        ("signature", u8p), ("signature_len", ctypes.c_size_t),
    ]


class Result(ctypes.Structure):
    _fields_ = [
        ("tag", ctypes.c_uint64), ("code", ctypes.c_int32), ("valid", ctypes.c_int32),
        ("key_version", ctypes.c_uint32),
        ("message", ctypes.c_char_p), ("message_len", ctypes.c_size_t),
        ("key_id", ctypes.c_char_p), ("key_id_len", ctypes.c_size_t),
        ("out", u8p * 3), ("out_len", ctypes.c_size_t * 3),
        ("slot", ctypes.c_uint32),
    ]


class LaneError(Exception):
    pass


class Lane:
    def __init__(self, lib_path, socket_path, slots=0):
        self.lib = ctypes.CDLL(lib_path)
        self.lib.pqcd_lane_open.argtypes = [ctypes.c_char_p, ctypes.c_uint32,
                                            ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                                            ctypes.c_size_t]
        self.lib.pqcd_lane_call.argtypes = [ctypes.c_void_p, ctypes.POINTER(Request),
                                            ctypes.c_int64, ctypes.POINTER(Result)]
        self.lib.pqcd_lane_release.argtypes = [ctypes.c_void_p, ctypes.POINTER(Result)]
        self.lib.pqcd_lane_close.argtypes = [ctypes.c_void_p]
        self.lib.pqcd_lane_strerror.restype = ctypes.c_char_p
        self.lane = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        if self.lib.pqcd_lane_open(socket_path.encode(), slots, ctypes.byref(self.lane), err,
                                   len(err)) != 0:
            raise LaneError(err.value.decode())

    def close(self):
        self.lib.pqcd_lane_close(self.lane)

    def call(self, op, algorithm, key=b"", data=b"", signature=b"", context=b"", flags=0):
        """One request; returns (outputs, valid) or raises LaneError with the daemon's status."""
        keep = []  # the buffers stay alive until the call returns

        def buf(b):
            a = (ctypes.c_uint8 * max(len(b), 1)).from_buffer_copy(b or b"\0")
            keep.append(a)
            return ctypes.cast(a, u8p), len(b)

        rq = Request(op=op, algorithm=algorithm, flags=flags)
        rq.key, rq.key_len = buf(key)
        rq.input, rq.input_len = buf(data)
        rq.signature, rq.signature_len = buf(signature)
        rq.context, rq.context_len = buf(context)
        r = Result()
        rc = self.lib.pqcd_lane_call(self.lane, ctypes.byref(rq), 30_000_000, ctypes.byref(r))
        if rc != 0:
            raise LaneError(self.lib.pqcd_lane_strerror(rc).decode())
        try:
            if r.code != 0:
                raise LaneError("status %d: %s" % (r.code,
                                                   ctypes.string_at(r.message, r.message_len)
                                                   .decode(errors="replace")))
            outs = [ctypes.string_at(r.out[i], r.out_len[i]) if r.out_len[i] else b""
                    for i in range(3)]
            return outs, bool(r.valid)
        finally:
            self.lib.pqcd_lane_release(self.lane, ctypes.byref(r))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True, help="pqcd's --unix socket path")
    ap.add_argument("--lib", default="libpqcd_lane.so", help="path of libpqcd_lane.so")
    args = ap.parse_args()
    lane = Lane(args.lib, args.socket)
    ok = True
    try:
        (digest, _, _), _ = lane.call(HASH, SHA3_256, data=b"abc")
        print("SHA3-256(abc) =", digest.hex())
        ok &= digest == hashlib.sha3_256(b"abc").digest()

        (ek, dk, _), _ = lane.call(KEYGEN, ML_KEM_768)
        (ct, ss, _), _ = lane.call(ENCAPS, ML_KEM_768, key=ek)
        (ss2, _, _), _ = lane.call(DECAPS, ML_KEM_768, key=dk, data=ct)
        print("ML-KEM-768: ek %d bytes, ct %d bytes, shared secrets equal: %s"
              % (len(ek), len(ct), ss == ss2))
        ok &= len(ss) == 32 and ss == ss2

        (pk, sk, _), _ = lane.call(KEYGEN, ML_DSA_65)
        (sig, _, _), _ = lane.call(SIGN, ML_DSA_65, key=sk, data=b"hello", flags=DETERMINISTIC)
        _, valid = lane.call(VERIFY, ML_DSA_65, key=pk, data=b"hello", signature=sig)
        _, forged = lane.call(VERIFY, ML_DSA_65, key=pk, data=b"hellO", signature=sig)
        print("ML-DSA-65: signature %d bytes, valid: %s, other message valid: %s"
              % (len(sig), valid, forged))
        ok &= valid and not forged

        try:
            lane.call(DECAPS, ML_KEM_768, key=b"short", data=ct)
            ok = False
        except LaneError as e:
            print("a bad key is refused:", e)
            ok &= "status 3" in str(e)
    finally:
        lane.close()
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
