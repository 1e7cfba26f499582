#!/usr/bin/env python3
"""kprof rank --by op|module|range on a trace of kprof's tracer carrying its graph node table
(issue 40), against a second, independent computation in Python; and, where the trace's generator
wrote what it built (--truth), both against that truth.

The reference loads the whole trace with json. Each GPU activity whose record names a graph node
is followed through the table's clones (at most 16 steps; a cycle or a longer chain, or a chain
ending at no row: not placed) to its row; the row's NVTX stack gives its context as
docs/rank.md says: labels (emit_nvtx "op, seq = …" -> op; a layerwise-NVTX dict -> its 'Module';
else the message), batch ranges left out of the context, --by op the innermost operator label
(namespace::name) else the innermost label, --by module the other labels with a dotted path inside
its parent kept as one, --by range the whole stack. A graph no range names a layer in is searched
by brute force for its period: for every K, the longest run of positions i with
kernel[i] == kernel[i + K], covering floor((run + K) / K) * K kernels; the smallest K covering at
least 90 %, else the K covering the most (at least half, at least two repetitions); then, for
K >= 4, a period-long window beside it that differs from the adjacent layer in at most one kernel
is one more layer, on either side, as long as there is one; then, of all starts fitting as many
layers, the one whose adjacent layers differ in the fewest places, then one leaving a kernel
after the last layer, then the nearest to the first found. Kernels compare by name, but a Triton
kernel (triton_per_…, triton_poi_…) by its kind alone. Eager work
goes, by its launch's correlation id, to the innermost cpu_op (--by op) or the nn.Module frames
(--by module) around the launch call on its thread, or the annotations there (--by range, step
markers left out), else to the views' "(no …)" bucket. Per bucket the count and the summed
duration must equal kprof's (durations to 1e-6 us), and so must the replay shares and each
graph's bucket, node count and layers.

--report CAPTURE without --truth (a real recording): the same rows against the reference's own
split of the trace's kernels by name, grid, block and their graph's bucket.

--truth FILE: the generator's record (tests/timeline/data/make_graph_node_trace.py) — the
reference's buckets, shares and graphs must equal it too, and with --report CAPTURE, `kprof
report --json --trace TRACE CAPTURE`'s rows split per batch bucket must carry each bucket's
trace time of their kernel and launch configuration as the truth has it.

usage: graph_attribution_reference.py KPROF TRACE [--truth FILE] [--report CAPTURE]
To check a real recording: graph_attribution_reference.py build/kprof trace.json.gz
"""
import argparse
import collections
import functools
import gzip
import json
import re
import subprocess
import sys

NONE = {"op": "(no operator)", "module": "(no module)", "range": "(no range)"}
MAX_CLONE_CHAIN = 16
OPERATOR = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*::[A-Za-z_][A-Za-z0-9_.]*")
BATCH = re.compile(r"(?:^|[^a-z0-9])(?:cuda_graph_bs|batch_size|bs|batch)\s*[=: ]\s*(\d{1,12})"
                   r"(?:\D|$)", re.IGNORECASE)
LAYER = re.compile(r"(?:^|[^a-z0-9])(?:(?:layers?|blocks?)[._ ]?(\d{1,9})|h\.(\d{1,9}))(?:\D|$)",
                   re.IGNORECASE)


def label(message):
    for quote in ("'", '"'):
        opening = "{%sModule%s: %s" % (quote, quote, quote)
        if message.startswith(opening):
            end = message.find(quote, len(opening))
            if end > len(opening):
                return message[len(opening):end]
    head = message.split(", ", 1)[0]
    if ", " in message and OPERATOR.fullmatch(head):
        return head
    return message


def batch_of(text):
    m = BATCH.search(text)
    return int(m.group(1)) if m else None


def layer_of(text):
    m = LAYER.search(text)
    return int(m.group(1) or m.group(2)) if m else None


def period_key(name):
    """A code generator's kernel compares by its generator and kind alone (Inductor names each
    fused kernel after what it fuses and numbers it: the same norm differs from layer to layer)."""
    m = re.match(r"(triton_(?:per|poi|red|tem|for|unk))_", name)
    return m.group(1) if m else name


