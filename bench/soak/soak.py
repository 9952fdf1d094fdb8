#!/usr/bin/python3
"""Soak: pqcd's resident memory idle and under sustained overload.

Usage:
  bench/soak/soak.py [--build-dir build] [--minutes 10] [--interval 5] [--idle-seconds 15]
                     [--workers 1] [--queue-capacity 256] [--concurrency 32] [--inflight 128]
                     [--style stream] [--op MIX] [--markdown]

Starts BUILD_DIR/server/pqcd (no --data-dir: no held keys) on free loopback ports, records its
idle VmRSS after --idle-seconds, then drives it with BUILD_DIR/bench/pqc-load for --minutes with
far more operations in flight than its queue holds (so it answers RESOURCE_EXHAUSTED all along),
samples VmRSS every --interval seconds and prints: idle RSS, min/max/last RSS under load, and the
least-squares slope (MiB/min) over the loaded samples after the first 10% (warm-up), plus
pqc-load's report. --markdown also prints a row for bench/RESULTS.md.
Targets (bench/RESULTS.md): idle under 64 MiB; flat under sustained overload.
Exit: 0 when pqc-load produced its report and pqcd exited cleanly on SIGTERM; 1 otherwise (no pass/fail on
the RSS numbers: they are recorded, not judged, since they depend on the machine).
Uses a Release build (e.g. cmake -B build -DCMAKE_BUILD_TYPE=Release; ninja pqcd pqc-load).
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

DEFAULT_MIX = ("ML-KEM-768:encaps=20,ML-KEM-768:decaps=20,ML-DSA-65:sign=15,"
               "ML-DSA-65:verify=25,SHA3-256:hash=20")


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def slope_mib_per_min(samples):
    """Least-squares slope of (t seconds, KiB) samples, in MiB per minute."""
    n = len(samples)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in samples) / n
    mr = sum(r for _, r in samples) / n
    den = sum((t - mt) ** 2 for t, _ in samples)
    if den == 0:
        return 0.0
    num = sum((t - mt) * (r - mr) for t, r in samples)
    return num / den * 60 / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--pqcd", help="pqcd binary (default BUILD_DIR/server/pqcd)")
    ap.add_argument("--pqc-load", help="pqc-load binary (default BUILD_DIR/bench/pqc-load)")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--interval", type=float, default=5, help="RSS sampling period, seconds")
    ap.add_argument("--idle-seconds", type=float, default=15)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--queue-capacity", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--inflight", type=int, default=128, help="per stream (--style stream)")
    ap.add_argument("--style", default="stream", choices=["unary", "batch", "stream"])
    ap.add_argument("--op", default=DEFAULT_MIX)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()

    pqcd = a.pqcd or os.path.join(a.build_dir, "server", "pqcd")
    load = a.pqc_load or os.path.join(a.build_dir, "bench", "pqc-load")
    for b in (pqcd, load):
        if not os.access(b, os.X_OK):
            sys.exit(f"soak: {b} not found (build pqcd and pqc-load, or pass --pqcd/--pqc-load)")

    tmp = tempfile.mkdtemp(prefix="pqcd-soak.")
    port_file = os.path.join(tmp, "ports")
    log = open(os.path.join(tmp, "pqcd.log"), "w+")
    daemon = subprocess.Popen(
        [pqcd, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--port-file", port_file,
         "--workers", str(a.workers), "--queue-capacity", str(a.queue_capacity), "--log-level", "warn"],
        stdout=log, stderr=subprocess.STDOUT)
    ok = False
    try:
        deadline = time.time() + 60
        port = None
        while time.time() < deadline and daemon.poll() is None:
            try:
                with open(port_file) as f:
                    lines = f.read().split()
                if len(lines) >= 2:
                    port = int(lines[0])
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        if port is None:
            log.seek(0)
            sys.exit(f"soak: pqcd did not start:\n{log.read()}")

        print(f"soak: pqcd pid {daemon.pid} on 127.0.0.1:{port}; idle for {a.idle_seconds:g} s", flush=True)
        time.sleep(a.idle_seconds)
        idle = rss_kib(daemon.pid)
        print(f"soak: idle VmRSS {idle / 1024:.1f} MiB", flush=True)

        seconds = max(1, int(a.minutes * 60))
        cmd = [load, "--targets", f"127.0.0.1:{port}", "--op", a.op, "--concurrency", str(a.concurrency),
               "--style", a.style, "--duration", f"{seconds}s", "--warmup", "0s", "--quiet", "--timeout", "30"]
        if a.style == "stream":
            cmd += ["--inflight", str(a.inflight)]
        print("soak: " + " ".join(cmd), flush=True)
        load_out = open(os.path.join(tmp, "load.out"), "w+")
        loader = subprocess.Popen(cmd, stdout=load_out, stderr=subprocess.STDOUT)
        t0 = time.time()
        samples = []
        next_t = t0
        while loader.poll() is None:
            r = rss_kib(daemon.pid)
            t = time.time() - t0
            samples.append((t, r))
            if len(samples) % max(1, int(60 / a.interval)) == 1:
                print(f"soak: t={t:6.0f} s VmRSS {r / 1024:.1f} MiB", flush=True)
            next_t += a.interval
            time.sleep(max(0.0, next_t - time.time()))
            if time.time() - t0 > seconds + 120:
                loader.kill()
        load_rc = loader.wait()
        load_out.seek(0)
        report = load_out.read()

        loaded = [s for s in samples if s[1] > 0]
        if not loaded:
            sys.exit("soak: no RSS samples (did pqcd die?)")
        steady = loaded[len(loaded) // 10:] if len(loaded) >= 10 else loaded
        rss = [r for _, r in loaded]
        slope = slope_mib_per_min(steady)
        print("\n== pqc-load report (exit %d)\n%s" % (load_rc, report.rstrip()[-4000:]))
        print("\n== soak summary")
        print(f"   duration under load: {loaded[-1][0]:.0f} s, {len(loaded)} samples every {a.interval:g} s")
        print(f"   idle VmRSS:          {idle / 1024:.1f} MiB (target < 64 MiB, no held keys)")
        print(f"   loaded VmRSS:        min {min(rss) / 1024:.1f}, max {max(rss) / 1024:.1f}, "
              f"last {rss[-1] / 1024:.1f} MiB")
        print(f"   slope (after 10%):   {slope:+.3f} MiB/min")
        print("   series (MiB):        " + " ".join(f"{r / 1024:.0f}" for r in rss[:: max(1, len(rss) // 30)]))
        if a.markdown:
            print("\n| date | duration | workers | queue | load | idle RSS | loaded min/max/last | slope |")
            print("|---|---|---|---|---|---|---|---|")
            print(f"| {time.strftime('%Y-%m-%d')} | {a.minutes:g} min | {a.workers} | {a.queue_capacity} | "
                  f"{a.style} c={a.concurrency}" + (f" inflight={a.inflight}" if a.style == "stream" else "") +
                  f" | {idle / 1024:.1f} MiB | {min(rss) / 1024:.1f} / {max(rss) / 1024:.1f} / "
                  f"{rss[-1] / 1024:.1f} MiB | {slope:+.3f} MiB/min |")
        # pqc-load exits 1 when calls failed, which overload makes certain (RESOURCE_EXHAUSTED):
        # the run counts when it produced its report.
        ok = "measured:" in report
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGTERM)
            try:
                rc = daemon.wait(60)
            except subprocess.TimeoutExpired:
                daemon.kill()
                rc = daemon.wait()
            print(f"   pqcd exit on SIGTERM: {rc}")
            ok = ok and rc == 0
        else:
            log.seek(0)
            print(f"soak: pqcd exited early ({daemon.returncode}):\n{log.read()[-3000:]}")
            ok = False
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
