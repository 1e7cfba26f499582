#!/usr/bin/env python3
"""Runs a command (stdout to /dev/null) and reports its wall time, its peak RSS (the kernel's
ru_maxrss, exact) and the largest RssAnon and RssFile seen in /proc/PID/status, sampled every
2 ms (a sample can miss a peak shorter than that; the total peak cannot be missed).

usage: bench/peak-memory.py COMMAND [ARGS...]   (stdin is passed through)
"""
import os
import sys
import time


def status_kb(pid, fields):
    values = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                key, _, rest = line.partition(":")
                if key in fields:
                    values[key] = int(rest.split()[0])
    except (FileNotFoundError, ProcessLookupError, ValueError):
        pass
    return values


def main():
    argv = sys.argv[1:]
    if not argv:
        sys.exit(__doc__)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.execvp(argv[0], argv)
    peak = {"RssAnon": 0, "RssFile": 0}
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done == pid:
            break
        for key, kb in status_kb(pid, peak.keys()).items():
            peak[key] = max(peak[key], kb)
        time.sleep(0.002)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    print(f"{' '.join(argv)}: exit {code}, {wall:.2f} s wall, peak RSS {usage.ru_maxrss / 1024:,.1f} MiB"
          f" (sampled: RssAnon {peak['RssAnon'] / 1024:,.1f} MiB, RssFile {peak['RssFile'] / 1024:,.1f} MiB)")


if __name__ == "__main__":
    main()
