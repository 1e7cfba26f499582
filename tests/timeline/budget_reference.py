#!/usr/bin/env python3
"""A second implementation of kprof budget's per-step, per-device figures, written apart from the
C++ (src/timeline/step_budget.cpp) and compared with `kprof budget --json` on real traces.

For each step (a CPU annotation whose name matches the step pattern), its work is every kernel,
memcpy and memset whose launch call (cuda_runtime/cuda_driver event with the same correlation id,
in the annotation's own process) started inside it, or after it and before the process's next step
(work launched between steps is the step's it follows; a process's last step takes what is
launched after it for as long as the longest such stretch between its earlier steps). A step's wall span starts at its annotation's
start, or at the end of its process's previous step (the later of that annotation's end and its
last GPU work) when later, and ends at the later of its annotation's end and the device's last
work. Per device, that work in start order from the wall start (or its own first start, if
earlier): busy is the union of its intervals, span first start to last end, and each idle interval
before an item (the first one's too) is the host's when the item's launch call ended after the
device had run out of work, the device's otherwise; idle after the last item to the annotation's
end is the host's. Where any other GPU work (of no step, another step's) ran in such an interval,
from its first start to its last end, the device was running it: other work, not idle. Reads a
Chrome trace (.json or .json.gz) with Python's json module, or an Nsight Systems SQLite export with
sqlite3 (NVTX ranges as annotations).

Usage: budget_reference.py --kprof KPROF TRACE [--step REGEX]   (exit 0 when both agree)
       budget_reference.py TRACE [--step REGEX]                 (prints the reference figures)
"""
import argparse
import bisect
import collections
import gzip
import json
import re
import sqlite3
import subprocess
import sys

LAUNCH_WORDS = ("LaunchKernel", "LaunchCooperativeKernel", "GraphLaunch", "Memcpy", "Memset")
# The per-step markers of PyTorch, vLLM, SGLang and TensorRT-LLM (docs/budget.md), first found wins.
MARKERS = [r"^ProfilerStep#\d+$",
           r"^execute_(new_\d+_cached_\d+|(\d+_)?context_\d+\(.*\)_generation_\d+\(.*\))$",
           r"^step\[[^\]]*\]$", r"^_forward_step$"]

Work = collections.namedtuple("Work", "start end device correlation kernel")


