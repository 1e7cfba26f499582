#!/usr/bin/env python3
"""kprof report's fix list against a second implementation (issue 32).

Reads what it can itself: ncu's own raw CSV export of the capture (durations, grid, block, the
binding unit's % of peak by the metric kprof names, DRAM bytes/s and peak), the trace JSON
(kernel time per name and launch configuration, the GPU span, the ProfilerStep steps), and the
calibration file (the measured ceilings). From kprof's JSON it takes only each launch's roofline
class and which unit binds it (the verdict, tested against ncu's rules elsewhere). Then it groups,
joins and estimates on its own and compares every opportunity's figures.

usage: fix_list_reference.py KPROF REPORT RAW_CSV.gz TRACE.json.gz [CALIBRATION.json]"""
import csv
import gzip
import io
import json
import re
import subprocess
import sys

kprof, report, raw_csv, trace_path = sys.argv[1:5]
calibration = sys.argv[5] if len(sys.argv) > 5 else None
args = [kprof, "report", "--json", "--top", "0", "--trace", trace_path, report]
if calibration:
    args += ["--gpus", calibration]
answer = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)

SCALE = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def scaled(value, unit):
    """A raw-CSV value in base units: Tbyte/s -> byte/s, Kbyte/cycle -> byte/cycle, Ghz -> hz."""
    prefix = unit[0] if unit[:1] in "KMGT" else ""
    if unit.lower().endswith("hz"):
        prefix = unit[0].upper() if unit[0].lower() in "kmgt" else ""
    return float(value.replace(",", "")) * SCALE.get(prefix, 1)


rows = list(csv.reader(io.TextIOWrapper(gzip.open(raw_csv), encoding="utf-8")))
head, units = rows[0], rows[1]
col = {name: i for i, name in enumerate(head)}
launches = []
for row in rows[2:]:
    def metric(name, row=row):  # bound now: a closure would see the last row
        return scaled(row[col[name]], units[col[name]])
    launches.append({"id": int(row[col["ID"]]), "row": row, "metric": metric,
                     "grid": tuple(int(x) for x in row[col["Grid Size"]].strip("()").split(",")),
                     "block": tuple(int(x) for x in row[col["Block Size"]].strip("()").split(",")),
                     "us": float(row[col["gpu__time_duration.sum"]])})
assert units[col["gpu__time_duration.sum"]] == "us"

verdicts = {k["launch"]: k for k in answer["kernels"]}
assert len(verdicts) == len(launches), (len(verdicts), len(launches))


def base_name(name):
    """The kernel's identifier: no 'void ', no template arguments or parameters, no namespaces."""
    name = re.sub(r"^void ", "", name)
    depth, out = 0, ""
    for c in name:
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif depth == 0:
            out += c
    return out.split("::")[-1].strip()


trace = json.load(gzip.open(trace_path))
time_by_config, time_by_name = {}, {}
first, last = None, None
steps = []
step_names = []
# vLLM's step name (gpu_worker.py annotate_profile): C prefill requests, G decode requests that
# generate T tokens in the step.
VLLM_STEP = re.compile(r"^execute_(?:\d+_)?context_(\d+)\((\d+)\)_generation_(\d+)\((\d+)\)$")
for e in trace["traceEvents"]:
    cat = e.get("cat")
    if cat == "user_annotation" and (e["name"].startswith("ProfilerStep#")
                                     or VLLM_STEP.match(e["name"])):
        steps.append((e["ts"], e["ts"] + e["dur"]))
        step_names.append(e["name"])
    if cat not in ("kernel", "gpu_memcpy", "gpu_memset") or e.get("ph") != "X":
        continue
    first = e["ts"] if first is None else min(first, e["ts"])
    last = e["ts"] + e["dur"] if last is None else max(last, e["ts"] + e["dur"])
    if cat != "kernel":
        continue
    a = e.get("args", {})
    key = (base_name(e["name"]), tuple(a.get("grid", [-1] * 3)), tuple(a.get("block", [-1] * 3)))
    t = time_by_config.setdefault(key, [0.0, 0])
    t[0] += e["dur"]
    t[1] += 1
