#!/usr/bin/env python3
"""Static checks of deploy/: Kubernetes manifests, the Grafana dashboard, the Dockerfile and the
systemd unit. Usage: test_static.py REPO_ROOT  (standard unittest output; needs python3-yaml)."""

import json
import os
import re
import shutil
import subprocess
import sys
import unittest

import yaml

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../.."))
DEPLOY = os.path.join(ROOT, "deploy")
K8S = os.path.join(DEPLOY, "k8s")

# The metric contract (server/METRICS.md). Histograms also have _bucket, _sum and _count.
COUNTERS = {"pqcd_requests_total", "pqcd_operations_total", "pqcd_jobs_total", "pqcd_jobs_inline_total",
            "pqcd_worker_busy_seconds_total", "pqcd_held_keys_refused_total",
            "pqcd_held_keys_unprepared_total", "pqcd_memory_refused_total",
            "pqcd_unread_answers_cancelled_total", "pqcd_long_calls_refused_total",
            "pqcd_unix_connections_refused_total", "pqcd_tcp_connections_refused_total",
            "pqcd_lanes_opened_total", "pqcd_lanes_refused_total", "pqcd_lanes_broken_total",
            "pqcd_lane_requests_total", "pqcd_slow_jobs_total", "pqcd_slow_rejected_total"}
HISTOGRAMS = {"pqcd_queue_wait_seconds", "pqcd_compute_seconds", "pqcd_request_duration_seconds", "pqcd_batch_size",
              "pqcd_lane_request_duration_seconds"}
GAUGES = {"pqcd_queue_depth", "pqcd_queue_capacity", "pqcd_workers", "pqcd_inflight_requests", "pqcd_held_keys",
          "pqcd_selftest_passed", "pqcd_draining", "pqcd_build_info", "pqcd_memory_held_bytes",
          "pqcd_long_calls_open", "pqcd_unix_connections", "pqcd_tcp_connections", "pqcd_lanes",
          "pqcd_slow_workers", "pqcd_slow_queue_jobs", "pqcd_slow_queue_seconds"}
# The PostgreSQL key store's metrics (issue 16, docs/key-store-postgres.md).
KEY_STORE_METRICS = {"pqcd_key_store_up", "pqcd_key_store_serving", "pqcd_key_store_sync_age_seconds",
                     "pqcd_key_store_reconnects_total", "pqcd_key_store_syncs_total"}
KNOWN_METRICS = (COUNTERS | GAUGES | KEY_STORE_METRICS
                 | {h + s for h in HISTOGRAMS for s in ("_bucket", "_sum", "_count")})

GRPC_PORT = 50051
METRICS_PORT = 9464


def load_yaml_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def kustomize_dirs():
    return sorted(os.path.join(K8S, d) for d in os.listdir(K8S)
                  if os.path.isfile(os.path.join(K8S, d, "kustomization.yaml")))


def objects(kdir):
    """The objects listed in a kustomization, with the file each came from."""
    kust = load_yaml_docs(os.path.join(kdir, "kustomization.yaml"))[0]
    out = []
    for res in kust["resources"]:
        path = os.path.join(kdir, res)
        for doc in load_yaml_docs(path):
            out.append((res, doc))
    return kust, out


