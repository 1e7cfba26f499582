#!/usr/bin/env python3
"""A small eager PyTorch inference step on the GPU (bf16): layer norm, QKV/MLP GEMMs, SiLU,
scaled-dot-product attention over a KV cache, residual adds — the kernel mix of a decode step —
plus a prefill-sized GEMM. Used by tools/capture/*.sh to capture a PyTorch program with each
kprof preset.

usage: python3 tools/capture/workload_decode.py [STEPS] [SECONDS_BETWEEN_STEPS]"""
import sys
import time

import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
pause = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
torch.manual_seed(0)
dev, dt = "cuda", torch.bfloat16
hidden, heads, batch, context = 4096, 32, 16, 1024
norm = torch.nn.LayerNorm(hidden).to(dev, dt)
qkv = torch.nn.Linear(hidden, 3 * hidden, bias=False).to(dev, dt)
out = torch.nn.Linear(hidden, hidden, bias=False).to(dev, dt)
up = torch.nn.Linear(hidden, 4 * hidden, bias=False).to(dev, dt)
down = torch.nn.Linear(4 * hidden, hidden, bias=False).to(dev, dt)
k_cache = torch.randn(batch, heads, context, hidden // heads, device=dev, dtype=dt)
v_cache = torch.randn_like(k_cache)
x = torch.randn(batch, hidden, device=dev, dtype=dt)
prefill = torch.randn(2048, hidden, device=dev, dtype=dt)


def step(x):
    h = norm(x)
    q, _, _ = qkv(h).view(batch, 3, heads, 1, hidden // heads).unbind(1)
    a = torch.nn.functional.scaled_dot_product_attention(q, k_cache, v_cache)
    x = x + out(a.reshape(batch, hidden))
    x = x + down(torch.nn.functional.silu(up(norm(x))))
    return x


with torch.no_grad():
    for i in range(steps):
        x = step(x)
        y = up(prefill)  # one compute-bound prefill GEMM per step
        torch.cuda.synchronize()
        if pause:
            time.sleep(pause)
print(f"done: {steps} steps, checksum {float(x.float().sum() + y.float().mean()):.3f}")
