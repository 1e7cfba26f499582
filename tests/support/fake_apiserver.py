#!/usr/bin/env python3
"""A stand-in for a Kubernetes API server, for driving the real kubectl in tests.

Serves canned objects (a JSON file: {"deployments": [...], "pods": [...], "services": [...]}) over
plain HTTP on 127.0.0.1, records every request (method, path, query, body) as JSON lines, and
supports what kprof's kubectl calls need: discovery, version, get/list (labelSelector equality),
create/delete of deployments (a created deployment gets one Running pod whose server log says ncu
is waiting for an attach), the pods/ephemeralcontainers subresource (kubectl debug), pods/log,
and pods/exec over WebSocket (v5/v4.channel.k8s.io) with a tiny pod "filesystem" (a folder per
pod) that understands the commands kprof runs: sha256sum, tar (kubectl cp), test -s, and kprof's
attach wrapper `sh -c SCRIPT kprof-attach REPORT NCU ARGS...` (replays a recorded ncu attach run
and writes its report into the pod); for `sister --trace`: initContainers `cp -a DIR/. MOUNT/`
(copying DIR of FAKE_IMAGE_ROOT into the pod), `ls -1 DIR`, and kprof's control write
`sh -c SCRIPT kprof-control FILE start|stop`, which plays the tracer when the server's
CUDA_INJECTION64_PATH names a library present in the pod: `start` opens a window per recorded
trace (a .partial), `stop` renames each to its final name with the recording's bytes and logs the
tracer's window line.

A sister's server under `ncu --mode launch` is a process tree (PodTree): its processes wait for a
profiler; kprof's attach wrapper with the release filter holds one (prints ncu's "Attaching" and
"Connected" lines at once, then waits for the stop file REPORT.stop that `sh -c SCRIPT kprof-stop
FILE` writes), with another filter it replays the recording as the process it took. Once every
process was attached to, the pod's server starts: serve.py --backend fake (FAKE_POD_SERVER names
serve.py; FAKE_POD_SERVER_ARGS adds options), listening where the container's --port (else its
containerPort) says; pods/portforward (tests/support/spdy_portforward.py) reaches it, and any other
port is refused as a kubelet refuses it. `sh -c SCRIPT kprof-describe PID` prints a process's
state, command line and thread names.

usage: fake_apiserver.py OBJECTS.json STATE_DIR [--port-file F] [--fail RULE]...
RULE: forbid:VERB:RESOURCE (403), no-ephemeral (404 on pods/ephemeralcontainers),
      server-version:MINOR, slow-exec:SECONDS (the attach exec waits first), cp-missing (tar
      finds no file, as when the report vanished before kubectl cp), no-tar (an image without
      tar: kubectl cp cannot work there), unlabel-created (a created Deployment loses its
      app.kubernetes.io/managed-by label, as if someone relabelled it), tracer-off (the tracer
      refuses to start, says why in the log and writes nothing), trace-stays-partial (the last
      window never finishes), unschedulable (a created Deployment's pod stays Pending with the
      scheduler's "Insufficient nvidia.com/gpu" condition), image-pull (its pod's server
      container waits in ImagePullBackOff), two-process (the server is a front and an engine,
      VLLM::EngineCore, that waits once the front runs), engine-first (an attach takes the
      highest-port process first), late-worker (with two-process: a tensor-parallel worker
      starts waiting 2 s after the engine first ran, and the server waits for it), server-late:SECONDS (the pod's server starts that long after
      the last first attach), no-portforward (403 on pods/portforward), digest-lost (sha256sum
      exits 0 printing nothing, as an exec whose output was cut), digest-lost-once (the first
      time only), cp-empty (kubectl cp's tar stream comes back empty and exits 0: no file),
      unready-during-capture:SECONDS (that long after a capture attaches, the pod's Ready and
      ContainersReady conditions turn False and its container is not ready, as when its readiness
      probe fails), restart-during-capture:SECONDS (that long after, the profiled container's
      restartCount goes up by one, its last state terminated).
A capture's attach (not a hold) takes FAKE_ATTACH_SECONDS (0) unless the stop file REPORT.stop
appears first, as kprof's attach wrapper detaches a real ncu; its "capture" event says which
ended it (ended_by: done, stop_file).
Nodes come from the objects file's "nodes" (GET /api/v1/nodes); GET /api/v1/pods lists every
namespace's pods (fieldSelector status.phase!=… honoured).
Environment: FAKE_ATTACH_RECORDING (a capture-recordings folder: ncu-stdout.txt, report.ncu-rep.zst),
FAKE_IMAGE_ROOT (a folder standing for the images' files), FAKE_TRACER_TRACES (recorded tracer
traces, os.pathsep-separated: one process each)."""
import atexit
import base64
import ctypes
import hashlib
import http.server
import io
import json
import shutil
import signal
import socket
import os
import re
import socketserver
import subprocess
import sys
import tarfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import spdy_portforward  # noqa: E402

objects_path, state = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
port_file = None
rules = []
while args:
    a = args.pop(0)
    if a == "--port-file":
        port_file = args.pop(0)
    elif a == "--fail":
        rules.append(args.pop(0))
