#!/usr/bin/env python3
"""What the vendor's libraries reach on this GPU, for comparing kprof calibrate's ceilings with
(issue 32): cuBLAS (through torch.matmul) BF16 and FP16 GEMMs, an FP8 GEMM through
torch._scaled_mm (cuBLASLt), at sizes 4096..16384, and a plain device-to-device tensor copy at
several sizes. Best of 20 timed repeats after warm-up, timed with CUDA events. Prints JSON."""
import json

import torch

results = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "gemm": [], "copy": []}


def best_ms(fn, repeats=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        best = min(best, s.elapsed_time(e))
    return best


for n in (4096, 8192, 16384):
    for name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        a = torch.randn(n, n, device="cuda", dtype=dt)
        b = torch.randn(n, n, device="cuda", dtype=dt)
        ms = best_ms(lambda: a @ b)
        results["gemm"].append({"dtype": name, "n": n, "ms": ms, "tflops": 2 * n**3 / ms / 1e9})
    try:
        a8 = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
        b8 = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device="cuda")
        ms = best_ms(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one,
                                              out_dtype=torch.bfloat16))
        results["gemm"].append({"dtype": "fp8_e4m3", "n": n, "ms": ms,
                                "tflops": 2 * n**3 / ms / 1e9})
    except Exception as error:  # noqa: BLE001 - recorded, not fatal
        results["gemm"].append({"dtype": "fp8_e4m3", "n": n, "error": str(error)[:200]})
for mib in (256, 1024, 4096):
    src = torch.empty(mib << 20, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    ms = best_ms(lambda: dst.copy_(src))
    # A copy reads and writes each byte: 2 × size over the time.
    results["copy"].append({"mib": mib, "ms": ms, "tb_per_s": 2 * (mib << 20) / ms / 1e9})
print(json.dumps(results, indent=1))
