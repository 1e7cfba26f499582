#!/usr/bin/env python3
"""The objects kprof k8s creates validate against the Kubernetes API schema: the sister
Deployment (for both fixtures, and with --trace) and the pod after `kprof k8s sidecar` added its ephemeral
container, checked with kubernetes-models (validators generated from the Kubernetes OpenAPI spec,
in tools/k8s-schema/node_modules). Uses the k8s test's stand-in cluster and real kubectl.

usage: validate_manifests.py KPROF SCHEMA_DIR      exit 77 (skipped) without node, the
packages, or kubectl >= 1.31."""
import json
import os
import shutil
import subprocess
import sys

kprof, schema_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
here = os.path.dirname(os.path.abspath(__file__))
if not shutil.which("node") or not os.path.isdir(os.path.join(schema_dir, "node_modules", "kubernetes-models")):
    print("SKIP: node or tools/k8s-schema/node_modules missing (scripts/install-deps runs npm ci there)")
    sys.exit(77)
sys.argv = [os.path.join(here, "k8s_test.py"), kprof, os.path.join(os.path.dirname(os.path.dirname(here)), "data")]
test_globals = {"__file__": sys.argv[0], "__name__": "k8s_test"}
exec(open(sys.argv[0]).read(), test_globals)
if test_globals["NEW"] is None:
    print("SKIP: no kubectl >= 1.31")
    sys.exit(77)
Cluster = test_globals["Cluster"]


def validate(obj, what):
    r = subprocess.run(["node", os.path.join(schema_dir, "validate.mjs")], input=json.dumps(obj), capture_output=True, text=True, cwd=schema_dir)
    print(f"{what}: {r.stdout.strip() or r.stderr.strip()}")
    return r.returncode == 0


ok = True
for fixture, deployment in (("vllm_single_replica.json", "llama-70b"), ("sglang_under_ncu_launch.json", "sglang-dsv3")):
    c = Cluster(fixture)
    try:
        r = c.kprof("k8s", "sister", "-n", "serving", deployment, "--ncu-image", "nvcr.io/nvidia/cuda:13.0.0-devel", "--dry-run", "--json")
        ok &= r.returncode == 0 and validate(json.loads(r.stdout), f"sister of {deployment}")
        # A schema that rejects nothing proves nothing: a broken copy must fail.
        broken = json.loads(r.stdout)
        del broken["spec"]["template"]["spec"]["containers"][0]["name"]
        ok &= not validate(broken, "the same with a container name removed (must be invalid)")
    finally:
        c.close()
c = Cluster("vllm_single_replica.json")
try:
    r = c.kprof("k8s", "sister", "-n", "serving", "llama-70b", "--trace", "--tracer-image", "ghcr.io/example/kprof-tracer:1",
                "--dry-run", "--json")
    ok &= r.returncode == 0 and validate(json.loads(r.stdout), "traced sister of llama-70b")
finally:
    c.close()
c = Cluster("sglang_under_ncu_launch.json")
try:
    r = c.kprof("k8s", "sidecar", "-n", "serving", "sglang-dsv3", "--image", "img", "-k", "k_alpha", "-o", "run")
    ok &= r.returncode == 0
    pod = json.loads(subprocess.run([test_globals["NEW"], "get", "pod", "sglang-dsv3-5f6d7c8b9-qwert", "-n", "serving", "-o", "json"],
                                    capture_output=True, text=True, env=c.env(test_globals["NEW"])).stdout)
    pod.pop("status")  # written by the stand-in, not by kprof
    ok &= len(pod["spec"]["ephemeralContainers"]) == 1 and validate(pod, "pod with kprof's ephemeral container")
finally:
    c.close()
sys.exit(0 if ok else 1)
