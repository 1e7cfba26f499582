#!/usr/bin/env bash
# The H200 recordings of round 4 (issues 29 and 32), written to $OUT:
#   vendor_ceilings.json            cuBLAS/cuBLASLt GEMM rates and torch copy bandwidth
#   trace_dependency_wait.json.gz   PyTorch profiler, cuda_sync events: a real dependency wait
#   trace_graph_capture.json.gz     PyTorch profiler: a CUDA-graph capture, then 5 replays
#   nsys_dependency_wait.sqlite     the dependency shape under nsys (SYNCHRONIZATION rows)
#   nsys_graph_capture_{node,graph}.sqlite   --cuda-graph-trace=node / =graph
#   trace_compiled_decode.json.gz   torch.compile(reduce-overhead) Llama-shaped decode, 30 steps
#   compiled_decode_full.ncu-rep    one step of it, ncu --set full --graph-profiling node
# usage: OUT=DIR LIBS=DIR bash tools/traces/gpu-record.sh [PART...]   (parts: vendor waits nsys
#        compiled ncu; default all). LIBS holds libdw and its libraries for nsys's importer; it
#        is put on LD_LIBRARY_PATH for nsys only.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
parts=${*:-vendor waits nsys compiled ncu}
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys 2>/dev/null | head -1)
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/kprof-inductor}
want() { [[ " $parts " == *" $1 "* ]]; }
stamp() { echo "== $(date +%T) $*"; }
nsys_run() { LD_LIBRARY_PATH=${LIBS:-} "$NSYS" "$@"; }
if want vendor; then
  stamp vendor
  python3 "$repo/tools/selftest/experiments/vendor_ceilings.py" > "$OUT/vendor_ceilings.json"
fi
if want waits; then
  stamp waits
  python3 "$here/waits_and_graphs.py" dependency "$OUT/trace_dependency_wait.json.gz"
  python3 "$here/waits_and_graphs.py" capture "$OUT/trace_graph_capture.json.gz"
fi
if want nsys; then
  stamp "nsys ($NSYS)"
  for run in "dependency node nsys_dependency_wait" "capture node nsys_graph_capture_node" \
             "capture graph nsys_graph_capture_graph"; do
    set -- $run
    nsys_run profile --trace=cuda,nvtx --sample=none --cpuctxsw=none --cuda-graph-trace="$2" \
      -o "/tmp/$3" -f true python3 "$here/waits_and_graphs.py" "$1" --nvtx > "/tmp/$3.log" 2>&1
    nsys_run export --type sqlite -o "$OUT/$3.sqlite" -f true "/tmp/$3.nsys-rep" >> "/tmp/$3.log" 2>&1
    tail -3 "/tmp/$3.log"
  done
fi
if want compiled; then
  stamp compiled
  python3 "$here/compiled_decode.py" trace "$OUT/trace_compiled_decode.json.gz"
fi
if want ncu; then
  stamp ncu
  timeout 330 ncu --clock-control none --profile-from-start off --graph-profiling node --set full \
    -f -o "$OUT/compiled_decode_full" python3 "$here/compiled_decode.py" ncu > "$OUT/compiled_decode_full.ncu.log" 2>&1
  echo "ncu rc=$?"; tail -3 "$OUT/compiled_decode_full.ncu.log"
fi
stamp done
