#!/usr/bin/env python3
"""Times tools/tracer/workload.py's eager decode step (~200 kernels) under each step of
ladder.cpp (what a CUPTI tracer sets up, one step at a time), beside no tool and kprof's tracer
(active and inactive), to find which step costs what per launch (issue 15). Fresh process per
arm, arms interleaved per round; prints median step ms, ratio to none, and the extra
microseconds per kernel launch (the step launches KERNELS kernels).

usage: ladder.py LADDER_SO TRACER_SO OUT_DIR [--rounds 1] [--steps 200] [--graph] [--arms A,B]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "..", "workload.py")
KERNELS = 176  # kernels per eager step: 38,721 kernel records over 220 steps in ladder-4


def arms(ladder, tracer, out_dir):
    result = [("none", {})]
    for step in range(0, 9):
        result.append((f"ladder-{step}", {"CUDA_INJECTION64_PATH": ladder,
                                          "KPROF_LADDER_STEP": str(step)}))
        if step == 4:
            result.append(("ladder-4-no-subscribe", {"CUDA_INJECTION64_PATH": ladder,
                                                     "KPROF_LADDER_STEP": "4",
                                                     "KPROF_LADDER_NO_SUBSCRIBE": "1"}))
        if step == 6:
            result.append(("ladder-6-runtime-all", {"CUDA_INJECTION64_PATH": ladder,
                                                    "KPROF_LADDER_STEP": "6",
                                                    "KPROF_LADDER_RUNTIME_ALL": "1"}))
    result.append(("ladder-8-shared-buffers", {"CUDA_INJECTION64_PATH": ladder,
                                               "KPROF_LADDER_STEP": "8",
                                               "KPROF_LADDER_SHARED_BUFFERS": "1"}))
    traced = {"CUDA_INJECTION64_PATH": tracer, "NVTX_INJECTION64_PATH": tracer,
              "KPROF_TRACE_DIR": out_dir}
    result.append(("tracer", dict(traced)))
    result.append(("tracer-inactive", dict(traced, KPROF_TRACE_START="on-control",
                                           KPROF_TRACE_CONTROL=os.path.join(out_dir, "never"))))
    result.append(("tracer-no-nvtx", {k: v for k, v in traced.items()
                                      if k != "NVTX_INJECTION64_PATH"}))
    result.append(("torch-profiler-cuda", {"LADDER_PROFILER": "cuda"}))
    for name, value in os.environ.items():  # extra tracer arms: LADDER_ARM_<name>=K=V,K=V
        if name.startswith("LADDER_ARM_"):
            extra = dict(kv.split("=", 1) for kv in value.split(",") if kv)
            result.append((name[len("LADDER_ARM_"):].lower(), dict(traced, **extra)))
    return result


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ladder")
    p.add_argument("tracer")
    p.add_argument("out_dir")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--graph", action="store_true")
    p.add_argument("--arms", default="", help="comma-separated arm names (default: all)")
    args = p.parse_args()
    wanted = [a for a in args.arms.split(",") if a]

    def chosen(all_arms):
        return [(n, e) for n, e in all_arms if not wanted or n in wanted]
    ladder, tracer = os.path.realpath(args.ladder), os.path.realpath(args.tracer)
    traces = os.path.join(args.out_dir, "traces")
    os.makedirs(traces, exist_ok=True)
    base_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("KPROF_TRACE_", "KPROF_LADDER_", "LADDER_ARM_"))
                and k not in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH")}
    steps, said = {}, {}
    for r in range(args.rounds):
        for name, env in chosen(arms(ladder, tracer, traces)):
            env = dict(env)
            profiler = env.pop("LADDER_PROFILER", "none")
            cmd = [sys.executable, WORKLOAD, "--steps", str(args.steps), "--warmup",
                   str(args.warmup), "--profiler", profiler] + (["--graph"] if args.graph else [])
            run = subprocess.run(cmd, env=dict(base_env, **env), capture_output=True, text=True)
            if run.returncode != 0:
                print(f"FAIL {name} round {r}: exit {run.returncode}\n{run.stderr[-2000:]}")
                sys.exit(1)
            result = json.loads(run.stdout.strip().splitlines()[-1])
            steps.setdefault(name, []).extend(result["step_ms"])
            said[name] = [l for l in run.stderr.splitlines()
                          if l.startswith(("kprof-ladder:", "kprof-tracer:"))]
            print(f"  {name}: median {statistics.median(result['step_ms']):.3f} ms", flush=True)
    base = statistics.median(steps["none"])
    print(f"\n{'arm':26} {'median ms':>10} {'p90 ms':>8} {'ratio':>6} {'+us/launch':>10}"
          f"   ({'graph replay' if args.graph else 'eager step'}, {args.rounds} x {args.steps})")
    for name, _ in chosen(arms(ladder, tracer, traces)):
        values = sorted(steps[name])
        median = statistics.median(values)
        p90 = values[int(0.9 * (len(values) - 1))]
        print(f"{name:26} {median:10.3f} {p90:8.3f} {median / base:6.3f} "
              f"{(median - base) * 1000 / KERNELS:10.2f}")
    print("\nwhat the libraries said (last round):")
    for name, lines in said.items():
        for line in lines:
            print(f"  {name}: {line}")


if __name__ == "__main__":
    main()
