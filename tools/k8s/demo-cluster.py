#!/usr/bin/env python3
"""A stand-in Kubernetes cluster to try `kprof k8s` on without one: the API-server stand-in of
kprof's tests (tests/support/fake_apiserver.py) serving tests/k8s/data/vllm_single_replica.json —
a one-replica vLLM Deployment `llama-70b` in namespace `serving` — on 127.0.0.1. A sister it
creates runs a process tree that ncu attach clients hold; its pod's server is the OpenAI stand-in
(tools/serving/serve.py --backend fake) reached by `kubectl port-forward`; a capture replays a
real ncu attach run recorded on the H200 (data/h200/capture-recordings/attach_1: kernels k_alpha
and k_beta). As a model server does, the pod's server listens 3 s after the hold lets it start
(connections before are refused in the pod) and answers /health 503 for 3 s more. Everything real
but the cluster: your kubectl and kprof; the shell kprof runs in pods is played by the stand-in.

usage: tools/k8s/demo-cluster.py DIR     (DIR: a new folder for its state and kubeconfig)
Prints the KUBECONFIG to export, then serves until Ctrl-C."""
import os
import subprocess
import sys
import time

if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
    print(__doc__.strip())
    sys.exit(2)
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
state = os.path.abspath(sys.argv[1])
if os.path.exists(state):
    sys.exit(f"demo-cluster.py: {state} already exists; give a new folder")
os.makedirs(state)
env = dict(os.environ,
           FAKE_ATTACH_RECORDING=os.path.join(root, "data/h200/capture-recordings/attach_1"),
           FAKE_POD_SERVER=os.path.join(root, "tools/serving/serve.py"),
           FAKE_ATTACH_SECONDS="2", FAKE_POD_SERVER_ARGS="--fake-ready-after 3")
port_file = os.path.join(state, "port")
server = subprocess.Popen([sys.executable, os.path.join(root, "tests/support/fake_apiserver.py"),
                           os.path.join(root, "tests/k8s/data/vllm_single_replica.json"), state,
                           "--port-file", port_file, "--fail", "server-late:3"], env=env,
                          stderr=open(os.path.join(state, "server.log"), "w"))
for _ in range(100):
    if os.path.exists(port_file) or server.poll() is not None:
        break
    time.sleep(0.05)
if not os.path.exists(port_file):
    sys.exit(f"demo-cluster.py: the stand-in did not start (see {state}/server.log)")
kubeconfig = os.path.join(state, "kubeconfig")
with open(kubeconfig, "w") as f:
    f.write("apiVersion: v1\nkind: Config\n"
            f"clusters: [{{name: demo, cluster: {{server: \"http://127.0.0.1:{open(port_file).read()}\"}}}}]\n"
            "users: [{name: demo, user: {token: demo}}]\n"
            "contexts: [{name: demo, context: {cluster: demo, user: demo}}]\ncurrent-context: demo\n")
print(f"export KUBECONFIG={kubeconfig}", flush=True)
try:
    server.wait()
except KeyboardInterrupt:
    server.terminate()
    server.wait()
