#!/bin/bash
# The capture-time cost of the tracer's graph node table (issue 40): graph_workload.py's capture
# of 3 decode graphs (6 layers, buckets 1, 8, 32, layerwise NVTX: 963 nodes) with no tool, with the
# tracer before the table and with it (both loaded, no window open: the table is kept windows or
# not), rounds interleaved; prints each run's capture_ms. On a GPU machine:
#   tools/tracer/experiments/capture_cost.sh NEW_TRACER_SO OLD_TRACER_SO [ROUNDS] [OUT]
# (OLD: a build of commit bdd15c2, the tracer before the table). Each run takes ~20 s.
# Measured on the H100 on 2026-12-08 (data/h100/capture_cost.txt, docs/tracer.md). A first attempt
# (2026-12-07) is void: its KPROF_TRACE_DIR did not exist, so both
# tracers stayed off ("need a writable folder"); no tool captured in 43.3 and 44.9 ms.
set -u
NEW=$(realpath "$1"); OLD=$(realpath "$2"); ROUNDS=${3:-3}; OUT=${4:-${OUT:-/tmp/out}}/capture_cost
mkdir -p "$OUT/traces"
CUPTI_DIR=$(python3 -c "import glob,os,site; f=[p for d in site.getsitepackages() for p in glob.glob(os.path.join(d,'nvidia','*','lib','libcupti.so.13'))]; print(os.path.dirname(f[0]) if f else '/usr/local/cuda/extras/CUPTI/lib64')")
for round in $(seq "$ROUNDS"); do
  for arm in none old new; do
    case $arm in
      none) lib="" ;;
      old) lib=$OLD ;;
      new) lib=$NEW ;;
    esac
    env_args=()
    [ -n "$lib" ] && env_args=(LD_LIBRARY_PATH="$CUPTI_DIR" CUDA_INJECTION64_PATH="$lib"
      NVTX_INJECTION64_PATH="$lib" KPROF_TRACE_START=on-control
      KPROF_TRACE_CONTROL="$OUT/never-written" KPROF_TRACE_DIR="$OUT/traces")
    env "${env_args[@]}" timeout 120 python3 tools/tracer/graph_workload.py --buckets 1,8,32 \
      --layers 6 --nvtx layerwise --replays 2 --idle 0 >"$OUT/${arm}_$round.json" 2>"$OUT/${arm}_$round.err"
    rc=$?
    if [ -n "$lib" ] && grep -q "stays off" "$OUT/${arm}_$round.err"; then
      echo "FAIL $arm $round: the tracer stayed off: $(grep -m1 'stays off' "$OUT/${arm}_$round.err")"
      exit 1
    fi
    echo "$arm $round rc=$rc capture_ms $(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['capture_ms'])" "$OUT/${arm}_$round.json" 2>&1)"
  done
done
