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
    ("report_compiled_decode", ["report", "--trace",
                                f"{data}/h200/trace_compiled_decode_vllm_steps.json.gz",
                                f"{data}/h200/compiled_decode_full.ncu-rep.zst",
                                "--gpus", f"{data}/h200/h200_calibration.json"]),
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
    # With a trace, the fix list leads: one row per opportunity of the JSON, in its order, the
    # first row's saving as the JSON has it; and the serving units where the steps carry them.
    fix_note = ""
    if "fix_list" in analysis:
        fixes = analysis["fix_list"]["opportunities"]
        table = re.search(r'<table id="fix-list">(.*?)</table>', dom, re.S)
        fix_rows = re.findall(r"<tr title=[^>]*>(.*?)</tr>", table.group(1), re.S) if table else []
        cells = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in fix_rows]
        first_saving = fixes[0]["estimated_saving_us"] if fixes else None
        ok = ok and table is not None and len(fix_rows) == len(fixes)
        if first_saving is not None and cells:
            shown, want = float(cells[0][8].replace(",", "")), first_saving / 1000
            ok = ok and abs(shown - want) <= 0.005 * want + 0.0011  # printed to 3-4 figures
        if analysis["fix_list"]["serving"]:
            ok = ok and "In serving units" in dom and "tokens/s" in dom
        ok = ok and dom.find('id="fix-list"') < dom.find('id="roofline"')
        fix_note = f", fix list {len(fix_rows)} rows (JSON {len(fixes)})"
    print(f"{name}: {points} points (expected {expected_points}), {rows} rows{fix_note}, "
          f"{len(console)} console messages{'' if ok else '  FAILED'}")
    for line in console[:5]:
        print("  " + line)
    failures += not ok
sys.exit(1 if failures else 0)
