#!/usr/bin/env python3
"""The request path beside its references (issue 11): pqcd, the no-crypto gRPC floor server
(bench/grpc_floor) and the engine in-process, measured in the same minutes.

Each server runs pinned to one CPU (--server-cpu, default 1; pqcd with --workers 1), pqc-load on
another (--load-cpu, default 0). For every operation, transport and call style the runs of pqcd
and the floor are interleaved, repeated --repeats times, and the medians are printed as a
Markdown table: ops/s, server CPU µs per operation (from /proc/PID/stat via pqc-load
--server-pid), context switches per request, and the load generator's CPU share. The ratios the
issue's targets name follow the table. With --latency, open-loop runs at half of each style's
median closed-loop rate report p50/p99 latency, for pqcd and, at the same rate, for the floor
(what the client, gRPC and the two CPUs cost without any work in the server).

Decaps and sign run once per --private-keys form: `expanded` (the expanded key in every request)
and `held` (a key the daemon holds, by key_ref; in-process: the key prepared once, as the daemon
holds it); `seed` (the seed in every request) may be added.

    bench/request_path.py --build build --repeats 3 --duration 2 [--json out.json] [--latency]
        [--before OLD_BUILD/server/pqcd]

--before runs an older pqcd build beside the current one, interleaved with it and the floor, and
adds its CPU per operation and the ratio of the two to the table.

Nothing here asserts: it measures. Only loopback and Unix sockets are used, every run stops by
itself.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

STYLES = [
    ("unary", ["--style", "unary", "-c", "32"]),
    ("batch64", ["--style", "batch", "--batch-size", "64", "-c", "4"]),
    # Slow operations (SLH-DSA signing: milliseconds each): issue 28's Batch of 16.
    ("batch16", ["--style", "batch", "--batch-size", "16", "-c", "2"]),
    ("stream1", ["--style", "stream", "--pack", "1", "--inflight", "128", "-c", "2"]),
    ("stream64", ["--style", "stream", "--pack", "64", "--inflight", "256", "-c", "2"]),
    ("auto32", ["--style", "auto", "-c", "32"]),
    # The shared-memory lane (issue 29): Unix socket only, no floor (a gRPC server has no lanes).
    # lane1: one request at a time (its latency is the round trip); lane32: 32 in flight.
    ("lane1", ["--style", "lane", "-c", "1"]),
    ("lane32", ["--style", "lane", "-c", "32"]),
]
OPS = ["ML-KEM-768:decaps=100", "ML-DSA-65:verify=100", "ML-DSA-65:sign=100"]


def wait_for(path, timeout=20.0, nonempty=True):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and (not nonempty or os.path.getsize(path) > 0):
            return True
        time.sleep(0.05)
    return False


class Server:
    def __init__(self, kind, build, cpu, tmp, pqcd=None):
        self.kind = kind
        self.sock = os.path.join(tmp, kind + ".sock")
        port_file = os.path.join(tmp, kind + ".port")
        if kind != "floor":  # pqcd, or --before (another pqcd build)
            # Held keys over TCP need --allow-insecure-tcp (loopback only, as everything here).
            cmd = [pqcd or os.path.join(build, "server/pqcd"), "--workers", "1", "--listen",
                   "127.0.0.1:0", "--port-file", port_file, "--unix", self.sock,
                   "--metrics-listen", "none", "--log-level", "warn", "--allow-insecure-tcp",
                   "--max-lanes-per-identity", "64"]
        else:
            cmd = [os.path.join(build, "bench/grpc_floor"), "--listen", "127.0.0.1:0",
                   "--unix", self.sock]
        self.log = open(os.path.join(tmp, kind + ".log"), "w")
        self.proc = subprocess.Popen(["taskset", "-c", str(cpu)] + cmd, stdout=subprocess.PIPE
                                     if kind == "floor" else self.log, stderr=self.log, text=True)
        if kind != "floor":
            if not wait_for(port_file):
                sys.exit("pqcd did not start; see " + self.log.name)
            with open(port_file) as f:
                self.port = int(f.readline())
        else:
            line = self.proc.stdout.readline()  # "grpc_floor: listening on 127.0.0.1:PORT ..."
            self.port = int(line.split("127.0.0.1:")[1].split()[0].rstrip(","))
        if not wait_for(self.sock, nonempty=False):
            sys.exit(kind + " did not create its socket")

    def target(self, transport):
        return "unix:" + self.sock if transport == "unix" else "127.0.0.1:%d" % self.port

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def load(build, cpu, args, duration):
    cmd = ["taskset", "-c", str(cpu), os.path.join(build, "bench/pqc-load"), "--json", "-q",
           "--duration", "%gs" % duration, "--warmup", "0.5s"] + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        # pqc-load exits non-zero when calls failed; its JSON on stdout counts them by status.
        print("pqc-load failed (exit %d): %s\n%s%s" % (out.returncode, " ".join(cmd),
                                                       out.stderr[-2000:], out.stdout[-2000:]),
              file=sys.stderr)
        return None
    return json.loads(out.stdout)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_lanes(a, tmp, seconds=5.0):
    """pqcd's CPU over `seconds` with no lane open, then with a.idle_lanes lanes open and idle."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lane",
                                    "examples", "python"))
    import lane_example  # noqa: E402 (the ctypes binding of libpqcd_lane)
    s = Server("pqcd", a.build, a.server_cpu, tmp, a.pqcd)
    lib = os.path.join(a.build, "lane", "libpqcd_lane.so")
    try:
        time.sleep(1.0)
        t0 = cpu_seconds(s.proc.pid)
        time.sleep(seconds)
        none = cpu_seconds(s.proc.pid) - t0
        # 4 slots each: 64 lanes of the default 32 slots would pass the memory account's share
        # of one identity (each lane is charged twice its region).
        open_lanes = [lane_example.Lane(lib, s.sock, 4) for _ in range(a.idle_lanes)]
        for lane in open_lanes:  # each lane used once, then left idle
            lane.call(lane_example.HASH, lane_example.SHA3_256, data=b"x")
        time.sleep(1.0)
        t0 = cpu_seconds(s.proc.pid)
        time.sleep(seconds)
        idle = cpu_seconds(s.proc.pid) - t0
        for lane in open_lanes:
            lane.close()
    finally:
        s.stop()
    return ("\npqcd CPU over %.0f s: %.3f s with no lane, %.3f s with %d lanes open and idle "
            "(clock tick %.3f s)" % (seconds, none, idle, a.idle_lanes,
                                    1.0 / os.sysconf("SC_CLK_TCK")))