objects = json.load(open(objects_path))
store = {"deployments": objects.get("deployments", []), "pods": objects.get("pods", []),
         "services": objects.get("services", []), "nodes": objects.get("nodes", [])}


def with_defaults(pod):
    # What a real API server fills in (kubectl debug dereferences spec.securityContext).
    spec = pod.setdefault("spec", {})
    spec.setdefault("securityContext", {})
    spec.setdefault("restartPolicy", "Always")
    for c in spec.get("containers", []):
        c.setdefault("terminationMessagePolicy", "File")
    return pod


for p in store["pods"]:
    with_defaults(p)
lock = threading.Lock()
log_path = os.path.join(state, "requests.jsonl")
server_minor = next((r.split(":")[1] for r in rules if r.startswith("server-version:")), "31")


def record(entry):
    with lock, open(log_path, "a") as f:
        f.write(json.dumps(entry) + "\n")


def status(code, reason, message, name="", kind=""):
    # A real server always fills details; kubectl debug dereferences it on a 404.
    return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message, "reason": reason, "code": code,
                  "details": {"name": name, "kind": kind}}


RESOURCES_V1 = [
    {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["po"]},
    {"name": "pods/exec", "singularName": "", "namespaced": True, "kind": "PodExecOptions", "verbs": ["create", "get"]},
    {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]},
    {"name": "pods/portforward", "singularName": "", "namespaced": True, "kind": "PodPortForwardOptions",
     "verbs": ["create", "get"]},
    {"name": "pods/ephemeralcontainers", "singularName": "", "namespaced": True, "kind": "Pod",
     "verbs": ["get", "patch", "update"]},
    {"name": "services", "singularName": "service", "namespaced": True, "kind": "Service",
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["svc"]},
    {"name": "namespaces", "singularName": "namespace", "namespaced": False, "kind": "Namespace",
     "verbs": ["get", "list"], "shortNames": ["ns"]},
    {"name": "nodes", "singularName": "node", "namespaced": False, "kind": "Node",
     "verbs": ["get", "list"], "shortNames": ["no"]},
]
RESOURCES_APPS = [
    {"name": "deployments", "singularName": "deployment", "namespaced": True, "kind": "Deployment",
     "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["deploy"]},
    {"name": "replicasets", "singularName": "replicaset", "namespaced": True, "kind": "ReplicaSet",
     "verbs": ["get", "list"], "shortNames": ["rs"]},
]


def matches(obj, selector):
    labels = obj.get("metadata", {}).get("labels", {}) or {}
    for term in filter(None, selector.split(",")):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            k = k.rstrip("=")
            if labels.get(k) != v:
                return False
        elif labels.get(term) is None:
            return False
    return True


def find(kind, ns, name):
    return next((o for o in store[kind] if o["metadata"]["name"] == name
                 and o["metadata"].get("namespace", "default") == ns), None)


def forbidden(verb, resource):
    return f"forbid:{verb}:{resource}" in rules


def pod_dir(ns, pod, container):
    d = os.path.join(state, "pods", ns, pod, container)
    os.makedirs(d, exist_ok=True)
    return d


def make_pod_for(deployment):
    ns = deployment["metadata"].get("namespace", "default")
    name = deployment["metadata"]["name"] + "-7d9f8c6b5-x2x4q"
    template = deployment["spec"]["template"]
    containers = template["spec"]["containers"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": ns, "labels": dict(template["metadata"].get("labels", {})),
                        "uid": "uid-" + name},
           "spec": json.loads(json.dumps(template["spec"])) | {"nodeName": "gpu-node-7"},
           "status": {"phase": "Running",
                      "conditions": [{"type": t, "status": "True", "lastTransitionTime": "2026-11-29T00:00:00Z"}
                                     for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
                      "containerStatuses": [{"name": c["name"], "ready": True, "image": c["image"],
                                             "imageID": c["image"].split(":")[0] + "@sha256:" + "ab" * 32,
                                             "restartCount": 0, "lastState": {},
                                             "state": {"running": {"startedAt": "2026-11-29T00:00:00Z"}}}
                                            for c in containers]}}
    if "unschedulable" in rules:
        pod["spec"].pop("nodeName")
        pod["status"] = {"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "lastTransitionTime": "2026-12-01T00:00:00Z",
            "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. preemption: 0/2 nodes are "
                       "available: 2 No preemption victims found for incoming pod."}]}
        store["pods"].append(with_defaults(pod))
        return
    if "image-pull" in rules:
        status_ = pod["status"]
        status_["phase"] = "Pending"
        for st in status_["containerStatuses"]:
            st["ready"] = False
            st["state"] = {"waiting": {"reason": "ImagePullBackOff",
                                       "message": f'Back-off pulling image "{st["image"]}"'}}
        store["pods"].append(with_defaults(pod))
        return
    store["pods"].append(with_defaults(pod))
    run_init_containers(ns, pod)


