#!/usr/bin/env python3
"""Records two PyTorch profiler traces of the same 8-layer decode step at batch 1 on a GPU:
eager (one launch per kernel) and replayed as a CUDA graph (one launch per step). kprof budget
calls the eager one host-bound; the graph one keeps its GPU span 99.5 % busy, and is mixed over
its wall span, which holds the host's work before each replay (docs/budget.md).

usage: python3 tools/traces/decode_step_traces.py OUT_DIR
writes OUT_DIR/budget_eager_decode.json.gz and OUT_DIR/budget_graph_decode.json.gz, and
OUT_DIR/budget_eager_decode_modules.json.gz: the eager step again with Python stacks, nn.Module
paths and input shapes recorded (with_stack, with_modules, record_shapes), for per-op and
per-module attribution"""
import gzip
import os
import shutil
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

out_dir = sys.argv[1]
torch.manual_seed(0)
device = "cuda"
hidden, layers, batch = 4096, 8, 1


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(hidden)
        self.up = torch.nn.Linear(hidden, 4 * hidden, bias=False)
        self.down = torch.nn.Linear(4 * hidden, hidden, bias=False)

    def forward(self, x):
        return x + self.down(torch.nn.functional.silu(self.up(self.norm(x))))


model = torch.nn.Sequential(*[Block() for _ in range(layers)]).to(device, torch.bfloat16).eval()
static_x = torch.randn(batch, hidden, device=device, dtype=torch.bfloat16)


def eager_step():
    with torch.no_grad():
        return model(static_x)


# Capture the same step as a CUDA graph.
with torch.no_grad():
    for _ in range(3):
        model(static_x)
torch.cuda.synchronize()
graph = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(graph):
    static_y = model(static_x)


def graph_step():
    graph.replay()
    return static_y


def record(step, name, stacks=False):
    path = os.path.join(out_dir, name)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=1, warmup=1, active=5),
                 record_shapes=stacks, with_stack=stacks, with_modules=stacks) as prof:
        for _ in range(7):
            with record_function("decode_step"):
                step()
            torch.cuda.synchronize()
            prof.step()
    prof.export_chrome_trace(path)
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)
    print("wrote", path + ".gz")


for _ in range(5):
    eager_step()
    graph_step()
torch.cuda.synchronize()
record(eager_step, "budget_eager_decode.json")
record(graph_step, "budget_graph_decode.json")
record(eager_step, "budget_eager_decode_modules.json", stacks=True)
