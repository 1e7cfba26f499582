#!/usr/bin/env python3
"""kprof report --annotate on real H200 recordings, checked against what is derived apart from it:

  1. the original trace read here with Python's json module: every GPU activity (kernel, memcpy,
     memset) is one "X" slice with the same name, start, duration, device and stream;
  2. the fix list of the same command's --json: each kernel slice of a captured group carries that
     group's figures, and the slices of a group add up to its trace_total_us (the join by name and
     launch configuration, redone here from the slices);
  3. tests/timeline/budget_reference.py (a second implementation of the budget): per step and
     device, the host-gap and device-side-idle slices add up to its figures;
  4. kprof's own trace reader takes the annotated file back: kprof rank of it gives every kernel
     the total it has in the original;
  5. the file is the Chrome trace-event JSON Object Format: traceEvents of M and X events whose
     ts, dur, pid and tid are numbers, as Perfetto's and chrome://tracing's importers need.
And the refusals: without --trace, and an output that is the command's own input.

usage: annotated_trace_test.py KPROF REPO OUT_DIR"""
import collections
import gzip
import json
import os
import subprocess
import sys

kprof, repo, out = sys.argv[1:4]
sys.path.insert(0, os.path.join(repo, "tests", "timeline"))
import budget_reference  # noqa: E402

data = os.path.join(repo, "data", "h200")
os.makedirs(out, exist_ok=True)
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)


def close(a, b, tolerance=1e-6):
    return abs(a - b) <= tolerance * max(1.0, abs(a), abs(b))


def run(args, **kwargs):
    return subprocess.run([kprof] + args, capture_output=True, text=True, **kwargs)


