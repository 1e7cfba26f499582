#!/usr/bin/env python3
"""Step time of tools/tracer/workload.py (eager decode step, ~200 kernels, and its CUDA-graph
replay) without any tool, with kprof's tracer (active; and loaded but inactive), and with the
PyTorch profiler (CUDA only; CPU + CUDA). Every arm runs in fresh processes, the same number of
them, rounds interleaved so drift hits all arms alike; each process times STEPS steps after
WARMUP. Prints the median step time per arm and its ratio to "none" (issue 15's target: tracer
<= 1.05 on the eager step), plus what the tracer said on stderr (events, drops).

usage: tools/tracer/overhead.py LIBKPROF_TRACER_SO OUT_DIR [--rounds 5] [--steps 200] [--warmup 20]
         [--baseline-library OLD_SO] [--arms none,tracer,tracer-baseline]
--baseline-library adds the arm "tracer-baseline": another build of the tracer (an older commit)
in the same interleaved rounds, so a change's own cost is measured against the real alternative.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def arms(library, out_dir, baseline_library="", chosen=()):
    tracer = {"CUDA_INJECTION64_PATH": library, "NVTX_INJECTION64_PATH": library,
              "KPROF_TRACE_DIR": out_dir}
    baseline = [("tracer-baseline", {"CUDA_INJECTION64_PATH": baseline_library,
                                     "NVTX_INJECTION64_PATH": baseline_library,
                                     "KPROF_TRACE_DIR": out_dir}, [])] if baseline_library else []
    every = baseline + [
        ("none", {}, []),
        ("tracer", dict(tracer), []),
        ("tracer-inactive", dict(tracer, KPROF_TRACE_START="on-control",
                                 KPROF_TRACE_CONTROL=os.path.join(out_dir, "never-written")), []),
        ("torch-profiler-cuda", {}, ["--profiler", "cuda"]),
        ("torch-profiler-cpu-cuda", {}, ["--profiler", "cpu_cuda"]),
    ]
    return [arm for arm in every if not chosen or arm[0] in chosen]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("library")
    p.add_argument("out_dir")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--baseline-library", default="", help="another tracer build, arm tracer-baseline")
    p.add_argument("--arms", default="", help="comma-separated arms to run (default: all); none is always run")
    args = p.parse_args()
    library = os.path.realpath(args.library)
    baseline_library = os.path.realpath(args.baseline_library) if args.baseline_library else ""
    chosen = tuple(set(args.arms.split(",")) | {"none"}) if args.arms else ()
    os.makedirs(args.out_dir, exist_ok=True)
    base_env = {k: v for k, v in os.environ.items()
                if not k.startswith("KPROF_TRACE_") and k not in ("CUDA_INJECTION64_PATH",
                                                                  "NVTX_INJECTION64_PATH")}
    steps = {}  # (workload, arm) -> per-step ms of all processes
    said = {}
    for r in range(args.rounds):
        for workload in ("eager", "graph"):
            for name, env, extra in arms(library, os.path.join(args.out_dir, "traces"),
                                         baseline_library, chosen):
                os.makedirs(os.path.join(args.out_dir, "traces"), exist_ok=True)
                cmd = [sys.executable, os.path.join(HERE, "workload.py"), "--steps", str(args.steps),
                       "--warmup", str(args.warmup)] + extra + (["--graph"] if workload == "graph" else [])
                run = subprocess.run(cmd, env=dict(base_env, **env), capture_output=True, text=True)
                if run.returncode != 0:
                    print(f"FAIL {workload} {name} round {r}: exit {run.returncode}\n{run.stderr[-2000:]}")
                    sys.exit(1)
                result = json.loads(run.stdout.strip().splitlines()[-1])
                steps.setdefault((workload, name), []).extend(result["step_ms"])
                lines = [l for l in run.stderr.splitlines() if l.startswith("kprof-tracer:")]
                if lines:
                    said[(workload, name)] = lines
                if name in ("tracer", "tracer-baseline") and not any(" window 1 " in l for l in lines):
                    print(f"FAIL the tracer wrote no window in {workload} round {r} (is libcupti.so.13 "
                          f"on LD_LIBRARY_PATH? gpu-check.sh sets it):\n{run.stderr[-2000:]}")
                    sys.exit(1)
    print(f"{'workload':8} {'arm':26} {'median ms':>10} {'p90 ms':>8} {'ratio':>6}   "
          f"({args.rounds} processes x {args.steps} steps per arm)")
    for workload in ("eager", "graph"):
        base = statistics.median(steps[(workload, "none")])
        for name, _, _ in arms(library, "", baseline_library, chosen):
            values = sorted(steps[(workload, name)])
            median = statistics.median(values)
            p90 = values[int(0.9 * (len(values) - 1))]
            print(f"{workload:8} {name:26} {median:10.3f} {p90:8.3f} {median / base:6.3f}")
    print("\nwhat the tracer said (last round):")
    for (workload, name), lines in sorted(said.items()):
        for line in lines:
            print(f"  {workload} {name}: {line}")


if __name__ == "__main__":
    main()
