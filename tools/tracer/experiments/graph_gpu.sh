#!/bin/bash
# Issue 40 on the GPU machine: graph_workload.py's decode graphs under kprof's tracer (the node
# table) in each NVTX mode and with torch.compile, the PyTorch profiler's capture and replay traces
# of the same program, and CUPTI's own view (the probe). usage: graph_gpu.sh NEW_TRACER_SO [OUT]
# (FULL=1 adds emit_nvtx and torch.compile). Run on an H100 on 2026-12-07 (140 s with FULL=1):
# data/h100/README.md says what came of it. The probe (graph_node_probe.cpp) is built first:
#   g++ -O1 -shared -fPIC -o tools/tracer/experiments/libgraph_node_probe.so \
#     tools/tracer/experiments/graph_node_probe.cpp -I/usr/local/cuda/include \
#     -L/usr/local/cuda/lib64 -lcupti -ldl
set -u
R=$(pwd); LIB=$(realpath "$1"); OUT=${2:-${OUT:-/tmp/out}}; mkdir -p "$OUT"
CUPTI_DIR=$(python3 - <<'PY'
import glob, os, site
found = []
for d in site.getsitepackages():
    found += glob.glob(os.path.join(d, "nvidia", "*", "lib", "libcupti.so.13"))
    found += glob.glob(os.path.join(d, "nvidia", "*", "*", "lib", "libcupti.so.13"))
found += glob.glob("/usr/local/cuda*/extras/CUPTI/lib64/libcupti.so.13") + glob.glob("/usr/local/cuda*/lib64/libcupti.so.13")
print(os.path.dirname(os.path.realpath(found[0])) if found else "")
PY
)
{ echo "cupti: $CUPTI_DIR"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"; } | tee "$OUT/environment.txt"
W=$R/tools/tracer/graph_workload.py
P=$R/tools/tracer/experiments/libgraph_node_probe.so
run() { local name=$1; shift; local t0=$(date +%s)
  timeout 240 "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  echo "$name rc=$? $(( $(date +%s) - t0 ))s: $(tail -c 300 "$OUT/$name.out")"; grep -v "^\s*$" "$OUT/$name.err" | tail -4; }
traced() { local name=$1; shift; mkdir -p "$OUT/$name"; : > "$OUT/$name.control"
  run "$name" env LD_LIBRARY_PATH=$CUPTI_DIR CUDA_INJECTION64_PATH=$LIB NVTX_INJECTION64_PATH=$LIB \
    KPROF_TRACE_DIR=$OUT/$name KPROF_TRACE_START=on-control KPROF_TRACE_CONTROL=$OUT/$name.control \
    python3 $W "$@"; ls -la "$OUT/$name"; }
run probe_graph env LD_LIBRARY_PATH=$CUPTI_DIR CUDA_INJECTION64_PATH=$P PROBE_OUT=$OUT/probe_graph.txt python3 $W --buckets 1,8 --layers 2 --nvtx none --replays 3 --idle 0
traced tracer_layerwise --buckets 1,8,32 --layers 6 --nvtx layerwise --replays 20 --idle 3
traced tracer_none --buckets 1,8,32 --layers 6 --nvtx none --replays 20 --idle 1
run profiler_layerwise python3 $W --buckets 1,8,32 --layers 6 --nvtx layerwise --replays 20 --idle 0 --profiler-capture $OUT/capture_layerwise.json --profiler-replay $OUT/replay_layerwise.json
[ -n "${FULL:-}" ] && traced tracer_emit --buckets 1,8 --layers 6 --nvtx emit_nvtx --replays 20 --idle 1
[ -n "${FULL:-}" ] && traced tracer_compile --buckets 1,8 --layers 6 --nvtx none --compile --replays 20 --idle 1
echo "== probe: $(grep -c '^CREATED' $OUT/probe_graph.txt) created, $(grep -c NODE_CLONED $OUT/probe_graph.txt) cloned, $(grep -c '^KERNEL' $OUT/probe_graph.txt) kernel lines"
grep -m3 "getparams\|syms" $OUT/probe_graph.txt; grep -m2 "^KERNEL" $OUT/probe_graph.txt; grep -m2 "^NODE_CLONED" $OUT/probe_graph.txt; grep -m2 "^EXEC" $OUT/probe_graph.txt
gzip -f $OUT/*.json $OUT/probe_graph.txt 2>/dev/null; du -sh $OUT
