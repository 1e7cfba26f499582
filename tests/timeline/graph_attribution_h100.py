#!/usr/bin/env python3
"""kprof rank on real traces of kprof's tracer over CUDA graph replays (data/h100, issue 40),
against what was recorded of the program that made them (data/h100/graph_traces.json):

- every replayed kernel attributed (ranges where the program had them, inferred layers where it
  had none): at least 95 % of the replayed GPU time, none unattributed;
- each captured graph's batch bucket as the program captured it, where ranges name it;
- each graph's layer count equal to the model's, whether its ranges name the layers or kprof
  infers them from the graph's repetition (a torch.compile graph included); without ranges, the
  inferred layers cut where the module ranges of the same graphs cut them;
- with emit_nvtx ranges, the kernels per operator equal to what the PyTorch profiler recorded of
  the same program's capture: the innermost cpu_op around each captured launch, node by node,
  times each graph's replays (data/h100/graph_capture_profiler_ops.json), and each operator's
  share of its bucket's replayed time within a point of the profiler's replays of the program.

usage: graph_attribution_h100.py KPROF DATA_H100_DIR
"""
import collections
import gzip
import itertools
import json
import os
import re
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
        if "same_graphs_with_ranges" in t:
            # The layers inferred without ranges against the layers the module ranges name in the
            # same program's graphs: the same prologue, kernels per layer and epilogue.
            other = json.load(gzip.open(os.path.join(data, t["same_graphs_with_ranges"])))
            table = other["kprof"]["graph_nodes"]
            column = {c: i for i, c in enumerate(table["columns"])}
            names = [r["name"] for r in table["ranges"]]
            by_graph = collections.defaultdict(list)
            for row in table["nodes"]:
                by_graph[row[column["graph"]]].append(row)
            named = []
            for rows in by_graph.values():
                if len(rows) < 10:
                    continue  # the rows instantiation added
                rows.sort(key=lambda row: row[column["order"]])
                layers = []
                for row in rows:
                    found = [re.search(r"layers\.(\d+)", names[r]) for r in
                             table["stacks"][row[column["stack"]]]]
                    found = [int(f.group(1)) for f in found if f]
                    layers.append(found[-1] if found else None)
                runs = [(k, len(list(g))) for k, g in itertools.groupby(layers)]
                inner = runs[1:-1] if runs[0][0] is None and runs[-1][0] is None else None
                if inner and len({n for _, n in inner}) == 1:
                    named.append((runs[0][1], inner[0][1], runs[-1][1]))
            for g in graphs:
                layers = g["layers"] or {}
                inferred = (layers.get("prologue_nodes"), layers.get("kernels_per_layer"),
                            layers.get("epilogue_nodes"))
                check(inferred in named,
                      f"{t['file']}: {g['bucket']}: inferred prologue, layer and epilogue "
                      f"{inferred}; the module ranges of {t['same_graphs_with_ranges']} say "
                      f"{sorted(set(named))}")
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
            # Time: each operator's share of its bucket's replayed kernel time, against the
            # profiler's replays of the same program (another run: within a point).
            ranges = rank(kprof, path, "range")
            shares = collections.defaultdict(collections.Counter)
            for o in ranges["ops"]:
                frames = o["name"].split(" / ")
                batch = next((int(f.split()[-1]) for f in frames if f.startswith("cuda_graph_bs ")),
                             None)
                operator = [f for f in frames if "::" in f]
                if batch is not None and operator:
                    shares[batch][operator[-1]] += o["total_us"]
            for g in profiler["graphs"]:
                if g["batch"] not in shares:
                    continue
                total = sum(shares[g["batch"]].values())
                mine = {op: t / total for op, t in shares[g["batch"]].items()}
                theirs = g["replay_time_share"]
                worst = max(abs(mine.get(op, 0) - theirs.get(op, 0)) for op in set(mine) | set(theirs))
                check(worst <= 0.01,
                      f"{t['file']}: batch {g['batch']}: each operator's share of the replayed time "
                      f"within {100 * worst:.2f} points of the profiler's replays (at most 1)")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
