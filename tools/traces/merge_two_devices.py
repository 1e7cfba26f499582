#!/usr/bin/env python3
"""Builds data/h200/tracer_two_device.json.gz, a faithful reconstruction of a two-GPU trace: the
two real processes' traces of tools/tracer/workload.py --processes 2 (tracer_two_process_a and _b,
recorded on one H200) merged into one file, the second process's GPU work assigned device 1.

What changes in the second trace's events: GPU rows ("pid" 0 -> 1, args.device 0 -> 1),
correlation ids and flow ids offset by 10,000,000 (each process numbered its own from 1, as two
processes of an nsys export do not), and every timestamp shifted so that its first ProfilerStep
starts when the first trace's does (the two processes ran 0.6 s apart on one GPU; ranks of a
tensor-parallel run step together). Nothing else: names, durations, order are the recording's.

With --same-ids the correlation and flow ids stay as each process numbered them (from 1, so
the two repeat each other's), which is what ranks' traces merged by hand and every
multi-process export look like: data/h200/merged_two_process_same_ids.json.gz.

Usage: merge_two_devices.py [--same-ids] A.json.gz B.json.gz OUT.json.gz
"""
import gzip
import json
import sys

OFFSET = 10_000_000


def events(path):
    with gzip.open(path, "rt") as f:
        trace = json.load(f)
    return trace, trace["traceEvents"]


def first_step(events):
    return min(e["ts"] for e in events
               if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#"))


def main(a_path, b_path, out_path, offset=OFFSET):
    a, a_events = events(a_path)
    _, b_events = events(b_path)
    shift = first_step(a_events) - first_step(b_events)
    moved = []
    for e in b_events:
        e = dict(e)
        if "ts" in e:
            e["ts"] = e["ts"] + shift
        args = dict(e.get("args", {}))
        if "correlation" in args:
            args["correlation"] += offset
        if "device" in args:
            args["device"] = 1
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation") or (
                e.get("cat") == "ac2g" and e.get("pid") == 0):
            e["pid"] = 1
        if e.get("cat") == "ac2g" and "id" in e:
            e["id"] += offset
        if args:
            e["args"] = args
        moved.append(e)
    a["traceEvents"] = a_events + moved
    a["kprof_reconstruction"] = (
        "two processes' traces merged, the second's GPU work on device 1" +
        (", correlation ids as each process numbered them" if offset == 0 else "") +
        ": tools/traces/merge_two_devices.py")
    with gzip.open(out_path, "wt", compresslevel=9) as f:
        json.dump(a, f, separators=(",", ":"))


if __name__ == "__main__":
    arguments = sys.argv[1:]
    same_ids = "--same-ids" in arguments
    arguments = [a for a in arguments if a != "--same-ids"]
    main(*arguments[:3], offset=0 if same_ids else OFFSET)
