#!/usr/bin/env python3
"""Markdown tables from a pqc-bench JSON file (--benchmark_format=json --benchmark_out=FILE).

Usage: bench/bench_table.py pqc-bench.json [--stat median|min]

Prints, for the chosen statistic of tsc_per_op (default: median):
  - single operations, portable beside each SIMD backend, with ops/s and the speed-up;
  - the batched entry points per item at batch 4/8/16;
  - hashes and Keccak (ticks, MB/s);
  - the issue-3 target rows, with the ticks converted to the reference machine's
    (reference ticks = local ticks x local core/TSC ratio / 1.66: the ratio each benchmark run
    measured around its timed loop, counter core_per_tsc, else the start-up one in the context,
    pqcd_core_cycles_per_tsc).
"""
import argparse
import json
import re
import sys

REF_CORE_PER_TSC = 1.66  # issue 3: the reference machine's core runs 1.66x its 2.096 GHz TSC

TARGETS = [  # (benchmark run name without backend, label, avx2 single-op target in ref ticks)
    ("BM_MlKemKeyGen/ML-KEM-768", "ML-KEM-768 keygen", 18600),
    ("BM_MlKemEncaps/ML-KEM-768", "ML-KEM-768 encaps", 18400),
    ("BM_MlKemDecaps/ML-KEM-768", "ML-KEM-768 decaps", 24000),
    ("BM_MlDsaKeyGen/ML-DSA-65", "ML-DSA-65 keygen", 62000),
    ("BM_MlDsaSign/ML-DSA-65", "ML-DSA-65 sign (hedged, mean)", 190000),
    ("BM_MlDsaVerify/ML-DSA-65", "ML-DSA-65 verify", 64000),
    ("BM_KeccakF1600x4", "Keccak-f[1600] x4 (one call, 4 states)", 880),
]
THROUGHPUT_TARGETS = [  # (run name, label, avx2 target in MB/s on the reference machine)
    ("BM_Sha3_256/65536B", "SHA3-256, 64 KiB, one stream", 400),
    ("BM_HashBatch/SM3/1024B/batch:8", "SM3, 8 independent 1 KiB messages (total)", 1000),
]
REF_TSC_MHZ = 2096


def load(path, stat):
    with open(path) as f:
        doc = json.load(f)
    ctx = doc.get("context", {})
    ratio = float(ctx.get("pqcd_core_cycles_per_tsc", "nan"))
    # The backends pqc-bench ran, in the kernels' order (kernels::Isa), e.g. "portable,avx2,avx512".
    order = [b for b in ctx.get("pqcd_backends", "").split(",") if b]
    mhz = float(ctx.get("mhz_per_cpu", 0))
    rows = {}
    for b in doc["benchmarks"]:
        if b.get("aggregate_name") != stat:
            continue
        name = b["run_name"]
        m = re.match(r"(.*)/([^/:]+)$", name)  # the last part names the backend, whatever it is
        if not m:
            continue
        rows[(m.group(1), m.group(2))] = b
    return rows, ratio, mhz, order


