#!/usr/bin/env python3
"""Compares kprof capture presets run on the same kernels (one GPU run): passes per kernel and
capture wall time from each bundle's manifest, and how often a preset's verdicts equal those of
--preset full, kernel by kernel (each bundle's report analysed again by the given kprof).

usage: bench/capture-presets.py KPROF BUNDLE_DIR PREFIX...   (bundles PREFIX_triage, _basic, _full)
A verdict is the roofline class and the binding unit; the occupancy limiter and the top warp
stall are compared separately, and so are the fields a preset cannot derive (missing)."""
import json
import os
import subprocess
import sys


def load(path):
    manifest = json.load(open(os.path.join(path, "manifest.json")))
    analysis = json.loads(subprocess.run([sys.argv[1], "analyze", "--json", os.path.join(path, "report.ncu-rep")],
                                         check=True, capture_output=True, text=True).stdout)
    return manifest, analysis["kernels"]


def matched(kernels, full):
    """Pairs of the same kernel (name, grid, block, n-th occurrence): library heuristics may
    launch a different GEMM variant in another run of the same program."""
    def keyed(ks):
        seen, out = {}, {}
        for k in ks:
            key = (k["target"], tuple(k["grid"]), tuple(k["block"]))
            seen[key] = seen.get(key, 0) + 1
            out[key + (seen[key],)] = k
        return out
    a, b = keyed(kernels), keyed(full)
    return [(a[key], b[key]) for key in b if key in a]


def top_stall(k):
    stalls = k.get("warp_stall_reasons") or {}
    return max(stalls, key=stalls.get) if stalls else None


root = sys.argv[2]
for prefix in sys.argv[3:]:
    full_manifest, full = load(os.path.join(root, prefix + "_full"))
    print(f"== {prefix}: {len(full)} kernels")
    print(f"{'preset':8} {'passes':>8} {'wall s':>7} {'verdict=full':>13} {'limiter=full':>13} {'top stall=full':>15}  fields missing (kernels)")
    for preset in ("triage", "basic", "full"):
        manifest, kernels = load(os.path.join(root, f"{prefix}_{preset}"))
        passes = manifest["progress"]["passes_per_kernel"]
        pairs = matched(kernels, full)
        same = limiter = stall = stall_n = 0
        missing = {}
        for k, f in pairs:
            same += (k["roofline"], k["bound_by"]) == (f["roofline"], f["bound_by"])
            limiter += k["occupancy_limiter"] == f["occupancy_limiter"]
            if top_stall(f):
                stall_n += 1
                stall += top_stall(k) == top_stall(f)
            for m in k["missing"]:
                field = m.split(" ")[0]
                missing[field] = missing.get(field, 0) + 1
        n = len(pairs)
        pass_text = f"{min(passes)}" if min(passes) == max(passes) else f"{min(passes)}-{max(passes)}"
        print(f"{preset:8} {pass_text:>8} {manifest['elapsed_s']:7.1f} {same:>6}/{n:<6} {limiter:>6}/{n:<6} "
              f"{stall:>7}/{stall_n:<7}  {', '.join(f'{k} ({v})' for k, v in sorted(missing.items())) or '-'}"
              + (f"  [{len(full) - n} kernels of full's run not launched in this run]" if n < len(full) else ""))
        if preset == "triage":
            for k, f in pairs:
                if (k["roofline"], k["bound_by"]) != (f["roofline"], f["bound_by"]):
                    print(f"   differs: {k['target'][:60]}: triage {k['roofline']}/{k['bound_by']} "
                          f"(SM {k['sm_throughput_pct']:.1f}%, mem {k['memory_throughput_pct']:.1f}%), "
                          f"full {f['roofline']}/{f['bound_by']} (SM {f['sm_throughput_pct']:.1f}%, mem {f['memory_throughput_pct']:.1f}%)")
                if top_stall(f) and top_stall(k) != top_stall(f):
                    print(f"   top stall differs: {k['target'][:50]} ({k['wall_clock_us']:.1f} us): triage {top_stall(k)}, full {top_stall(f)}")
