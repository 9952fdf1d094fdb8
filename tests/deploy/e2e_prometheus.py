#!/usr/bin/env python3
"""End to end with a real Prometheus: pqcd + our scrape config and rules + pqc-load.

1. starts pqcd on loopback (gRPC port from --port-file, metrics on a free port),
2. starts Prometheus on loopback with a test copy of deploy/prometheus/prometheus.yml (1 s scrape and
   evaluation intervals, our target, absolute rule file paths) and a temporary TSDB,
3. drives a short workload with pqc-load (ML-KEM-768 decaps + ML-DSA-65 verify),
4. asks Prometheus' HTTP API: the target is up; every rule group is healthy; every recording rule
   returns data; every PromQL expression (and template-variable query) of the Grafana dashboard
   parses and returns a non-empty result; no alert fires,
5. stops pqcd with SIGTERM (it drains and must exit 0) and Prometheus.

Usage: e2e_prometheus.py --repo ROOT --pqcd PATH --pqc-load PATH [--prometheus PATH]
Exit 77 (ctest: skipped) when prometheus is not installed. Takes about 30 s.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

LOAD_SECONDS = 10
procs = []
results = {"passed": 0, "failed": 0}


def log(msg):
    print(msg, flush=True)


def check(ok, what):
    results["passed" if ok else "failed"] += 1
    log(("ok   " if ok else "FAIL ") + what)
    return ok


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_for(pred, seconds, what):
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            v = pred()
            if v:
                return v
        except (OSError, urllib.error.URLError, ValueError) as e:
            last = e
        for p in procs:
            if p.poll() is not None:
                raise RuntimeError(f"{what}: {p.args[0]} exited with {p.returncode}")
        time.sleep(0.2)
    raise RuntimeError(f"timed out after {seconds} s waiting for {what} (last error: {last})")


def start(cmd, logfile):
    log("$ " + " ".join(cmd))
    f = open(logfile, "w")
    p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    procs.append(p)
    return p


def stop_all():
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Prom:
    def __init__(self, base):
        self.base = base

    def api(self, path, **params):
        url = f"{self.base}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params, doseq=True)
        try:
            body = http_get(url)
        except urllib.error.HTTPError as e:
            body = e.read().decode()
        return json.loads(body)

    def query(self, expr):
        return self.api("query", query=expr, time=f"{time.time():.3f}")


def substitute(expr, variables):
    out = expr
    for name, value in variables.items():
        out = out.replace("${" + name + "}", value).replace("$" + name, value)
    return out


def dashboard_queries(dash):
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                out.append((f"panel '{p['title']}' {t.get('refId', '')}", t["expr"]))
            walk(p.get("panels", []))

    walk(dash["panels"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    ap.add_argument("--pqcd", required=True)
    ap.add_argument("--pqc-load", required=True)
    ap.add_argument("--prometheus", default=shutil.which("prometheus") or "/usr/bin/prometheus")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, config)")
    args = ap.parse_args()
    if not os.access(args.prometheus, os.X_OK):
        log("SKIP: prometheus not installed (Debian package prometheus)")
        return 77
    deploy = os.path.join(os.path.abspath(args.repo), "deploy")
    tmp = tempfile.mkdtemp(prefix="pqcd-e2e-prom-")
    t0 = time.monotonic()
    try:
        # 1. pqcd
        metrics_port = free_port()
        port_file = os.path.join(tmp, "grpc.port")
        pqcd = start([args.pqcd, "--listen", "127.0.0.1:0", "--port-file", port_file,
                      "--metrics-listen", f"127.0.0.1:{metrics_port}", "--workers", "2",
                      "--grace-period", "5", "--log-level", "warn"], os.path.join(tmp, "pqcd.log"))
        # The port file's first line is the gRPC port (the second, the metrics port); it is written
        # once pqcd is SERVING.
        grpc_port = int(wait_for(lambda: open(port_file).read().split(), 30, "pqcd's port file")[0])
        target = f"127.0.0.1:{metrics_port}"
        wait_for(lambda: "pqcd_build_info" in http_get(f"http://{target}/metrics"), 30, "pqcd /metrics")
        log(f"pqcd: gRPC 127.0.0.1:{grpc_port}, metrics {target}")

        # 2. Prometheus with a test copy of the committed configuration
        with open(os.path.join(deploy, "prometheus", "prometheus.yml")) as f:
            cfg = yaml.safe_load(f)
        cfg["global"]["scrape_interval"] = "1s"
        cfg["global"]["evaluation_interval"] = "1s"
        cfg["rule_files"] = [os.path.join(deploy, "prometheus", r) for r in cfg["rule_files"]]
        jobs = [j for j in cfg["scrape_configs"] if j["job_name"] == "pqcd"]
        check(len(jobs) == 1, "prometheus.yml has one scrape job 'pqcd'")
        job = jobs[0]
        job["scrape_interval"] = "1s"
        job["static_configs"] = [{"targets": [target]}]
        cfg_path = os.path.join(tmp, "prometheus.yml")
        with open(cfg_path, "w") as f:
            yaml.safe_dump(cfg, f)
        prom_port = free_port()
        start([args.prometheus, f"--config.file={cfg_path}", f"--storage.tsdb.path={tmp}/tsdb",
               f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn",
               "--storage.tsdb.retention.time=1h"], os.path.join(tmp, "prometheus.log"))
        prom = Prom(f"http://127.0.0.1:{prom_port}")
        wait_for(lambda: http_get(f"{prom.base}/-/ready"), 30, "Prometheus ready")
        log(f"prometheus: 127.0.0.1:{prom_port} ({time.monotonic() - t0:.1f} s)")

        # 3. workload
        load_cmd = [args.pqc_load, "--target", f"127.0.0.1:{grpc_port}",
                    "--op", "ML-KEM-768:decaps=50,ML-DSA-65:verify=50", "--concurrency", "4",
                    "--duration", f"{LOAD_SECONDS}s", "--json"]
        log("$ " + " ".join(load_cmd))
        load = subprocess.run(load_cmd, capture_output=True, text=True, timeout=LOAD_SECONDS + 60)
        if load.returncode != 0 and "duration" in (load.stderr + load.stdout).lower():
            load_cmd[load_cmd.index("--duration") + 1] = str(LOAD_SECONDS)  # plain seconds
            log("$ " + " ".join(load_cmd))
            load = subprocess.run(load_cmd, capture_output=True, text=True, timeout=LOAD_SECONDS + 60)
        if not check(load.returncode == 0, f"pqc-load exit code {load.returncode}"):
            log(load.stdout[-3000:] + load.stderr[-3000:])
        else:
            log("pqc-load: " + load.stdout.strip()[-600:])

        # The rules see the load once a couple of evaluations ran after it.
        def ops_recorded():
            r = prom.query("sum(pqcd:operations:rate1m) > 0")
            return r["status"] == "success" and r["data"]["result"]

        wait_for(ops_recorded, 20, "pqcd:operations:rate1m > 0")
        time.sleep(2)

        # 4a. the target
        targets = prom.api("targets")["data"]["activeTargets"]
        ours = [t for t in targets if t["labels"].get("job") == "pqcd"]
        check(len(ours) == 1 and ours[0]["health"] == "up",
              f"target {target} is up ({[(t['scrapeUrl'], t['health'], t['lastError']) for t in ours]})")
        up = prom.query('up{job="pqcd"}')["data"]["result"]
        check(len(up) == 1 and up[0]["value"][1] == "1", 'up{job="pqcd"} == 1')

        # 4b. rules: every group loaded and healthy; every recording rule returns data
        groups = prom.api("rules")["data"]["groups"]
        files = {g["file"] for g in groups}
        check(files == set(cfg["rule_files"]), f"rule files loaded: {sorted(files)}")
        n_record = n_alert = 0
        for g in groups:
            for r in g["rules"]:
                check(r["health"] == "ok", f"rule {r.get('name')} ({g['name']}) health {r['health']} "
                      f"{r.get('lastError', '')}".rstrip())
                if r["type"] == "recording":
                    n_record += 1
                    res = prom.query(r["name"])
                    samples = res.get("data", {}).get("result", [])
                    check(res["status"] == "success" and len(samples) > 0,
                          f"recording rule {r['name']}: {len(samples)} series "
                          f"{[s['value'][1] for s in samples][:4]}")
                else:
                    n_alert += 1
        check(n_record >= 10 and n_alert >= 5, f"{n_record} recording and {n_alert} alerting rules")

        # 4c. the dashboard: every expression parses and returns a result
        with open(os.path.join(deploy, "grafana", "pqcd-dashboard.json")) as f:
            dash = json.load(f)
        variables = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h",
                     "job": "pqcd", "instance": target}
        for where, expr in dashboard_queries(dash):
            q = substitute(expr, variables)
            if "$" in q:
                check(False, f"{where}: a variable is left in {q}")
                continue
            res = prom.query(q)
            samples = res.get("data", {}).get("result", [])
            check(res["status"] == "success" and len(samples) > 0,
                  f"{where}: {res['status']} {len(samples)} series {res.get('error', '')} :: {q}")
        for v in dash["templating"]["list"]:
            if v["type"] != "query":
                continue
            m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", v["query"]["query"])
            if not check(m is not None, f"variable ${v['name']}: label_values(metric, label)"):
                continue
            series = substitute(m.group(1), variables)
            res = prom.api(f"label/{m.group(2)}/values", **{"match[]": series})
            check(res["status"] == "success" and res["data"], f"variable ${v['name']}: {res.get('data')}")

        # 4d. a healthy daemon under light load fires no alert
        alerts = prom.api("alerts")["data"]["alerts"]
        firing = [a["labels"] for a in alerts if a["state"] == "firing"]
        check(not firing, f"no alert firing {firing}")
        pending = [a["labels"].get("alertname") for a in alerts if a["state"] == "pending"]
        if pending:
            log(f"note: pending alerts {pending}")

        # 5. drain: SIGTERM, exit 0
        pqcd.send_signal(signal.SIGTERM)
        try:
            rc = pqcd.wait(timeout=20)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, f"pqcd exits 0 after SIGTERM (got {rc})")
    except Exception as e:  # noqa: BLE001 - any setup failure fails the test with the logs
        check(False, f"{type(e).__name__}: {e}")
    finally:
        stop_all()
        if results["failed"]:
            for name in ("pqcd.log", "prometheus.log"):
                path = os.path.join(tmp, name)
                if os.path.exists(path):
                    with open(path) as f:
                        log(f"--- {name} (last 40 lines)\n" + "".join(f.readlines()[-40:]))
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    log(f"took {time.monotonic() - t0:.1f} s")
    log(f"e2e: {results['passed']} passed, {results['failed']} failed")
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: (stop_all(), sys.exit(1)))
    sys.exit(main())
