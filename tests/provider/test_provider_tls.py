#!/usr/bin/env python3
"""End-to-end test of pqcd-provider.so with real parts (docs/provider.md).

  test_provider_tls.py --pqcd build/server/pqcd --provider build/provider/pqcd-provider.so

Two real pqcd daemons on temporary Unix sockets: one computes the server side (s_server, then
nginx), one the client side (s_client, curl). Steps:
  1. openssl s_server and s_client (Debian's openssl, OPENSSL_CONF loading default + pqcd) with
     -groups X25519MLKEM768 (then SecP256r1MLKEM768, SecP384r1MLKEM1024) complete a TLS 1.3
     handshake; the ServerHello's key share is that group (0x11ec; s_client -trace); the server's
     daemon counted one Encaps, the client's one KeyGen and one Decaps of it (/metrics).
  1b. provider_evp_check: the EVP calls libssl makes, for each group and for plain
     ML-KEM-512/768/1024 (with raw public key import and export), and the shares the
     provider refuses when they are set (their errors on OpenSSL's error queue); once with the
     daemon's Unix socket (all calls over its lane), once with its TCP port and once with the
     Unix socket and pqcd_lane = off (all over gRPC), each way checked in the daemon's metrics.
     Then with no daemon at the address: with pqcd_fallback = local the same checks pass
     (computed in process); by default (fail-closed) they fail, naming the missing daemon.
  1c. provider_async_check: 8 handshakes in OpenSSL ASYNC jobs in one thread; the provider pauses
     each job for its daemon call, so several calls are in flight at once.
  2. nginx (one worker, ssl_ecdh_curve with the three groups and X25519) serves a page to
     s_client and to curl over X25519MLKEM768; its access log shows $ssl_curve = 0x11ec; a
     classic client (-groups X25519) is served too, shows X25519, and pqcd is not asked.
  2b. Hand-made ClientHellos with malformed key shares (one byte short, an ML-KEM key failing the
     modulus check, low-order X25519 points, points off P-256/P-384) get the illegal_parameter
     alert; a well-formed share of each group gets a ServerHello; pqcd computed only those, and
     nginx and pqcd serve a normal handshake afterwards.
  3. With the server's daemon frozen (SIGSTOP), a handshake fails at the provider's deadline;
     with the server's daemon stopped, a handshake to nginx fails promptly and nginx's error log
     names the provider's error and the address; started again, the same nginx worker serves
     again; a client whose daemon is unreachable fails before it sends anything.
Exit 77 (ctest's SKIP_RETURN_CODE) when nginx is not installed.
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from tls_harness import (SKIP, TIMEOUT, Daemon, Failure, Processes, accepts, exited, find_nginx,
                         free_port, make_certificate, provider_env, read, wait_for,
                         write_nginx_conf, write_openssl_cnf)

GROUP = "X25519MLKEM768"
GROUP_ID = 0x11EC
# Every group of the provider: (name, TLS id, the server's key share length); docs/hybrids.md.
GROUPS = [("X25519MLKEM768", 0x11EC, 1120), ("SecP256r1MLKEM768", 0x11EB, 1153),
          ("SecP384r1MLKEM1024", 0x11ED, 1665)]

PRELOAD = []  # sanitizer runtimes for the programs that load an instrumented provider


def env_with(cnf):
    """The environment of a program that loads the provider (openssl, nginx, curl)."""
    return provider_env(cnf, PRELOAD)


def s_client(port, cnf, request=b"", extra=(), group=GROUP):
    args = ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost",
            "-tls1_3", "-groups", group, "-trace", *extra]
    started = time.monotonic()
    r = subprocess.run(args, input=request, capture_output=True, env=env_with(cnf),
                       timeout=TIMEOUT)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(
        errors="replace"), time.monotonic() - started


def server_hello_group(trace):
    """The group of the key share in the ServerHello that s_client -trace printed."""
    m = re.search(r"ServerHello.*?extension_type=key_share\(51\), length=(\d+)\s+"
                  r"NamedGroup: [^(\n]*\((\d+)\)", trace, re.S)
    return (int(m.group(2)), int(m.group(1))) if m else None


def expect_counts(daemon, before, want, who, group=GROUP):
    def reached():
        now = daemon.counts(group)
        return now if all(now[k] - before[k] == v for k, v in want.items()) else None

    try:
        return wait_for(f"{who} counting {want}", reached, timeout=10)
    except Failure:
        now = daemon.counts(group)
        raise Failure(f"{who}: {group} operations went from {before} to {now}, expected +{want}")


# ---- Malformed key shares at the TLS level (a hand-made ClientHello) ----
ALERT_ILLEGAL_PARAMETER = 47
# draft-ietf-tls-ecdhe-mlkem's client share layouts: (ML-KEM ek offset, its k, curve offset, bytes).
SHARE_LAYOUT = {0x11EC: (0, 3, 1184, 32), 0x11EB: (65, 3, 0, 65), 0x11ED: (97, 4, 0, 97)}


def curve_point(group_id):
    """A valid public key of the group's curve (X25519: u = 9, the base point; NIST curves: a
    fresh key's uncompressed point, from the openssl command)."""
    if group_id == 0x11EC:
        return bytes([9]) + bytes(31)
    curve = "prime256v1" if group_id == 0x11EB else "secp384r1"
    key = subprocess.run(["openssl", "ecparam", "-name", curve, "-genkey", "-noout"],
                         capture_output=True, check=True, timeout=TIMEOUT).stdout
    der = subprocess.run(["openssl", "ec", "-pubout", "-outform", "DER"], input=key,
                         capture_output=True, check=True, timeout=TIMEOUT).stdout
    return der[-(65 if group_id == 0x11EB else 97):]