def med(rows, key):
    vals = [r[key] for r in rows if r is not None and r.get(key) is not None]
    return statistics.median(vals) if vals else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build", help="CMake build directory")
    ap.add_argument("--pqcd", help="the pqcd binary (default: BUILD/server/pqcd)")
    ap.add_argument("--before", help="another pqcd binary (an older build) run beside it, "
                    "interleaved, with the same settings: its CPU per operation gets a column")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=float, default=2.0, help="seconds per run")
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--load-cpu", type=int, default=0)
    ap.add_argument("--transports", default="unix,tcp")
    ap.add_argument("--ops", default=",".join(OPS), help="pqc-load --op values, ';'-separated")
    ap.add_argument("--styles", default=",".join(s for s, _ in STYLES if s != "batch16"))
    ap.add_argument("--private-keys", default="expanded,held",
                    help="forms of the private key for decaps and sign: expanded, seed, held")
    ap.add_argument("--latency", action="store_true", help="open-loop p99 at half the max rate")
    ap.add_argument("--json", help="write every run here")
    ap.add_argument("--idle-lanes", type=int, default=0,
                    help="also measure pqcd's CPU while this many lanes are open and idle, beside "
                    "none (issue 29)")
    a = ap.parse_args()
    op_list = a.ops.split(";") if ";" in a.ops else a.ops.split(",")
    # (op, private-key form): decaps and sign once per form, the others once.
    ops = [(op, form) for op in op_list
           for form in (a.private_keys.split(",") if (":decaps" in op or ":sign" in op) else ["-"])]
    styles = [(n, args) for n, args in STYLES if n in a.styles.split(",")]
    if not a.styles:
        ops = []  # --styles '': only --idle-lanes

    def key_args(form):
        return [] if form == "-" else ["--private-key", form]

    def label(case):
        op, form = case
        return op.split("=")[0] + ("" if form == "-" else " (%s key)" % form)
    transports = a.transports.split(",")

    tmp = tempfile.mkdtemp(prefix="pqcd-rp-")
    kinds = ("pqcd", "before", "floor") if a.before else ("pqcd", "floor")
    servers = {k: Server(k, a.build, a.server_cpu, tmp, a.before if k == "before" else a.pqcd)
               for k in kinds}
    runs = []
    try:
        for rep in range(a.repeats):
            for op in ops:
                r = load(a.build, "%d,%d" % (a.load_cpu, a.server_cpu),
                         ["--in-process", "--workers", "1", "--op", op[0]] + key_args(op[1]),
                         a.duration)
                runs.append({"rep": rep, "op": op, "server": "in-process", "transport": "-",
                             "style": "in-process", "r": r})
                if any(n == "lane1" for n, _ in styles):
                    # One request at a time in-process: the reference of a lane's round trip.
                    r = load(a.build, "%d,%d" % (a.load_cpu, a.server_cpu),
                             ["--in-process", "--workers", "1", "-c", "1", "--op", op[0]] +
                             key_args(op[1]), a.duration)
                    runs.append({"rep": rep, "op": op, "server": "in-process", "transport": "-",
                                 "style": "in-process1", "r": r})
                    # Sparse traffic (1000 requests/s, open loop): the worker is blocked between
                    # requests, so each one goes through the doorbell; unary gRPC beside it.
                    for sname, sargs in (("lane-sparse", ["--style", "lane"]),
                                         ("unary-sparse", ["--style", "unary"])):
                        r = load(a.build, a.load_cpu,
                                 ["--targets", servers["pqcd"].target("unix"), "--op", op[0],
                                  "--rate", "1000", "--server-pid",
                                  str(servers["pqcd"].proc.pid)] + sargs + key_args(op[1]),
                                 a.duration)
                        runs.append({"rep": rep, "op": op, "server": "pqcd", "transport": "unix",
                                     "style": sname, "r": r})
                for transport in transports:
                    for name, sargs in styles:
                        for kind in kinds:
                            if name.startswith("lane") and (kind != "pqcd" or
                                                            transport != "unix"):
                                continue  # lanes: pqcd's, beside its Unix socket
                            s = servers[kind]
                            # The floor answers without crypto: its requests are the same
                            # size (a held key's carry a key_ref, not the key).
                            r = load(a.build, a.load_cpu,
                                     ["--targets", s.target(transport), "--op", op[0],
                                      "--server-pid", str(s.proc.pid)] + sargs +
                                     (key_args(op[1]) if kind != "floor" or op[1] != "held"
                                      else ["--private-key", "seed"]), a.duration)
                            runs.append({"rep": rep, "op": op, "server": kind,
                                         "transport": transport, "style": name, "r": r})
            print("repeat %d of %d done" % (rep + 1, a.repeats), file=sys.stderr)

        def pick(op, server, transport, style):
            return [x["r"] for x in runs if x["op"] == op and x["server"] == server and
                    x["transport"] == transport and x["style"] == style]

        latency = []
        if a.latency:
            for op in ops:
                for transport in transports:
                    for name, sargs in styles:
                        if name.startswith("batch") or name.startswith("lane"):
                            # pqc-load has no open loop for Batch; a lane's closed-loop latency
                            # is its round trip (lane1)
                            continue
                        rate = med(pick(op, "pqcd", transport, name), "ops_per_second") / 2
                        if not rate == rate or rate <= 0:
                            continue
                        # Open loop: one operation per call/item at the given rate.
                        oargs = [x for x in sargs]
                        if "-c" in oargs:
                            i = oargs.index("-c")
                            del oargs[i:i + 2]
                        r = load(a.build, a.load_cpu,
                                 ["--targets", servers["pqcd"].target(transport), "--op", op[0],
                                  "--rate", "%d" % rate] + oargs + key_args(op[1]), a.duration)
                        f = load(a.build, a.load_cpu,
                                 ["--targets", servers["floor"].target(transport), "--op", op[0],
                                  "--rate", "%d" % rate] + oargs +
                                 (key_args(op[1]) if op[1] != "held" else ["--private-key", "seed"]),
                                 a.duration)
                        latency.append((op, transport, name, rate, r, f))
    finally:
        for s in servers.values():
            s.stop()

    bcol = " before CPU µs/op | pqcd / before |" if a.before else ""
    print("| op | transport | style | pqcd ops/s | pqcd CPU µs/op | floor CPU µs/op | "
          "pqcd / (floor + in-process) | pqcd / in-process | ctx sw/req | load CPU share |" + bcol)
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if a.before else ""))
    for op in ops:
        inproc = pick(op, "in-process", "-", "in-process")
        ip_cpu = med(inproc, "server_cpu_us_per_op")
        ip_ops = med(inproc, "ops_per_second")
        print("| %s | - | in-process | %.0f | %.2f | | | 1.00 | | |" % (label(op), ip_ops, ip_cpu) +
              (" | |" if a.before else ""))
        for transport in transports:
            for name, _ in styles:
                if name.startswith("lane") and transport != "unix":
                    continue
                p = pick(op, "pqcd", transport, name)
                f = pick(op, "floor", transport, name)
                pc, fc = med(p, "server_cpu_us_per_op"), med(f, "server_cpu_us_per_op")
                extra = ""
                if a.before:
                    bc = med(pick(op, "before", transport, name), "server_cpu_us_per_op")
                    extra = " %.2f | %.2f |" % (bc, pc / bc)
                print("| %s | %s | %s | %.0f (%.0f%%) | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |" % (
                    label(op), transport, name, med(p, "ops_per_second"),
                    100 * med(p, "ops_per_second") / ip_ops, pc, fc, pc / (fc + ip_cpu),
                    pc / ip_cpu, med(p, "server_ctx_switches_per_request"),
                    med(p, "client_cpu_share")) + extra)
    if latency:
        print("\n| op | transport | style | open-loop rate | p50 µs | p99 µs | errors | "
              "floor p50 µs | floor p99 µs |")
        print("|---|---|---|---:|---:|---:|---:|---:|---:|")
        nan = float("nan")
        for op, transport, name, rate, r, f in latency:
            if r is None:
                continue
            lat = r.get("latency_us", {})
            flat = (f or {}).get("latency_us", {})
            print("| %s | %s | %s | %.0f | %.0f | %.0f | %d | %.0f | %.0f |" % (
                label(op), transport, name, rate, lat.get("p50", nan), lat.get("p99", nan),
                r.get("error_total", 0), flat.get("p50", nan), flat.get("p99", nan)))
    if any(n == "lane1" for n, _ in styles):
        # The round trip of one request at a time beside the same in-process (the crypto of a
        # lone request: its CPU per operation), and the sparse open-loop runs.
        def lat(rows, q):
            vals = [x["latency_us"][q] for x in rows if x is not None and "latency_us" in x]
            return statistics.median(vals) if vals else float("nan")
        print("\n| op | style | p50 µs | p90 µs | p99 µs | in-process, one at a time: CPU µs/op "
              "| p50 µs | lane p50 above that CPU µs/op |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for op in ops:
            ip1 = pick(op, "in-process", "-", "in-process1")
            crypto = med(ip1, "server_cpu_us_per_op")
            for name in ("lane1", "lane-sparse", "unary-sparse"):
                p = pick(op, "pqcd", "unix", name)
                print("| %s | %s | %.1f | %.1f | %.1f | %.2f | %.1f | %s |" % (
                    label(op), name, lat(p, "p50"), lat(p, "p90"), lat(p, "p99"), crypto,
                    lat(ip1, "p50"),
                    "%.1f" % (lat(p, "p50") - crypto) if name == "lane1" else ""))
    if a.idle_lanes > 0:
        for _ in range(a.repeats):
            print(idle_lanes(a, tmp))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, "latency": [list(x) for x in latency]}, f)


if __name__ == "__main__":
    main()
