#!/usr/bin/env python3
"""Writes the small Chrome traces (PyTorch profiler's Kineto format) that reproduce the step and
idle shapes of issue 43 seen in public traces kprof may not hold (run it to rewrite them; the
files are committed):

- tp_side_stream_allgather.json: a tensor-parallel vLLM trace without engine step markers whose
  only repeated top-level annotation ("tp_all_gather") wraps one all-gather on a side stream, one
  launch per range, while the model's 8 kernels an iteration are launched outside any annotation
  and keep the device ~86 % busy. kprof took the 10 ranges for steps ("dependency-bound", busy
  24 % of their wall time); they hold 5.3 % of the GPU work launched from the first to the last,
  so the whole trace is budgeted.
- vllm_v1_sampler_between_steps.json: vLLM V1 decode steps (execute_context_0(0)_generation_8(8)),
  each an input copy behind a cudaStreamWaitEvent and a CUDA-graph replay, whose sampler (sort,
  softmax, scan, gather: 8 kernels, 1.09 ms) is launched after the step's range closes; the host
  runs ahead, so each step opens while the previous sampler still runs and its copy waits behind it.
  The device never idles more than 5 us after the first step. A sampler launched before the
  first step (the window opened mid-run) still runs when that step opens.
- copy_bound_htod.json: a device kept busy by host-to-device copies, its kernels 1 % of the time
  (the shape of nsys-ai's two-GPU export, which kprof called kernel-bound).
- cupti_buffer_drops.json: an eager loop of 5 ProfilerStep#N steps of 40 kernel launches each,
  the device kept fed (each kernel 9 us, launched every 10 us), whose profiler kept the GPU rows of
  only the first 10 kernels of each step: its buffers filled (an Nsight Systems 2025.6 export had
  24,801 of 24,944 launch calls without a GPU row, and kprof called it host-bound, "batch the
  launches"). The rows kept make the device look idle three quarters of each step.
- compile_then_run.json: a short test profiled whole, as nvFuser's gtest exports are: inputs
  filled on the device, then KernelExecutor::compileFusion (GpuLower::lower, then
  executor_utils::NVRTC) for 392 ms of host time, then the fused kernel run 5 times. kprof called
  it host-bound, "batch the launches (CUDA graphs)"; the host gap is one-time compilation.

Times are microseconds, as Kineto writes them. Host: pid 4242, tid 4242; device 0, stream 7 (and
side stream 20).
"""
import json
import os

HOST = {"pid": 4242, "tid": 4242}


class Trace:
    def __init__(self):
        self.events = []
        self.correlation = 100

    def runtime(self, name, ts, dur, launches=True):
        event = dict(ph="X", cat="cuda_runtime", name=name, ts=round(ts, 3), dur=dur, **HOST)
        if launches:
            self.correlation += 1
            event["args"] = {"correlation": self.correlation}
        else:
            event["args"] = {}
        self.events.append(event)
        return self.correlation

    def gpu(self, cat, name, ts, dur, correlation, stream=7):
        self.events.append(dict(ph="X", cat=cat, name=name, pid=0, tid=stream, ts=round(ts, 3),
                                dur=dur, args={"device": 0, "stream": stream,
                                               "correlation": correlation}))

    def annotation(self, name, ts, dur):
        self.events.append(dict(ph="X", cat="user_annotation", name=name, ts=round(ts, 3),
                                dur=dur, **HOST))

    def write(self, path):
        # One event a line: small, and a reviewer reads the timeline top to bottom.
        with open(path, "w") as f:
            f.write('{"schemaVersion": 1, "traceEvents": [\n')
            f.write(",\n".join(json.dumps(e, separators=(",", ":")) for e in self.events))
            f.write("\n]}\n")


def tp_side_stream_allgather(path):
    t = Trace()
    host = 1000.0
    gpu_free = 1000.0  # when stream 7 has run everything launched so far
    for iteration in range(10):
        for k in range(8):
            corr = t.runtime("cudaLaunchKernel", host, 5)
            start = max(gpu_free + 1, host + 5 + 3)
            t.gpu("kernel", f"layer_{k % 8}_gemm_kernel", start, 30, corr)
            gpu_free = start + 30
            host += 8
            if k == 3:
                # The side stream waits for the main stream's 4th kernel, then gathers.
                t.annotation("tp_all_gather", host, 20)
                t.runtime("cudaStreamWaitEvent", host + 1, 2, launches=False)
                corr = t.runtime("cudaLaunchKernel", host + 4, 5)
                t.gpu("kernel", "ncclDevKernel_AllGather_RING_LL", gpu_free, 12, corr, stream=20)
                host += 22
        # The host waits for the iteration's results, then prepares the next one.
        t.runtime("cudaStreamSynchronize", host, gpu_free - host + 2, launches=False)
        host = gpu_free + 2 + 28
    t.write(path)