def client_share(group_id, point):
    """A well-formed client share: an ML-KEM encapsulation key whose coefficients are all 0 (it
    passes FIPS 203's modulus check) with a random rho, and the curve point."""
    ml_off, k, curve_off, _ = SHARE_LAYOUT[group_id]
    ek = bytes(384 * k) + os.urandom(32)
    return ek + point if curve_off > ml_off else point + ek


def client_hello(group_id, share):
    """A TLS 1.3 ClientHello record offering only `group_id`, with `share` as its key share."""
    def ext(kind, body):
        return kind.to_bytes(2, "big") + len(body).to_bytes(2, "big") + body

    def vec(n, body):
        return len(body).to_bytes(n, "big") + body

    name = b"localhost"
    extensions = (
        ext(0, vec(2, b"\x00" + vec(2, name))) +                      # server_name
        ext(43, vec(1, b"\x03\x04")) +                                # supported_versions: 1.3
        ext(10, vec(2, group_id.to_bytes(2, "big"))) +                 # supported_groups
        ext(13, vec(2, b"\x04\x03\x08\x04\x08\x07\x05\x03")) +          # signature_algorithms
        ext(51, vec(2, group_id.to_bytes(2, "big") + vec(2, share))))  # key_share
    body = (b"\x03\x03" + os.urandom(32) + vec(1, os.urandom(32)) +
            vec(2, b"\x13\x01\x13\x02\x13\x03") + b"\x01\x00" + vec(2, extensions))
    handshake = b"\x01" + vec(3, body)
    return b"\x16\x03\x01" + vec(2, handshake)


