#!/usr/bin/env python3
"""The shapes of engine traces kprof's budget and op attribution must get right, recorded with
real CUDA work (issue 29):

  dependency  5 steps of SGLang's overlap shape: a long kernel on one stream, an event recorded
              after it, a second stream that waits for the event and gets the step's launches,
              and a blocking copy on the second stream the host sits in. The device idles
              while the host is blocked: a dependency wait, not a host gap.
  capture     a CUDA-graph capture of an 8-layer decode block, then 5 steps that replay it
              (torch.cuda.graph): the capture's launches run nothing; each replay is one
              cudaGraphLaunch.

usage: waits_and_graphs.py dependency|capture OUT.json.gz   (PyTorch profiler, with
         _ExperimentalConfig(enable_cuda_sync_events=True): stream waits as cuda_sync events)
       waits_and_graphs.py dependency|capture --nvtx          (for nsys; NVTX range per step)"""
import gzip
import os
import shutil
import sys

import torch
from torch.profiler import ProfilerActivity, _ExperimentalConfig, profile, record_function

shape, target = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
dev, dt = "cuda", torch.bfloat16
hidden = 4096
side = torch.cuda.Stream()
a = torch.randn(8192, 8192, device=dev, dtype=dt)
small = torch.randn(64, hidden, device=dev, dtype=dt)
w = torch.randn(hidden, hidden, device=dev, dtype=dt)
blocks = torch.nn.Sequential(*[torch.nn.Sequential(
    torch.nn.LayerNorm(hidden), torch.nn.Linear(hidden, 4 * hidden, bias=False), torch.nn.SiLU(),
    torch.nn.Linear(4 * hidden, hidden, bias=False)) for _ in range(8)]).to(dev, dt).eval()
static_x = torch.randn(1, hidden, device=dev, dtype=dt)
graph = torch.cuda.CUDAGraph()


def dependency_step():
    done = torch.cuda.Event()
    # The previous step's work: long GEMMs on the default stream (tens of ms).
    for _ in range(40):
        b = a @ a
    done.record()
    with torch.cuda.stream(side):
        side.wait_event(done)
        y = small @ w
        y = torch.nn.functional.silu(y)
        value = y.sum().item()  # a blocking copy on the waiting stream
    return value + float(b[0, 0])


def capture():
    with torch.no_grad():
        for _ in range(3):
            blocks(static_x)
        torch.cuda.synchronize()
        with torch.cuda.graph(graph):
            blocks(static_x)
    torch.cuda.synchronize()


def replay_step():
    graph.replay()
    torch.cuda.synchronize()


def steps(nvtx):
    for i in range(5):
        name = "dependency_step" if shape == "dependency" else "replay_step"
        if nvtx:
            torch.cuda.nvtx.range_push(name)
        with record_function(name):
            dependency_step() if shape == "dependency" else replay_step()
        if nvtx:
            torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()


dependency_step()  # warm-up: cuBLAS handles, kernels loaded
torch.cuda.synchronize()
if target == "--nvtx":
    if shape == "capture":
        torch.cuda.nvtx.range_push("graph_capture")
        capture()
        torch.cuda.nvtx.range_pop()
    steps(True)
else:
    path = target.removesuffix(".gz")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 experimental_config=_ExperimentalConfig(enable_cuda_sync_events=True)) as prof:
        if shape == "capture":
            with record_function("graph_capture"):
                capture()
        steps(False)
    prof.export_chrome_trace(path)
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
print("done", shape, target)
