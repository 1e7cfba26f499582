#!/usr/bin/env python3
"""Writes tracer_graph_nodes.json: a trace shaped as kprof's tracer writes one (libkprof_tracer.so,
kprof.trace/1) whose closing "kprof" object carries the graph node table of issue 40
(docs/tracer.md, "graph_nodes"), and tracer_graph_nodes.truth.json: what the generator built, and
so what every attribution of the trace must find — derived here from the construction, never from
kprof's output; and tracer_graph_nodes_bad_table.json, the same trace whose table breaks its
format (a row's kernel index points past the kernel list). Run it to rewrite them (they are
committed).

The process (pid 4242, one thread) captured a decoder as CUDA graphs, as a serving engine does at
start-up, then replayed them; the trace's window holds the replays only:

- graphs 1, 2, 3: the decoder captured at batch 1, 8 and 64: an input copy and an embedding copy,
  4 layers of 11 kernels (the kernels, names and launch configurations of
  data/h200/compiled_decode_full.ncu-rep.zst's torch.compile decode layer: two norms, the QKV,
  O, gate-up and down GEMMs with their split-K reductions, cuDNN SDPA and its reduction, SiLU),
  then the final norm and the LM head. Captured under NVTX ranges:
    batch 1 and 8: a batch range ("cuda_graph_bs 1", "CUDAGraph bs 8"), the module ranges of vLLM's
      and SGLang's layerwise NVTX hooks (PytHooks: "{'Module': 'model.layers.2.self_attn', …}",
      one per nn.Module, nested), and the operator ranges of torch.autograd.profiler.emit_nvtx
      ("aten::mm, seq = 12, op_id = …, sizes = […]");
    batch 64: "batch_size=64", torch.cuda.nvtx.range names ("layer 2", "self_attn") and the same
      operator ranges.
- graph 4: the same decoder captured with no range open at all: its 4 layers must be inferred from
  the repetition of its 11-kernel sequence (prologue 2, epilogue 2).
- graph 5: a 3-kernel sampler graph, no range, no repetition; the tracer did not keep its third
  node's row (over its memory bound), only the clone pair: that kernel's replays are not placed.

Instantiation cloned every node: replayed records carry the clone's id (graph 2's were cloned
twice: instantiation, then an exec update), graph 4's replays carry the captured ids themselves,
and records name the executable graph (id + 100), not the captured one. The LM head of batch 64
is missing from the table and its clones (over the bound): not in the table. Graph 5's replays
also run a kernel whose id is a clone of a clone of itself (a cycle): not placed. Between replays
the sampler runs eagerly (cudaLaunchKernel) inside an NVTX range "sampler"; every step is a
ProfilerStep#N annotation.
"""
import json
import os
import random
import re

HERE = os.path.dirname(os.path.abspath(__file__))
PID = 4242
LAYERS = 4
NO_OP, NO_MODULE, NO_RANGE = "(no operator)", "(no module)", "(no range)"

# The kernels: the name the driver gives (the table's), the name a kernel record carries, the
# name kprof compares (normalised: return type and parameters dropped), grid, block.
SPLITK = ("_ZN8cublasLt19splitKreduce_kernelILi32ELi16Eif13__nv_bfloat16fS1_Lb0EfS1_S1_Lb1ELb0ELb0"
          "ELb0EEEvNS_18cublasSplitKParamsIT4_EEPKT2_PKT8_PT7_PT3_PKS3_SG_PKT9_S7_PSH_PvlPS3_PiSM_SM_"
          "SG_SG_SG_SG_SG_",
          "void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, "
          "__nv_bfloat16, false, float, __nv_bfloat16, __nv_bfloat16, true, false, false, false>"
          "(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, float*, "
          "__nv_bfloat16*, float const*, float const*, __nv_bfloat16 const*, float const*, "
          "__nv_bfloat16*, void*, long, float*, int*, float*, float*, float const*, float const*, "
          "float const*, float const*, float const*)",
          "cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, "
          "false, float, __nv_bfloat16, __nv_bfloat16, true, false, false, false>",
          (128, 1, 1), (32, 16, 1))
