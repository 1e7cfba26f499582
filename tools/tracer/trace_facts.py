#!/usr/bin/env python3
"""One JSON line per kprof tracer trace: who wrote it, why its window ended, what it holds
(kernels, graph kernels and their distinct node ids, NVTX steps, API calls) and what was dropped
— the "kprof" block at the end of the file plus counts over its events. For gpu-check.sh.

usage: tools/tracer/trace_facts.py TRACE.json.gz...
"""
import gzip
import json
import sys

for path in sys.argv[1:]:
    with gzip.open(path, "rt") as f:
        trace = json.load(f)
    k = trace.get("kprof", {})
    events = trace["traceEvents"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    graph = [e for e in kernels if "graph node id" in e.get("args", {})]
    steps = [e for e in events if e.get("cat") == "user_annotation" and e.get("ph") == "X"
             and e["name"].startswith("ProfilerStep#")]
    apis = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    start, stop = k.get("window_start", {}), k.get("window_stop", {})
    print(json.dumps({
        "file": path, "pid": k.get("pid"), "window": k.get("window"),
        "stop_reason": k.get("stop_reason"), "cupti_version": k.get("cupti_version"),
        "window_s": round((stop.get("monotonic_ns", 0) - start.get("monotonic_ns", 0)) / 1e9, 3),
        "events": k.get("events"), "kernels": len(kernels), "graph_kernels": len(graph),
        "graph_nodes": len({e["args"]["graph node id"] for e in graph}),
        "steps": len(steps), "api_calls": len(apis),
        "api_names": sorted({e["name"] for e in apis}),
        "cap_hit": k.get("cap_hit"), "dropped": k.get("dropped"), "nvtx": k.get("nvtx"),
        "clock_check": k.get("clock_check"), "other_records": k.get("other_records")}))
