#!/usr/bin/env python3
"""Builds a large PyTorch-profiler trace by repeating a real trace's events, shifted in time
by the original span each copy, until the file reaches the requested size.
usage: bench/make-big-trace.py data/h200/trace_eager.json.gz OUT.json [SIZE_MB=1024]"""
import gzip
import json
import sys

source, out = sys.argv[1], sys.argv[2]
target = int(sys.argv[3] if len(sys.argv) > 3 else 1024) * 1000 * 1000
opener = gzip.open if source.endswith(".gz") else open
trace = json.load(opener(source, "rt"))
events = trace["traceEvents"]
timed = [e for e in events if "ts" in e]
start = min(float(e["ts"]) for e in timed)
span = max(float(e["ts"]) + float(e.get("dur", 0)) for e in timed) - start
header = {k: v for k, v in trace.items() if k != "traceEvents"}
# Each event's JSON is written once with a marker where "ts" goes; a copy only formats the
# shifted times (json.dumps writes a float as repr does), 10x faster than dumping every event.
MARK = "\x00ts\x00"
pieces = []  # per event: (text before ts, ts, text after) or (text,)
for e in events:
    if "ts" in e:
        e = dict(e)
        ts = float(e["ts"])
        e["ts"] = MARK
        before, after = json.dumps(e).split(json.dumps(MARK))
        pieces.append((before, ts, after))
    else:
        pieces.append((json.dumps(e),))
with open(out, "w") as f:
    f.write(json.dumps(header)[:-1] + ', "traceEvents": [')
    written, copy, first = 0, 0, True
    while written < target:
        shift = copy * span
        parts = [p[0] if len(p) == 1 else p[0] + float.__repr__(p[1] + shift) + p[2]
                 for p in pieces]
        chunk = ("" if first else ",\n") + ",\n".join(parts)
        f.write(chunk)
        written += len(chunk)
        copy += 1
        first = False
    f.write("]}\n")
print(f"{out}: {copy} copies of {len(events)} events")