LEAN = ("_ZN5cudnn6fusion21lean_reduction_kernelILb0ELb0ELb0EEEvPvPfS3_S3_S3_PKfS3_S3_S3_S3_S3_jjjjj"
        "jjjjjjjjjjjjjjjb",
        "void cudnn::fusion::lean_reduction_kernel<false, false, false>(void*, float*, float*, "
        "float*, float*, float const*, float*, float*, float*, float*, float*, unsigned int, "
        "unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
        "unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
        "unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, "
        "unsigned int, bool)",
        "cudnn::fusion::lean_reduction_kernel<false, false, false>", (1, 32, 8), (256, 1, 1))
COPY = ("_ZN2at6native55_GLOBAL__N__d25d856e_22_ForeachBinaryOpList_cu_a911ec4325multi_tensor_apply_"
        "kernelINS1_18TensorListMetadataILi2EEENS1_14UnaryOpFunctorIN3c108BFloat16ELi2ELi1ELi1EEEJNS0_"
        "4CopyIS7_S7_EEEEEvT_T0_DpT1_",
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
        "namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::UnaryOpFunctor<"
        "c10::BFloat16, 2, 1, 1>, at::native::Copy<c10::BFloat16, c10::BFloat16> >(at::native::"
        "(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::"
        "UnaryOpFunctor<c10::BFloat16, 2, 1, 1>, at::native::Copy<c10::BFloat16, c10::BFloat16>)",
        "at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
        "namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::UnaryOpFunctor<"
        "c10::BFloat16, 2, 1, 1>, at::native::Copy<c10::BFloat16, c10::BFloat16> >",
        (1, 1, 1), (512, 1, 1))


def plain(name, grid, block):
    return (name, name, name, grid, block)


NORM = plain("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", (8, 1, 1), (512, 1, 1))
QKV = plain("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", (4, 24, 1), (384, 1, 1))
SDPA = plain("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x128_1x4x1_"
             "cga1x1x1_kernel0_0", (4, 8, 8), (128, 1, 1))
O_PROJ = plain("nvjet_sm90_tst_64x8_64x16_2x1_v_bx_splitK_TNT", (2, 64, 1), (384, 1, 1))
GATE_UP = plain("nvjet_sm90_tst_128x8_64x12_2x1_v_bz_TNT", (2, 66, 1), (384, 1, 1))
SILU = plain("triton_poi_fused_mul_silu_split_1", (112, 1, 1), (128, 1, 1))
DOWN = plain("nvjet_sm90_tst_128x8_64x12_2x1_v_bx_splitK_TNT", (2, 64, 1), (384, 1, 1))
LM_HEAD = plain("nvjet_sm90_tst_256x8_64x8_2x1_v_bz_TNT", (64, 4, 1), (384, 1, 1))
MEMCPY = ("[memcpy]", "Memcpy DtoD (Device -> Device)", "Memcpy DtoD (Device -> Device)", (0, 0, 0),
          (0, 0, 0))
TOPK = plain("topk_kernel", (8, 1, 1), (256, 1, 1))
SOFTMAX = plain("softmax_kernel", (8, 1, 1), (256, 1, 1))
ARGMAX = plain("argmax_kernel", (8, 1, 1), (256, 1, 1))

# A layer: (kernel, module below the layer, operator range, base duration us).
LAYER = [
    (NORM, "input_layernorm", "_C::rms_norm", 3.1),
    (QKV, "self_attn.qkv_proj", "aten::mm", 17.6),
    (SDPA, "self_attn.attn", "aten::_cudnn_attention_forward", 22.2),
    (LEAN, "self_attn.attn", "aten::_cudnn_attention_forward", 3.6),
    (O_PROJ, "self_attn.o_proj", "aten::mm", 15.9),
    (SPLITK, "self_attn.o_proj", "aten::mm", 3.7),
    (NORM, "post_attention_layernorm", "_C::fused_add_rms_norm", 3.2),
    (GATE_UP, "mlp.gate_up_proj", "aten::mm", 57.3),
    (SILU, "mlp.act_fn", "_C::silu_and_mul", 2.6),
    (DOWN, "mlp.down_proj", "aten::mm", 31.6),
    (SPLITK, "mlp.down_proj", "aten::mm", 3.7),
]
PROLOGUE = [(MEMCPY, None, None, 1.2), (COPY, "embed_tokens", "aten::index_select", 8.3)]
EPILOGUE = [(NORM, "norm", "_C::rms_norm", 3.1), (LM_HEAD, "lm_head", "aten::mm", 40.5)]


