#!/usr/bin/env python3
"""A Llama-shaped decode step (RMSNorm, fused QKV, attention over a KV cache, output projection,
SwiGLU MLP; 4 layers, hidden 4096, batch 8, context 2048, bf16) compiled with
torch.compile(mode="reduce-overhead"), so that each step is a CUDA-graph replay of Inductor's
Triton kernels and cuBLAS GEMMs — what a compiled serving engine runs. The workload of kprof's
fix-list fixtures (issue 32); no serving engine runs on the H200 here, so the step is rebuilt
from the Llama architecture (its kernels are real).

usage:
  compiled_decode.py trace OUT.json.gz   30 steps under the PyTorch profiler, one ProfilerStep
                                         each (decode_step inside)
  compiled_decode.py ncu                 warm-up, then one step between cudaProfilerStart and
                                         cudaProfilerStop, for
                                         ncu --profile-from-start off --graph-profiling node"""
import gzip
import os
import shutil
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

mode = sys.argv[1]
torch.manual_seed(0)
dev, dt = "cuda", torch.bfloat16
hidden, heads, kv_heads, inter, layers, batch, context = 4096, 32, 8, 14336, 4, 8, 2048
head_dim = hidden // heads


class RMSNorm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * self.weight


class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn_norm, self.mlp_norm = RMSNorm(), RMSNorm()
        self.qkv = torch.nn.Linear(hidden, (heads + 2 * kv_heads) * head_dim, bias=False)
        self.o = torch.nn.Linear(hidden, hidden, bias=False)
        self.gate_up = torch.nn.Linear(hidden, 2 * inter, bias=False)
        self.down = torch.nn.Linear(inter, hidden, bias=False)
        self.register_buffer("k", torch.randn(batch, kv_heads, context, head_dim))
        self.register_buffer("v", torch.randn(batch, kv_heads, context, head_dim))

    def forward(self, x):
        q, _, _ = self.qkv(self.attn_norm(x)).split(
            [heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], dim=-1)
        q = q.view(batch, heads, 1, head_dim)
        a = torch.nn.functional.scaled_dot_product_attention(q, self.k, self.v, enable_gqa=True)
        x = x + self.o(a.reshape(batch, hidden))
        gate, up = self.gate_up(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.down(torch.nn.functional.silu(gate) * up)


model = torch.nn.Sequential(*[Layer() for _ in range(layers)]).to(dev, dt).eval()
step = torch.compile(model, mode="reduce-overhead")
x = torch.randn(batch, hidden, device=dev, dtype=dt)
with torch.no_grad():
    for _ in range(5):
        y = step(x)
    torch.cuda.synchronize()
    if mode == "ncu":
        torch.cuda.cudart().cudaProfilerStart()
        y = step(x)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
    else:
        path = sys.argv[2].removesuffix(".gz")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     schedule=schedule(wait=1, warmup=1, active=30)) as prof:
            for _ in range(32):
                with record_function("decode_step"):
                    y = step(x)
                torch.cuda.synchronize()
                prof.step()
        prof.export_chrome_trace(path)
        with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(path)
print(f"done ({mode}): checksum {float(y.float().sum()):.3f}")
