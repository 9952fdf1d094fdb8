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
import subprocess
import sys
import tempfile
import time

from tls_harness import (SKIP, TIMEOUT, Daemon, Failure, Processes, accepts, exited, find_nginx,
                         free_port, make_certificate, provider_env, read, wait_for,
                         write_nginx_conf, write_openssl_cnf)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pqcd", required=True)
    ap.add_argument("--provider", required=True)
    ap.add_argument("--preload", action="append", default=[],
                    help="a sanitizer runtime to preload into nginx (which loads the provider)")
    args = ap.parse_args()
    chromium = shutil.which("chromium")
    nginx = find_nginx()
    if chromium is None or nginx is None:
        print("SKIP: needs chromium and nginx (apt-get install chromium nginx-light)")
        return SKIP
    version = subprocess.run([chromium, "--version"], capture_output=True, text=True,
                             timeout=TIMEOUT).stdout.strip()
    print(f"== {version}")
    d = tempfile.mkdtemp(prefix="pqcd-chromium-")
    os.chmod(d, 0o755)
    procs = Processes()
    try:
        daemon = Daemon(procs, args.pqcd, d, "pqcd")
        cnf = os.path.join(d, "openssl.cnf")
        write_openssl_cnf(cnf, args.provider, daemon.address)
        cert, key = make_certificate(d)
        port = free_port()
        access_log = os.path.join(d, "access.log")
        conf, error_log = write_nginx_conf(
            d, port, cert, key, "X25519MLKEM768:X25519",
            'default_type text/html; return 200 "<p id=x>hello from pqcd</p>\\n";', access_log)
        nginx_out = os.path.join(d, "nginx.out")
        nginx_proc = procs.start("nginx", [nginx, "-p", d, "-c", conf, "-e", error_log], nginx_out,
                                 env=provider_env(cnf, args.preload))
        wait_for("nginx", lambda: accepts(port) or exited(nginx_proc, error_log, nginx_out))
        encaps = lambda: daemon.operations("encaps", "X25519MLKEM768")
        before = encaps()
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
        wait_for("pqcd to count the Encaps", lambda: encaps() > before, timeout=10)
        print(f"== pqcd counted {encaps() - before} X25519MLKEM768 Encaps")
        print("PASS")
        return 0
    except Failure as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        procs.stop_all()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
