#!/usr/bin/env python3
"""Renders kprof's HTML reports in headless Chromium (Debian's chromium): the page must load
without console errors, and its SVG roofline must hold one point per kernel that the analysis
(`kprof analyze --json`, read independently of the page) can place on it.
usage: html_report_test.py KPROF DATA_DIR OUT_DIR"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

kprof, data, out = sys.argv[1:4]
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    print("SKIP: chromium is not installed (scripts/install-deps installs it)")
    sys.exit(77)

cases = [
    ("report_big_full", ["report", "--trace", f"{data}/h200/trace_eager.json.gz",
                         f"{data}/h200/big_full.ncu-rep.zst"]),
    ("analyze_suite", ["analyze", f"{data}/h200/bottleneck_suite_full.ncu-rep.zst"]),
    ("analyze_basic", ["analyze", f"{data}/h200/big_basic.ncu-rep.zst"]),
]
failures = 0
for name, args in cases:
    page = os.path.join(out, name + ".html")
    subprocess.run([kprof] + args + ["--html", page], check=True, capture_output=True)
    analysis = json.loads(subprocess.run([kprof] + args + ["--json"], check=True,
                                         capture_output=True, text=True).stdout)
    expected_points = sum(1 for k in analysis["kernels"]
                          if (k["tflops"] or 0) > 0 and (k["arithmetic_intensity"] or 0) > 0)
    with tempfile.TemporaryDirectory() as profile:
        rendered = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
             "--dump-dom", "file://" + os.path.abspath(page)],
            capture_output=True, text=True, timeout=120)
    dom, log = rendered.stdout, rendered.stderr
    console = [line for line in log.splitlines() if "CONSOLE" in line]
    points = len(re.findall(r'<circle class="kernel"', dom))
    rows = len(re.findall(r"<tr><td>\d+</td>", dom))
    ok = (rendered.returncode == 0 and not console and points == expected_points
          and rows == len(analysis["kernels"]) and "<svg" in dom)
    print(f"{name}: {points} points (expected {expected_points}), {rows} rows, "
          f"{len(console)} console messages{'' if ok else '  FAILED'}")
    for line in console[:5]:
        print("  " + line)
    failures += not ok
sys.exit(1 if failures else 0)
