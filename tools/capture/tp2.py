#!/usr/bin/env python3
"""A tensor-parallel-shaped program for multi-GPU capture checks (issue 19): two processes
(torch.multiprocessing spawn), one GPU each, each step a bf16 GEMM then an NCCL all-reduce of
its result, as a TP=2 decode layer does. NVLink multicast (NVLS) is turned off, as the device
notes ask. Under ncu with --target-processes all, replaying the all-reduce in one rank while the
other is held deadlocks (data/h200/ncu-outputs/tp2_nccl_hang.*).

usage: tp2.py [STEPS]
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, world, steps):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    x = torch.randn(256, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    for _ in range(steps):
        y = x @ w
        dist.all_reduce(y)
        x = y[:, :4096] * 1e-3
    torch.cuda.synchronize()
    dist.destroy_process_group()
    print(f"rank {rank}: {steps} steps done", file=sys.stderr)


if __name__ == "__main__":
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    mp.spawn(rank_main, args=(2, steps), nprocs=2, join=True)