def period_of(sequence):
    """(K, start, layers) by brute force, or None (see the module's docstring)."""
    n = len(sequence)
    best = None  # (covered, K, start, layers)
    for k in range(1, n // 2 + 1):
        run, longest, longest_start = 0, 0, 0
        for i in range(n - k):
            if sequence[i] == sequence[i + k]:
                run += 1
                if run > longest:
                    longest, longest_start = run, i - run + 1
            else:
                run = 0
        layers = (longest + k) // k if longest else 0
        if layers < 2:
            continue
        covered = layers * k
        if best is None or covered > best[0]:
            best = (covered, k, longest_start, layers)
        if covered * 10 >= n * 9:
            break
    if best is None or best[0] * 2 < n:
        return None
    _, k, start, layers = best
    if k >= 4:  # a neighbouring layer differing in one kernel is one more layer
        while start >= k and sum(a != b for a, b in zip(sequence[start - k:start],
                                                         sequence[start:start + k])) <= 1:
            start -= k
            layers += 1
        end = start + layers * k
        while end + k <= n and sum(a != b for a, b in zip(sequence[end:end + k],
                                                           sequence[end - k:end])) <= 1:
            end += k
            layers += 1
        # the phase: of all starts fitting as many layers, the one whose adjacent layers differ
        # in the fewest places, then one leaving a kernel after the last layer, then the nearest
        def cost(s):
            differing = sum(sequence[s + j * k + i] != sequence[s + (j + 1) * k + i]
                            for j in range(layers - 1) for i in range(k))
            return (differing, 1 if s + layers * k == n else 0, abs(s - start))
        start = min(range(0, n - layers * k + 1), key=cost)
    return k, start, layers


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def stage_rules(repo):
    with open(repo + "/data/stages.json") as f:
        return json.load(f)["rules"]


def normalise(name):
    """The kernel name kprof compares: return type and parameter list dropped (a demangled C++
    name), else the name."""
    if name.startswith("void "):
        name = name[5:]
    depth = 0
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif (c == "(" and depth == 0 and i > 0 and
              not name.startswith("(anonymous namespace)", i)):
            return name[:i]
    return name


@functools.lru_cache(maxsize=None)
def demangled(name):  # one c++filt per distinct name (a process per kernel took 30 s a trace)
    if not name.startswith("_Z"):
        return name
    try:
        out = subprocess.run(["c++filt", name], capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return name


class Reference:
    def __init__(self, trace, rules):
        table = trace["kprof"]["graph_nodes"]
        columns = {c: i for i, c in enumerate(table["columns"])}
        self.table = table
        self.rows = {}
        self.graph_rows = collections.defaultdict(list)
        for row in table["nodes"]:
            node = {c: row[i] for c, i in columns.items()}
            self.rows[node["node"]] = node
            self.graph_rows[node["graph"]].append(node)
        for rows in self.graph_rows.values():
            rows.sort(key=lambda n: n["order"])
        self.clones = {}
        for node, original in table["clones"]:
            self.clones.setdefault(node, original)
        self.labels = [label(r["name"]) for r in table["ranges"]]
        self.rules = rules
        self.graphs = {}

    def row(self, node_id):
        seen = node_id
        for step in range(MAX_CLONE_CHAIN + 1):
            if seen in self.rows:
                return self.rows[seen], None
            if seen not in self.clones:
                return None, "not in table" if step == 0 else "not placed"
            seen = self.clones[seen]
        return None, "not placed"

    def graph(self, graph_id):
        if graph_id in self.graphs:
            return self.graphs[graph_id]
        rows = self.graph_rows[graph_id]
        batches, layers = collections.Counter(), set()
        for node in rows:
            labels = [self.labels[r] for r in self.table["stacks"][node["stack"]]]
            batch = next((batch_of(x) for x in labels if batch_of(x) is not None), None)
            if batch is not None:
                batches[batch] += 1
            layers |= {layer_of(x) for x in labels if batch_of(x) is None and
                       layer_of(x) is not None}
        batch = None
        if batches:
            most = max(batches.values())
            batch = min(b for b, c in batches.items() if c == most)
        g = {"graph": graph_id, "nodes": len(rows), "batch": batch,
             "bucket": "batch %d" % batch if batch is not None else
             "graph %d (%d node%s)" % (graph_id, len(rows), "" if len(rows) == 1 else "s"),
             "layers": None, "position": {n["node"]: i for i, n in enumerate(rows)}}
        if layers:
            g["layers"] = {"from": "ranges", "count": len(layers)}
        else:
            found = period_of([period_key(self.table["kernels"][n["kernel"]]) for n in rows])
            if found:
                k, start, count = found
                g["layers"] = {"from": "structure", "count": count, "kernels_per_layer": k,
                               "prologue_nodes": start,
                               "epilogue_nodes": len(rows) - start - count * k}
        self.graphs[graph_id] = g
        return g

    def kind(self, node):
        return self.kind_of_name(self.table["kernels"][node["kernel"]])

    @functools.lru_cache(maxsize=None)
    def kind_of_name(self, name):
        if name in ("[memcpy]", "[memset]"):
            return name[1:-1]
        if not name:
            return "kernel"
        readable = normalise(demangled(name))
        for rule in self.rules:
            if re.search(rule["regex"], readable, re.IGNORECASE):
                return rule["stage"]
        return "other"

    def context(self, node_id):
        """{view: (name, placement)} of a replayed node."""
        node, why = self.row(node_id)
        if node is None:
            return {v: (NONE[v], why) for v in NONE}, None
        g = self.graph(node["graph"])
        labels = [self.labels[r] for r in self.table["stacks"][node["stack"]]]
        where = [x for x in labels if batch_of(x) is None]
        structure = g["layers"] is not None and g["layers"]["from"] == "structure"
        layer = part = None
        if structure:
            L = g["layers"]
            position = g["position"][node["node"]]
            k, start, count = L["kernels_per_layer"], L["prologue_nodes"], L["count"]
            if position < start:
                layer = "prologue"
                part = "prologue (%s)" % self.kind(node)
            elif position >= start + count * k:
                layer = "epilogue"
                part = "epilogue (%s)" % self.kind(node)
            else:
                layer = "layer %d" % ((position - start) // k)
                part = "part %d/%d (%s)" % ((position - start) % k + 1, k, self.kind(node))
        none = "inferred" if structure else "no context"
        result = {}
        operators = [x for x in where if OPERATOR.fullmatch(x)]
        if operators:
            result["op"] = (operators[-1], "ranges")
        elif where:
            result["op"] = (where[-1], "ranges")
        else:
            result["op"] = (part if structure else NONE["op"], none)
        modules = []
        for x in where:
            if OPERATOR.fullmatch(x):
                continue
            if modules and x.startswith(modules[-1] + "."):
                modules[-1] = x
            else:
                modules.append(x)
        placement = "ranges" if modules else none
        if structure:
            modules.insert(0, layer)
        result["module"] = ("/".join(modules) if modules else NONE["module"], placement)
        if not where and not structure:
            result["range"] = (NONE["range"], none)
        elif not where:
            lead = labels  # only batch ranges
            frames = lead + ([layer] if part.startswith("part ") else []) + [part]
            result["range"] = (" / ".join(frames), none)
        else:
            lead = []
            for x in labels:
                if batch_of(x) is None:
                    break
                lead.append(x)
            frames = lead + ([layer] if structure else []) + labels[len(lead):]
            result["range"] = (" / ".join(frames), "ranges")
        return result, g


def eager_buckets(events, view):
    """Eager GPU work's bucket by its launch (brute force over the launching thread's spans)."""
    spans = collections.defaultdict(list)
    calls = {}
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, args = e.get("cat"), e.get("args") or {}
        if view == "op" and cat == "cpu_op":
            spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e["name"]))
        elif view == "module" and cat == "python_function" and e["name"].startswith("nn.Module: "):
            spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], e["name"][11:]))
        elif view == "range" and cat == "user_annotation":
            name = e["name"]
            if name.startswith("ProfilerStep#") or re.fullmatch(
                    r"execute_(?:\d+_)?context_\d+\(\d+\)_generation_\d+\(\d+\)|step\[(decode|"
                    r"prefill|mixed|extend)(?: bs=\d+)?[^\]]*\]", name):
                continue
            spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"], label(name)))
        elif cat in ("cuda_runtime", "cuda_driver") and "correlation" in args:
            c = args["correlation"]
            if c not in calls or e["ts"] < calls[c][2]:
                calls[c] = (e["pid"], e["tid"], e["ts"])
    bucket_of = {}
    for c, (pid, tid, ts) in calls.items():
        around = sorted(((s, -end, n) for s, end, n in spans[(pid, tid)] if s <= ts <= end))
        names = [n for _, _, n in around]
        if not names:
            bucket_of[c] = NONE[view]
        elif view == "op":
            bucket_of[c] = names[-1]
        else:
            bucket_of[c] = ("/" if view == "module" else " / ").join(names)
    return bucket_of


