#!/usr/bin/env python3
"""A serving engine's decode graphs, reconstructed from a transformers model (issue 40).

Engines (vLLM, SGLang) capture one CUDA graph of the model's decode forward per batch size at
start-up and replay them for the life of the server. vLLM and SGLang cannot run on the GPU
machine, so this script does what their graph runners do with a real transformers Llama (random
weights from a config, bf16; its kernels are the real ones): one torch.cuda.graph per batch bucket,
captured over the model's forward of one token per sequence against a static KV cache, then
replayed in a loop. The kernels are PyTorch's and cuBLAS's as any transformers model runs them.

NVTX at capture (--nvtx):
  layerwise   a push/pop range per nn.Module around its forward, named as vLLM's and SGLang's
              layerwise NVTX tracing names them (vllm/utils/nvtx_pytorch_hooks.py, PytHooks: the
              repr of a dict whose "Module" is the module's dotted path), plus one range per
              bucket around the capture ("cuda_graph_bs N"), as an engine's capture loop would;
  emit_nvtx   PyTorch's own operator ranges (torch.autograd.profiler.emit_nvtx: "aten::mm, seq =
              N, ...") and no module ranges;
  none        no range at all (layers must be inferred from the graph's structure).
--compile: torch.compile(mode="reduce-overhead") instead of hand-captured graphs (CUDA graph
trees; Triton kernels), no ranges.

The tracer's window is opened "well after capture": after capturing, the script sleeps --idle
seconds, then writes "start" to $KPROF_TRACE_CONTROL (when set), replays --replays rounds of
every bucket, and writes "stop". The PyTorch profiler can record the capture
(--profiler-capture PATH: the trace `kprof rank --graph-capture` reads) and the replays
(--profiler-replay PATH) instead, in a run without kprof's tracer.

Prints one JSON line: {"buckets", "layers", "mode", "cache", "capture_ms" (the wall time of
capturing every bucket's graph, warm-ups excluded; null with --compile), "replay_ms": {bs: median},
...}.
"""
import argparse
import json
import os
import statistics
import sys
import time


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--buckets", default="1,8,32", help="batch sizes captured, one graph each")
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--context", type=int, default=256, help="tokens already in the KV cache")
    p.add_argument("--nvtx", choices=["layerwise", "emit_nvtx", "none"], default="layerwise")
    p.add_argument("--compile", action="store_true", help="torch.compile reduce-overhead")
    p.add_argument("--replays", type=int, default=20, help="rounds over every bucket")
    p.add_argument("--idle", type=float, default=3.0, help="seconds between capture and window")
    p.add_argument("--profiler-capture", default="", help="PyTorch profiler trace of the capture")
    p.add_argument("--profiler-replay", default="", help="PyTorch profiler trace of the replays")
    return p.parse_args()


def control(word):
    path = os.environ.get("KPROF_TRACE_CONTROL")
    if not path:
        return
    with open(path, "w") as f:
        f.write(word + "\n")
    time.sleep(0.5)  # the tracer polls every 100 ms


class LayerwiseNvtx:
    """Forward pre/post hooks pushing one range per module, named as PytHooks names them."""

    def __init__(self, model, prefix):
        import torch

        self.nvtx = torch.cuda.nvtx
        self.names = {}
        for name, module in model.named_modules(prefix=prefix):
            self.names[module] = name
            module.register_forward_pre_hook(self.pre, with_kwargs=True)
            module.register_forward_hook(self.post)

    def marker(self, module, tensors):
        import torch

        marker = {"Module": self.names.get(module, "unknown")}
        params = {n: list(p.size()) for n, p in module.named_parameters(recurse=False)}
        if params:
            marker["TrainableParams"] = params
        shapes = [list(t.size()) for t in tensors if isinstance(t, torch.Tensor)]
        if shapes:
            marker["Inputs"] = shapes
        if isinstance(module, torch.nn.Linear):
            marker["StaticParams"] = {"in_features": module.in_features,
                                      "out_features": module.out_features}
        return "{}".format(marker)

    def pre(self, module, args, kwargs):
        self.nvtx.range_push(self.marker(module, list(args) + list(kwargs.values())))

    def post(self, module, args, output):
        self.nvtx.range_pop()


def build(args):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=args.hidden, intermediate_size=int(args.hidden * 2.75),
                         num_hidden_layers=args.layers, num_attention_heads=16,
                         num_key_value_heads=4, vocab_size=32000, max_position_embeddings=4096)
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
    return model, config