pipeline = last - first

# Steps as kprof budget finds them: ProfilerStep#N, each one's GPU span = its launched work's;
# its wall span from its start (or the previous step's end, when later) to the later of its end
# and its last work.
launch_time = {}
for e in trace["traceEvents"]:
    if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
        n = e["name"]
        if any(s in n for s in ("LaunchKernel", "GraphLaunch", "Memcpy", "Memset")):
            launch_time[e["args"]["correlation"]] = e["ts"]
step_spans, wall_spans = [], []
previous_end = None
for start, end in sorted(steps):
    work = [(e["ts"], e["ts"] + e["dur"]) for e in trace["traceEvents"]
            if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X"
            and start <= launch_time.get(e.get("args", {}).get("correlation"), -1) <= end]
    wall_from = start if previous_end is None else max(start, previous_end)
    wall_end = max([end] + [w[1] for w in work])
    previous_end = wall_end
    if work:
        step_spans.append(max(w[1] for w in work) - min(w[0] for w in work))
        wall_spans.append(wall_end - min(wall_from, min(w[0] for w in work)))
step_us = sum(step_spans) / len(step_spans) if step_spans else 0
step_wall_us = sum(wall_spans) / len(wall_spans) if wall_spans else 0
base = sum(step_spans) if step_spans else pipeline

ceilings = {}
if calibration:
    for c in json.load(open(calibration))["ceilings"]:
        ceilings[c["name"]] = c["figure"]

groups = {}
for launch in launches:
    v = verdicts[launch["id"]]
    name = launch["row"][col["Kernel Name"]]
    g = groups.setdefault((base_name(name), launch["grid"], launch["block"]),
                          {"us": [], "saving": 0.0, "achieved": 0.0, "attainable": 0.0, "est": 0.0})
    g["us"].append(launch["us"])
    roof = v["roofline"]
    units_of = v.get("units") or {}
    memory, compute = units_of.get("memory"), units_of.get("compute")
    if roof == "memory-bound":
        unit = memory
    elif roof == "compute-bound":
        unit = compute
    elif roof in ("latency-bound", "at the ridge"):
        unit = memory if memory and (not compute or memory["pct_of_peak"] >= compute["pct_of_peak"]) else compute
    else:
        unit = None
    if not unit:
        continue
    achieved = launch["metric"](unit["metric"])  # ncu's own % of peak
    attainable = 100.0
    if unit["unit"] == "dram" and "dram_bandwidth" in ceilings:
        peak = launch["metric"]("dram__bytes.sum.peak_sustained") * launch["metric"](
            "dram__cycles_elapsed.avg.per_second")
        achieved = launch["metric"]("dram__bytes.sum.per_second") / peak * 100
        attainable = ceilings["dram_bandwidth"] / peak * 100
    if roof == "latency-bound" and achieved < 10:
        continue  # far from every roof: no estimate
    saving = max(0.0, 1 - achieved / attainable)
    g["saving"] += saving * launch["us"]
    g["achieved"] += achieved * launch["us"]
    g["attainable"] += attainable * launch["us"]
    g["est"] += launch["us"]

expected = {}
for (name, grid, block), g in groups.items():
    t = time_by_config.get((name, grid, block))
    e = {"launches_captured": len(g["us"]), "captured_mean_us": sum(g["us"]) / len(g["us"])}
    if t:
        e["trace_total_us"], e["trace_launches"] = t
        e["fraction_of_pipeline"] = t[0] / pipeline
        e["replay_fidelity"] = e["captured_mean_us"] / (t[0] / t[1])
    if g["est"] > 0:
        e["achieved_pct"] = g["achieved"] / g["est"]
        e["attainable_pct"] = g["attainable"] / g["est"]
        e["saving_fraction"] = g["saving"] / g["est"]
        if t:
            e["estimated_saving_us"] = t[0] * e["saving_fraction"]
            e["estimated_step_speedup"] = base / (base - e["estimated_saving_us"])
    expected[(name, grid, block)] = e

