#!/usr/bin/env python3
"""Faithful reconstructions of serving engines' step annotations from real H200 traces: the
steps' annotations renamed to what an engine names them, nothing else changed.

  rename_steps.py chrome IN.json.gz OUT.json.gz NEW_NAME
      every user_annotation ProfilerStep#N (and its gpu_user_annotation twin) renamed NEW_NAME
  rename_steps.py nsys IN.sqlite OUT.sqlite OLD_NAME NEW_NAME
      every NVTX range whose text is OLD_NAME renamed NEW_NAME (a copy of the export)

Used for data/h200/engine_steps_*: vLLM's and SGLang's record_function names in a PyTorch
profiler trace, TensorRT-LLM's NVTX range in an Nsight Systems export (see data/h200/README.md).
"""
import gzip
import json
import shutil
import sqlite3
import sys


def chrome(source, out, name):
    with gzip.open(source, "rt") as f:
        trace = json.load(f)
    renamed = 0
    for e in trace["traceEvents"]:
        if e.get("cat") in ("user_annotation", "gpu_user_annotation") and str(
                e.get("name", "")).startswith("ProfilerStep#"):
            e["name"] = name
            renamed += 1
    with gzip.open(out, "wt", compresslevel=9) as f:
        json.dump(trace, f, separators=(",", ":"))
    print(f"{out}: {renamed} step annotations renamed {name!r}")


def nsys(source, out, old, new):
    shutil.copyfile(source, out)
    db = sqlite3.connect(out)
    renamed = db.execute("UPDATE NVTX_EVENTS SET text = ? WHERE text = ?", (new, old)).rowcount
    renamed += db.execute("UPDATE StringIds SET value = ? WHERE value = ?", (new, old)).rowcount
    db.commit()
    db.execute("VACUUM")
    print(f"{out}: {renamed} NVTX texts renamed {new!r}")


if __name__ == "__main__":
    {"chrome": chrome, "nsys": nsys}[sys.argv[1]](*sys.argv[2:])
