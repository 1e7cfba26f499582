#!/usr/bin/env python3
"""A capture target shaped like a serving engine's profiling window (issue 13), for
`tools/capture/gpu-check.sh`-style runs of `kprof capture --range cuda-profiler-api`,
`--nvtx-include` and `--graph-profiling` on a GPU machine with PyTorch.

  window  model "initialisation" (40 GEMMs and fills), then cudaProfilerStart, an NVTX range
          "decode" (mul + softmax) and a range "other" (tanh), cudaProfilerStop, then more
          kernels (relu) that must not be profiled
  never   the same without cudaProfilerStart: a window that never opens
  eager   a small decode step (layernorm, GEMM, gelu, softmax) warmed up, then run once inside
          an NVTX range "step"
  graph   the same step captured as a CUDA graph (torch.cuda.CUDAGraph) and replayed once
          inside "step": the kernels ncu sees are graph nodes

usage: window_target.py window|never|eager|graph
"""
import sys

import torch

mode = sys.argv[1]
nvtx = torch.cuda.nvtx
x = torch.randn(1024, 1024, device="cuda")

if mode in ("window", "never"):
    for _ in range(20):  # "model initialisation": what --range keeps out of the capture
        w = torch.randn(1024, 1024, device="cuda")
        x = torch.nn.functional.normalize(x @ w, dim=1)
    torch.cuda.synchronize()
    if mode == "window":
        torch.cuda.profiler.start()  # cudaProfilerStart
    nvtx.range_push("decode")
    y = torch.softmax(x * 2.0, dim=1)
    nvtx.range_pop()
    nvtx.range_push("other")
    z = torch.tanh(y)
    nvtx.range_pop()
    torch.cuda.synchronize()
    if mode == "window":
        torch.cuda.profiler.stop()  # cudaProfilerStop
    torch.relu(z)
    torch.cuda.synchronize()
elif mode in ("eager", "graph"):
    norm = torch.nn.LayerNorm(1024).cuda()
    lin = torch.nn.Linear(1024, 4096).cuda()
    inp = torch.randn(64, 1024, device="cuda")

    def step():
        return torch.softmax(torch.nn.functional.gelu(lin(norm(inp))), dim=-1)

    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        if mode == "graph":
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = step()
            torch.cuda.synchronize()
            nvtx.range_push("step")
            graph.replay()
            nvtx.range_pop()
        else:
            nvtx.range_push("step")
            out = step()
            nvtx.range_pop()
        torch.cuda.synchronize()
else:
    sys.exit(f"unknown mode {mode}")
print(f"window_target {mode}: done", file=sys.stderr)