def static_cache(config, batch, length):
    import torch
    from transformers import StaticCache

    for kwargs in ({"config": config, "max_batch_size": batch, "max_cache_len": length,
                    "device": "cuda", "dtype": torch.bfloat16},
                   {"config": config, "max_cache_len": length}):
        try:
            return StaticCache(**kwargs)
        except TypeError:
            continue
    raise RuntimeError("this transformers' StaticCache takes neither signature")


def main():
    args = parse()
    import torch

    buckets = [int(b) for b in args.buckets.split(",")]
    model, config = build(args)
    hooks = LayerwiseNvtx(model, model.__class__.__name__) if args.nvtx == "layerwise" else None
    length = args.context + 8
    states = {}
    cache_kind = "static"
    for bs in buckets:
        ids = torch.randint(0, config.vocab_size, (bs, 1), device="cuda")
        position = torch.full((1,), args.context, device="cuda", dtype=torch.long)
        try:
            cache = static_cache(config, bs, length)
            call = (lambda ids=ids, cache=cache, position=position:
                    model(input_ids=ids, past_key_values=cache, cache_position=position,
                          position_ids=position.expand(ids.shape[0], 1), use_cache=True).logits)
            with torch.no_grad():
                call()
        except Exception as error:  # an older or newer transformers: no KV cache then
            print(f"static cache unusable ({error!r}): forward without a cache", file=sys.stderr)
            cache_kind = "none"
            call = lambda ids=ids: model(input_ids=ids, use_cache=False).logits  # noqa: E731
        states[bs] = call

    profiler = None
    if args.profiler_capture:
        from torch.profiler import ProfilerActivity, profile

        profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        profiler.__enter__()

    graphs = {}
    capture_ms = None  # the hand-captured graphs' capture, all buckets (not torch.compile's)
    with torch.no_grad():
        if args.compile:
            compiled = torch.compile(model, mode="reduce-overhead")
            for bs in buckets:
                call = states[bs]
                # CUDA graph trees record on the third call of a shape; call a few times.
                for _ in range(4):
                    ids = torch.randint(0, config.vocab_size, (bs, 1), device="cuda")
                    compiled(input_ids=ids, use_cache=False)
                graphs[bs] = (lambda bs=bs: compiled(
                    input_ids=torch.zeros((bs, 1), dtype=torch.long, device="cuda"),
                    use_cache=False))
        else:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for bs in buckets:
                    for _ in range(2):
                        states[bs]()  # warm-up on a side stream, as torch.cuda.graph advises
            torch.cuda.current_stream().wait_stream(stream)
            torch.cuda.synchronize()
            capture_began = time.perf_counter()
            for bs in buckets:
                graph = torch.cuda.CUDAGraph()
                if args.nvtx != "none":
                    torch.cuda.nvtx.range_push(f"cuda_graph_bs {bs}")
                if args.nvtx == "emit_nvtx":
                    with torch.autograd.profiler.emit_nvtx(record_shapes=False):
                        with torch.cuda.graph(graph):
                            states[bs]()
                else:
                    with torch.cuda.graph(graph):
                        states[bs]()
                if args.nvtx != "none":
                    torch.cuda.nvtx.range_pop()
                graphs[bs] = graph.replay
            torch.cuda.synchronize()
            capture_ms = (time.perf_counter() - capture_began) * 1e3
    torch.cuda.synchronize()
    if profiler:
        profiler.__exit__(None, None, None)
        profiler.export_chrome_trace(args.profiler_capture)

    time.sleep(args.idle)
    if args.profiler_replay:
        from torch.profiler import ProfilerActivity, profile

        profiler = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        profiler.__enter__()
    control("start")
    times = {bs: [] for bs in buckets}
    with torch.no_grad():
        for _ in range(args.replays):
            for bs in buckets:
                begin = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                begin.record()
                graphs[bs]()
                end.record()
                end.synchronize()
                times[bs].append(begin.elapsed_time(end))
    torch.cuda.synchronize()
    control("stop")
    if args.profiler_replay:
        profiler.__exit__(None, None, None)
        profiler.export_chrome_trace(args.profiler_replay)
    import transformers

    print(json.dumps({"buckets": buckets, "layers": args.layers, "hidden": args.hidden,
                      "nvtx": args.nvtx, "mode": "compile" if args.compile else "graph",
                      "cache": cache_kind, "torch": torch.__version__,
                      "transformers": transformers.__version__,
                      "capture_ms": round(capture_ms, 3) if capture_ms is not None else None,
                      "replay_ms": {bs: round(statistics.median(t), 4) for bs, t in times.items()}}))


if __name__ == "__main__":
    main()