def stages():
    with open(os.path.join(HERE, "..", "..", "..", "data", "stages.json")) as f:
        return json.load(f)["rules"]


def operation_class(kernel, rules):
    """The part's class: "memcpy" for a copy node, else the first rule of the stage table
    (data/stages.json, case-insensitive, as kprof documents it) matching the kernel's name."""
    if kernel is MEMCPY:
        return "memcpy"
    for rule in rules:
        if re.search(rule["regex"], kernel[2], re.IGNORECASE):
            return rule["stage"]
    return "other"


class Graph:
    """One captured graph: its nodes in capture order, each with the ranges open, and what each
    view must name it (the truth)."""

    def __init__(self, graph_id, batch_range, style):
        self.id = graph_id
        self.batch_range = batch_range
        self.style = style  # "pyt_hooks", "plain" or None (no range)
        self.nodes = []  # dicts: kernel, ranges, truth {op, module, range, placement}


def module_range(path, batch):
    return "{'Module': '%s', 'Inputs': [[%d, 4096]]}" % (path, batch)


def op_range(op, seq):
    return "%s, seq = %d, op_id = %d, sizes = [[8, 4096], [4096, 6144]]" % (op, seq, seq + 1000)


def decoder(graph_id, batch, batch_range, style, rules):
    g = Graph(graph_id, batch_range, style)
    parts = [("prologue", k) for k in PROLOGUE]
    for layer in range(LAYERS):
        parts += [(layer, k) for k in LAYER]
    parts += [("epilogue", k) for k in EPILOGUE]
    period = len(LAYER)
    for position, (where, (kernel, module, op, base)) in enumerate(parts):
        ranges, truth = [], {}
        if batch_range:
            ranges.append(batch_range)
        if style is None:
            # No range: layer and part inferred from the repetition (a prologue of 2, 4 layers
            # of 11, an epilogue of 2: the period starts where the layers do).
            cls = operation_class(kernel, rules)
            if where in ("prologue", "epilogue"):
                part = "%s (%s)" % (where, cls)
                truth = {"op": part, "module": where, "range": part, "placement": "inferred"}
            else:
                k = (position - len(PROLOGUE)) % period + 1
                part = "part %d/%d (%s)" % (k, period, cls)
                truth = {"op": part, "module": "layer %d" % where,
                         "range": "layer %d / %s" % (where, part), "placement": "inferred"}
        elif module is None:
            # The input copy: captured under the batch range alone, nothing names it.
            truth = {"op": NO_OP, "module": NO_MODULE, "range": NO_RANGE, "placement": "no context"}
        else:
            if where in ("prologue", "epilogue"):
                path = module if module == "lm_head" else "model." + module
            else:
                path = "model.layers.%d.%s" % (where, module)
            if style == "pyt_hooks":
                # One range per module on the path, as the hooks nest them; the nn.ModuleList
                # "model.layers" runs no forward of its own, so it opens none.
                pieces = path.split(".")
                labels = [".".join(pieces[:i]) for i in range(1, len(pieces) + 1)]
                labels = [label for label in labels if label != "model.layers"]
                ranges += [module_range(label, batch) for label in labels]
                module_truth = path
            else:
                if where in ("prologue", "epilogue"):
                    labels = [module]
                else:
                    labels = ["layer %d" % where] + module.split(".")
                ranges += labels
                module_truth = "/".join(labels)
            ranges.append(op_range(op, position))
            full = ([batch_range] if batch_range else []) + labels + [op]
            truth = {"op": op, "module": module_truth, "range": " / ".join(full),
                     "placement": "ranges"}
        g.nodes.append({"kernel": kernel, "ranges": ranges, "truth": truth, "base": base,
                        "position": position})
    if style is None:
        g.layers = {"from": "structure", "count": LAYERS, "kernels_per_layer": period,
                    "prologue_nodes": len(PROLOGUE), "epilogue_nodes": len(EPILOGUE)}
    else:
        g.layers = {"from": "ranges", "count": LAYERS}
    g.batch = batch if batch_range else None
    return g


