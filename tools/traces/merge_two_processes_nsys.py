#!/usr/bin/env python3
"""Reconstruction of a two-process Nsight Systems export (as `nsys profile` writes for a
tensor-parallel run of two ranks) from a real one-process export: every kernel, memcpy, memset,
runtime call and NVTX range is written once more for a second process — its globalPid/globalTid
carrying another pid (bits 24-47, as nsys packs them), its GPU work on device 1 — with the same
correlation ids (CUPTI numbers them per process, so two processes' repeat) and the same
timestamps (ranks step together). Nothing else changes.

Usage: merge_two_processes_nsys.py IN.sqlite OUT.sqlite
Made data/h200/nsys_two_process.sqlite from data/h200/nsys_decode_steps.sqlite.
"""
import shutil
import sqlite3
import sys

PID_BITS = 24


def main(source, out):
    shutil.copyfile(source, out)
    db = sqlite3.connect(out)
    pids = {g >> PID_BITS & 0xFFFFFF
            for (g,) in db.execute("SELECT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL")}
    assert len(pids) == 1, "the source must hold one process"
    pid = pids.pop()
    other = pid + 1
    # globalPid/globalTid keep their other bits (the hardware id above, the tid below).
    move = f"(({{c}} & ~({0xFFFFFF} << {PID_BITS})) | ({other} << {PID_BITS}))"
    for table, column, device in (("CUPTI_ACTIVITY_KIND_KERNEL", "globalPid", True),
                                  ("CUPTI_ACTIVITY_KIND_MEMCPY", "globalPid", True),
                                  ("CUPTI_ACTIVITY_KIND_MEMSET", "globalPid", True),
                                  ("CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid", False),
                                  ("NVTX_EVENTS", "globalTid", False)):
        if not db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
            continue
        columns = [r[1] for r in db.execute(f"PRAGMA table_info('{table}')")]
        selected = []
        for c in columns:
            if c == column or (c == "endGlobalTid" and table == "NVTX_EVENTS"):
                selected.append(move.format(c=c))
            elif c == "deviceId" and device:
                selected.append("1")
            else:
                selected.append(c)
        db.execute(f"INSERT INTO {table} ({', '.join(columns)}) "
                   f"SELECT {', '.join(selected)} FROM {table}")
    db.commit()
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    main(*sys.argv[1:3])