def find(objs, kind, name=None):
    found = [o for _, o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    return found


def all_containers(pod_spec):
    return list(pod_spec.get("initContainers", [])) + list(pod_spec["containers"])


def env_value(container, name):
    for e in container.get("env", []):
        if e["name"] == name:
            return e.get("value")
    return None


def flag_value(container, flag):
    """--flag=value from args (or the PQCD_ env variable)."""
    for a in container.get("args", []):
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return env_value(container, "PQCD_" + flag.lstrip("-").upper().replace("-", "_"))


def mount_for(container, path):
    """The volumeMount (longest mountPath) that holds path, or None."""
    best = None
    for m in container.get("volumeMounts", []):
        mp = m["mountPath"]
        if path == mp or path.startswith(mp.rstrip("/") + "/"):
            if best is None or len(mp) > len(best["mountPath"]):
                best = m
    return best


def has_flag(container, flag):
    """A boolean flag given as --flag / --flag=true, or PQCD_FLAG=true."""
    v = flag_value(container, flag)
    return flag in container.get("args", []) or (v is not None and v.lower() in ("true", "1"))


def labels_match(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def cpu_whole(q):
    return re.fullmatch(r"[1-9][0-9]*", str(q)) is not None


class ManifestChecks:
    """Helpers shared by the Kubernetes test cases."""

    def check_guaranteed(self, pod_spec, where):
        for c in all_containers(pod_spec):
            res = c.get("resources", {})
            req, lim = res.get("requests", {}), res.get("limits", {})
            for r in ("cpu", "memory"):
                self.assertIn(r, lim, f"{where}/{c['name']}: limits.{r} missing")
                self.assertEqual(str(req.get(r)), str(lim[r]),
                                 f"{where}/{c['name']}: requests.{r} != limits.{r} (not Guaranteed QoS)")
            self.assertTrue(cpu_whole(lim["cpu"]), f"{where}/{c['name']}: cpu {lim['cpu']} is not whole CPUs "
                            "(the static CPU manager pins only integer CPU requests)")
            self.assertNotIn("hugepages-2Mi", lim)

    def check_security(self, pod_spec, where):
        psc = pod_spec.get("securityContext", {})
        self.assertTrue(psc.get("runAsNonRoot"), f"{where}: runAsNonRoot")
        self.assertNotEqual(psc.get("runAsUser", 0), 0, f"{where}: runAsUser must not be root")
        self.assertEqual(psc.get("seccompProfile", {}).get("type"), "RuntimeDefault", f"{where}: seccomp")
        self.assertFalse(pod_spec.get("automountServiceAccountToken", True), f"{where}: SA token mounted")
        for c in all_containers(pod_spec):
            sc = c.get("securityContext", {})
            n = f"{where}/{c['name']}"
            self.assertIs(sc.get("allowPrivilegeEscalation"), False, f"{n}: allowPrivilegeEscalation")
            self.assertIs(sc.get("readOnlyRootFilesystem"), True, f"{n}: readOnlyRootFilesystem")
            self.assertEqual(sc.get("capabilities", {}).get("drop"), ["ALL"], f"{n}: capabilities.drop")
            self.assertFalse(sc.get("privileged", False), f"{n}: privileged")

    def check_workers_follow_cpu(self, c, where):
        for e in c.get("env", []):
            if e["name"] == "PQCD_WORKERS":
                ref = e["valueFrom"]["resourceFieldRef"]
                self.assertEqual(ref["resource"], "limits.cpu", where)
                self.assertEqual(ref["containerName"], c["name"], where)
                return
        self.fail(f"{where}: PQCD_WORKERS should follow limits.cpu")

    def check_drain(self, pod_spec, c, where):
        pre = c["lifecycle"]["preStop"]
        sleep = int(pre["sleep"]["seconds"]) if "sleep" in pre else int(pre["exec"]["command"][-1])
        grace = float(flag_value(c, "--grace-period"))
        tgps = pod_spec["terminationGracePeriodSeconds"]
        self.assertGreater(tgps, sleep + grace, f"{where}: terminationGracePeriodSeconds {tgps} leaves no margin "
                           f"after preStop {sleep} s + grace period {grace} s")
        self.assertLessEqual(tgps, sleep + grace + 15, f"{where}: terminationGracePeriodSeconds far above the drain")

    def check_hpa(self, objs, deployment, where):
        hpa = find(objs, "HorizontalPodAutoscaler")[0]
        self.assertEqual(hpa["apiVersion"], "autoscaling/v2", where)
        self.assertEqual(hpa["spec"]["scaleTargetRef"], {"apiVersion": "apps/v1", "kind": "Deployment",
                                                         "name": deployment["metadata"]["name"]}, where)
        self.assertGreaterEqual(hpa["spec"]["minReplicas"], 2, where)
        self.assertGreater(hpa["spec"]["maxReplicas"], hpa["spec"]["minReplicas"], where)
        cpu = [m for m in hpa["spec"]["metrics"] if m["type"] == "Resource" and m["resource"]["name"] == "cpu"]
        self.assertEqual(cpu[0]["resource"]["target"]["type"], "Utilization", where)
        return hpa

    def check_pdb(self, objs, pod_template, where):
        pdb = find(objs, "PodDisruptionBudget")[0]
        self.assertEqual(pdb["apiVersion"], "policy/v1", where)
        self.assertTrue(labels_match(pdb["spec"]["selector"]["matchLabels"], pod_template["metadata"]["labels"]), where)
        if "minAvailable" in pdb["spec"]:
            self.assertLess(pdb["spec"]["minAvailable"], find(objs, "HorizontalPodAutoscaler")[0]["spec"]["minReplicas"],
                            where)
        return pdb

    def check_kek_from_secret(self, pod_spec, c, where):
        """--kek-file lies on a read-only Secret volume that others cannot read."""
        m = mount_for(c, flag_value(c, "--kek-file"))
        self.assertIsNotNone(m, f"{where}: --kek-file is not on a volume")
        self.assertTrue(m.get("readOnly"), where)
        vol = {v["name"]: v for v in pod_spec["volumes"]}[m["name"]]
        self.assertIn("secret", vol, where)
        self.assertEqual(vol["secret"]["defaultMode"] & 0o007, 0, f"{where}: KEK must not be world-readable")
        return vol

    def check_kek_file_accepted(self, pod_spec, c, where):
        """pqcd refuses a KEK file its group may read unless --allow-shared-kek-file; kubelet makes Secret
        files readable by the pod's fsGroup whatever defaultMode says."""
        m = mount_for(c, flag_value(c, "--kek-file"))
        vol = {v["name"]: v for v in pod_spec["volumes"]}[m["name"]]
        group_readable = bool(vol["secret"]["defaultMode"] & 0o070) or "fsGroup" in pod_spec.get("securityContext", {})
        if group_readable:
            self.assertTrue(has_flag(c, "--allow-shared-kek-file"),
                            f"{where}: the KEK file is group-readable, pqcd refuses it without --allow-shared-kek-file")

    def check_typed_admins(self, c, where):
        """--admin values are typed identities; pqcd refuses an untyped one at start."""
        for a in c.get("args", []):
            if a.startswith("--admin="):
                self.assertRegex(a.split("=", 1)[1], r"^(tls:(uri|dns):|unix:(uid|user):|anonymous$)", where)

    def check_egress_only_postgres_and_dns(self, np, where):
        egress = np["spec"].get("egress")
        self.assertTrue(egress, f"{where}: the key store needs egress to PostgreSQL")
        allowed = set()
        for rule in egress:
            ports = {(p["port"], p.get("protocol", "TCP")) for p in rule["ports"]}
            self.assertTrue(ports, f"{where}: an egress rule without ports opens every port")
            allowed |= ports
            if any(port == 53 for port, _ in ports):
                self.assertTrue(rule.get("to"), f"{where}: DNS egress should name the DNS pods")
        self.assertIn((5432, "TCP"), allowed, f"{where}: PostgreSQL egress")
        self.assertLessEqual(allowed, {(5432, "TCP"), (53, "UDP"), (53, "TCP")}, f"{where}: egress beyond PostgreSQL/DNS")

    def check_key_store_from_secret(self, c, where):
        """PQCD_KEY_STORE (the URI carries the password) comes from a Secret, never from args or a literal."""
        envs = [e for e in c.get("env", []) if e["name"] == "PQCD_KEY_STORE"]
        self.assertEqual(len(envs), 1, f"{where}: PQCD_KEY_STORE")
        self.assertNotIn("value", envs[0], f"{where}: PQCD_KEY_STORE must not be a literal")
        ref = envs[0]["valueFrom"]["secretKeyRef"]
        self.assertTrue(ref.get("name") and ref.get("key"), where)
        self.assertFalse(ref.get("optional", False), f"{where}: without the URI pqcd would run with a local store")
        self.assertFalse([a for a in c.get("args", []) + c.get("command", []) if a.startswith("--key-store=")
                          or "postgres" in a], f"{where}: the key-store URI must not be on the command line")
        return ref

    def check_scrape(self, pod_template, c, where):
        ann = pod_template["metadata"].get("annotations", {})
        self.assertEqual(ann.get("prometheus.io/scrape"), "true", where)
        self.assertEqual(int(ann.get("prometheus.io/port")), METRICS_PORT, where)
        self.assertEqual(pod_template["metadata"]["labels"].get("pqcd-metrics"), "true", where)
        ports = {p["containerPort"]: p for p in c["ports"]}
        self.assertIn(METRICS_PORT, ports, f"{where}: metrics port")
        self.assertTrue(flag_value(c, "--metrics-listen").endswith(f":{METRICS_PORT}"), where)
        self.assertTrue(flag_value(c, "--metrics-listen").startswith("0.0.0.0:"),
                        f"{where}: metrics must listen beyond loopback to be scraped")


class TestManifestsParse(unittest.TestCase):
    def test_every_yaml_parses_and_has_kind(self):
        n = 0
        for dirpath, _, files in os.walk(K8S):
            for f in files:
                if not f.endswith((".yaml", ".yml")):
                    continue
                for doc in load_yaml_docs(os.path.join(dirpath, f)):
                    n += 1
                    self.assertIn("apiVersion", doc, f)
                    self.assertIn("kind", doc, f)
                    if doc["kind"] != "Kustomization":
                        self.assertIn("name", doc["metadata"], f)
        self.assertGreater(n, 10)

    def test_kustomizations_list_existing_files(self):
        dirs = kustomize_dirs()
        self.assertEqual({os.path.basename(d) for d in dirs}, {"shared-service", "sidecar", "held-keys", "held-keys-shared"})
        for d in dirs:
            kust, objs = objects(d)
            self.assertTrue(objs, d)
            self.assertEqual(kust.get("namespace"), find(objs, "Namespace")[0]["metadata"]["name"], d)
            self.assertEqual(kust["images"][0]["name"], "pqcd", d)

    @unittest.skipIf(shutil.which("kubectl") is None, "kubectl not installed")
    def test_kubectl_kustomize_renders(self):
        for d in kustomize_dirs():
            out = subprocess.run(["kubectl", "kustomize", d], capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, f"kubectl kustomize {d}: {out.stderr}")
            rendered = list(yaml.safe_load_all(out.stdout))
            images = {c["image"] for o in rendered if o["kind"] in ("Deployment", "StatefulSet")
                      for c in all_containers(o["spec"]["template"]["spec"])}
            self.assertTrue(images and all(i.startswith("registry.example.com/pqcd:") for i in images), images)


class TestSharedService(unittest.TestCase, ManifestChecks):
    @classmethod
    def setUpClass(cls):
        cls.kust, cls.objs = objects(os.path.join(K8S, "shared-service"))
        cls.dep = find(cls.objs, "Deployment", "pqcd")[0]
        cls.pod = cls.dep["spec"]["template"]
        cls.spec = cls.pod["spec"]
        cls.c = [c for c in cls.spec["containers"] if c["name"] == "pqcd"][0]

    def test_replicas_and_selector(self):
        self.assertGreaterEqual(self.dep["spec"]["replicas"], 2)
        self.assertTrue(labels_match(self.dep["spec"]["selector"]["matchLabels"], self.pod["metadata"]["labels"]))
        self.assertEqual(self.dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0)

    def test_ports(self):
        ports = {p["name"]: p["containerPort"] for p in self.c["ports"]}
        self.assertEqual(ports, {"grpc": GRPC_PORT, "metrics": METRICS_PORT})
        self.assertEqual(flag_value(self.c, "--listen"), f"0.0.0.0:{GRPC_PORT}")

    def test_grpc_health_probes(self):
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            p = self.c[probe]
            self.assertEqual(p["grpc"]["port"], GRPC_PORT, probe)
            self.assertNotIn("service", p["grpc"], f"{probe}: probe the server's overall health")
        self.assertGreaterEqual(self.c["livenessProbe"]["failureThreshold"] * self.c["livenessProbe"]["periodSeconds"],
                                20, "liveness must not restart a busy pod too eagerly")

    def test_guaranteed_qos_and_pinning(self):
        self.check_guaranteed(self.spec, "shared-service")
        self.check_workers_follow_cpu(self.c, "shared-service")

    def test_security(self):
        self.check_security(self.spec, "shared-service")
        sa = find(self.objs, "ServiceAccount", self.spec["serviceAccountName"])[0]
        self.assertFalse(sa["automountServiceAccountToken"])

    def test_drain(self):
        self.check_drain(self.spec, self.c, "shared-service")

    def test_scrape(self):
        self.check_scrape(self.pod, self.c, "shared-service")

    def test_services(self):
        svcs = find(self.objs, "Service")
        self.assertEqual({s["metadata"]["name"] for s in svcs}, {"pqcd", "pqcd-headless"})
        names = {p["name"] for p in self.c["ports"]}
        for s in svcs:
            self.assertTrue(labels_match(s["spec"]["selector"], self.pod["metadata"]["labels"]), s["metadata"]["name"])
            for p in s["spec"]["ports"]:
                self.assertIn(p["targetPort"], names)
        self.assertEqual(find(self.objs, "Service", "pqcd-headless")[0]["spec"]["clusterIP"], "None")

    def test_hpa(self):
        self.check_hpa(self.objs, self.dep, "shared-service")

    def test_pdb(self):
        self.check_pdb(self.objs, self.pod, "shared-service")

    def test_network_policy(self):
        np = find(self.objs, "NetworkPolicy")[0]
        self.assertTrue(labels_match(np["spec"]["podSelector"]["matchLabels"], self.pod["metadata"]["labels"]))
        self.assertEqual(set(np["spec"]["policyTypes"]), {"Ingress", "Egress"})
        self.assertEqual(np["spec"].get("egress"), [])
        names = {p["name"] for p in self.c["ports"]}
        allowed = {p["port"] for rule in np["spec"]["ingress"] for p in rule["ports"]}
        self.assertEqual(allowed, names)

    def test_podmonitor(self):
        pm = load_yaml_docs(os.path.join(K8S, "monitoring", "podmonitor.yaml"))[0]
        self.assertEqual(pm["kind"], "PodMonitor")
        self.assertTrue(labels_match(pm["spec"]["selector"]["matchLabels"], self.pod["metadata"]["labels"]))
        self.assertIn("metrics", {e["port"] for e in pm["spec"]["podMetricsEndpoints"]})


class TestSidecar(unittest.TestCase, ManifestChecks):
    @classmethod
    def setUpClass(cls):
        cls.kust, cls.objs = objects(os.path.join(K8S, "sidecar"))
        cls.pod = find(cls.objs, "Deployment")[0]["spec"]["template"]
        cls.spec = cls.pod["spec"]
        cls.side = [c for c in cls.spec["initContainers"] if c["name"] == "pqcd"][0]

    def test_native_sidecar(self):
        self.assertEqual(self.side["restartPolicy"], "Always")
        self.assertEqual(flag_value(self.side, "--listen"), "none")

    def test_unix_socket_in_shared_empty_dir(self):
        sock = flag_value(self.side, "--unix")
        self.assertTrue(sock)
        vols = {v["name"]: v for v in self.spec["volumes"]}

        def mount_of(c):
            for m in c.get("volumeMounts", []):
                if sock.startswith(m["mountPath"].rstrip("/") + "/"):
                    return m["name"]
            return None

        vol = mount_of(self.side)
        self.assertIsNotNone(vol, "socket not on a volume")
        self.assertIn("emptyDir", vols[vol])
        for app in self.spec["containers"]:
            self.assertEqual(mount_of(app), vol, f"{app['name']} does not share the socket volume")
            self.assertIn(f"unix://{sock}", json.dumps(app), f"{app['name']} does not dial the socket")
        mode = int(flag_value(self.side, "--unix-mode"), 8)
        self.assertEqual(mode & 0o007, 0, "socket must not be world-accessible")

    def test_probes_on_socket(self):
        sock = flag_value(self.side, "--unix")
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            cmd = self.side[probe]["exec"]["command"]
            self.assertEqual(cmd[:2], ["/usr/local/bin/pqc", "health"], probe)
            self.assertIn(f"unix://{sock}", cmd, probe)

    def test_guaranteed_security_scrape(self):
        self.check_guaranteed(self.spec, "sidecar")
        self.check_security(self.spec, "sidecar")
        self.check_workers_follow_cpu(self.side, "sidecar")
        self.check_scrape(self.pod, self.side, "sidecar")
        self.assertGreater(self.spec["terminationGracePeriodSeconds"], float(flag_value(self.side, "--grace-period")))


class TestHeldKeys(unittest.TestCase, ManifestChecks):
    @classmethod
    def setUpClass(cls):
        cls.kust, cls.objs = objects(os.path.join(K8S, "held-keys"))
        cls.sts = find(cls.objs, "StatefulSet")[0]
        cls.pod = cls.sts["spec"]["template"]
        cls.spec = cls.pod["spec"]
        cls.c = cls.spec["containers"][0]
        cls.vols = {v["name"]: v for v in cls.spec["volumes"]}

    def mount_for(self, path):
        m = mount_for(self.c, path)
        self.assertIsNotNone(m, f"{path} is not on a volume")
        return m

    def test_single_writer(self):
        self.assertEqual(self.sts["spec"]["replicas"], 1)
        svc = find(self.objs, "Service", self.sts["spec"]["serviceName"])[0]
        self.assertEqual(svc["spec"]["clusterIP"], "None")

    def test_kek_from_secret_file(self):
        self.check_kek_from_secret(self.spec, self.c, "held-keys")

    def test_store_on_persistent_volume(self):
        m = self.mount_for(flag_value(self.c, "--data-dir"))
        self.assertIn(m["name"], {t["metadata"]["name"] for t in self.sts["spec"]["volumeClaimTemplates"]})

    def test_mtls_and_probes(self):
        for f in ("--tls-cert", "--tls-key", "--tls-client-ca"):
            self.assertIn("secret", self.vols[self.mount_for(flag_value(self.c, f))["name"]], f)
        sock = flag_value(self.c, "--unix")
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            self.assertIn(f"unix://{sock}", self.c[probe]["exec"]["command"], probe)

    def test_guaranteed_security_drain_scrape(self):
        self.check_guaranteed(self.spec, "held-keys")
        self.check_security(self.spec, "held-keys")
        self.check_drain(self.spec, self.c, "held-keys")
        self.check_scrape(self.pod, self.c, "held-keys")
        np = find(self.objs, "NetworkPolicy")[0]
        self.assertEqual(np["spec"].get("egress"), [])


class TestHeldKeysShared(unittest.TestCase, ManifestChecks):
    """held-keys-shared/: held keys in PostgreSQL, every replica serves every key (issue 16)."""

    @classmethod
    def setUpClass(cls):
        cls.kdir = os.path.join(K8S, "held-keys-shared")
        cls.kust, cls.objs = objects(cls.kdir)
        cls.dep = find(cls.objs, "Deployment")[0]
        cls.pod = cls.dep["spec"]["template"]
        cls.spec = cls.pod["spec"]
        cls.c = [c for c in cls.spec["containers"] if c["name"] == "pqcd"][0]
        cls.vols = {v["name"]: v for v in cls.spec["volumes"]}
        cls.held_kust, cls.held_objs = objects(os.path.join(K8S, "held-keys"))
        cls.sts = find(cls.held_objs, "StatefulSet")[0]
        cls.sts_c = cls.sts["spec"]["template"]["spec"]["containers"][0]
        cls.import_kust, cls.import_objs = objects(os.path.join(cls.kdir, "import"))
        cls.job = find(cls.import_objs, "Job")[0]
        cls.job_spec = cls.job["spec"]["template"]["spec"]
        cls.job_c = cls.job_spec["containers"][0]

    def test_deployment_without_volumes_that_persist(self):
        self.assertEqual(find(self.objs, "Deployment", "pqcd-keys-shared"), [self.dep])
        self.assertFalse(find(self.objs, "StatefulSet"))
        self.assertFalse(find(self.objs, "PersistentVolumeClaim"))
        self.assertNotIn("volumeClaimTemplates", self.dep["spec"])
        for v in self.spec["volumes"]:
            self.assertFalse({"persistentVolumeClaim", "hostPath", "ephemeral"} & set(v), v["name"])
        self.assertIsNone(flag_value(self.c, "--data-dir"), "the file store is per replica: no --data-dir here")
        self.assertGreaterEqual(self.dep["spec"]["replicas"], 2)
        self.assertTrue(labels_match(self.dep["spec"]["selector"]["matchLabels"], self.pod["metadata"]["labels"]))
        self.assertEqual(self.dep["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"], 0)

    def test_no_postgres_server_in_it(self):
        kinds = {o["kind"] for _, o in self.objs}
        self.assertLessEqual(kinds, {"Namespace", "ServiceAccount", "Deployment", "Service", "HorizontalPodAutoscaler",
                                     "PodDisruptionBudget", "NetworkPolicy"})
        self.assertFalse(find(self.objs, "Secret"), "Secrets are created by hand (deploy/k8s/README.md)")
        images = {c["image"] for c in all_containers(self.spec)}
        self.assertEqual(images, {"pqcd:0.1.0"})

    def test_key_store_from_secret(self):
        ref = self.check_key_store_from_secret(self.c, "held-keys-shared")
        # Only the CA certificate of that Secret may be mounted: the URI stays out of the file system.
        for v in self.spec["volumes"]:
            if v.get("secret", {}).get("secretName") == ref["name"]:
                keys = {i["key"] for i in v["secret"].get("items", [])}
                self.assertTrue(keys, f"volume {v['name']} would also write the URI into a file")
                self.assertNotIn(ref["key"], keys)

    def test_staleness_bound(self):
        self.assertGreater(float(flag_value(self.c, "--key-store-max-staleness")), 0,
                           "0 lets a partitioned replica use deleted keys forever")
        self.assertLess(float(flag_value(self.c, "--key-store-reconcile-interval")),
                        float(flag_value(self.c, "--key-store-max-staleness")))

    def test_kek_from_secret_file(self):
        self.check_kek_from_secret(self.spec, self.c, "held-keys-shared")
        self.check_kek_file_accepted(self.spec, self.c, "held-keys-shared")
        # The same KEK Secret as held-keys/: the records imported from there stay readable.
        sts_spec = self.sts["spec"]["template"]["spec"]
        mine = self.vols[mount_for(self.c, flag_value(self.c, "--kek-file"))["name"]]["secret"]
        theirs = {v["name"]: v for v in sts_spec["volumes"]}[mount_for(
            self.sts_c, flag_value(self.sts_c, "--kek-file"))["name"]]["secret"]
        self.assertEqual(mine["secretName"], theirs["secretName"])
        self.check_typed_admins(self.c, "held-keys-shared")

    def test_mtls(self):
        for f in ("--tls-cert", "--tls-key", "--tls-client-ca"):
            m = mount_for(self.c, flag_value(self.c, f))
            self.assertIsNotNone(m, f)
            self.assertIn("secret", self.vols[m["name"]], f)
        self.assertIsNone(flag_value(self.c, "--allow-insecure-tcp"))

    def test_probes(self):
        sock = flag_value(self.c, "--unix")
        self.assertEqual(int(flag_value(self.c, "--unix-mode"), 8) & 0o077, 0)
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            cmd = self.c[probe]["exec"]["command"]
            self.assertEqual(cmd[:2], ["/usr/local/bin/pqc", "health"], probe)
            self.assertIn(f"unix://{sock}", cmd, probe)
        ready = self.c["readinessProbe"]["exec"]["command"]
        self.assertIn("--service", ready, "readiness must follow the held keys' health")
        self.assertEqual(ready[ready.index("--service") + 1], "pqc.v1.Keys")
        for probe in ("livenessProbe", "startupProbe"):
            self.assertNotIn("--service", self.c[probe]["exec"]["command"],
                             f"{probe}: a database outage must not restart pods")
        live = self.c["livenessProbe"]
        self.assertGreaterEqual(live["failureThreshold"] * live["periodSeconds"], 20)

    def test_guaranteed_security_drain_scrape(self):
        self.check_guaranteed(self.spec, "held-keys-shared")
        self.check_security(self.spec, "held-keys-shared")
        self.check_workers_follow_cpu(self.c, "held-keys-shared")
        self.check_drain(self.spec, self.c, "held-keys-shared")
        self.check_scrape(self.pod, self.c, "held-keys-shared")
        sa = find(self.objs, "ServiceAccount", self.spec["serviceAccountName"])[0]
        self.assertFalse(sa["automountServiceAccountToken"])

    def test_services_take_over_held_keys_names(self):
        svcs = find(self.objs, "Service")
        self.assertEqual({s["metadata"]["name"] for s in svcs},
                         {s["metadata"]["name"] for s in find(self.held_objs, "Service")})
        self.assertEqual(self.kust["namespace"], self.held_kust["namespace"])
        names = {p["name"] for p in self.c["ports"]}
        for s in svcs:
            self.assertTrue(labels_match(s["spec"]["selector"], self.pod["metadata"]["labels"]), s["metadata"]["name"])
            self.assertFalse(labels_match(s["spec"]["selector"], self.sts["spec"]["template"]["metadata"]["labels"]))
            for p in s["spec"]["ports"]:
                self.assertIn(p["targetPort"], names)
        # Every other object has a name of its own, so applying this folder leaves held-keys/'s alone.
        held = {(o["kind"], o["metadata"]["name"]) for _, o in self.held_objs}
        mine = {(o["kind"], o["metadata"]["name"]) for _, o in self.objs if o["kind"] != "Service"}
        self.assertEqual(mine & held, {("Namespace", self.kust["namespace"])})

    def test_hpa_pdb(self):
        self.check_hpa(self.objs, self.dep, "held-keys-shared")
        self.check_pdb(self.objs, self.pod, "held-keys-shared")

    def test_network_policy(self):
        np = find(self.objs, "NetworkPolicy")[0]
        self.assertTrue(labels_match(np["spec"]["podSelector"]["matchLabels"], self.pod["metadata"]["labels"]))
        self.assertEqual(set(np["spec"]["policyTypes"]), {"Ingress", "Egress"})
        names = {p["name"] for p in self.c["ports"]}
        self.assertEqual({p["port"] for rule in np["spec"]["ingress"] for p in rule["ports"]}, names)
        self.check_egress_only_postgres_and_dns(np, "held-keys-shared")

    def test_import_job(self):
        self.assertEqual(self.import_kust["namespace"], self.kust["namespace"])
        self.assertEqual(self.import_kust["images"], self.kust["images"])
        self.assertEqual(self.job_c["image"], self.c["image"])
        self.assertEqual(self.job_spec["restartPolicy"], "Never")
        self.check_guaranteed(self.job_spec, "import")
        self.check_security(self.job_spec, "import")
        # The same Secrets as the Deployment.
        self.assertEqual(self.check_key_store_from_secret(self.job_c, "import"),
                         self.check_key_store_from_secret(self.c, "held-keys-shared"))
        self.check_kek_from_secret(self.job_spec, self.job_c, "import")
        self.check_kek_file_accepted(self.job_spec, self.job_c, "import")
        self.assertEqual(flag_value(self.job_c, "--kek-file"), flag_value(self.c, "--kek-file"))
        # It reads the StatefulSet's store: its volume (the PVC of pod 0) at the same path.
        data_dir = flag_value(self.sts_c, "--data-dir")
        self.assertEqual(flag_value(self.job_c, "--import-data-dir"), data_dir)
        vol = {v["name"]: v for v in self.job_spec["volumes"]}[mount_for(self.job_c, data_dir)["name"]]
        vct = self.sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"]
        self.assertEqual(vol["persistentVolumeClaim"]["claimName"], f"{vct}-{self.sts['metadata']['name']}-0")
        # Its pod gets no traffic from either setup's Services, and has a policy of its own.
        job_labels = self.job["spec"]["template"]["metadata"]["labels"]
        for s in find(self.objs, "Service") + find(self.held_objs, "Service"):
            self.assertFalse(labels_match(s["spec"]["selector"], job_labels), s["metadata"]["name"])
        np = find(self.import_objs, "NetworkPolicy")[0]
        self.assertTrue(labels_match(np["spec"]["podSelector"]["matchLabels"], job_labels))
        self.assertEqual(np["spec"]["ingress"], [])
        self.check_egress_only_postgres_and_dns(np, "import")

    @unittest.skipIf(shutil.which("kubectl") is None, "kubectl not installed")
    def test_import_renders(self):
        out = subprocess.run(["kubectl", "kustomize", os.path.join(self.kdir, "import")], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        jobs = [o for o in yaml.safe_load_all(out.stdout) if o["kind"] == "Job"]
        self.assertTrue(all(c["image"].startswith("registry.example.com/pqcd:")
                            for j in jobs for c in all_containers(j["spec"]["template"]["spec"])))


def dashboard_exprs(dash):
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                out.append((p["title"], t["expr"]))
            walk(p.get("panels", []))

    walk(dash["panels"])
    return out


class TestDashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(DEPLOY, "grafana", "pqcd-dashboard.json")) as f:
            cls.dash = json.load(f)
        with open(os.path.join(DEPLOY, "prometheus", "pqcd-rules.yml")) as f:
            rules = yaml.safe_load(f)
        cls.recorded = {r["record"] for g in rules["groups"] for r in g["rules"] if "record" in r}

    def test_structure(self):
        d = self.dash
        self.assertEqual(d["uid"], "pqcd-overview")
        ids = [p["id"] for p in d["panels"]]
        self.assertEqual(len(ids), len(set(ids)))
        variables = {v["name"]: v for v in d["templating"]["list"]}
        self.assertEqual(variables["datasource"]["type"], "datasource")
        for p in d["panels"]:
            if p["type"] == "row":
                continue
            self.assertEqual(p["datasource"]["uid"], "${datasource}", p["title"])
            self.assertTrue(p["targets"], p["title"])

    def test_metrics_are_known(self):
        for title, expr in dashboard_exprs(self.dash):
            names = set(re.findall(r"\bpqcd[a-z0-9_:]*", expr))
            self.assertTrue(names or re.match(r"sum\(up\{", expr), f"{title}: {expr}")
            for n in names:
                self.assertIn(n, KNOWN_METRICS | self.recorded, f"{title}: unknown metric {n}")

    def test_contract_matches_server_doc(self):
        doc = os.path.join(ROOT, "server", "METRICS.md")
        if not os.path.exists(doc):
            self.skipTest("server/METRICS.md not present")
        with open(doc) as f:
            listed = set(re.findall(r"^- (pqcd_[a-z_]+)", f.read(), re.M))
        # The key-store metrics are listed all together or (until server/METRICS.md documents the
        # PostgreSQL store) not at all.
        self.assertIn(listed, (COUNTERS | HISTOGRAMS | GAUGES, COUNTERS | HISTOGRAMS | GAUGES | KEY_STORE_METRICS))

    def test_covers_the_spec(self):
        exprs = " ".join(e for _, e in dashboard_exprs(self.dash))
        titles = " ".join(p["title"].lower() for p in self.dash["panels"])
        for metric in ("pqcd_operations_total", "pqcd_queue_wait_seconds_bucket", "pqcd_compute_seconds_bucket",
                       "pqcd_request_duration_seconds_bucket", "pqcd_queue_depth", "pqcd_batch_size_bucket",
                       "pqcd_worker_busy_seconds_total", "pqcd_held_keys", "pqcd_build_info"):
            self.assertIn(metric, exprs)
        self.assertIn("by (code)", exprs)
        self.assertIn("by (instance, node) (pqcd_queue_depth", exprs)
        for word in ("operation and algorithm", "p50", "p99", "queue wait vs compute", "error ratio by status code",
                     "per numa node", "batch size", "worker busy", "held keys", "backend"):
            self.assertIn(word, titles)

    def test_only_known_variables(self):
        for title, expr in dashboard_exprs(self.dash):
            for v in re.findall(r"\$\{?(\w+)", expr):
                self.assertIn(v, {"job", "instance", "__rate_interval"}, f"{title}: ${v}")


def dockerfile_stages(path):
    stages, cur = [], None
    with open(path) as f:
        text = re.sub(r"\\\n", " ", f.read())
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instr, _, rest = line.partition(" ")
        instr = instr.upper()
        if instr == "FROM":
            cur = {"from": rest, "lines": []}
            stages.append(cur)
        elif cur is not None:
            cur["lines"].append((instr, rest.strip()))
    return stages


class TestDockerfile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stages = dockerfile_stages(os.path.join(DEPLOY, "docker", "Dockerfile"))
        cls.final = cls.stages[-1]["lines"]

    def instr(self, name):
        return [rest for i, rest in self.final if i == name]

    def test_multi_stage_debian12(self):
        self.assertGreaterEqual(len(self.stages), 2)
        for s in self.stages:
            self.assertRegex(s["from"], r"^debian:\$\{DEBIAN_RELEASE\}(-slim)? AS \w+$")
        with open(os.path.join(DEPLOY, "docker", "Dockerfile")) as f:
            self.assertIn("ARG DEBIAN_RELEASE=bookworm", f.read())

    def test_runtime_holds_only_the_binaries(self):
        copies = self.instr("COPY")
        self.assertTrue(all(c.startswith("--from=build ") for c in copies), copies)
        dests = sorted(c.split()[-1] for c in copies)
        self.assertEqual(dests, ["/tmp/runtime-packages.txt", "/usr/local/bin/pqc", "/usr/local/bin/pqcd"])
        self.assertFalse([r for r in self.instr("RUN") if re.search(r"\b(cmake|g\+\+|-dev)\b", r)])

    def test_non_root_ports_health(self):
        user = self.instr("USER")[-1]
        self.assertNotIn(user.split(":")[0], ("0", "root"))
        exposed = " ".join(self.instr("EXPOSE"))
        self.assertIn(f"{GRPC_PORT}/tcp", exposed)
        self.assertIn(f"{METRICS_PORT}/tcp", exposed)
        hc = self.instr("HEALTHCHECK")[-1]
        self.assertIn('"health"', hc)
        self.assertIn(f"127.0.0.1:{GRPC_PORT}", hc)
        env = " ".join(self.instr("ENV"))
        self.assertIn(f"PQCD_LISTEN=0.0.0.0:{GRPC_PORT}", env)
        self.assertIn(f"PQCD_METRICS_LISTEN=0.0.0.0:{METRICS_PORT}", env)
        self.assertEqual(self.instr("ENTRYPOINT")[-1], '["/usr/local/bin/pqcd"]')


class TestSystemd(unittest.TestCase):
    def test_hardening(self):
        unit = os.path.join(DEPLOY, "systemd", "pqcd.service")
        with open(unit) as f:
            text = f.read()
        directives = dict(re.findall(r"^([A-Za-z]+)=(.*)$", text, re.M))
        self.assertTrue(directives.get("DynamicUser") == "yes" or directives.get("User"))
        for k, v in {"ProtectSystem": "strict", "NoNewPrivileges": "yes", "MemoryDenyWriteExecute": "yes",
                     "KillSignal": "SIGTERM", "PrivateTmp": "yes", "ProtectHome": "yes"}.items():
            self.assertEqual(directives.get(k), v, k)
        self.assertIn("LimitMEMLOCK", directives)
        self.assertIn("CPUAffinity", text)
        self.assertTrue(directives["ExecStart"].startswith("/usr/local/bin/pqcd"))
        # The daemon binds its own listeners: no socket activation, so no socket unit.
        self.assertFalse(os.path.exists(os.path.join(DEPLOY, "systemd", "pqcd.socket")))


class TestDocs(unittest.TestCase):
    def test_readmes(self):
        with open(os.path.join(DEPLOY, "README.md")) as f:
            top = f.read()
        for word in ("docker build", "kubectl apply", "promtool", "pqcd-dashboard.json", "systemctl"):
            self.assertIn(word, top)
        with open(os.path.join(K8S, "README.md")) as f:
            k = f.read()
        for d in ("shared-service", "sidecar", "held-keys", "held-keys-shared", "held-keys-shared/import"):
            self.assertIn(d, k)
        self.assertIn("held-keys-shared", top)
        self.assertIn("key-store-postgres.md", top)

    def test_key_store_postgres_doc(self):
        with open(os.path.join(ROOT, "docs", "key-store-postgres.md")) as f:
            doc = f.read()
        for word in ("--key-store", "PQCD_KEY_STORE", "--kek-file", "--key-store-reconcile-interval",
                     "--key-store-max-staleness", "--import-data-dir", "sslmode=verify-full", "pqc.v1.Keys",
                     "pqcd_schema_migrations", "deploy/k8s/held-keys-shared"):
            self.assertIn(word, doc)
        for m in KEY_STORE_METRICS:
            self.assertIn(m, doc)


if __name__ == "__main__":
    unittest.main(verbosity=1)
