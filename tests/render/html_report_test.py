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
def escape_html(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


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
    # With a trace, one step's timeline: the median step of `kprof budget --json` by GPU span
    # (read independently of the page), one slice per GPU activity of it, idle bars where it
    # idled, and a screenshot of the rendered page (docs/report.md's) that is a real PNG.
    if args[0] == "report":
        trace = args[args.index("--trace") + 1]
        budget = json.loads(subprocess.run([kprof, "budget", trace, "--json"], check=True,
                                           capture_output=True, text=True).stdout)
        steps = [s for s in budget["steps"] if s["verdict"] != "graph capture"
                 and s["gpu_activities"] > 0]
        median = sorted(steps, key=lambda s: s["gpu_span_us"])[len(steps) // 2]
        svg = re.search(r'<svg id="step-timeline".*?</svg>', dom, re.S)
        slices = len(re.findall(r'<rect class="k"', svg.group(0))) if svg else -1
        idle_bars = len(re.findall(r'<rect class="idle-bar"', svg.group(0))) if svg else -1
        idle_us = median["host_gap_us"] + median["device_idle_us"] + median["dependency_wait_us"]
        ok = ok and slices == min(median["gpu_activities"], 5000) and (idle_bars > 0) == (idle_us > 0)
        ok = ok and escape_html(median["name"]) in dom
        shot = os.path.join(out, name + ".png")
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                            "--hide-scrollbars", f"--user-data-dir={profile}",
                            f"--screenshot={shot}", "--window-size=1200,1800",
                            "file://" + os.path.abspath(page)], capture_output=True, timeout=120)
        with open(shot, "rb") as f:
            png = f.read()
        ok = ok and png.startswith(b"\x89PNG") and len(png) > 10000
        fix_note += (f", step timeline {slices} slices (median step {median['name']}: "
                     f"{median['gpu_activities']} activities), {idle_bars} idle bars, "
                     f"screenshot {len(png)} bytes")
    print(f"{name}: {points} points (expected {expected_points}), {rows} rows{fix_note}, "
          f"{len(console)} console messages{'' if ok else '  FAILED'}")
    for line in console[:5]:
        print("  " + line)
    failures += not ok
sys.exit(1 if failures else 0)