def sampler_graph(graph_id):
    g = Graph(graph_id, None, None)
    for position, (kernel, base) in enumerate([(TOPK, 4.0), (SOFTMAX, 2.5), (ARGMAX, 1.5)]):
        truth = {"op": NO_OP, "module": NO_MODULE, "range": NO_RANGE, "placement": "no context"}
        g.nodes.append({"kernel": kernel, "ranges": [], "truth": truth, "base": base,
                        "position": position})
    g.layers = None
    g.batch = None
    return g


def main():
    rules = stages()
    graphs = [
        decoder(1, 1, "cuda_graph_bs 1", "pyt_hooks", rules),
        decoder(2, 8, "CUDAGraph bs 8", "pyt_hooks", rules),
        decoder(3, 64, "batch_size=64", "plain", rules),
        decoder(4, None, None, None, rules),
        sampler_graph(5),
    ]
    scale = {1: 1.0, 2: 1.3, 3: 2.2, 4: 1.3, 5: 1.0}

    # Node ids: CUPTI's, graph << 32 | position + 1; clones at instantiation (graph + 100) << 32,
    # an exec update's (graph + 200) << 32.
    def node_id(graph, position, generation=0):
        return ((graph + 100 * generation) << 32) | (position + 1)

    rows, kernels, kernel_index, stacks, stack_index, ranges, range_index, clones = \
        [], [], {}, [[]], {(): 0}, [], {}, []
    replay_ids = {}  # (graph, position) -> the id replayed records carry (None: no record)
    missing = {(3, len(graphs[2].nodes) - 1): "not in table",  # batch 64's LM head
               (5, 2): "not placed"}  # the sampler graph's third node: row lost, clone kept
    counts = {"kernel_nodes": 0, "copy_nodes": 0, "other_nodes": 0, "not_kept": 0, "unnamed": 0,
              "ranges_cut": 0, "clones_not_kept": 0}
    for g in graphs:
        for node in g.nodes:
            kernel = node["kernel"]
            counts["copy_nodes" if kernel is MEMCPY else "kernel_nodes"] += 1
            key = (g.id, node["position"])
            original = node_id(g.id, node["position"])
            clone = node_id(g.id, node["position"], 1)
            if missing.get(key) == "not in table":
                counts["not_kept"] += 1
                counts["clones_not_kept"] += 1
                replay_ids[key] = clone
                node["truth"] = {"op": NO_OP, "module": NO_MODULE, "range": NO_RANGE,
                                 "placement": "not in table"}
                continue
            if g.id == 4:
                replay_ids[key] = original  # its replays carry the captured ids
            elif g.id == 2:
                update = node_id(g.id, node["position"], 2)
                clones += [[clone, original], [update, clone]]
                replay_ids[key] = update
            else:
                clones.append([clone, original])
                replay_ids[key] = clone
            if missing.get(key) == "not placed":
                counts["not_kept"] += 1
                node["truth"] = {"op": NO_OP, "module": NO_MODULE, "range": NO_RANGE,
                                 "placement": "not placed"}
                continue
            if kernel[0] not in kernel_index:
                kernel_index[kernel[0]] = len(kernels)
                kernels.append(kernel[0])
            stack = []
            for message in node["ranges"]:
                if message not in range_index:
                    range_index[message] = len(ranges)
                    ranges.append({"domain": "", "name": message})
                stack.append(range_index[message])
            if tuple(stack) not in stack_index:
                stack_index[tuple(stack)] = len(stacks)
                stacks.append(stack)
            grid, block = kernel[3], kernel[4]
            rows.append([original, g.id, node["position"], PID, kernel_index[kernel[0]],
                         grid[0], grid[1], grid[2], block[0], block[1], block[2],
                         0 if kernel is MEMCPY else 1024, stack_index[tuple(stack)]])
    # A clone cycle: the id a sampler replay's fourth kernel carries.
    cycle_a, cycle_b = node_id(99, 0), node_id(99, 1)
    clones += [[cycle_a, cycle_b], [cycle_b, cycle_a]]
    cycle_kernel = plain("sampler_fill_kernel", (1, 1, 1), (32, 1, 1))
    graphs[4].nodes.append({"kernel": cycle_kernel, "ranges": [], "base": 1.0, "position": None,
                            "truth": {"op": NO_OP, "module": NO_MODULE, "range": NO_RANGE,
                                      "placement": "not placed"}})
    replay_ids[(5, None)] = cycle_a

    rng = random.Random(40)
    events = []
    correlation = [1000]
    t = [5_000_000.0]

    def launch(name):
        correlation[0] += 1
        events.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": PID, "tid": PID,
                       "ts": round(t[0], 3), "dur": 4.0, "args": {"cbid": 311 if "Graph" in name
                                                                   else 211,
                                                                   "correlation": correlation[0]}})
        t[0] += 5.0
        return correlation[0]

    gpu_t = [t[0]]
    replayed = []  # (graph, node, duration) of every replayed record
    eager = []  # duration of every eager kernel

    def gpu(kernel, duration, corr, graph=None, node=None):
        start = max(gpu_t[0], t[0]) + 1.0
        args = {"device": 0, "context": 1, "stream": 7, "correlation": corr}
        cat = "gpu_memcpy" if kernel is MEMCPY else "kernel"
        if cat == "kernel":
            args.update({"registers per thread": 64, "shared memory": 1024,
                         "grid": list(kernel[3]), "block": list(kernel[4])})
        else:
            args["bytes"] = 32768
        if node is not None:
            args["graph id"] = graph + 100  # the executable graph's id, not the captured one
            args["graph node id"] = node
        events.append({"ph": "X", "cat": cat, "name": kernel[1], "pid": 0, "tid": 7,
                       "ts": round(start, 3), "dur": duration, "args": args})
        gpu_t[0] = start + duration

    # The steps: each launches one graph, then the sampler eagerly (inside NVTX "sampler").
    schedule = [1, 2, 2, 1, 3, 2, 4, 2, 5, 1, 4, 3, 4, 5, 2, 4, 5]
    for step, graph_id in enumerate(schedule, 1):
        g = graphs[graph_id - 1]
        step_start = t[0]
        corr = launch("cudaGraphLaunch")
        for node in g.nodes:
            duration = round(node["base"] * scale[graph_id] * rng.uniform(0.9, 1.1), 3)
            gpu(node["kernel"], duration, corr, graph_id, replay_ids[(graph_id, node["position"])])
            replayed.append((g, node, duration))
        sampler_start = t[0]
        for kernel in (SOFTMAX, ARGMAX):
            duration = round(rng.uniform(1.5, 2.5), 3)
            gpu(kernel, duration, launch("cudaLaunchKernel"))
            eager.append((kernel, duration))
        events.append({"ph": "X", "cat": "user_annotation", "name": "sampler", "pid": PID,
                       "tid": PID, "ts": round(sampler_start - 0.5, 3),
                       "dur": round(t[0] - sampler_start, 3), "args": {"nvtx id": 1000 + step}})
        t[0] = max(t[0], gpu_t[0]) + 20.0
        events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step,
                       "pid": PID, "tid": PID, "ts": round(step_start - 1.0, 3),
                       "dur": round(t[0] - step_start, 3), "args": {"nvtx id": step}})

    table = {"version": 1,
             "columns": ["node", "graph", "order", "tid", "kernel", "grid_x", "grid_y", "grid_z",
                         "block_x", "block_y", "block_z", "shared_bytes", "stack"],
             "nodes": rows, "kernels": kernels, "stacks": stacks, "ranges": ranges,
             "clones": clones, "counts": counts}
    summary = {"format": "kprof.trace/1", "tracer_version": "0.1.0", "pid": PID, "host": "h",
               "window": 2, "stop_reason": "process exit", "cupti_version": 130001,
               "records": len(events), "events": len(events), "max_events": 2000000,
               "cap_hit": False,
               "dropped": {"cupti_dropped_records": 0, "buffer_requests_refused": 0,
                           "incomplete_records": 0, "over_cap_records": 0, "late_records": 0,
                           "lost_records": 0},
               "graph_nodes": table}
    def write(name, summary):
        with open(os.path.join(HERE, name), "w") as f:
            f.write('{"schemaVersion": 1, "displayTimeUnit": "ms", "cupti_version": 130001, '
                    '"traceName": "kprof tracer: h pid %d window 2",\n"traceEvents": [\n' % PID)
            f.write(",\n".join(json.dumps(e) for e in events))
            f.write("\n],\n\"kprof\": %s\n}\n" % json.dumps(summary))

    write("tracer_graph_nodes.json", summary)
    # The same trace whose table is not one (a row names a kernel the table lacks): one warning,
    # and every replay read as in a trace without a table.
    bad = json.loads(json.dumps(summary))
    bad["graph_nodes"]["nodes"][5][4] = len(kernels) + 3
    write("tracer_graph_nodes_bad_table.json", bad)

    # The truth: per view, each bucket's GPU activities and time (replays by their node's truth,
    # eager kernels by what their launch had around it), the shares, the graphs.
    views = {"op": {}, "module": {}, "range": {}}
    shares = {v: {p: [0, 0.0] for p in ("ranges", "inferred", "no context", "not in table",
                                         "not placed")} for v in views}
    for g, node, duration in replayed:
        for view in views:
            bucket = views[view].setdefault(node["truth"][view], [0, 0.0])
            bucket[0] += 1
            bucket[1] += duration
            placement = node["truth"]["placement"]
            shares[view][placement][0] += 1
            shares[view][placement][1] += duration
    for kernel, duration in eager:
        for view, name in (("op", NO_OP), ("module", NO_MODULE), ("range", "sampler")):
            bucket = views[view].setdefault(name, [0, 0.0])
            bucket[0] += 1
            bucket[1] += duration
    graph_truth = []
    for g in graphs:
        done = [(n, d) for gg, n, d in replayed if gg is g and n["truth"]["placement"] not in
                ("not in table", "not placed")]
        kept = [n for n in g.nodes if n["truth"]["placement"] not in ("not in table", "not placed")]
        bucket = ("batch %d" % g.batch) if g.batch is not None else \
            "graph %d (%d nodes)" % (g.id, len(kept))
        graph_truth.append({"graph": g.id, "bucket": bucket, "batch": g.batch, "nodes": len(kept),
                            "replays": schedule.count(g.id), "gpu_events": len(done),
                            "total_us": sum(d for n, d in done), "layers": g.layers})
    # report: each kernel's time per (name, grid, block, bucket); outside the buckets: eager
    # kernels and replays no node places.
    split = {}
    for g, node, duration in replayed:
        kernel = node["kernel"]
        placed = node["truth"]["placement"] not in ("not in table", "not placed")
        bucket = next(x["bucket"] for x in graph_truth if x["graph"] == g.id) if placed \
            else "outside graphs"
        key = "|".join([kernel[2], ",".join(map(str, kernel[3])), ",".join(map(str, kernel[4])),
                        bucket])
        entry = split.setdefault(key, [0, 0.0])
        entry[0] += 1
        entry[1] += duration
    for kernel, duration in eager:
        key = "|".join([kernel[2], ",".join(map(str, kernel[3])), ",".join(map(str, kernel[4])),
                        "outside graphs"])
        entry = split.setdefault(key, [0, 0.0])
        entry[0] += 1
        entry[1] += duration
    truth = {"views": views, "shares": shares, "graphs": graph_truth,
             "gpu_events": len(replayed) + len(eager),
             "gpu_time_us": sum(d for _, _, d in replayed) + sum(d for _, d in eager),
             "table": {"nodes": len(rows), "clones": len(clones)}, "report_split": split}
    with open(os.path.join(HERE, "tracer_graph_nodes.truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