def fmt(x, digits=0):
    if x is None:
        return "—"
    return f"{x:,.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("json")
    ap.add_argument("--stat", default="median", choices=["median", "min", "mean"])
    args = ap.parse_args()
    rows, ratio, mhz, order = load(args.json, args.stat)
    if not rows:
        sys.exit(f"{args.json}: no '{args.stat}' aggregates (run pqc-bench with repetitions >= 2)")
    # Backends in the order the run's context gives (any name: the list is the kernels'), then any
    # other by name (portable first when the context has no list), "openssl" last.
    backends = sorted({be for (_, be) in rows},
                      key=lambda b: (b == "openssl", order.index(b) if b in order else len(order),
                                     b != "portable", b))
    simd = [b for b in backends if b not in ("portable", "openssl")]
    tsc_hz = mhz * 1e6 if mhz else None

    def tsc(name, be):
        b = rows.get((name, be))
        return b.get("tsc_per_op") if b else None

    print(f"statistic: {args.stat} of tsc_per_op; core/TSC ratio {ratio:.3f}; TSC {mhz:.0f} MHz\n")

    singles = sorted({n for (n, _) in rows if re.match(r"BM_Ml(Kem|Dsa)\w+/ML-\w+-\d+$", n)},
                     key=lambda n: (n.split("/")[1], ["KeyGen", "Encaps", "Decaps", "Sign",
                                                       "Verify"].index(re.sub(r"BM_Ml(Kem|Dsa)", "",
                                                                              n.split("/")[0]))))
    head = "| operation | portable TSC/op |" + "".join(f" {b} TSC/op | {b} ops/s | {b} speed-up |"
                                                     for b in simd)
    print(head)
    print("|---|---:|" + "---:|---:|---:|" * len(simd))
    for n in singles:
        p = tsc(n, "portable")
        cells = ""
        for b in simd:
            t = tsc(n, b)
            ops = tsc_hz / t if (t and tsc_hz) else None
            cells += f" {fmt(t)} | {fmt(ops)} | {fmt(p / t, 2) + 'x' if (p and t) else '—'} |"
        op = n.replace("BM_MlKem", "").replace("BM_MlDsa", "")
        alg, param = op.split("/")
        print(f"| {param} {alg.lower()} | {fmt(p)} |{cells}")

    batches = sorted({n for (n, _) in rows if "/batch:" in n and "HashBatch" not in n})
    if batches:
        print("\nBatched entry points, TSC per item:\n")
        sizes = sorted({int(n.rsplit(":", 1)[1]) for n in batches})
        print("| operation |" + "".join(f" {b} b{s} |" for b in backends if b != "openssl"
                                        for s in sizes))
        print("|---|" + "---:|" * (len(sizes) * len([b for b in backends if b != "openssl"])))
        for base in sorted({n.rsplit("/batch:", 1)[0] for n in batches}):
            cells = "".join(f" {fmt(tsc(f'{base}/batch:{s}', b))} |" for b in backends
                            if b != "openssl" for s in sizes)
            print(f"| {base.replace('BM_', '')} |{cells}")

    hashes = sorted({n for (n, _) in rows if re.match(r"BM_(Keccak|Sha|Shake|Sm3|HashBatch)", n)})
    print("\nHashes and Keccak:\n")
    print("| benchmark |" + "".join(f" {b} TSC/op | {b} MB/s |" for b in backends))
    print("|---|" + "---:|---:|" * len(backends))
    for n in hashes:
        cells = ""
        for b in backends:
            r = rows.get((n, b))
            m = re.search(r"/(\d+)B", n)
            t = tsc(n, b)
            bps = int(m.group(1)) * tsc_hz / t if (m and t and tsc_hz) else None
            cells += f" {fmt(t)} | {fmt(bps / 1e6, 1) if bps else '—'} |"
        print(f"| {n.replace('BM_', '')} |{cells}")

    print(f"\nAgainst the issue-3 targets (reference ticks = local ticks x core/TSC / "
          f"{REF_CORE_PER_TSC}):\n")
    print("| operation | target (ref. ticks) | core/TSC | local target | measured avx2 (local) | "
          "measured (ref. ticks) | ratio to target |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    def row_ratio(name):
        r = rows.get((name, "avx2"))
        return r.get("core_per_tsc", ratio) if r else ratio

    for name, label, target in TARGETS:
        t = tsc(name, "avx2")
        rr = row_ratio(name)
        local_target = target * REF_CORE_PER_TSC / rr
        ref = t * rr / REF_CORE_PER_TSC if t else None
        verdict = ("met" if ref <= target else f"{ref / target:.2f}x") if ref else "—"
        print(f"| {label} | ≤ {fmt(target)} | {rr:.3f} | ≤ {fmt(local_target)} | {fmt(t)} | "
              f"{fmt(ref)} | {verdict} |")
    # Throughput scales with the core clock: reference core = 2,096 MHz x 1.66.
    print(f"\nThroughput targets (scaled by core clock; reference core "
          f"{REF_TSC_MHZ * REF_CORE_PER_TSC:,.0f} MHz):\n")
    print("| operation | target (ref. MB/s) | local core MHz | local target | measured avx2 MB/s | "
          "ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, label, target in THROUGHPUT_TARGETS:
        r = rows.get((name, "avx2"))
        clock = (mhz * row_ratio(name)) / (REF_TSC_MHZ * REF_CORE_PER_TSC) if mhz else None
        # From ticks per item, so that the chosen statistic (e.g. the fastest run) carries over.
        t = tsc(name, "avx2")
        item_bytes = int(re.search(r"/(\d+)B", name).group(1))
        bps = item_bytes * tsc_hz / t / 1e6 if (t and tsc_hz) else None
        local_target = target * clock if clock else None
        verdict = ("met" if bps >= local_target else f"{local_target / bps:.2f}x short") if (
            bps and local_target) else "—"
        print(f"| {label} | ≥ {fmt(target)} | {fmt(mhz * row_ratio(name))} | ≥ {fmt(local_target)} | "
              f"{fmt(bps)} | {verdict} |")


if __name__ == "__main__":
    main()
