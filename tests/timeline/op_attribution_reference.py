#!/usr/bin/env python3
"""kprof rank --by op against a second, independent computation on real PyTorch traces.

The reference loads the whole trace with json, and for every runtime/driver call with a
correlation id scans all cpu_op events of its (pid, tid) for those whose [ts, ts + dur] holds the
call's start, and takes the innermost (latest start; of equal starts the earlier end) — a brute
force over all ops, no sorting or stack as kprof's sweep has. GPU work (kernel, gpu_memcpy,
gpu_memset) goes to the op of the call with its correlation id, else to "(no operator)". Per op
the count and the summed duration must equal kprof's (durations to 1e-6 us per op).

A trace recorded with_modules (name ending in `_modules.json.gz`) is also checked `--by module`:
the `python_function` events named `nn.Module: NAME` of the call's thread that hold its start,
outermost first, joined by "/" (else "(no module)").

usage: op_attribution_reference.py KPROF TRACE...
"""
import collections
import gzip
import json
import subprocess
import sys

NO_OP = "(no operator)"
NO_MODULE = "(no module)"
MODULE_PREFIX = "nn.Module: "


def reference(path, by="op"):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    ops = collections.defaultdict(list)  # (pid, tid) -> [(ts, end, name)]
    calls = {}  # correlation -> (pid, tid, ts); the earliest call when several share one
    work = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        if e.get("ph") != "X":
            continue
        cat = e.get("cat")
        args = e.get("args") or {}
        if (cat == "cpu_op") if by == "op" else (cat == "python_function" and e["name"].startswith(MODULE_PREFIX)):
            ops[(e["pid"], e["tid"])].append((float(e["ts"]), float(e["ts"]) + float(e["dur"]), e["name"]))
        elif cat in ("cuda_runtime", "cuda_driver") and "correlation" in args:
            c = args["correlation"]
            call = (e["pid"], e["tid"], float(e["ts"]))
            if c not in calls or call[2] < calls[c][2]:
                calls[c] = call
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            w = work[args.get("correlation")]
            w[0] += 1
            w[1] += float(e["dur"])
    totals = collections.defaultdict(lambda: [0, 0.0])
    for correlation, (count, duration) in work.items():
        name = NO_OP if by == "op" else NO_MODULE
        if correlation in calls:
            pid, tid, ts = calls[correlation]
            around = [o for o in ops.get((pid, tid), []) if o[0] <= ts <= o[1]]
            if around and by == "op":
                name = max(around, key=lambda o: (o[0], -o[1]))[2]
            elif around:
                name = "/".join(o[2][len(MODULE_PREFIX):] for o in sorted(around, key=lambda o: (o[0], -o[1])))
        totals[name][0] += count
        totals[name][1] += duration
    return totals


def main():
    kprof, traces = sys.argv[1], sys.argv[2:]
    failures = 0
    runs = [(t, "op") for t in traces] + [(t, "module") for t in traces if t.endswith("_modules.json.gz")]
    for trace, by in runs:
        expected = reference(trace, by)
        nothing = NO_OP if by == "op" else NO_MODULE
        out = subprocess.run([kprof, "rank", "--by", by, "--json", trace], check=True,
                             capture_output=True, text=True).stdout
        got = {o["name"]: (o["kernels"], o["total_us"]) for o in json.loads(out)["ops"]}
        if set(got) != set(expected):
            print(f"{trace}: ops differ: only kprof {sorted(set(got) - set(expected))[:5]}, "
                  f"only reference {sorted(set(expected) - set(got))[:5]}")
            failures += 1
        for name, (count, total) in expected.items():
            if name not in got:
                continue
            if got[name][0] != count or abs(got[name][1] - total) > 1e-6:
                print(f"{trace}: {name}: kprof {got[name]}, reference {(count, total)}")
                failures += 1
        attributed = sum(c for n, (c, _) in expected.items() if n != nothing)
        print(f"{trace} --by {by}: {len(expected)} names, {attributed} GPU activities attributed, "
              f"{expected.get(nothing, [0])[0]} not")
        if attributed == 0:
            print(f"{trace}: nothing attributed: the comparison would say nothing")
            failures += 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
