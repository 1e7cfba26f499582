#!/usr/bin/env python3
"""Before/after traces of one kernel fix, for `kprof diff --predicted` (issue 32): a step of one
memory-bound Triton kernel (scale_rows: 8192 x 4096 BF16 rows scaled, 64 MiB read and written)
followed by 300 tiny launches (a decode step's small kernels). Before the fix scale_rows walks
each row 32 elements at a time with one warp; after, 4096 at a time with eight warps: the same
kernel, the same grid, a faster launch configuration.

Recorded two ways, 10 profiler steps each:
  eager  one launch per kernel: the host takes longer to issue the 300 launches than the GPU
         to run them, so the step is host-bound and a faster scale_rows leaves it as it was —
         the "kernel improved, step did not" case;
  graph  the step captured as a CUDA graph and replayed: the step is the GPU's time, and the
         kernel's gain reaches it.

usage:
  predicted_vs_realised.py trace OUT_DIR   writes OUT_DIR/pvr_{eager,graph}_{before,after}.json.gz
  predicted_vs_realised.py ncu             warm-up, then the 'before' step once between
                                           cudaProfilerStart/Stop (ncu --profile-from-start off)"""
import gzip
import os
import shutil
import sys

import torch
import triton
import triton.language as tl
from torch.profiler import ProfilerActivity, profile, record_function, schedule


@triton.jit
def scale_rows(x_ptr, out_ptr, scale, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < cols
        x = tl.load(x_ptr + row * cols + offs, mask=mask)
        tl.store(out_ptr + row * cols + offs, x * scale, mask=mask)


rows, cols = 8192, 4096
x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
out = torch.empty_like(x)
small = torch.zeros(256, device="cuda")
CONFIGS = {"before": (32, 1), "after": (4096, 8)}  # (BLOCK, num_warps)


def step(variant):
    block, warps = CONFIGS[variant]
    scale_rows[(rows,)](x, out, 0.5, cols, BLOCK=block, num_warps=warps)
    for _ in range(300):
        small.add_(1.0)


def record(fn, path):
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=1, warmup=1, active=10)) as prof:
        for _ in range(12):
            with record_function("decode_step"):
                fn()
            torch.cuda.synchronize()
            prof.step()
    raw = path.removesuffix(".gz")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as src, gzip.open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(raw)
    print("wrote", path)


mode = sys.argv[1]
for variant in CONFIGS:
    for _ in range(3):
        step(variant)
torch.cuda.synchronize()
if mode == "ncu":
    torch.cuda.cudart().cudaProfilerStart()
    step("before")
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
else:
    out_dir = sys.argv[2]
    graphs = {}
    for variant in CONFIGS:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step(variant)
        graphs[variant] = graph
    for variant in CONFIGS:
        record(lambda v=variant: step(v), os.path.join(out_dir, f"pvr_eager_{variant}.json.gz"))
        record(graphs[variant].replay, os.path.join(out_dir, f"pvr_graph_{variant}.json.gz"))
print("done:", mode, float(out.float().sum()), float(small.sum()))
