#!/usr/bin/env python3
"""Five 8-layer batch-1 decode steps, each inside an NVTX range "decode_step", for an Nsight
Systems capture (its SQLite export is kprof's fixture for the nsys importer):
  nsys profile --trace=cuda,nvtx --sample=none --cpuctxsw=none -o decode python3 nsys_decode_steps.py
  nsys export --type sqlite -o decode.sqlite decode.nsys-rep"""
import torch

hidden, layers = 4096, 8
blocks = [torch.nn.Sequential(torch.nn.LayerNorm(hidden), torch.nn.Linear(hidden, 4 * hidden, bias=False),
                              torch.nn.SiLU(), torch.nn.Linear(4 * hidden, hidden, bias=False))
          for _ in range(layers)]
model = torch.nn.Sequential(*blocks).to("cuda", torch.bfloat16).eval()
x = torch.randn(1, hidden, device="cuda", dtype=torch.bfloat16)
with torch.no_grad():
    for _ in range(3):
        model(x)
    torch.cuda.synchronize()
    for _ in range(5):
        torch.cuda.nvtx.range_push("decode_step")
        model(x)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