def first_answer(port, record):
    """Sends `record` and reads the server's first record: ("alert", description) or
    ("handshake", its first message type: 2 is ServerHello)."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        sock.sendall(record)
        data = b""
        while len(data) < 5 or len(data) < 5 + int.from_bytes(data[3:5], "big"):
            chunk = sock.recv(65536)
            if not chunk:
                return ("closed", len(data))
            data += chunk
    if data[0] == 21:
        return ("alert", data[6])
    if data[0] == 22:
        return ("handshake", data[5])
    return ("record type", data[0])


def run_evp_check(evp_check, cnf):
    """Runs provider_evp_check with `cnf` (an instrumented build of its own: nothing to preload,
    and no OPENSSL_CONF or PQCD_PROVIDER_ADDRESS of ours): (exit status, stdout, stderr)."""
    env = dict(os.environ)
    env.pop("OPENSSL_CONF", None)
    env.pop("PQCD_PROVIDER_ADDRESS", None)
    r = subprocess.run([evp_check, cnf], capture_output=True, env=env, timeout=TIMEOUT)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def step(msg):
    print(f"-- {msg}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pqcd", required=True)
    ap.add_argument("--provider", required=True)
    ap.add_argument("--evp-check", required=True, help="provider_evp_check (the EVP calls)")
    ap.add_argument("--async-check", help="provider_async_check (handshakes in ASYNC jobs)")
    ap.add_argument("--preload", action="append", default=[],
                    help="a sanitizer runtime to preload into openssl, nginx and curl")
    args = ap.parse_args()
    PRELOAD.extend(args.preload)

    nginx = find_nginx()
    if nginx is None:
        print("SKIP: nginx is not installed (apt-get install nginx-light); "
              "the provider's end-to-end test needs it")
        return SKIP
    if shutil.which("openssl") is None:
        print("FAIL: the openssl command is not installed")
        return 1

    started = time.monotonic()
    directory = tempfile.mkdtemp(prefix="pqcd-provider-")
    os.chmod(directory, 0o755)  # nginx's workers may run as another user (see below)
    procs = Processes()
    ok = False
    try:
        server_daemon = Daemon(procs, args.pqcd, directory, "server-pqcd")
        client_daemon = Daemon(procs, args.pqcd, directory, "client-pqcd")
        server_cnf = os.path.join(directory, "server-openssl.cnf")
        client_cnf = os.path.join(directory, "client-openssl.cnf")
        write_openssl_cnf(server_cnf, args.provider, server_daemon.address)
        write_openssl_cnf(client_cnf, args.provider, client_daemon.address)
        cert, key = make_certificate(directory, env_with(server_cnf))

        # ---- 1. s_server and s_client, each group ----
        for group, group_id, ct_bytes in GROUPS:
            step("openssl s_server + s_client, -groups " + group)
            s_before, c_before = server_daemon.counts(group), client_daemon.counts(group)
            port = free_port()
            server_log = os.path.join(directory, f"s_server-{group}.log")
            s_server = procs.start(
                "s_server",
                ["openssl", "s_server", "-accept", f"127.0.0.1:{port}", "-cert", cert, "-key",
                 key, "-tls1_3", "-groups", group, "-naccept", "1"],
                server_log, stdin=subprocess.PIPE, env=env_with(server_cnf))
            wait_for("s_server to listen",
                     lambda: "ACCEPT" in read(server_log) or exited(s_server, server_log))
            rc, out, err, _ = s_client(port, client_cnf, group=group)
            if rc != 0 or "New, TLSv1.3" not in out:
                raise Failure(f"s_client failed (rc {rc}):\n{out[-3000:]}\n{err[-3000:]}")
            got = server_hello_group(out)
            if got != (group_id, 4 + ct_bytes):
                raise Failure(f"ServerHello key share (group, length) = {got}, expected "
                              f"({group_id}, {4 + ct_bytes})")
            print(f"   TLSv1.3; ServerHello key_share NamedGroup {got[0]:#06x}, {got[1]} bytes")
            wait_for("s_server to report the shared group",
                     lambda: f"Shared groups: {group}" in read(server_log))
            expect_counts(server_daemon, s_before, {"keygen": 0, "encaps": 1, "decaps": 0},
                          "server's pqcd", group)
            expect_counts(client_daemon, c_before, {"keygen": 1, "encaps": 0, "decaps": 1},
                          "client's pqcd", group)
            print("   /metrics: server's pqcd +1 encaps, client's pqcd +1 keygen +1 decaps")
            procs.stop(s_server)

        # ---- 1b. the EVP calls, and the refusals: over the lane, then over gRPC (TCP) ----
        tcp_cnf = os.path.join(directory, "tcp-openssl.cnf")
        write_openssl_cnf(tcp_cnf, args.provider, client_daemon.tcp_address)
        no_lane_cnf = os.path.join(directory, "no-lane-openssl.cnf")
        write_openssl_cnf(no_lane_cnf, args.provider, client_daemon.address,
                          "pqcd_lane = off\n")
        # Which way the calls went: lane requests, or gRPC requests (KeyGen, Encaps, Decaps).
        lane_requests = lambda: client_daemon.metric("pqcd_lane_requests_total")
        grpc_requests = lambda: sum(client_daemon.metric("pqcd_requests_total", f'rpc="{rpc}"')
                                    for rpc in ("KeyGen", "Encaps", "Decaps"))
        for transport, cnf, by, other in (
                ("lane, " + client_daemon.address, client_cnf, lane_requests, grpc_requests),
                ("gRPC, " + client_daemon.tcp_address, tcp_cnf, grpc_requests, lane_requests),
                ("gRPC (pqcd_lane = off), " + client_daemon.address, no_lane_cnf, grpc_requests,
                 lane_requests)):
            by_before, other_before = by(), other()
            step(f"provider_evp_check over {transport}: EVP keygen/encapsulate/decapsulate, "
                 "refused shares")
            before = client_daemon.counts()
            rc, out, err = run_evp_check(args.evp_check, cnf)
            if rc != 0:
                raise Failure(f"provider_evp_check (rc {rc}):\n{out}\n{err[-3000:]}")
            # Of X25519MLKEM768: one keygen, one encaps, one decaps. The refused shares never reach
            # the daemon: the provider refuses them when libssl sets them.
            expect_counts(client_daemon, before, {"keygen": 1, "encaps": 1, "decaps": 1},
                          "client's pqcd")
            # 3 groups and 3 plain ML-KEM sets x (keygen, encaps, decaps) = 18 calls, all this way.
            try:
                wait_for(f"18 requests over {transport}",
                         lambda: by() - by_before == 18 and other() == other_before, timeout=10)
            except Failure:
                raise Failure(f"over {transport}: {by() - by_before} requests this way (expected "
                              f"18), {other() - other_before} the other way (expected 0)")
            print(f"   {sum(1 for l in out.splitlines() if l.startswith('ok '))} checks passed; "
                  "the daemon counted them, all 18 calls this way")

        step("provider_evp_check with no daemon and pqcd_fallback = local: computed in process")
        gone = os.path.join(directory, "no-daemon.sock")
        fallback_cnf = os.path.join(directory, "fallback-openssl.cnf")
        write_openssl_cnf(fallback_cnf, args.provider, "unix:" + gone, "pqcd_fallback = local\n")
        rc, out, err = run_evp_check(args.evp_check, fallback_cnf)
        if rc != 0:
            raise Failure(f"provider_evp_check with the local fallback (rc {rc}):\n{out}\n"
                          f"{err[-3000:]}")
        print(f"   {sum(1 for l in out.splitlines() if l.startswith('ok '))} checks passed "
              "without a daemon")
        # The default (fail-closed) with the same missing daemon: every operation fails.
        closed_cnf = os.path.join(directory, "closed-openssl.cnf")
        write_openssl_cnf(closed_cnf, args.provider, "unix:" + gone)
        rc, out, _ = run_evp_check(args.evp_check, closed_cnf)
        if rc == 0 or "no pqcd daemon listening" not in out:
            raise Failure(f"fail-closed without a daemon: rc {rc}\n{out[-2000:]}")
        print("   the default (fail-closed): keygen fails, naming the missing daemon")

        if args.async_check:
            pairs = 8
            step(f"provider_async_check: {pairs} handshakes in OpenSSL ASYNC jobs, one thread, "
                 "calls in flight at once")
            before = client_daemon.counts()
            env = dict(os.environ)  # an instrumented build of its own: nothing to preload
            env["OPENSSL_CONF"] = client_cnf
            env.pop("PQCD_PROVIDER_ADDRESS", None)
            r = subprocess.run([args.async_check, cert, key, str(pairs)], capture_output=True,
                               env=env, timeout=TIMEOUT)
            out = r.stdout.decode(errors="replace")
            if r.returncode != 0:
                raise Failure(f"provider_async_check (rc {r.returncode}):\n{out}\n"
                              f"{r.stderr.decode(errors='replace')[-3000:]}")
            expect_counts(client_daemon, before, {"keygen": pairs, "encaps": pairs,
                                                  "decaps": pairs}, "client's pqcd")
            print(f"   {out.strip()}")

        # ---- 2. nginx ----
        step(f"nginx, ssl_ecdh_curve {':'.join(g for g, _, _ in GROUPS)}:X25519")
        port = free_port()
        access_log = os.path.join(directory, "access.log")
        conf, error_log = write_nginx_conf(directory, port, cert, key,
                                           ":".join([g for g, _, _ in GROUPS] + ["X25519"]),
                                           f'return 200 "hello over {GROUP}\\n";', access_log)
        nginx_proc = procs.start(
            "nginx", [nginx, "-p", directory, "-c", conf, "-e", error_log],
            os.path.join(directory, "nginx.out"), env=env_with(server_cnf))
        wait_for("nginx to listen", lambda: accepts(port) or exited(
            nginx_proc, error_log, os.path.join(directory, "nginx.out")))
        s_before, c_before = server_daemon.counts(), client_daemon.counts()
        rc, out, err, _ = s_client(port, client_cnf,
                                   b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n", ("-ign_eof",))
        if rc != 0 or f"hello over {GROUP}" not in out:
            raise Failure(f"s_client to nginx failed (rc {rc}):\n{out[-3000:]}\n{err[-3000:]}\n"
                          f"{read(error_log)[-3000:]}")
        if server_hello_group(out) != (GROUP_ID, 1124):
            raise Failure(f"nginx's ServerHello key share: {server_hello_group(out)}")
        print(f"   s_client: page served, ServerHello key_share NamedGroup {GROUP_ID:#06x}")
        if PRELOAD:
            # Debian's curl deadlocks in setlocale at start-up with the ASan runtime preloaded
            # (before it does anything of ours); s_client above covers nginx in that build.
            print("   curl: not run with sanitizer runtimes preloaded")
        else:
            r = subprocess.run(["curl", "-sS", "--max-time", str(int(TIMEOUT)), "-k", "--tlsv1.3",
                                "--curves", GROUP, f"https://127.0.0.1:{port}/curl"],
                               capture_output=True, env=env_with(client_cnf), timeout=TIMEOUT + 5)
            if r.returncode != 0 or f"hello over {GROUP}".encode() not in r.stdout:
                raise Failure(f"curl failed (rc {r.returncode}): {r.stdout!r} {r.stderr!r}\n"
                              f"{read(error_log)[-3000:]}")
            print("   curl --curves " + GROUP + ": page served")
        requests = 1 if PRELOAD else 2
        lines = wait_for("the requests in nginx's access log",
                         lambda: [l for l in read(access_log).splitlines()
                                  if "GET / " in l or "GET /curl " in l]
                         if len(read(access_log).splitlines()) >= requests else None)
        for line in lines:
            if not line.startswith(f"TLSv1.3 {GROUP_ID:#06x} "):
                raise Failure(f"access log line without TLSv1.3 and {GROUP_ID:#06x}: {line}")
        print("   access log: " + " | ".join(lines))
        expect_counts(server_daemon, s_before, {"keygen": 0, "encaps": requests, "decaps": 0},
                      "server's pqcd")
        expect_counts(client_daemon, c_before,
                      {"keygen": requests, "encaps": 0, "decaps": requests}, "client's pqcd")
        print(f"   /metrics: server's pqcd +{requests} encaps, "
              f"client's pqcd +{requests} keygen +{requests} decaps")

        step("a classic client (-groups X25519) to the same nginx: served, pqcd not asked")
        s_before = server_daemon.counts()
        rc, out, err, _ = s_client(port, client_cnf,
                                   b"GET /classic HTTP/1.0\r\nHost: localhost\r\n\r\n",
                                   ("-ign_eof",), group="X25519")
        if rc != 0 or f"hello over {GROUP}" not in out:
            raise Failure(f"classic s_client failed (rc {rc}):\n{out[-2000:]}\n{err[-2000:]}")
        line = wait_for("the classic request in nginx's access log",
                        lambda: [l for l in read(access_log).splitlines() if "/classic" in l])[0]
        if not line.startswith("TLSv1.3 X25519 "):
            raise Failure(f"classic client's access log line: {line}")
        if server_daemon.counts() != s_before:
            raise Failure(f"the server's pqcd was used for a classic handshake: {s_before} -> "
                          f"{server_daemon.counts()}")
        print(f"   access log: {line}")

        # ---- 2b. malformed key shares: illegal_parameter, pqcd unharmed ----
        step("malformed key shares to nginx (hand-made ClientHellos): illegal_parameter alerts")
        s_before = {name: server_daemon.counts(name) for name, _, _ in GROUPS}
        points = {gid: curve_point(gid) for _, gid, _ in GROUPS}
        order8 = bytes.fromhex(
            "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800")
        p25519 = bytes.fromhex(
            "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")
        cases = []  # (what, group id, share, expected first answer)
        for name, gid, _ in GROUPS:
            ml_off, _, curve_off, curve_len = SHARE_LAYOUT[gid]
            good = client_share(gid, points[gid])
            cases.append((f"{name}: a well-formed share (the control)", gid, good,
                          ("handshake", 2)))
            cases.append((f"{name}: a share one byte short", gid, good[:-1],
                          ("alert", ALERT_ILLEGAL_PARAMETER)))
            bad = bytearray(good)
            bad[ml_off] = 0xFF
            bad[ml_off + 1] |= 0x0F  # the first coefficient 0xFFF >= q
            cases.append((f"{name}: an ek failing the modulus check", gid, bytes(bad),
                          ("alert", ALERT_ILLEGAL_PARAMETER)))
            if gid == 0x11EC:
                bad_points = [("the X25519 point 0", bytes(32)),
                              ("the low-order X25519 point of order 8", order8),
                              ("the X25519 point p (= 0)", p25519),
                              ("the X25519 point 1 with bit 255 set", b"\x01" + bytes(30) + b"\x80")]
            else:
                bad_points = [("a point off the curve", b"\x04" + bytes(curve_len - 1)),
                              ("a point with y + 1", points[gid][:-1] +
                               bytes([points[gid][-1] ^ 1]))]
            for what, pt in bad_points:
                bad = bytearray(good)
                bad[curve_off:curve_off + curve_len] = pt
                cases.append((f"{name}: {what}", gid, bytes(bad),
                              ("alert", ALERT_ILLEGAL_PARAMETER)))
        for what, gid, share, want in cases:
            got = first_answer(port, client_hello(gid, share))
            if got != want:
                raise Failure(f"{what}: the server answered {got}, expected {want}\n"
                              f"{read(error_log)[-2000:]}")
            print(f"   {what}: {'alert illegal_parameter' if want[0] == 'alert' else 'ServerHello'}")
        # Only the three controls reached the server's pqcd (one Encaps each).
        for name, _, _ in GROUPS:
            expect_counts(server_daemon, s_before[name], {"keygen": 0, "encaps": 1, "decaps": 0},
                          "server's pqcd", group=name)
        rc, out, err, _ = s_client(port, client_cnf,
                                   b"GET /after HTTP/1.0\r\nHost: localhost\r\n\r\n", ("-ign_eof",))
        if rc != 0 or f"hello over {GROUP}" not in out:
            raise Failure(f"s_client after the malformed shares failed (rc {rc}):\n{out[-2000:]}")
        print(f"   {len(cases)} ClientHellos; pqcd computed only the 3 well-formed ones; "
              "the same nginx and pqcd serve a handshake after them")

        # ---- 3. fail-closed ----
        step("server's pqcd frozen (SIGSTOP): nginx's handshake fails at the 2 s deadline")
        server_daemon.proc.send_signal(signal.SIGSTOP)
        try:
            rc, out, err, took = s_client(port, client_cnf,
                                          b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
        finally:
            server_daemon.proc.send_signal(signal.SIGCONT)
        if rc == 0 and "hello over" in out:
            raise Failure("a page was served with the server's pqcd frozen")
        if not 1.5 <= took <= 15:
            raise Failure(f"the handshake against a frozen daemon failed after {took:.1f} s, "
                          "not at the provider's 2 s deadline")
        line = wait_for("nginx's error log to name the deadline",
                        lambda: [l for l in read(error_log).splitlines()
                                 if "DEADLINE_EXCEEDED" in l and server_daemon.sock in l])[0]
        print(f"   handshake failed after {took:.2f} s; error.log: ...{line[-250:]}")

        step("server's pqcd stopped: nginx's handshake fails promptly")
        procs.stop(server_daemon.proc)
        rc, out, err, took = s_client(port, client_cnf,
                                      b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
        if rc == 0 and "hello over" in out:
            raise Failure("a page was served with the server's pqcd stopped")
        if took > 15:
            raise Failure(f"the failed handshake took {took:.1f} s")
        needle = f"pqcd daemon unreachable"

        def logged():
            text = read(error_log)
            return [l for l in text.splitlines()
                    if needle in l and server_daemon.sock in l and "UNAVAILABLE" in l]

        line = wait_for("nginx's error log to name the provider's error", logged, timeout=10)[0]
        print(f"   handshake failed after {took:.2f} s; error.log: {line[-300:]}")

        step("server's pqcd started again: the same nginx worker serves again")
        os.unlink(os.path.join(directory, "server-pqcd.ports"))
        server_daemon = Daemon(procs, args.pqcd, directory, "server-pqcd")
        attempts = []

        def served():
            rc, out, _, _ = s_client(port, client_cnf,
                                     b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n", ("-ign_eof",))
            attempts.append(rc)
            return rc == 0 and f"hello over {GROUP}" in out

        wait_for("a page over the restarted daemon", served, timeout=30, interval=0.2)
        print(f"   served after {len(attempts)} handshake(s)")

        step("client's pqcd unreachable: s_client fails before sending its ClientHello")
        env = env_with(client_cnf)
        env["PQCD_PROVIDER_ADDRESS"] = "unix:" + os.path.join(directory, "nobody-here.sock")
        started_client = time.monotonic()
        r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-tls1_3",
                            "-groups", GROUP], input=b"", capture_output=True, env=env,
                           timeout=TIMEOUT)
        took = time.monotonic() - started_client
        err = r.stderr.decode(errors="replace")
        if r.returncode == 0 or needle not in err or "nobody-here.sock" not in err:
            raise Failure(f"s_client with no daemon: rc {r.returncode}, stderr:\n{err[-3000:]}")
        if took > 15:
            raise Failure(f"s_client with no daemon took {took:.1f} s")
        print(f"   s_client failed after {took:.2f} s: "
              f"{next(l for l in err.splitlines() if needle in l)[-300:]}")
        ok = True
    except Failure as e:
        print(f"FAIL: {e}")
    finally:
        procs.stop_all()
        for p in procs.procs:
            # A daemon stopped by SIGTERM drains and exits 0; anything else (a sanitizer's
            # report, a crash) fails the test.
            if p.name.startswith("pqcd") and p.returncode != 0:
                print(f"FAIL: {p.name} exited with {p.returncode}")
                ok = False
        if ok:
            shutil.rmtree(directory, ignore_errors=True)
        else:
            print(f"logs kept in {directory}")
    print(f"{'PASS' if ok else 'FAIL'} in {time.monotonic() - started:.1f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