SAMPLER = ["at::native::radixSortKVInPlace", "softmax_warp_forward",
           "at_cuda_detail::cub::DeviceScanKernel", "at::native::gather_kernel"]
PERIOD = 1352.0  # the device's time per step: copy, graph replay, sampler, 5 us apart
LAG = 916.0      # the host opens a step this long before the device starts it


def sampler(t, host_start, gpu_start):
    """8 sampler kernels launched from host_start, run on the device from gpu_start (1,087 us)."""
    for i in range(8):
        corr = t.runtime("cudaLaunchKernel", host_start + 20 * i, 4)
        t.gpu("kernel", SAMPLER[i % 4], gpu_start + 137 * i, 128, corr)


def vllm_v1_sampler_between_steps(path):
    t = Trace()
    first_gpu = 2000.0
    # The sampler of a step before the window, still running when the first step opens.
    sampler(t, first_gpu - LAG - 680, first_gpu - PERIOD + 256)
    for step in range(6):
        gpu = first_gpu + step * PERIOD
        host = gpu - LAG
        t.annotation("execute_context_0(0)_generation_8(8)", host, 400)
        t.runtime("cudaStreamWaitEvent", host + 5, 2, launches=False)
        corr = t.runtime("cudaMemcpyAsync", host + 10, 6)
        t.gpu("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", gpu, 5, corr)
        corr = t.runtime("cudaGraphLaunch", host + 300, 40)
        for j in range(8):
            t.gpu("kernel", f"decode_layer_{j % 4}_kernel", gpu + 6 + 31 * j, 30, corr)
        # After the range closes: the sampler, run after the graph's last kernel.
        sampler(t, host + 410, gpu + 256)
    t.write(path)


def copy_bound_htod(path):
    """A whole trace whose device is busy with host-to-device copies from pageable memory: 12
    copies of 4 ms, each followed by a 30 us kernel that uses its data (nsys-ai's two-GPU
    export: 450 HtoD copies, 1,841.6 ms of 1,926 ms busy, kernels alone 2.3 %)."""
    t = Trace()
    host = 1000.0
    gpu_free = 1000.0
    for i in range(12):
        corr = t.runtime("cudaMemcpyAsync", host, 4)
        start = max(gpu_free + 2, host + 6)
        t.gpu("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", start, 4000, corr)
        gpu_free = start + 4000
        corr = t.runtime("cudaLaunchKernel", host + 10, 5)
        t.gpu("kernel", "embedding_lookup_kernel", gpu_free + 3, 30, corr)
        gpu_free += 33
        host += 40
    t.write(path)


def cupti_buffer_drops(path):
    t = Trace()
    host = 1000.0
    for step in range(5):
        t.annotation(f"ProfilerStep#{step}", host, 40 * 10 + 20)
        gpu = host + 15
        for k in range(40):
            corr = t.runtime("cudaLaunchKernel", host + 2 + 10 * k, 4)
            if k < 10:  # the rest of the step's rows were lost with the profiler's buffers
                t.gpu("kernel", f"decoder_kernel_{k % 5}", gpu + 10 * k, 9, corr)
        host += 40 * 10 + 30
    t.write(path)


def compile_then_run(path):
    t = Trace()
    host = 1000.0
    for i in range(3):  # the inputs, filled on the device
        corr = t.runtime("cudaLaunchKernel", host, 5)
        t.gpu("kernel", "at::native::vectorized_elementwise_kernel<4, FillFunctor>", host + 8, 12,
              corr)
        host += 20
    compile_start = host + 10
    t.annotation("KernelExecutor::compileFusion", compile_start, 392_900)
    t.annotation("GpuLower::lower", compile_start + 100, 13_700)
    t.annotation("executor_utils::NVRTC", compile_start + 14_000, 352_100)
    host = compile_start + 392_900 + 50
    for i in range(5):
        corr = t.runtime("cudaLaunchKernel", host, 6)
        t.gpu("kernel", "nvfuser_none_f0_c0_r0_g0", host + 10, 240, corr)
        host += 300
    t.write(path)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    tp_side_stream_allgather(os.path.join(here, "tp_side_stream_allgather.json"))
    vllm_v1_sampler_between_steps(os.path.join(here, "vllm_v1_sampler_between_steps.json"))
    copy_bound_htod(os.path.join(here, "copy_bound_htod.json"))
    cupti_buffer_drops(os.path.join(here, "cupti_buffer_drops.json"))
    compile_then_run(os.path.join(here, "compile_then_run.json"))
