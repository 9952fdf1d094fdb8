#!/usr/bin/env python3
"""TLS 1.3 handshakes per second of nginx through pqcd-provider.so (issue 30), beside the same
nginx with plain X25519 and beside pqcd-provider-inproc.so (the same provider computing ML-KEM
in the nginx worker with pqcd's kernels).

  bench/tls_handshake.py --build build [--seconds 5] [--repeats 5] [--threads 2]
                         [--server-cpu 0] [--client-cpu 1] [--json out.json]

One pqcd (--workers 1) and two nginx (one worker each: one loads pqcd-provider.so, one
pqcd-provider-inproc.so), all pinned to --server-cpu; the load, bench/tls-handshake-client (full
handshakes, no resumption, new TCP connection each, --threads connections at once), pinned to
--client-cpu, loads pqcd-provider-inproc.so itself so that the client's side costs the same in
every configuration. Configurations, interleaved in each repeat (the order rotates):
  x25519   the pqcd nginx, the client offering X25519 only (the provider is not used)
  pqcd     the pqcd nginx, X25519MLKEM768: Encaps by pqcd over its lane
  inproc   the in-process nginx, X25519MLKEM768: Encaps in the nginx worker
Each repeat runs every configuration twice: --threads connections for throughput, then one
connection for latency (connect to handshake done, p50/p99). CPU per handshake: utime+stime of
the nginx worker and of pqcd (/proc/PID/stat) before and after the throughput run, divided by the
handshakes. Medians over the repeats; ratios per repeat, then their median.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "provider"))
from tls_harness import (Daemon, Failure, Processes, find_nginx, free_port,  # noqa: E402
                         make_certificate, wait_for, write_nginx_conf, write_openssl_cnf)

TICK = os.sysconf("SC_CLK_TCK")


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--latency-seconds", type=float, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    ap.add_argument("--json")
    args = ap.parse_args()
    b = os.path.abspath(args.build)
    pqcd = os.path.join(b, "server/pqcd")
    prov = os.path.join(b, "provider/pqcd-provider.so")
    inproc = os.path.join(b, "provider/pqcd-provider-inproc.so")
    client = os.path.join(b, "bench/tls-handshake-client")
    nginx = find_nginx() or "/usr/sbin/nginx"
    for p in (pqcd, prov, inproc, client, nginx):
        if not os.access(p, os.X_OK if not p.endswith(".so") else os.R_OK):
            raise SystemExit(f"missing {p}")
    d = tempfile.mkdtemp(prefix="pqcd-tls-bench-")
    os.chmod(d, 0o755)
    procs = Processes()
    try:
        daemon = Daemon(procs, pqcd, d, "pqcd", prefix=("taskset", "-c", args.server_cpu))
        cert, key = make_certificate(d)
        server_cnfs = {"pqcd": os.path.join(d, "pqcd.cnf"), "inproc": os.path.join(d, "inproc.cnf")}
        write_openssl_cnf(server_cnfs["pqcd"], prov, daemon.address)
        write_openssl_cnf(server_cnfs["inproc"], inproc)
        client_cnf = server_cnfs["inproc"]
        nginx_port, worker = {}, {}
        for name, c in server_cnfs.items():
            port = free_port()
            sub = os.path.join(d, name)
            os.makedirs(sub)
            conf, error_log = write_nginx_conf(
                sub, port, cert, key, "X25519MLKEM768:X25519", 'return 200 "ok\\n";',
                server_extra="ssl_session_tickets off; ssl_session_cache off;",
                worker_connections=1024, error_level="warn")
            master = procs.start(f"nginx ({name})", ["taskset", "-c", args.server_cpu, nginx,
                                                     "-p", sub, "-c", conf, "-e", error_log],
                                 os.path.join(d, f"nginx-{name}.out"),
                                 env=dict(os.environ, OPENSSL_CONF=c))
            worker[name] = wait_for(f"nginx ({name})", lambda: children(master.pid) and
                                    children(master.pid)[0])
            nginx_port[name] = port
        configs = [("x25519", "pqcd", "X25519"), ("pqcd", "pqcd", "X25519MLKEM768"),
                   ("inproc", "inproc", "X25519MLKEM768")]
        cenv = dict(os.environ, OPENSSL_CONF=client_cnf)

        def load(server, groups, threads, seconds):
            r = subprocess.run(["taskset", "-c", args.client_cpu, client, "--port",
                                str(nginx_port[server]), "--groups", groups, "--threads",
                                str(threads), "--seconds", str(seconds)],
                               capture_output=True, text=True, env=cenv, timeout=seconds + 60)
            if r.returncode != 0:
                raise SystemExit(f"client failed: {r.stdout}{r.stderr}")
            return json.loads(r.stdout)

        for name, server, groups in configs:  # warm up, and check the group
            out = load(server, groups, 1, 0.3)
            if out["failures"] or out["group"].lower() != groups.lower():
                raise SystemExit(f"{name}: {out}")
        runs = {n: [] for n, _, _ in configs}
        for rep in range(args.repeats):
            order = configs[rep % 3:] + configs[:rep % 3]
            for name, server, groups in order:
                w = worker[server]
                enc0 = daemon.metric("pqcd_operations_total", 'operation="encaps"')
                n0, p0 = cpu_ticks(w), cpu_ticks(daemon.proc.pid)
                out = load(server, groups, args.threads, args.seconds)
                n1, p1 = cpu_ticks(w), cpu_ticks(daemon.proc.pid)
                enc = daemon.metric("pqcd_operations_total", 'operation="encaps"') - enc0
                lat = load(server, groups, 1, args.latency_seconds)
                hs = out["handshakes"]
                row = {
                    "hs_per_s": hs / out["seconds"],
                    "nginx_us": (n1 - n0) / TICK * 1e6 / hs,
                    "pqcd_us": (p1 - p0) / TICK * 1e6 / hs,
                    "pqcd_encaps_per_hs": enc / hs,
                    "failures": out["failures"] + lat["failures"],
                    "p50_us": lat["p50_us"], "p99_us": lat["p99_us"],
                }
                row["total_us"] = row["nginx_us"] + row["pqcd_us"]
                runs[name].append(row)
                print(f"rep {rep} {name:7s} " + " ".join(
                    f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}"
                    for k, v in row.items()), flush=True)
        med = {n: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
               for n, rs in runs.items()}
        ratio_total = statistics.median(p["total_us"] / i["total_us"]
                                        for p, i in zip(runs["pqcd"], runs["inproc"]))
        ratio_hs = statistics.median(p["hs_per_s"] / i["hs_per_s"]
                                     for p, i in zip(runs["pqcd"], runs["inproc"]))
        ratio_x = statistics.median(p["hs_per_s"] / x["hs_per_s"]
                                    for p, x in zip(runs["pqcd"], runs["x25519"]))
        added50 = statistics.median(p["p50_us"] - i["p50_us"]
                                    for p, i in zip(runs["pqcd"], runs["inproc"]))
        added99 = statistics.median(p["p99_us"] - i["p99_us"]
                                    for p, i in zip(runs["pqcd"], runs["inproc"]))
        print("\n| config | handshakes/s | nginx CPU µs/hs | pqcd CPU µs/hs | total µs/hs | "
              "p50 µs | p99 µs |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for n, _, _ in configs:
            m = med[n]
            print(f"| {n} | {m['hs_per_s']:.0f} | {m['nginx_us']:.0f} | {m['pqcd_us']:.0f} | "
                  f"{m['total_us']:.0f} | {m['p50_us']:.0f} | {m['p99_us']:.0f} |")
        print(f"\npqcd/inproc total CPU per handshake: {ratio_total:.2f} (target <= 1.3); "
              f"handshakes/s pqcd/inproc {ratio_hs:.2f}, pqcd/x25519 {ratio_x:.2f}; "
              f"added latency through pqcd p50 {added50:+.0f} µs, p99 {added99:+.0f} µs")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"runs": runs, "median": med, "ratio_total_cpu": ratio_total,
                           "ratio_hs": ratio_hs, "added_p50_us": added50,
                           "added_p99_us": added99}, f, indent=1)
    except Failure as e:
        raise SystemExit(str(e))
    finally:
        procs.stop_all()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
