#!/usr/bin/env python3
"""kprof diff --predicted against a second implementation, on one real kernel fix recorded on the
H200 (tools/traces/predicted_vs_realised.py: scale_rows before and after, eager and as a CUDA-graph
replay; data/h200/README.md).

For each pair it asks kprof report for the fix list of the before trace (--json), then kprof diff
BEFORE AFTER --predicted; and computes on its own, from the traces' JSON: each ProfilerStep's GPU
span (the GPU events inside the step's annotation window: the recording synchronises before each
step ends), their medians, each kernel name's trace time per step, and the realised savings. The
graph replay must keep the kernel's gain in the step; the eager step, host-bound, must not, and be
flagged "kernel improved, step did not".

usage: prediction_reference.py KPROF DATA_DIR"""
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

kprof, data = sys.argv[1:3]
report = os.path.join(data, "h200", "pvr_before_full.ncu-rep.zst")
calibration = os.path.join(data, "h200", "h200_calibration.json")
failures = 0


def close(a, b, tol=1e-6):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def base_name(name):
    """The kernel's name without 'void ', template arguments' spelling kept, no parameter list."""
    name = re.sub(r"^void ", "", name)
    depth, out = 0, ""
    for c in name:
        if c == "(" and depth == 0:
            break
        depth += c == "<"
        depth -= c == ">"
        out += c
    return out


def read(path):
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                   if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
           and e.get("ph") == "X"]
    spans = []
    for start, end in steps:
        inside = [e for e in gpu if start <= e["ts"] < end]
        spans.append(max(e["ts"] + e["dur"] for e in inside) - min(e["ts"] for e in inside))
    by_name = {}
    for e in gpu:
        if e["cat"] == "kernel":
            by_name[base_name(e["name"])] = by_name.get(base_name(e["name"]), 0) + e["dur"]
    return spans, by_name


def run(args, code=0):
    done = subprocess.run([kprof] + args, capture_output=True, text=True)
    if done.returncode != code:
        sys.exit(f"FAIL kprof {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return json.loads(done.stdout)


with tempfile.TemporaryDirectory() as tmp:
    for mode, expect_flag in (("graph", False), ("eager", True)):
        before = os.path.join(data, "h200", f"pvr_{mode}_before.json.gz")
        after = os.path.join(data, "h200", f"pvr_{mode}_after.json.gz")
        fixes = os.path.join(tmp, f"fixes_{mode}.json")
        answer = run(["report", "--json", "--trace", before, report, "--gpus", calibration])
        with open(fixes, "w") as f:
            json.dump(answer, f)
        checked = run(["diff", "--json", before, after, "--predicted", fixes])["predicted"]
        spans_b, names_b = read(before)
        spans_a, names_a = read(after)
        steps = answer["fix_list"]["steps"]
        want_step_b, want_step_a = statistics.median(spans_b), statistics.median(spans_a)
        figures = [("before steps", checked["before_steps"], len(spans_b)),
                   ("after steps", checked["after_steps"], len(spans_a)),
                   ("median step before", checked["before_step_us"], want_step_b),
                   ("median step after", checked["after_step_us"], want_step_a),
                   ("realised step saving", checked["realised_step_saving_us"],
                    want_step_b - want_step_a)]
        total_gain = 0
        for group, opportunity in zip(checked["groups"], answer["fix_list"]["opportunities"]):
            name = base_name(opportunity["kernel"])
            per_b = names_b.get(name, 0) / len(spans_b)
            per_a = names_a.get(name, 0) / len(spans_a)
            total_gain += per_b - per_a
            figures += [(f"{name} predicted", group["predicted_saving_us_per_step"],
                         opportunity["estimated_saving_us"] / steps),
                        (f"{name} before", group["before_us_per_step"], per_b),
                        (f"{name} after", group["after_us_per_step"], per_a),
                        (f"{name} realised", group["realised_saving_us_per_step"], per_b - per_a)]
        figures.append(("kernels' realised saving", checked["realised_kernel_saving_us"],
                        total_gain))
        for label, got, want in figures:
            if not close(got, want):
                print(f"FAIL {mode}: {label}: kprof {got}, reference {want}")
                failures += 1
        flagged = checked["kernels_improved_step_did_not"]
        if flagged != expect_flag or checked["groups"][0]["kernel_improved_step_did_not"] != expect_flag:
            print(f"FAIL {mode}: flagged {flagged}, expected {expect_flag}")
            failures += 1
        g = checked["groups"][0]
        print(f"{mode}: {g['kernel']} predicted {g['predicted_saving_us_per_step']:.2f} us/step, "
              f"realised {g['realised_saving_us_per_step']:.2f}; step {want_step_b:.1f} -> "
              f"{want_step_a:.1f} us (improved: {checked['step_improved']}); flagged {flagged}; "
              f"{len(figures)} figures")
print(f"{failures} failed")
sys.exit(1 if failures else 0)