fix = answer["fix_list"]
failures = 0


def close(a, b):
    # ncu's CSV prints 6 decimals in its display unit (0.026409 Tbyte/s): a few 1e-6 relative.
    return abs(a - b) <= 1e-5 * max(1.0, abs(a), abs(b))


checked = 0
for o in fix["opportunities"]:
    key = (base_name(o["kernel"]), tuple(o["grid"]), tuple(o["block"]))
    e = expected.pop(key, None)
    if e is None:
        print("FAIL kprof has a group the reference has not:", key)
        failures += 1
        continue
    for field, value in e.items():
        checked += 1
        if o.get(field) is None or not close(o[field], value):
            print(f"FAIL {key[0]} {field}: kprof {o.get(field)} reference {value}")
            failures += 1
    for field in ("achieved_pct", "saving_fraction", "estimated_saving_us"):
        if field not in e and o.get(field) is not None:
            print(f"FAIL {key[0]} {field}: kprof {o[field]}, the reference has no estimate")
            failures += 1
for key in expected:
    print("FAIL the reference has a group kprof has not:", key)
    failures += 1
if not close(fix["pipeline_us"], pipeline):
    print("FAIL pipeline", fix["pipeline_us"], pipeline)
    failures += 1
if step_spans and (fix["steps"] != len(step_spans) or not close(fix["step_us"], step_us)
                   or not close(fix["step_wall_us"], step_wall_us)):
    print("FAIL steps", fix["steps"], fix["step_us"], fix["step_wall_us"], len(step_spans),
          step_us, step_wall_us)
    failures += 1
total = sum(o["estimated_saving_us"] or 0 for o in fix["opportunities"])
if not close(fix["total_estimated_saving_us"], total):
    print("FAIL total", fix["total_estimated_saving_us"], total)
    failures += 1
# Serving units where every step's name carries a decode-only batch: TPOT = step wall time ÷
# tokens per request, tokens/s = tokens per step ÷ step wall time, now and with the total saving
# per step.
batches = [VLLM_STEP.match(n) for n in step_names]
if step_names and all(b and int(b.group(1)) == 0 and int(b.group(3)) > 0 for b in batches):
    requests = sum(int(b.group(3)) for b in batches) / len(batches)
    tokens = sum(int(b.group(4)) for b in batches) / len(batches)
    fixed_step_us = step_wall_us - total / len(step_spans)
    want = {"step_ms": step_wall_us / 1000, "tpot_ms": step_wall_us / 1000 / (tokens / requests),
            "tokens_per_s": tokens / (step_wall_us * 1e-6), "fixed_step_ms": fixed_step_us / 1000,
            "fixed_tpot_ms": fixed_step_us / 1000 / (tokens / requests),
            "fixed_tokens_per_s": tokens / (fixed_step_us * 1e-6), "tokens_per_step": tokens}
    got = fix.get("serving")
    if not got:
        print("FAIL no serving units for steps named", step_names[0])
        failures += 1
    else:
        for field, value in want.items():
            checked += 1
            if not close(got[field], value):
                print("FAIL serving", field, got[field], value)
                failures += 1
        print(f"serving: TPOT {got['tpot_ms']:.4f} ms, {got['tokens_per_s']:.1f} tokens/s; "
              f"fixed {got['fixed_tpot_ms']:.4f} ms, {got['fixed_tokens_per_s']:.1f} tokens/s")
elif fix.get("serving") is not None:
    print("FAIL serving units for steps whose names carry no batch:", fix["serving"])
    failures += 1
print(f"{len(fix['opportunities'])} groups, {checked} figures checked, {failures} failed")
sys.exit(1 if failures else 0)