cases = [
    ("compiled_decode", f"{data}/trace_compiled_decode.json.gz",
     [f"{data}/compiled_decode_full.ncu-rep.zst", "--gpus", f"{data}/h200_calibration.json"]),
    ("eager", f"{data}/trace_eager.json.gz", [f"{data}/big_full.ncu-rep.zst"]),
]
for name, trace, reports in cases:
    annotated_path = os.path.join(out, name + ".annotated.json")
    if os.path.exists(annotated_path):
        os.remove(annotated_path)
    r = run(["report", "--trace", trace] + reports + ["--annotate", annotated_path, "--json",
                                                      "--top", "0"])
    if r.returncode != 0:
        failures.append(f"{name}: kprof report --annotate exited {r.returncode}: {r.stderr}")
        continue
    check("wrote " in r.stderr and annotated_path in r.stderr, f"{name}: no 'wrote' line: {r.stderr}")
    fix_list = json.loads(r.stdout)["fix_list"]
    with open(annotated_path) as f:
        annotated = json.load(f)
    events = annotated["traceEvents"]
    check(annotated["otherData"]["kprof"]["schema"] == "kprof.annotated-trace/1",
          f"{name}: schema")

    # 5. The format: the documented schema (docs/kprof.annotated-trace.schema.json), and what
    # the viewers' importers need.
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    if jsonschema:
        with open(os.path.join(repo, "docs", "kprof.annotated-trace.schema.json")) as f:
            schema = json.load(f)
        errors = list(jsonschema.Draft7Validator(schema).iter_errors(annotated))
        check(not errors, f"{name}: not valid kprof.annotated-trace/1: "
                          f"{[e.message[:200] for e in errors[:2]]}")
    else:
        print("note: python3-jsonschema missing: the schema check is left out")
    for e in events:
        if e.get("ph") not in ("M", "X") or not isinstance(e.get("pid"), int):
            failures.append(f"{name}: not an M/X event with an integer pid: {e}")
            break
        if e["ph"] == "X" and not (isinstance(e.get("ts"), (int, float)) and e.get("dur", -1) >= 0
                                   and isinstance(e.get("tid"), int) and e.get("name")):
            failures.append(f"{name}: an X event without ts, dur >= 0, tid or name: {e}")
            break

    # 1. Every GPU activity of the original, as it was.
    with gzip.open(trace, "rt") as f:
        original = json.load(f)
    original = original["traceEvents"] if isinstance(original, dict) else original
    gpu = [e for e in original if e.get("ph") == "X"
           and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    slices = [e for e in events if e["ph"] == "X" and e["cat"] in ("kernel", "gpu_memcpy",
                                                                      "gpu_memset")]

    def key(e, device, stream):
        return (e["name"], round(float(e["ts"]), 3), round(float(e["dur"]), 3), device, stream)
    want = collections.Counter(key(e, e["args"].get("device"), e["args"].get("stream"))
                               for e in gpu)
    got = collections.Counter(key(e, e["pid"], e["tid"]) for e in slices)
    check(want == got, f"{name}: {len(gpu)} GPU activities in the trace, {len(slices)} slices; "
                       f"first differences {list((want - got).items())[:2]} / "
                       f"{list((got - want).items())[:2]}")

    # 2. The findings on the slices are the fix list's.
    groups = fix_list["opportunities"]
    per_rank = collections.defaultdict(float)
    annotated_kernels = 0
    for e in slices:
        args = e.get("args", {})
        if e["cat"] != "kernel":
            continue
        check("stage" in args, f"{name}: a kernel slice without a stage: {e['name']}")
        if not args.get("captured"):
            continue
        annotated_kernels += 1
        g = groups[args["fix_rank"] - 1]
        per_rank[args["fix_rank"]] += e["dur"]
        for field in ("bound_by", "estimated_saving_us", "achieved_pct"):
            if args[field] != g[field]:
                failures.append(f"{name}: {e['name']}: {field} {args[field]} where the fix list "
                                f"has {g[field]}")
                break
        check(close(args["share_pct"], g["fraction_of_pipeline"] * 100),
              f"{name}: share_pct {args['share_pct']} vs {g['fraction_of_pipeline']}")
        check(args["capture"] in reports[0], f"{name}: capture {args['capture']}")
    check(annotated_kernels > 0, f"{name}: no kernel slice carries findings")
    for rank, total in per_rank.items():
        g = groups[rank - 1]
        check(close(total, g["trace_total_us"], 1e-5),
              f"{name}: group {rank} ({g['kernel']}): slices add up to {total} us, the fix list "
              f"says {g['trace_total_us']}")

    # 3. Idle slices against the second implementation of the budget.
    steps = [e for e in events if e["ph"] == "X" and e["cat"] == "kprof step"]
    idle = [e for e in events if e["ph"] == "X" and e["cat"] == "kprof idle"]
    reference = budget_reference.budget(trace, None)
    if reference:
        check(len(steps) == len(reference),
              f"{name}: {len(steps)} step slices, the reference finds {len(reference)} steps")
    else:  # no step marker: kprof takes the whole trace as one step
        check(len(steps) == 1 and steps[0]["args"]["source"] == "whole trace",
              f"{name}: no steps in the trace, yet {len(steps)} step slices")
    # And kprof budget --json of the trace alone: the same idle per step and class.
    r = run(["budget", trace, "--json"])
    budget = json.loads(r.stdout)
    for step, slice_ in zip(budget["steps"], steps):
        check(step["name"] == slice_["name"], f"{name}: step {slice_['name']} vs {step['name']}")
        for kind, field in (("host gap", "host_gap_us"), ("device-side idle", "device_idle_us"),
                            ("dependency wait", "dependency_wait_us")):
            got_sum = sum(e["dur"] for e in idle
                          if e["args"]["step"] == step["name"] and e["args"]["kind"] == kind)
            check(close(got_sum, step[field], 1e-5),
                  f"{name}: {step['name']} {kind}: slices {got_sum} us, budget {step[field]} us")
    sums = collections.defaultdict(float)
    for e in idle:
        sums[(e["args"]["step"], e["pid"], e["args"]["kind"])] += e["dur"]
    compared = 0
    for step in reference:
        for device, figures in step["devices"].items():
            for kind, field in (("host gap", "host_gap_us"), ("device-side idle", "device_idle_us")):
                got_sum = sums.get((step["name"], device, kind), 0.0)
                check(close(got_sum, figures[field], 1e-5),
                      f"{name}: {step['name']} device {device} {kind}: slices {got_sum} us, "
                      f"reference {figures[field]} us")
                compared += 1
    print(f"{name}: {len(slices)} GPU slices, {annotated_kernels} with findings, {len(steps)} "
          f"steps, {len(idle)} idle slices; {compared} idle sums agree with the reference")

    # 4. kprof reads its own output back: the same kernel totals.
    totals = []
    for path in (trace, annotated_path):
        r = run(["rank", path, "--json", "--top", "0"])
        check(r.returncode == 0, f"{name}: kprof rank {path}: {r.stderr}")
        doc = json.loads(r.stdout) if r.returncode == 0 else {"kernels": []}
        totals.append({k["name"]: k["total_us"] for k in doc["kernels"]})
    differing = sorted(set(totals[0]) ^ set(totals[1]))[:3] or [
        k for k in totals[0] if not close(totals[0][k], totals[1][k], 1e-6)][:3]
    check(not differing, f"{name}: kprof rank of the annotated file differs from the trace's: "
                         f"{[(k, totals[0].get(k), totals[1].get(k)) for k in differing]}")

# Refusals: nothing written, one line.
target = os.path.join(out, "refused.json")
r = run(["analyze", f"{data}/compiled_decode_full.ncu-rep.zst", "--annotate", target])
check(r.returncode != 0 and not os.path.exists(target), "analyze --annotate was not refused")
copy = os.path.join(out, "input_trace.json.gz")
with open(f"{data}/trace_compiled_decode.json.gz", "rb") as f:
    original_bytes = f.read()
with open(copy, "wb") as f:
    f.write(original_bytes)
r = run(["report", "--trace", copy, f"{data}/compiled_decode_full.ncu-rep.zst", "--annotate", copy])
with open(copy, "rb") as f:
    check(r.returncode == 2 and f.read() == original_bytes and "input" in r.stderr,
          f"--annotate onto the input trace: exit {r.returncode}, {r.stderr}")

if failures:
    print("\n".join(failures[:20]))
    sys.exit(1)
print("annotated traces agree")