def reference(trace, view, rules):
    ref = Reference(trace, rules)
    events = trace["traceEvents"]
    eager = eager_buckets(events, view)
    buckets = collections.defaultdict(lambda: [0, 0.0])
    shares = collections.defaultdict(lambda: [0, 0.0])
    graphs = {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        args = e.get("args") or {}
        duration = float(e["dur"])
        if "graph node id" in args:
            context, g = ref.context(args["graph node id"])
            name, placement = context[view]
            shares[placement][0] += 1
            shares[placement][1] += duration
            if g is not None:
                entry = graphs.setdefault(g["graph"], {"gpu_events": 0, "total_us": 0.0,
                                                       "counts": collections.Counter()})
                entry["gpu_events"] += 1
                entry["total_us"] += duration
                entry["counts"][args["graph node id"]] += 1
        else:
            name = eager.get(args.get("correlation"), NONE[view])
        buckets[name][0] += 1
        buckets[name][1] += duration
    graph_list = []
    for graph_id, entry in graphs.items():
        g = ref.graphs[graph_id]
        graph_list.append({"graph": graph_id, "bucket": g["bucket"], "batch": g["batch"],
                           "nodes": g["nodes"], "replays": max(entry["counts"].values()),
                           "gpu_events": entry["gpu_events"], "total_us": entry["total_us"],
                           "layers": g["layers"]})
    graph_list.sort(key=lambda x: (x["batch"] is None, x["batch"] or 0, x["graph"]))
    return dict(buckets), dict(shares), graph_list


def bucket_split(trace, rules):
    """{"NAME|GRID|BLOCK|BUCKET": [launches, total us]} of every kernel of the trace: a replayed
    one in its graph's bucket, any other "outside graphs"."""
    ref = Reference(trace, rules)
    split = collections.defaultdict(lambda: [0, 0.0])
    for e in trace["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") != "kernel":
            continue
        args = e.get("args") or {}
        bucket = "outside graphs"
        if "graph node id" in args:
            _, g = ref.context(args["graph node id"])
            if g is not None:
                bucket = g["bucket"]
        key = "|".join([e["name"], ",".join(map(str, args.get("grid", []))),
                        ",".join(map(str, args.get("block", []))), bucket])
        split[key][0] += 1
        split[key][1] += float(e["dur"])
    return dict(split)


def close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)


