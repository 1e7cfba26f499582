#!/usr/bin/env python3
"""A fixed-shape decode step on the GPU for tools/tracer/ (overhead.py, gpu-check.sh): 16 blocks of
layer norm, QKV GEMM, attention over a KV cache, output GEMM, MLP, residual adds (bf16, batch 8):
about 200 kernels a step, launched eagerly or replayed as one CUDA graph. Each step sits in an
NVTX range "ProfilerStep#N" (what kprof budget reads from kprof's tracer; a no-op without an
NVTX injection) and, under the PyTorch profiler, in its own ProfilerStep#N.

Prints one JSON line per process: {"pid", "mode", "step_ms": [...], "median_ms"}.

usage: workload.py [--graph] [--steps N] [--warmup N] [--pause S]
                   [--profiler none|cuda|cpu_cuda] [--profiler-trace PATH.json.gz] [--profiler-first]
                   [--processes N] [--fork-child]
"""
import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--graph", action="store_true", help="replay the step as a CUDA graph")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--pause", type=float, default=0.0, help="seconds between steps")
    p.add_argument("--profiler", choices=["none", "cuda", "cpu_cuda"], default="none")
    p.add_argument("--profiler-trace", default="", help="export the PyTorch profiler's trace here")
    p.add_argument("--profiler-first", action="store_true",
                   help="start the PyTorch profiler before CUDA is initialised")
    p.add_argument("--processes", type=int, default=1, help="run N copies at once (spawned)")
    p.add_argument("--fork-child", action="store_true",
                   help="fork a child after CUDA is initialised (it exits without using CUDA)")
    return p.parse_args()


def start_profiler(args):
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CUDA]
    if args.profiler == "cpu_cuda":
        activities.insert(0, ProfilerActivity.CPU)
    profiler = profile(activities=activities)
    profiler.__enter__()
    return profiler


def run(args):
    import torch

    profiler = None
    if args.profiler != "none" and args.profiler_first:
        profiler = start_profiler(args)  # before anything touches CUDA
    torch.manual_seed(0)
    dev, dt = "cuda", torch.bfloat16
    hidden, heads, batch, context, layers = 2048, 16, 8, 512, 16

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = torch.nn.LayerNorm(hidden)
            self.norm2 = torch.nn.LayerNorm(hidden)
            self.qkv = torch.nn.Linear(hidden, 3 * hidden, bias=False)
            self.out = torch.nn.Linear(hidden, hidden, bias=False)
            self.up = torch.nn.Linear(hidden, 4 * hidden, bias=False)
            self.down = torch.nn.Linear(4 * hidden, hidden, bias=False)
            self.register_buffer("k", torch.randn(batch, heads, context, hidden // heads))
            self.register_buffer("v", torch.randn(batch, heads, context, hidden // heads))

        def forward(self, x):
            q, _, _ = self.qkv(self.norm1(x)).view(batch, 3, heads, 1, hidden // heads).unbind(1)
            a = torch.nn.functional.scaled_dot_product_attention(q, self.k, self.v)
            x = x + self.out(a.reshape(batch, hidden))
            return x + self.down(torch.nn.functional.silu(self.up(self.norm2(x))))

    model = torch.nn.Sequential(*[Block() for _ in range(layers)]).to(dev, dt).eval()
    static_x = torch.randn(batch, hidden, device=dev, dtype=dt)

    def eager():
        with torch.no_grad():
            return model(static_x)

    step = eager
    if args.graph:
        with torch.no_grad():
            for _ in range(3):
                model(static_x)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph):
            static_y = model(static_x)

        def replay():
            graph.replay()
            return static_y

        step = replay

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()

    if args.fork_child:
        child = os.fork()
        if child == 0:
            print(json.dumps({"fork_child": os.getpid()}), flush=True)
            sys.exit(0)  # exit handlers run here, in the child, as in real programs
        os.waitpid(child, 0)

    if args.profiler != "none" and not profiler:
        profiler = start_profiler(args)

    times = []
    for i in range(args.steps):
        start = time.perf_counter()
        torch.cuda.nvtx.range_push(f"ProfilerStep#{i}")
        step()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        times.append((time.perf_counter() - start) * 1000)
        if profiler:
            profiler.step()
        if args.pause:
            time.sleep(args.pause)

    if profiler:
        profiler.__exit__(None, None, None)
        if args.profiler_trace:
            profiler.export_chrome_trace(args.profiler_trace)
    mode = ("graph" if args.graph else "eager") + ("+" + args.profiler if profiler else "")
    return {"pid": os.getpid(), "mode": mode, "step_ms": [round(t, 4) for t in times],
            "median_ms": statistics.median(times)}


def child(args, queue):
    queue.put(run(args))


def main():
    args = parse()
    if args.processes <= 1:
        print(json.dumps(run(args)), flush=True)
        return
    # Spawned, not forked: each copy initialises CUDA (and loads the injection) itself.
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    procs = [context.Process(target=child, args=(args, queue)) for _ in range(args.processes)]
    for p in procs:
        p.start()
    results = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    for r in results:
        print(json.dumps(r), flush=True)
    sys.exit(max(p.exitcode for p in procs))


if __name__ == "__main__":
    main()
