"""What the provider's tests and its benchmark share (tests/provider/test_provider_tls.py,
test_provider_chromium.py, bench/tls_handshake.py): waiting for a condition, the processes they
start and stop, a real pqcd on a temporary Unix socket, its metrics, an openssl.cnf that loads
the provider, a self-signed certificate and an nginx configuration.
"""

import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

SKIP = 77  # ctest's SKIP_RETURN_CODE
TIMEOUT = float(os.environ.get("PQCD_PROVIDER_TEST_TIMEOUT", "60"))  # per wait (slow builds)


class Failure(Exception):
    pass


def wait_for(what, predicate, timeout=TIMEOUT, interval=0.05):
    """predicate()'s first true value, polled every `interval`; Failure after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def exited(proc, *logs):
    """False while proc runs; raises Failure (with its logs) once it has exited."""
    if proc.poll() is None:
        return False
    raise Failure(f"{proc.name} exited with {proc.returncode}:\n" +
                  "\n".join(read(log)[-3000:] for log in logs))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def find_nginx():
    """Debian's nginx (in /usr/sbin, which a non-root PATH may lack), or None."""
    return shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK)
                                     else None)


class Processes:
    """Every process a test starts, stopped at the end whatever happens."""

    def __init__(self):
        self.procs = []

    def start(self, name, args, log, **kw):
        with open(log, "wb") as out:
            p = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, **kw)
        p.name = name
        self.procs.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM):
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def stop_all(self):
        for p in reversed(self.procs):
            self.stop(p)


def metric(port, name, *labels):
    """The sum of the samples of metric `name` at 127.0.0.1:port/metrics whose labels include
    every one of `labels`."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith(name + "{") and all(l in line for l in labels))


class Daemon:
    """A real pqcd (one worker) on DIRECTORY/NAME.sock, with its lane, gRPC on a free loopback
    port and metrics on another; `prefix` goes before the program (e.g. taskset)."""

    def __init__(self, procs, pqcd, directory, name, prefix=()):
        self.sock = os.path.join(directory, f"{name}.sock")
        self.log = os.path.join(directory, f"{name}.log")
        port_file = os.path.join(directory, f"{name}.ports")
        self.proc = procs.start(
            f"pqcd ({name})",
            [*prefix, pqcd, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
             "--unix", self.sock, "--port-file", port_file, "--workers", "1", "--log-level",
             "warn"], self.log)

        def ready():
            if self.proc.poll() is not None:
                raise Failure(f"pqcd ({name}) exited: {read(self.log)}")
            lines = read(port_file).split()
            return len(lines) >= 2 and os.path.exists(self.sock + ".lane") and lines

        ports = wait_for(f"pqcd ({name}) to serve", ready)
        self.grpc_port, self.metrics_port = int(ports[0]), int(ports[1])
        self.address = "unix:" + self.sock
        self.tcp_address = f"127.0.0.1:{self.grpc_port}"

    def metric(self, name, *labels):
        return int(metric(self.metrics_port, name, *labels))

    def operations(self, operation, group):
        """pqcd_operations_total{operation, algorithm=group}."""
        return self.metric("pqcd_operations_total", f'algorithm="{group}"',
                           f'operation="{operation}"')

    def counts(self, group="X25519MLKEM768"):
        return {op: self.operations(op, group) for op in ("keygen", "encaps", "decaps")}


def provider_env(cnf, preload=()):
    """The environment of a program that loads the provider (openssl, nginx, curl) through
    `cnf`; in the sanitizer build the runtimes in `preload` are preloaded into it (the provider
    is instrumented, the program is not), with leak reports off: leaks of Debian's programs at
    their exit are not ours to report."""
    env = dict(os.environ)
    env["OPENSSL_CONF"] = cnf
    env.pop("PQCD_PROVIDER_ADDRESS", None)
    if preload:
        env["LD_PRELOAD"] = " ".join(preload)
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    return env


def write_openssl_cnf(path, provider, address=None, extra=""):
    """An openssl.cnf that keeps the default provider and loads `provider` (its pqcd_address:
    `address`, none for the in-process build)."""
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
module = {os.path.abspath(provider)}
{f"pqcd_address = {address}" if address else ""}
{extra}activate = 1
""")


def make_certificate(directory, env=None):
    """A self-signed P-256 certificate for localhost and 127.0.0.1: (cert path, key path)."""
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days",
                    "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, env=env, timeout=TIMEOUT)
    return cert, key


def write_nginx_conf(directory, port, cert, key, curves, location, access_log=None,
                     server_extra="", worker_connections=64, error_level="info"):
    """nginx.conf in `directory` (its temp folders and pid there too): one worker, TLS 1.3 on
    127.0.0.1:port with ssl_ecdh_curve `curves`, `location` as the body of `location /`, and an
    access log of "$ssl_protocol $ssl_curve \"$request\" $status" lines when `access_log` is
    given. Returns (conf path, error log path)."""
    for sub in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(directory, sub), exist_ok=True)
    conf, error_log = os.path.join(directory, "nginx.conf"), os.path.join(directory, "error.log")
    # As root, nginx's workers would run as nobody, who may not open pqcd's socket (0660).
    user = "user root;" if os.geteuid() == 0 else ""
    log = (f"log_format tls '$ssl_protocol $ssl_curve \"$request\" $status';\n"
           f"  access_log {access_log} tls;" if access_log else "access_log off;")
    with open(conf, "w") as f:
        f.write(f"""{user}
daemon off;
master_process on;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {error_log} {error_level};
events {{ worker_connections {worker_connections}; }}
http {{
  {log}
  client_body_temp_path {directory}/client_body;
  proxy_temp_path {directory}/proxy;
  fastcgi_temp_path {directory}/fastcgi;
  uwsgi_temp_path {directory}/uwsgi;
  scgi_temp_path {directory}/scgi;
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert};
    ssl_certificate_key {key};
    ssl_protocols TLSv1.3;
    ssl_ecdh_curve {curves};
    {server_extra}
    location / {{ {location} }}
  }}
}}
""")
    return conf, error_log