def run_init_containers(ns, pod):
    """`cp -a DIR/. MOUNT/` of an initContainer: DIR of FAKE_IMAGE_ROOT into the containers that
    mount MOUNT (the shared emptyDir)."""
    image_root = os.environ.get("FAKE_IMAGE_ROOT", "")
    for init in pod["spec"].get("initContainers", []):
        command = init.get("command", [])
        if not image_root or command[:2] != ["cp", "-a"] or len(command) != 4:
            continue
        source = os.path.join(image_root, command[2].rstrip(".").strip("/"))
        mount = command[3].rstrip("/")
        if not os.path.isdir(source):
            continue
        for c in pod["spec"]["containers"]:
            if any(m.get("mountPath") == mount for m in c.get("volumeMounts", [])):
                shutil.copytree(source, os.path.join(pod_dir(ns, pod["metadata"]["name"], c["name"]), mount.lstrip("/")),
                                dirs_exist_ok=True)


def pod_log(ns, pod, container):
    return os.path.join(state, "pods", ns, pod, container + ".log")


def play_tracer(ns, pod_name, container, control, word):
    """What kprof's tracer does on the control file's word, for the recorded traces."""
    pod = find("pods", ns, pod_name)
    spec = next((c for c in pod["spec"]["containers"] if c["name"] == container), {})
    env = {e["name"]: e.get("value", "") for e in spec.get("env", [])}
    library = env.get("CUDA_INJECTION64_PATH", "")
    root = pod_dir(ns, pod_name, container)
    if not library or not os.path.isfile(os.path.join(root, library.lstrip("/"))):
        return
    if env.get("KPROF_TRACE_CONTROL") != control or env.get("KPROF_TRACE_START") != "on-control":
        return
    folder = os.path.join(root, env.get("KPROF_TRACE_DIR", ".").lstrip("/"))
    traces = [t for t in os.environ.get("FAKE_TRACER_TRACES", "").split(os.pathsep) if t]
    with open(pod_log(ns, pod_name, container), "a") as log:
        if "tracer-off" in rules:
            if word == "start":
                log.write(f"kprof-tracer: CUDA_INJECTION64_PATH names /opt/other/libinject.so, not this library: the tracer stays off\n")
            return
        for i, recording in enumerate(traces):
            pid = 4200 + i
            name = f"kprof-trace.gpu-node-7.{pid}.1.json.gz"
            final = os.path.join(folder, name)
            if word == "start" and not os.path.exists(final):
                open(final + ".partial", "wb").close()
            elif word == "stop" and os.path.exists(final + ".partial"):
                if "trace-stays-partial" in rules and i == len(traces) - 1:
                    continue
                data = open(recording, "rb").read()
                events = json.loads(__import__("gzip").decompress(data))["kprof"]["events"]
                with open(final + ".partial", "wb") as f:
                    f.write(data)
                os.rename(final + ".partial", final)
                path = env.get("KPROF_TRACE_DIR", ".").rstrip("/") + "/" + name
                log.write(f"kprof-tracer: pid {pid} window 1 (stopped by control file): {path}: {events} events; nothing dropped\n")


def change_pod_later(ns, pod_name, container, delay, change):
    """CHANGE(container status, pod) applied to the pod's status DELAY seconds from now: values
    replaced in place (a reader serialising the pod meanwhile sees no dict change size)."""
    def run():
        time.sleep(delay)
        with lock:
            pod = find("pods", ns, pod_name)
            st = next((s for s in (pod or {}).get("status", {}).get("containerStatuses", [])
                       if s["name"] == container), None)
            if st is not None:
                change(st, pod)
        if st is not None:
            record({"pod_status": change.__name__, "pod": pod_name, "container": container, "t": time.time()})
    threading.Thread(target=run, daemon=True).start()


