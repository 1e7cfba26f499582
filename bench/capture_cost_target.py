#!/usr/bin/env python3
"""The target of bench/capture-cost.sh: holds RESIDENT_GB of device memory (allocated and
written, as a serving engine's KV cache is), then launches one small elementwise add (4 MB) and
one bf16 GEMM (4096^3), each once, and exits. Under ncu each profiled kernel's replay passes
save and restore the device memory it may touch; this program shows how that cost grows with
what else the process holds.

usage: capture_cost_target.py RESIDENT_GB
"""
import sys
import time

import torch

resident_gb = float(sys.argv[1])
start = time.time()
held = []
left = int(resident_gb * (1 << 30))
while left > 0:  # 4 GB chunks: one huge allocation can fail where chunks succeed
    n = min(left, 4 << 30)
    t = torch.empty(n, dtype=torch.uint8, device="cuda")
    t.fill_(1)  # resident and written (a fill kernel, not matched by the capture's filter)
    held.append(t)
    left -= n
torch.cuda.synchronize()
a = torch.ones(1 << 20, device="cuda")
b = torch.ones(1 << 20, device="cuda")
x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
y = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
c = a + b              # the elementwise kernel (CUDAFunctor_add)
z = x @ y              # the GEMM (nvjet / cutlass / xmma)
torch.cuda.synchronize()
print(f"resident {resident_gb} GB, {time.time() - start:.1f} s", file=sys.stderr)
