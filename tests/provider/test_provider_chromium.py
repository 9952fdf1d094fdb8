#!/usr/bin/env python3
"""Chromium (headless) fetches a page over HTTPS from nginx with pqcd-provider.so (issue 30).

  test_provider_chromium.py --pqcd build/server/pqcd --provider build/provider/pqcd-provider.so

One pqcd on a temporary Unix socket; nginx (one worker, ssl_ecdh_curve X25519MLKEM768:X25519)
with the provider; Debian's chromium, headless, loads https://127.0.0.1:PORT/ (its own
X25519MLKEM768 key share, offered by default since Chromium 131). Asserts: the page arrived,
nginx's access log shows $ssl_curve 0x11ec (X25519MLKEM768) for it, and pqcd counted the
Encaps. Exit 77 (ctest's SKIP_RETURN_CODE) when chromium or nginx is not installed
(scripts/install-deps.sh installs both).
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SKIP = 77
TIMEOUT = float(os.environ.get("PQCD_PROVIDER_TEST_TIMEOUT", "60"))


class Failure(Exception):
    pass


def wait_for(what, pred, timeout=TIMEOUT):
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > end:
            raise Failure(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def encaps(metrics_port):
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return sum(float(l.split()[-1]) for l in text.splitlines()
               if l.startswith("pqcd_operations_total{") and 'operation="encaps"' in l and
               'algorithm="X25519MLKEM768"' in l)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pqcd", required=True)
    ap.add_argument("--provider", required=True)
    args = ap.parse_args()
    chromium = shutil.which("chromium")
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK)
                                      else None)
    if chromium is None or nginx is None:
        print("SKIP: needs chromium and nginx (apt-get install chromium nginx-light)")
        return SKIP
    version = subprocess.run([chromium, "--version"], capture_output=True, text=True,
                             timeout=TIMEOUT).stdout.strip()
    print(f"== {version}")
    d = tempfile.mkdtemp(prefix="pqcd-chromium-")
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
        daemon = start([args.pqcd, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                        "--unix", sock, "--port-file", ports_file, "--workers", "1",
                        "--log-level", "warn"], "pqcd.log")

        def daemon_ready():
            if daemon.poll() is not None:
                raise Failure(f"pqcd exited: {read(os.path.join(d, 'pqcd.log'))}")
            lines = read(ports_file).split()
            return len(lines) >= 2 and os.path.exists(sock + ".lane") and lines

        metrics_port = int(wait_for("pqcd", daemon_ready)[1])
        cnf = os.path.join(d, "openssl.cnf")
        with open(cnf, "w") as f:
            f.write(f"""openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
default = default_sect
pqcd = pqcd_sect
[default_sect]
activate = 1
[pqcd_sect]
module = {os.path.abspath(args.provider)}
pqcd_address = unix:{sock}
activate = 1
""")
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True,
                       timeout=TIMEOUT)
        port = free_port()
        access_log, error_log = os.path.join(d, "access.log"), os.path.join(d, "error.log")
        for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(d, sub))
        conf = os.path.join(d, "nginx.conf")
        user = "user root;" if os.geteuid() == 0 else ""
        with open(conf, "w") as f:
            f.write(f"""{user}
daemon off;
master_process on;
worker_processes 1;
pid {d}/nginx.pid;
error_log {error_log} info;
events {{ worker_connections 64; }}
http {{
  log_format tls '$ssl_protocol $ssl_curve "$request" $status';
  access_log {access_log} tls;
  client_body_temp_path {d}/client_body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.3;
    ssl_ecdh_curve X25519MLKEM768:X25519;
    location / {{ default_type text/html; return 200 "<p id=x>hello from pqcd</p>\\n"; }}
  }}
}}
""")
        nginx_proc = start([nginx, "-p", d, "-c", conf, "-e", error_log], "nginx.out",
                           dict(os.environ, OPENSSL_CONF=cnf))

        def listening():
            if nginx_proc.poll() is not None:
                raise Failure(f"nginx exited: {read(error_log)}{read(os.path.join(d, 'nginx.out'))}")
            return accepts(port)

        wait_for("nginx", listening)
        before = encaps(metrics_port)
        argv = [chromium, "--headless", "--disable-gpu", "--no-first-run",
                "--user-data-dir=" + os.path.join(d, "chromium-profile"),
                "--ignore-certificate-errors", "--dump-dom", f"https://127.0.0.1:{port}/"]
        if os.geteuid() == 0:
            argv.insert(1, "--no-sandbox")
        t0 = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT,
                           start_new_session=True)
        took = time.monotonic() - t0
        if "hello from pqcd" not in r.stdout:
            raise Failure(f"chromium did not get the page (rc {r.returncode}):\n"
                          f"{r.stdout[-2000:]}\n{r.stderr[-3000:]}\n{read(error_log)[-2000:]}")
        print(f"== chromium fetched the page in {took:.1f} s")
        lines = wait_for("the access log line", lambda: [
            l for l in read(access_log).splitlines() if '"GET / HTTP' in l])
        print(f"== access log: {' | '.join(lines)}")
        if not any(l.startswith("TLSv1.3 0x11ec ") for l in lines):
            raise Failure(f"chromium's request was not over X25519MLKEM768 (0x11ec): {lines}")
        wait_for("pqcd to count the Encaps", lambda: encaps(metrics_port) > before, timeout=10)
        print(f"== pqcd counted {encaps(metrics_port) - before:.0f} X25519MLKEM768 Encaps")
        print("PASS")
        return 0
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
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