def readiness_dropped(st, pod):
    st["ready"] = False
    for c in pod["status"].get("conditions", []):
        if c["type"] in ("Ready", "ContainersReady"):
            c["status"] = "False"
            c["lastTransitionTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def container_restarted(st, pod):
    st["restartCount"] = st.get("restartCount", 0) + 1
    st["lastState"] = {"terminated": {"exitCode": 137, "reason": "Error"}}


def pod_status_rules(ns, pod, container):
    """The rules that change the pod's status once a capture attaches."""
    for rule in rules:
        name, _, seconds = rule.partition(":")
        if name == "unready-during-capture":
            change_pod_later(ns, pod, container, float(seconds), readiness_dropped)
        elif name == "restart-during-capture":
            change_pod_later(ns, pod, container, float(seconds), container_restarted)


RELEASE_FILTER = "regex:^kprof_release_nothing$"
lost_once = []  # digest-lost-once: the first sha256sum came back empty
trees = {}  # (ns, pod) → PodTree


class PodTree:
    """A sister's server under `ncu --mode launch`, as attach clients see it: processes waiting
    for a profiler (a front; with two-process, an engine once the front ran), and the pod's
    server, started once each process was attached to (it blocked at its first CUDA call)."""

    def __init__(self, ns, pod, container):
        self.ns, self.pod, self.container = ns, pod, container
        argv = container.get("command", []) + container.get("args", [])
        if "--" in argv:
            argv = argv[argv.index("--") + 1:]
        self.argv = argv
        self.procs = [{"pid": 4321, "port": 49152, "cmdline": " ".join(argv),
                       "threads": ["python3", "cuda00001400006"], "held": False, "attached": False}]
        self.server, self.server_port = None, None
        self.pending_workers = 0
        self.pod_port = next((int(argv[i + 1]) for i, a in enumerate(argv[:-1]) if a == "--port"), None) or \
            next((p["containerPort"] for p in container.get("ports", [])), None)
        self.lock = threading.Lock()

    def take(self):
        """The waiting process an attach client gets: the lowest port no client holds."""
        with self.lock:
            free = [p for p in self.procs if not p["held"]]
            if not free:
                return None
            proc = max(free, key=lambda p: p["port"]) if "engine-first" in rules else min(free, key=lambda p: p["port"])
            proc["held"] = True
            first = not proc["attached"]
            proc["attached"] = True
            if first and proc["pid"] == 4321 and "two-process" in rules:
                self.procs.append({"pid": 4377, "port": 49153, "cmdline": "VLLM::EngineCore",
                                   "threads": ["VLLM::EngineCor", "cuda00001400006"], "held": False,
                                   "attached": False})
                if "late-worker" in rules:
                    self.pending_workers = 1
            if first and proc["pid"] == 4377 and self.pending_workers:
                threading.Thread(target=self.add_worker, daemon=True).start()
            ready = all(p["attached"] for p in self.procs) and not self.pending_workers and self.server is None
        if ready:
            delay = next((float(r.split(":")[1]) for r in rules if r.startswith("server-late:")), 0)
            threading.Thread(target=self.start_server, args=(delay,), daemon=True).start()
        return proc

    def add_worker(self):
        time.sleep(2)
        with self.lock:
            self.procs.append({"pid": 4390, "port": 49154, "cmdline": "VLLM::Worker_TP1",
                               "threads": ["VLLM::Worker_TP", "cuda00001400006"], "held": False,
                               "attached": False})
            self.pending_workers = 0

    def let_go(self, proc):
        with self.lock:
            proc["held"] = False

    def start_server(self, delay):
        time.sleep(delay)
        serve = os.environ.get("FAKE_POD_SERVER", "")
        if not serve:
            return
        model = next((self.argv[i + 1] for i, a in enumerate(self.argv[:-1]) if a == "--model"), "stand-in-model")
        log = os.path.join(state, "pods", self.ns, self.pod, "server-requests.jsonl")
        os.makedirs(os.path.dirname(log), exist_ok=True)
        extra = os.environ.get("FAKE_POD_SERVER_ARGS", "").split()
        key = next((self.argv[i + 1] for i, a in enumerate(self.argv[:-1]) if a == "--api-key"), None)
        if key:
            extra += ["--api-key", key]  # the engine's own --api-key, as vLLM takes it
        # Ends with the stand-in, however it ends (the tests kill it): the death signal follows
        # the thread that started it, so this thread stays until the server ends.
        kill_with_parent = lambda: ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        server = subprocess.Popen([sys.executable, serve, "--backend", "fake", "--port", "0",
                                   "--model-name", model, "--fake-ms-per-token", "5",
                                   "--request-log", log] + extra,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                  preexec_fn=kill_with_parent)
        line = server.stdout.readline()
        with self.lock:
            self.server = server
            if line.startswith("listening on "):
                self.server_port = int(line.rsplit(":", 1)[1])
        record({"pod_server": "started", "pod": self.pod, "local_port": self.server_port})
        # What it prints is the container's log (kubectl logs), as a pod's stdout is.
        with open(pod_log(self.ns, self.pod, self.container["name"]), "a") as log_file:
            log_file.write(line)
            for out in server.stdout:
                log_file.write(out)
                log_file.flush()
        server.wait()

    def connect(self, port):
        """Where the pod's port leads: its server, once it listens; refused otherwise."""
        if port == self.pod_port and self.server_port:
            return socket.create_connection(("127.0.0.1", self.server_port), timeout=5)
        raise OSError(f"error forwarding port {port} to pod {self.pod}, uid : failed to execute portforward in "
                      f"network namespace \"/var/run/netns/cni-0c1d\": failed to connect to localhost:{port} inside "
                      f"namespace \"0c1d\", IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused IPv6 dial "
                      f"tcp6 [::1]:{port}: connect: connection refused ")

    def stop(self):
        if self.server:
            self.server.kill()
            self.server.wait()


def tree_for(ns, pod_name, container_name):
    pod = find("pods", ns, pod_name)
    if pod is None:
        return None
    key = (ns, pod_name)
    if key not in trees:
        spec = next((c for c in pod["spec"]["containers"] if c["name"] == container_name), None)
        if spec is None:
            return None
        trees[key] = PodTree(ns, pod_name, spec)
    return trees[key]


@atexit.register
def stop_trees():
    for tree in trees.values():
        tree.stop()


def ncu_lines_for(proc):
    return ("==PROF== Finding attachable processes on host 127.0.0.1.\n"
            f"==PROF== Attaching to process '/usr/bin/python3.12' ({proc['pid']}) on port {proc['port']}.\n"
            f"==PROF== Connected to process {proc['pid']} (/usr/bin/python3.12)\n").encode()


NO_PROCESS = (b"==PROF== Finding attachable processes on host 127.0.0.1.\n"
              b"==WARNING== No processes found on 127.0.0.1 (ports 49152-49215).\n"
              b"==ERROR== No attachable process found.\n"
              b"==ERROR== An error occurred while trying to profile.\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, code, body, content_type="application/json"):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def handle_any(self, method):
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        body = self.body()
        record({"method": method, "path": url.path, "query": query,
                "body": body.decode(errors="replace"), "upgrade": self.headers.get("Upgrade")})
        path = url.path
        if path == "/version":
            return self.send_json(200, {"major": "1", "minor": server_minor, "gitVersion": f"v1.{server_minor}.0",
                                        "platform": "linux/amd64"})
        # Just enough OpenAPI v3 for kubectl to see that the server validates fields itself
        # (it then sends fieldValidation=... instead of validating against a schema).
        if path == "/openapi/v3":
            return self.send_json(200, {"paths": {g: {"serverRelativeURL": f"/openapi/v3/{g}?hash=1"}
                                                  for g in ("api/v1", "apis/apps/v1")}})
        if path.startswith("/openapi/v3/"):
            group = path[len("/openapi/v3/"):]
            gv = ("", "v1") if group == "api/v1" else ("apps", "v1")
            paths = {}
            for kind, plural in (("Deployment", "deployments"), ("Pod", "pods"), ("Service", "services")):
                if (kind == "Deployment") != (gv[0] == "apps"):
                    continue
                op = {"parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
                      "x-kubernetes-group-version-kind": {"group": gv[0], "version": gv[1], "kind": kind},
                      "responses": {"200": {"description": "OK"}}}
                paths[f"/{group}/namespaces/{{namespace}}/{plural}"] = {"post": op}
                paths[f"/{group}/namespaces/{{namespace}}/{plural}/{{name}}"] = {"patch": op, "put": op}
            return self.send_json(200, {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.31.0"},
                                        "paths": paths, "components": {"schemas": {}}})
        if path == "/api":
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})
        if path == "/apis":
            return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                 "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]})
        if path == "/api/v1":
            res = [r for r in RESOURCES_V1 if not ("no-ephemeral" in rules and r["name"] == "pods/ephemeralcontainers")]
            return self.send_json(200, {"kind": "APIResourceList", "groupVersion": "v1", "resources": res})
        if path == "/apis/apps/v1":
            return self.send_json(200, {"kind": "APIResourceList", "groupVersion": "apps/v1", "resources": RESOURCES_APPS})
        if path in ("/api/v1/nodes", "/api/v1/pods") and method == "GET":
            kind = path.rsplit("/", 1)[1]
            if forbidden("list", kind):
                return self.send_json(*status(403, "Forbidden",
                                              f'{kind} is forbidden: User "kprof-test" cannot list resource "{kind}" in API group "" at the cluster scope'))
            items = store[kind]
            for term in query.get("fieldSelector", [""])[0].split(","):
                if term.startswith("status.phase!="):
                    items = [o for o in items if o.get("status", {}).get("phase") != term.split("!=", 1)[1]]
            return self.send_json(200, {"kind": store_kind(kind) + "List", "apiVersion": "v1", "metadata": {}, "items": items})
        m = re.fullmatch(r"/api/v1/namespaces/([^/]+)", path)
        if m and method == "GET":
            known = {o["metadata"].get("namespace", "default") for k in store for o in store[k]}
            if m.group(1) in known:
                return self.send_json(200, {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": m.group(1)},
                                            "status": {"phase": "Active"}})
            return self.send_json(*status(404, "NotFound", f'namespaces "{m.group(1)}" not found'))
        m = re.fullmatch(r"/(?:api/v1|apis/apps/v1)/namespaces/([^/]+)/(deployments|pods|services)(?:/([^/]+))?(?:/([a-z]+))?", path)
        if not m:
            return self.send_json(*status(404, "NotFound", f"the server could not find the requested resource ({path})"))
        ns, kind, name, sub = m.groups()
        verb = {"GET": "get" if name else "list", "POST": "create", "DELETE": "delete", "PATCH": "patch", "PUT": "update"}[method]
        resource = kind + ("/" + sub if sub else "")
        if forbidden(verb, resource):
            return self.send_json(*status(403, "Forbidden",
                                          f'{resource} is forbidden: User "kprof-test" cannot {verb} resource "{resource}" in API group "" in the namespace "{ns}"'))
        if sub == "exec":
            return self.exec(ns, name, query)
        if sub == "portforward":
            if "no-portforward" in rules:
                return self.send_json(*status(403, "Forbidden",
                                              f'pods "{name}" is forbidden: User "kprof-test" cannot create resource "pods/portforward" in API group "" in the namespace "{ns}"'))
            return self.portforward(ns, name)
        if sub == "log":
            return self.logs(ns, name, query)
        if sub == "ephemeralcontainers" and "no-ephemeral" in rules:
            return self.send_json(*status(404, "NotFound", "the server could not find the requested resource"))
        singular = {"deployments": "deployment", "pods": "pod", "services": "service"}[kind]
        group = "apps" if kind == "deployments" else ""
        if method == "GET" and not name:
            selector = query.get("labelSelector", [""])[0]
            items = [o for o in store[kind] if o["metadata"].get("namespace", "default") == ns and matches(o, selector)]
            return self.send_json(200, {"kind": store_kind(kind) + "List", "apiVersion": "v1", "metadata": {}, "items": items})
        if method == "POST" and not name:
            obj = json.loads(body)
            obj.setdefault("metadata", {})["namespace"] = ns
            if find(kind, ns, obj["metadata"]["name"]):
                return self.send_json(*status(409, "AlreadyExists", f'{kind}.{group} "{obj["metadata"]["name"]}" already exists'))
            obj["metadata"]["uid"] = "uid-" + obj["metadata"]["name"]
            if "unlabel-created" in rules:
                (obj["metadata"].get("labels") or {}).pop("app.kubernetes.io/managed-by", None)
            obj["metadata"]["annotations"] = dict(obj["metadata"].get("annotations", {}) or {}) | {"deployment.kubernetes.io/revision": "1"}
            store[kind].append(obj)
            if kind == "deployments":
                make_pod_for(obj)
            return self.send_json(201, obj)
        obj = find(kind, ns, name)
        if obj is None:
            return self.send_json(*status(404, "NotFound", f'{kind}{"." + group if group else ""} "{name}" not found'))
        if method == "GET":
            return self.send_json(200, obj)
        if method == "DELETE":
            store[kind].remove(obj)
            if kind == "deployments":
                prefix = name + "-"
                for key in [k for k in trees if k[1].startswith(prefix)]:
                    trees.pop(key).stop()
                store["pods"][:] = [p for p in store["pods"] if not p["metadata"]["name"].startswith(prefix)]
            return self.send_json(200, {"kind": "Status", "apiVersion": "v1", "status": "Success", "details": {"name": name, "kind": kind}})
        if method == "PATCH" and sub == "ephemeralcontainers":
            patch = json.loads(body)
            added = patch.get("spec", {}).get("ephemeralContainers", [])
            spec = obj["spec"].setdefault("ephemeralContainers", [])
            names = {c["name"] for c in spec}
            for c in added:
                if c["name"] not in names:
                    spec.append(c)
                    obj["status"].setdefault("ephemeralContainerStatuses", []).append(
                        {"name": c["name"], "ready": False, "image": c.get("image", ""),
                         "state": {"running": {"startedAt": "2026-11-29T00:00:00Z"}}})
            return self.send_json(200, obj)
        return self.send_json(*status(405, "MethodNotAllowed", "not supported by the stand-in"))

    def logs(self, ns, name, query):
        if not find("pods", ns, name):
            return self.send_json(*status(404, "NotFound", f'pods "{name}" not found'))
        pod = find("pods", ns, name)
        container = query.get("container", [pod["spec"]["containers"][0]["name"]])[0]
        traced = any(c.get("name") == "kprof-tracer-install" for c in pod["spec"].get("initContainers", []))
        text = b"" if traced else b"==PROF== Waiting for profiler to attach on ports 49152-49215.\n"
        if os.path.exists(pod_log(ns, name, container)):
            text += open(pod_log(ns, name, container), "rb").read()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    # --- exec over WebSocket -------------------------------------------------------------
    def exec(self, ns, name, query):
        pod = find("pods", ns, name)
        if pod is None:
            return self.send_json(*status(404, "NotFound", f'pods "{name}" not found'))
        if (self.headers.get("Upgrade") or "").lower() != "websocket":
            return self.send_json(*status(400, "BadRequest", "the stand-in speaks WebSocket exec only"))
        chosen = next((p for p in ("v5.channel.k8s.io", "v4.channel.k8s.io") if p in self.protocols()), None)
        self.accept_websocket(chosen)
        container = query.get("container", [pod["spec"]["containers"][0]["name"]])[0]
        command = query.get("command", [])
        record({"exec": command, "pod": name, "container": container, "t": time.time()})
        slow = next((float(r.split(":")[1]) for r in rules if r.startswith("slow-exec:")), 0)
        if slow and command[:1] == ["sh"] and RELEASE_FILTER not in command:
            # A capture that takes long (tests interrupt kprof meanwhile); the attach wrapper's
            # stop file ends it early, as its SIGINT ends a real ncu.
            stop = os.path.join(pod_dir(ns, name, container), command[4].lstrip("/") + ".stop") \
                if is_attach(command) else None
            end = time.time() + slow
            while time.time() < end and not (stop and os.path.exists(stop)):
                time.sleep(0.1)
        if is_attach(command) and RELEASE_FILTER in command:
            out, err, code = b"", b"", self.hold(ns, name, container, command)
        else:
            out, err, code = run_in_pod(ns, name, container, command)
        for chunk_start in range(0, len(out), 32768):
            self.frame(b"\x01" + out[chunk_start:chunk_start + 32768])
        if err:
            self.frame(b"\x02" + err)
        if code == 0:
            st = {"metadata": {}, "status": "Success"}
        else:
            st = {"metadata": {}, "status": "Failure", "message": f"command terminated with non-zero exit code: exit status {code}",
                  "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}
        self.frame(b"\x03" + json.dumps(st).encode())
        try:
            self.frame(b"\x03\xe8", opcode=0x8)
        except OSError:
            pass  # the client closed first
        self.close_connection = True

    def protocols(self):
        return [p.strip() for p in (self.headers.get("Sec-WebSocket-Protocol") or "").split(",")]

    def accept_websocket(self, protocol):
        """RFC 6455's 101 answer, with the subprotocol chosen (None: none)."""
        accept = base64.b64encode(hashlib.sha1((self.headers["Sec-WebSocket-Key"] +
                                                "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        if protocol:
            self.send_header("Sec-WebSocket-Protocol", protocol)
        self.end_headers()
        self.wfile.flush()

    def hold(self, ns, pod, container, command):
        """An attach client with the release filter: connected at once, detached when the stop
        file appears (kprof's stop script) or the pod goes."""
        tree = tree_for(ns, pod, container)
        proc = tree.take() if tree else None
        if proc is None:
            self.frame(b"\x01" + NO_PROCESS)
            return 1
        record({"hold": "attached", "pod": pod, "pid": proc["pid"], "t": time.time()})
        self.frame(b"\x01" + ncu_lines_for(proc))
        stop = os.path.join(pod_dir(ns, pod, container), command[4].lstrip("/") + ".stop")
        deadline = time.time() + 900
        while not os.path.exists(stop) and find("pods", ns, pod) and time.time() < deadline:
            time.sleep(0.1)
        tree.let_go(proc)
        why = "stop_file" if os.path.exists(stop) else "pod_gone" if not find("pods", ns, pod) else "deadline"
        record({"hold": "detached", "pod": pod, "pid": proc["pid"], "t": time.time(), "why": why})
        self.frame(b"\x01==PROF== Trying to shutdown target application\n==WARNING== No kernels were profiled.\n")
        return 130

    # --- port-forward (SPDY, tunnelled in a WebSocket or over the upgraded connection) --------
    def portforward(self, ns, name):
        pod = find("pods", ns, name)
        if pod is None:
            return self.send_json(*status(404, "NotFound", f'pods "{name}" not found'))
        tree = tree_for(ns, name, pod["spec"]["containers"][0]["name"])
        upgrade = (self.headers.get("Upgrade") or "").lower()
        if upgrade == "websocket":
            if "SPDY/3.1+portforward.k8s.io" not in self.protocols():
                return self.send_json(*status(400, "BadRequest", "the stand-in tunnels SPDY/3.1+portforward.k8s.io only"))
            self.accept_websocket("SPDY/3.1+portforward.k8s.io")
            transport = spdy_portforward.WebSocketBytes(self.rfile, self.wfile)
        elif upgrade == "spdy/3.1":
            self.send_response(101)
            self.send_header("Connection", "Upgrade")
            self.send_header("Upgrade", "SPDY/3.1")
            self.send_header("X-Stream-Protocol-Version", "portforward.k8s.io")
            self.end_headers()
            self.wfile.flush()
            transport = spdy_portforward.RawBytes(self.rfile, self.wfile)
        else:
            return self.send_json(*status(400, "BadRequest", "port-forward needs an upgrade"))
        record({"port_forward": "session", "pod": name, "transport": upgrade, "t": time.time()})
        spdy_portforward.PortForwardSession(transport, tree.connect, record).run()
        self.close_connection = True

    def frame(self, payload, opcode=0x2):
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([n])
        elif n < 65536:
            header += bytes([126]) + n.to_bytes(2, "big")
        else:
            header += bytes([127]) + n.to_bytes(8, "big")
        self.wfile.write(header + payload)
        self.wfile.flush()

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_DELETE(self):
        self.handle_any("DELETE")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_PUT(self):
        self.handle_any("PUT")


def store_kind(kind):
    return {"deployments": "Deployment", "pods": "Pod", "services": "Service", "nodes": "Node"}[kind]


def is_attach(command):
    return command[:1] in (["sh"], ["/bin/sh"]) and command[1:2] == ["-c"] and len(command) > 4 and command[3] == "kprof-attach"


def run_in_pod(ns, pod, container, command):
    """The few commands kprof runs in a pod, against a folder standing for its filesystem."""
    root = pod_dir(ns, pod, container)
    local = lambda p: os.path.join(root, p.lstrip("/"))
    if not command:
        return b"", b"no command\n", 1
    prog = command[0]
    if prog == "sha256sum" and len(command) == 2 and "digest-lost" in rules:
        return b"", b"", 0  # an exec that came back 0 with its output cut
    if prog == "sha256sum" and len(command) == 2 and "digest-lost-once" in rules and not lost_once:
        lost_once.append(1)
        return b"", b"", 0
    if prog == "sha256sum" and len(command) == 2:
        path = local(command[1])
        if not os.path.isfile(path):
            return b"", f"sha256sum: {command[1]}: No such file or directory\n".encode(), 1
        return (hashlib.sha256(open(path, "rb").read()).hexdigest() + "  " + command[1] + "\n").encode(), b"", 0
    if prog == "test" and command[1:2] == ["-s"]:
        path = local(command[2])
        return b"", b"", 0 if os.path.exists(path) and os.path.getsize(path) > 0 else 1
    if prog == "tar" and "no-tar" in rules:
        return b"", b'exec: "tar": executable file not found in $PATH\n', 127
    if prog == "tar" and command[1:2] == ["--version"]:
        return b"tar (GNU tar) 1.35\n", b"", 0
    if prog == "cat" and len(command) == 2:
        path = local(command[1])
        if not os.path.isfile(path):
            return b"", f"cat: {command[1]}: No such file or directory\n".encode(), 1
        return open(path, "rb").read(), b"", 0
    if prog == "tar" and "cp-missing" in rules:
        return b"", f"tar: {command[-1]}: Cannot stat: No such file or directory\ntar: Exiting with failure status due to previous errors\n".encode(), 2
    if prog == "tar" and command[1:3] == ["cf", "-"] and "cp-empty" in rules:
        return b"", b"", 0  # the exec's output cut to nothing, and still exit 0
    if prog == "tar" and command[1:3] == ["cf", "-"]:
        rest = command[3:]
        base = "/"
        if rest[:1] == ["-C"]:
            base, rest = rest[1], rest[2:]
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for member in rest:
                path = local(os.path.join(base, member))
                if not os.path.exists(path):
                    return b"", f"tar: {member}: Cannot stat: No such file or directory\ntar: Exiting with failure status due to previous errors\n".encode(), 2
                tar.add(path, arcname=member.lstrip("/"))
        return buffer.getvalue(), b"", 0
    if prog in ("sh", "/bin/sh") and command[1:2] == ["-c"] and len(command) == 5 and command[3] == "kprof-stop":
        os.makedirs(os.path.dirname(local(command[4])), exist_ok=True)
        open(local(command[4]), "w").close()
        return b"", b"", 0
    if prog in ("sh", "/bin/sh") and command[1:2] == ["-c"] and len(command) == 5 and command[3] == "kprof-describe":
        tree = trees.get((ns, pod))
        proc = next((p for p in tree.procs if str(p["pid"]) == command[4]), None) if tree else None
        if proc is None:
            return b"", b"", 3
        return ("S\n" + proc["cmdline"] + " \n" + "".join(t + "\n" for t in proc["threads"])).encode(), b"", 0
    if is_attach(command):
        report, ncu_argv = command[4], command[5:]
        rec = os.environ.get("FAKE_ATTACH_RECORDING", "")
        if not rec or not os.path.isdir(rec):
            return b"", b"sh: 1: ncu: not found\n", 127
        out = open(os.path.join(rec, "ncu-stdout.txt"), "rb").read()
        tree = tree_for(ns, pod, container) if find("pods", ns, pod) else None
        proc = tree.take() if tree else None
        if tree and proc is None:
            return NO_PROCESS, b"", 1
        started = time.time()
        ended_by = "done"
        if proc:
            # The recording as the process this client took.
            out = re.sub(rb"(Connected to process |\()\d+(\)| \()", lambda m: m.group(1) + str(proc["pid"]).encode() + m.group(2), out)
            pod_status_rules(ns, pod, container)
            # Attached this long, unless kprof's stop file detaches it first (the wrapper's SIGINT).
            stop = local(report + ".stop")
            while time.time() < started + float(os.environ.get("FAKE_ATTACH_SECONDS", "0")):
                if os.path.exists(stop):
                    ended_by = "stop_file"
                    break
                time.sleep(0.1)
            tree.let_go(proc)
        data = subprocess.run(["zstd", "-dc", os.path.join(rec, "report.ncu-rep.zst")], check=True, capture_output=True).stdout
        os.makedirs(os.path.dirname(local(report + ".ncu-rep")), exist_ok=True)
        with open(local(report + ".ncu-rep"), "wb") as f:
            f.write(data)
        with lock, open(os.path.join(state, "attach-argv.jsonl"), "a") as f:
            f.write(json.dumps(ncu_argv) + "\n")
        record({"capture": "attached", "pod": pod, "pid": proc["pid"] if proc else None,
                "from": started, "to": time.time(), "ended_by": ended_by})
        return out, b"", 130
    if prog == "ls" and command[1:2] == ["-1"] and len(command) == 3:
        path = local(command[2])
        if not os.path.isdir(path):
            return b"", f"ls: cannot access '{command[2]}': No such file or directory\n".encode(), 2
        return "".join(n + "\n" for n in sorted(os.listdir(path))).encode(), b"", 0
    if prog in ("sh", "/bin/sh") and command[1:2] == ["-c"] and len(command) == 6 and command[3] == "kprof-control":
        control, word = command[4], command[5]
        os.makedirs(os.path.dirname(local(control)), exist_ok=True)
        with open(local(control), "w") as f:
            f.write(word + "\n")
        play_tracer(ns, pod, container, control, word)
        return b"", b"", 0
    if prog == "sleep":
        return b"", b"", 0
    return b"", f"sh: 1: {prog}: not found\n".encode(), 127


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


httpd = Server(("127.0.0.1", 0), Handler)
if port_file:
    with open(port_file + ".tmp", "w") as f:
        f.write(str(httpd.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
httpd.serve_forever()