def same_buckets(what, left, right):
    for name in sorted(set(left) | set(right)):
        a, b = left.get(name, [0, 0.0]), right.get(name, [0, 0.0])
        check(a[0] == b[0] and close(a[1], b[1]), "%s: %r: %s against %s" % (what, name, a, b))


def same_graphs(what, left, right):
    check(len(left) == len(right), "%s: %d graphs against %d" % (what, len(left), len(right)))
    for a, b in zip(left, right):
        for key in ("graph", "bucket", "batch", "nodes", "replays", "gpu_events", "layers"):
            check(a[key] == b[key], "%s: graph %s: %s %r against %r" % (what, a["graph"], key,
                                                                     a[key], b[key]))
        check(close(a["total_us"], b["total_us"]),
              "%s: graph %s: total_us %r against %r" % (what, a["graph"], a["total_us"],
                                                        b["total_us"]))


def kprof_json(kprof, args):
    done = subprocess.run([kprof] + args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("kprof %s exited %d: %s" % (" ".join(args), done.returncode, done.stderr))
    return json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kprof")
    parser.add_argument("trace")
    parser.add_argument("--truth")
    parser.add_argument("--report")
    parser.add_argument("--repo", default=None)
    a = parser.parse_args()
    repo = a.repo or __file__.rsplit("/tests/", 1)[0]
    rules = stage_rules(repo)
    trace = load(a.trace)
    if "graph_nodes" not in (trace.get("kprof") or {}):
        sys.exit("%s: no graph node table (kprof.graph_nodes): not a trace of kprof's tracer "
                 "with one" % a.trace)
    truth = None
    if a.truth:
        with open(a.truth) as f:
            truth = json.load(f)
    names = {"ranges": "attributed", "inferred": "inferred"}
    for view in ("op", "module", "range"):
        buckets, shares, graphs = reference(trace, view, rules)
        out = kprof_json(a.kprof, ["rank", a.trace, "--by", view, "--json"])
        got = {o["name"]: [o["kernels"], o["total_us"]] for o in out["ops"]}
        same_buckets("--by %s: kprof against the reference" % view, got, buckets)
        g = out["graph_nodes"]
        check(g is not None, "--by %s: kprof read no graph node table" % view)
        if g is None:
            continue
        for placement, key in names.items():
            part = shares.get(placement, [0, 0.0])
            check(g[key]["gpu_events"] == part[0] and close(g[key]["total_us"], part[1]),
                  "--by %s: %s: kprof %s against the reference's %s" % (view, key, g[key], part))
        for placement, key in (("not in table", "not_in_table"), ("not placed", "not_placed"),
                               ("no context", "no_context")):
            part = shares.get(placement, [0, 0.0])
            got_part = g["unattributed"][key]
            check(got_part["gpu_events"] == part[0] and close(got_part["total_us"], part[1]),
                  "--by %s: %s: kprof %s against the reference's %s" % (view, key, got_part, part))
        same_graphs("--by %s: kprof against the reference" % view, g["graphs"], graphs)
        if truth:
            same_buckets("--by %s: the reference against the truth" % view, buckets,
                         truth["views"][view])
            for placement, part in truth["shares"][view].items():
                mine = shares.get(placement, [0, 0.0])
                check(mine[0] == part[0] and close(mine[1], part[1]),
                      "--by %s: %s: the reference's %s against the truth's %s" % (
                          view, placement, mine, part))
            same_graphs("--by %s: the reference against the truth" % view, graphs,
                        truth["graphs"])
        print("--by %s: %d buckets, replayed %d GPU activities: %s" % (
            view, len(got), g["replayed"]["gpu_events"],
            ", ".join("%s %.1f%%" % (k, g[k]["share"] * 100)
                      for k in ("attributed", "inferred", "unattributed"))))
    if a.report:
        out = kprof_json(a.kprof, ["report", "--json", "--top", "0", "--trace", a.trace,
                                   a.report])
        rows = out["fix_list"]["opportunities"]
        bucketed = [r for r in rows if r["bucket"] is not None]
        check(bucketed, "report: no row split per batch bucket")
        # Without the generator's record (a real recording), the split is the reference's own:
        # each kernel's launches and time by (name, grid, block, its graph's bucket).
        split = truth["report_split"] if truth else bucket_split(trace, rules)
        for r in bucketed:
            names = [r["canonical_name"]] if truth else [r["kernel"], r["canonical_name"]]
            keys = ["|".join([name, ",".join(map(str, r["grid"])), ",".join(map(str, r["block"])),
                              r["bucket"]]) for name in names]
            key = next((k for k in keys if k in split), keys[0])
            want = split.get(key)
            check(want is not None, "report: a row the %s has not: %s" % (
                "truth" if truth else "reference", key))
            if want:
                check(r["trace_launches"] == want[0] and close(r["trace_total_us"], want[1]),
                      "report: %s: %d launches, %r us against the %s's %s" % (
                          key, r["trace_launches"], r["trace_total_us"],
                          "truth" if truth else "reference", want))
        print("report: %d rows split per batch bucket, each its bucket's trace time" %
              len(bucketed))
    if FAILURES:
        for failure in FAILURES[:40]:
            print("FAIL", failure)
        sys.exit("%d differences" % len(FAILURES))


if __name__ == "__main__":
    main()
