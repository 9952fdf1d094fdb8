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
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

TICK = os.sysconf("SC_CLK_TCK")


def wait_for(what, pred, timeout=30):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


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


def cnf(path, module, address=None):
    with open(path, "w") as f:
        f.write(f"""openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
default = default_sect
pqcd = pqcd_sect
[default_sect]
activate = 1
[pqcd_sect]
module = {module}
{f"pqcd_address = {address}" if address else ""}
activate = 1
""")


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric(port, name, *labels):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return sum(float(l.split()[-1]) for l in text.splitlines()
               if l.startswith(name + "{") and all(x in l for x in labels))


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
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    for p in (pqcd, prov, inproc, client, nginx):
        if not os.access(p, os.X_OK if not p.endswith(".so") else os.R_OK):
            raise SystemExit(f"missing {p}")
    d = tempfile.mkdtemp(prefix="pqcd-tls-bench-")
    os.chmod(d, 0o755)
    procs = []

    def start(argv, log, env=None):
        with open(os.path.join(d, log), "wb") as out:
            p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
        procs.append(p)
        return p

    try:
        sock = os.path.join(d, "pqcd.sock")
        ports_file = os.path.join(d, "pqcd.ports")
        daemon = start(["taskset", "-c", args.server_cpu, pqcd, "--listen", "127.0.0.1:0",
                        "--metrics-listen", "127.0.0.1:0", "--unix", sock, "--port-file",
                        ports_file, "--workers", "1", "--log-level", "warn"], "pqcd.log")
        ports = wait_for("pqcd", lambda: os.path.exists(sock + ".lane") and
                         len(open(ports_file).read().split()) >= 2 and
                         open(ports_file).read().split())
        metrics_port = int(ports[1])
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=localhost"], check=True,
                       capture_output=True)
        server_cnfs = {"pqcd": os.path.join(d, "pqcd.cnf"), "inproc": os.path.join(d, "inproc.cnf")}
        cnf(server_cnfs["pqcd"], prov, "unix:" + sock)
        cnf(server_cnfs["inproc"], inproc)
        client_cnf = server_cnfs["inproc"]
        nginx_port, worker = {}, {}
        user = "user root;" if os.geteuid() == 0 else ""
        for name, c in server_cnfs.items():
            port = free_port()
            sub = os.path.join(d, name)
            os.makedirs(sub)
            for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
                os.makedirs(os.path.join(sub, t))
            conf = os.path.join(sub, "nginx.conf")
            with open(conf, "w") as f:
                f.write(f"""{user}
daemon off;
master_process on;
worker_processes 1;
pid {sub}/nginx.pid;
error_log {sub}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {sub}/client_body;
  proxy_temp_path {sub}/proxy;
  fastcgi_temp_path {sub}/fastcgi;
  uwsgi_temp_path {sub}/uwsgi;
  scgi_temp_path {sub}/scgi;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.3;
    ssl_session_tickets off;
    ssl_session_cache off;
    ssl_ecdh_curve X25519MLKEM768:X25519;
    location / {{ return 200 "ok\\n"; }}
  }}
}}
""")
            env = dict(os.environ, OPENSSL_CONF=c)
            master = start(["taskset", "-c", args.server_cpu, nginx, "-p", sub, "-c", conf, "-e",
                            os.path.join(sub, "error.log")], f"nginx-{name}.out", env)
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
                enc0 = metric(metrics_port, "pqcd_operations_total", 'operation="encaps"')
                n0, p0 = cpu_ticks(w), cpu_ticks(daemon.pid)
                out = load(server, groups, args.threads, args.seconds)
                n1, p1 = cpu_ticks(w), cpu_ticks(daemon.pid)
                enc = metric(metrics_port, "pqcd_operations_total", 'operation="encaps"') - enc0
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
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