def read_chrome(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    launches, work, annotations = {}, [], []
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, args = e.get("cat"), e.get("args", {})
        if cat in ("cuda_runtime", "cuda_driver") and "correlation" in args and any(
                w in e["name"] for w in LAUNCH_WORDS):
            launches[args["correlation"]] = (e["ts"], e["ts"] + e["dur"], e.get("pid"))
        elif cat in ("kernel", "gpu_memcpy", "gpu_memset"):
            work.append(Work(e["ts"], e["ts"] + e["dur"], args.get("device", -1),
                             args.get("correlation"), cat == "kernel"))
        elif cat == "user_annotation":
            annotations.append((e["name"], e["ts"], e["ts"] + e["dur"], e.get("pid")))
    return launches, work, annotations


def read_nsys(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    us = 1e-3
    launches, work, annotations = {}, [], []
    for start, end, corr, name in db.execute(
            "SELECT r.start, r.end, r.correlationId, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
            "JOIN StringIds s ON s.id = r.nameId"):
        if any(w in name for w in LAUNCH_WORDS):
            launches[corr] = (start * us, end * us, 0)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table, kernel in (("CUPTI_ACTIVITY_KIND_KERNEL", True), ("CUPTI_ACTIVITY_KIND_MEMCPY", False),
                          ("CUPTI_ACTIVITY_KIND_MEMSET", False)):
        if table not in tables:
            continue
        for start, end, device, corr in db.execute(
                f"SELECT start, end, deviceId, correlationId FROM {table}"):
            work.append(Work(start * us, end * us, device, corr, kernel))
    for start, end, text in db.execute(
            "SELECT n.start, n.end, COALESCE(n.text, s.value) FROM NVTX_EVENTS n LEFT JOIN "
            "StringIds s ON s.id = n.textId WHERE n.eventType IN (59, 60) AND n.end IS NOT NULL"):
        annotations.append((text, start * us, end * us, 0))
    return launches, work, annotations


def budget(path, step):
    with open(path, "rb") as f:
        is_sqlite = f.read(16).startswith(b"SQLite format 3")
    launches, work, annotations = (read_nsys if is_sqlite else read_chrome)(path)
    steps = []
    for pattern in ([step] if step else MARKERS):
        steps = [a for a in annotations if re.search(pattern, a[0])]
        if steps:
            break
    result = []
    previous_end = {}  # process -> the previous step's end
    steps = sorted(steps, key=lambda a: a[1])
    # Each device's busy intervals, every GPU activity's (merged): where a step's idle stretch
    # overlaps them, the device ran other work.
    busy_of = collections.defaultdict(list)
    for w in sorted(work, key=lambda w: w.start):
        merged = busy_of[w.device]
        if merged and w.start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], w.end)
        else:
            merged.append([w.start, w.end])
    starts_of = {d: [iv[0] for iv in m] for d, m in busy_of.items()}
    ends_of = {d: [iv[1] for iv in m] for d, m in busy_of.items()}
    # Per process, the longest stretch from a step's end to its next step's start: how long after
    # its range the last step, which has no next, still takes what is launched.
    longest_between = {}
    for index, (name, start, end, pid) in enumerate(steps):
        following = next((s[1] for s in steps[index + 1:] if s[3] == pid), None)
        if following is not None:
            longest_between[pid] = max(longest_between.get(pid, 0.0), following - end)
    for index, (name, start, end, pid) in enumerate(steps):
        # Work launched after the annotation closed and before the process's next step opened
        # is the step's too.
        until = next((s[1] for s in steps[index + 1:] if s[3] == pid), None)
        if until is None and longest_between.get(pid, 0.0) > 0:
            until = end + longest_between[pid]
        per_device = collections.defaultdict(list)
        for w in work:
            launch = launches.get(w.correlation)
            if launch and launch[2] == pid and (
                    start <= launch[0] <= end or
                    (until is not None and until > end and end < launch[0] < until)):
                per_device[w.device].append(w)
        wall_from = max(start, previous_end.get(pid, start))
        previous_end[pid] = max([end] + [w.end for items in per_device.values() for w in items])
        devices = {}
        for device, items in sorted(per_device.items()):
            items.sort(key=lambda w: w.start)
            busy = host = dev_idle = before = other = 0.0
            wall_start = min(wall_from, items[0].start)
            open_start = frontier = wall_start

            def stretches(a, b):
                """[a, b) less the other work run in it: the stretch before the first other work
                and the one after the last (the gaps between them are that work's own)."""
                merged, ends = busy_of[device], ends_of[device]
                first = bisect.bisect_right(ends, a)  # the first interval ending after a
                if first == len(merged) or merged[first][0] >= b:
                    return [(a, b)], 0.0
                last = bisect.bisect_left(starts_of[device], b) - 1  # the last starting before b
                lo, hi = max(merged[first][0], a), min(merged[last][1], b)
                return [(a, lo), (hi, b)], hi - lo

            for i, w in enumerate(items):
                if w.start > frontier:
                    busy += frontier - open_start
                    pieces, covered = stretches(frontier, w.start)
                    other += covered
                    for lo, hi in pieces:
                        if hi <= lo:
                            continue
                        if i == 0:
                            before += hi - lo
                        if launches[w.correlation][1] > lo:
                            host += hi - lo
                        else:
                            dev_idle += hi - lo
                    open_start = w.start
                frontier = max(frontier, w.end)
            busy += frontier - open_start
            last = max(w.end for w in items)
            after = 0.0
            if end > last:
                pieces, covered = stretches(last, end)
                other += covered
                after = sum(hi - lo for lo, hi in pieces)
            host += after
            devices[device] = {"span_us": last - items[0].start, "busy_us": busy,
                               "host_gap_us": host, "device_idle_us": dev_idle,
                               "other_work_us": other,
                               "wall_span_us": max(end, last) - wall_start,
                               "idle_before_first_us": before, "idle_after_last_us": after,
                               "kernels": sum(w.kernel for w in items)}
        result.append({"name": name, "devices": devices})
    return result


def close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def compare(kprof, path, step):
    argv = [kprof, "budget", path, "--json"] + (["--step", step] if step else [])
    out = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
    expected = budget(path, step)
    if len(out["steps"]) != len(expected):
        sys.exit(f"{path}: kprof found {len(out['steps'])} steps, the reference {len(expected)}")
    checked = 0
    for got, want in zip(out["steps"], expected):
        if got["name"] != want["name"]:
            sys.exit(f"{path}: step {got['name']!r} where the reference has {want['name']!r}")
        got_devices = {d["device"]: d for d in got["devices"]}
        if sorted(got_devices) != sorted(want["devices"]):
            sys.exit(f"{path}: {want['name']}: devices {sorted(got_devices)} vs "
                     f"{sorted(want['devices'])}")
        for device, figures in want["devices"].items():
            for key, value in figures.items():
                if not close(got_devices[device][key], value):
                    sys.exit(f"{path}: {want['name']} device {device} {key}: kprof "
                             f"{got_devices[device][key]}, reference {value}")
                checked += 1
        busy = sum(d["busy_us"] for d in want["devices"].values())
        host = sum(d["host_gap_us"] for d in want["devices"].values())
        if not close(got["host_fed_fraction"], busy / (busy + host) if busy + host else 1):
            sys.exit(f"{path}: {want['name']} host_fed_fraction {got['host_fed_fraction']}")
    print(f"{path}: {len(expected)} steps, {checked} figures agree")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("--kprof")
    parser.add_argument("--step")
    args = parser.parse_args()
    if args.kprof:
        compare(args.kprof, args.trace, args.step)
    else:
        json.dump(budget(args.trace, args.step), sys.stdout, indent=1)


if __name__ == "__main__":
    main()
