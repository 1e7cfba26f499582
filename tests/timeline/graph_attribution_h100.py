#!/usr/bin/env python3
"""kprof rank on real traces of kprof's tracer over CUDA graph replays (data/h100, issue 40),
against what was recorded of the program that made them (data/h100/graph_traces.json):

- every replayed kernel attributed (ranges where the program had them, inferred layers where it
  had none): at least 95 % of the replayed GPU time, none unattributed;
- each captured graph's batch bucket as the program captured it, where ranges name it;
- each graph's layer count equal to the model's, whether its ranges name the layers or kprof
  infers them from the graph's repetition (a torch.compile graph included);
- with emit_nvtx ranges, the kernels per operator equal to what the PyTorch profiler recorded of
  the same program's capture: the innermost cpu_op around each captured launch, node by node,
  times each graph's replays (data/h100/graph_capture_profiler_ops.json).

usage: graph_attribution_h100.py KPROF DATA_H100_DIR
"""
import collections
import json
import os
import subprocess
import sys


def rank(kprof, trace, by):
    out = subprocess.run([kprof, "rank", trace, "--by", by, "--json"], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def main():
    kprof, data = sys.argv[1], sys.argv[2]
    manifest = json.load(open(os.path.join(data, "graph_traces.json")))
    failures = []

    def check(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    for t in manifest["traces"]:
        path = os.path.join(data, t["file"])
        for by in ("op", "module", "range"):
            got = rank(kprof, path, by)
            nodes = got["graph_nodes"]
            replayed = nodes["replayed"]["total_us"]
            placed = nodes["attributed"]["total_us"] + nodes["inferred"]["total_us"]
            check(replayed > 0 and placed >= 0.95 * replayed and
                  nodes["unattributed"]["gpu_events"] == 0,
                  f"{t['file']} --by {by}: {100 * placed / replayed:.1f}% of replayed time "
                  f"attributed or inferred, {nodes['unattributed']['gpu_events']} unattributed")
        graphs = nodes["graphs"]
        check(len(graphs) == len(t["buckets"]),
              f"{t['file']}: {len(graphs)} graphs replayed, {len(t['buckets'])} captured")
        named = [g["batch"] for g in graphs if g["batch"] is not None]
        if "layerwise" in t["mode"] or "emit_nvtx" in t["mode"]:
            check(sorted(named) == sorted(t["buckets"]),
                  f"{t['file']}: buckets {sorted(named)}, captured {t['buckets']}")
        for g in graphs:
            layers = g["layers"] or {}
            check(layers.get("count") == t["layers"],
                  f"{t['file']}: {g['bucket']}: {layers.get('count')} layers "
                  f"({layers.get('from')}), the model has {t['layers']}")
            check(g["replays"] == t["replays_kept"],
                  f"{t['file']}: {g['bucket']}: {g['replays']} replays, {t['replays_kept']} kept")
        if "profiler_operators" in t:
            profiler = json.load(open(os.path.join(data, t["profiler_operators"])))
            by_batch = {g["batch"]: g["operators"] for g in profiler["graphs"]}
            expected = collections.Counter()
            for g in graphs:
                for op in by_batch[g["batch"]]:
                    expected[op] += g["replays"]
            got = rank(kprof, path, "op")
            ops = {o["name"]: o["kernels"] for o in got["ops"]}
            check(ops == dict(expected),
                  f"{t['file']}: kernels per operator equal the profiler's capture "
                  f"({len(expected)} operators, {sum(expected.values())} kernels)"
                  + ("" if ops == dict(expected) else
                     f": differ at {sorted(set(ops.items()) ^ set(expected.items()))[:6]}"))
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
