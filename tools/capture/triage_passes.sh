#!/bin/bash
# How the triage preset was found (run on the H200 through the device tool): passes per kernel
# that ncu reports for candidate metric lists over the bottleneck suite, one report each, so
# that verdicts can be compared with --set full's afterwards (`kprof analyze --json`).
# usage: tools/capture/triage_passes.sh OUT_DIR
set -u
R=$(cd "$(dirname "$0")/../.." && pwd); O=$1; W=$(mktemp -d); cd "$W"
NCU=${NCU:-ncu}
nvcc -O3 -arch=sm_90 -o suite "$R/tools/bottleneck_suite/suite.cu" || exit 1
CORE="--section SpeedOfLight --section Occupancy --section LaunchStats"
STALLS="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
FLOPS="smsp__cycles_elapsed.avg.per_second"
for op in fadd fmul ffma dadd dmul dfma hadd hmul hfma; do
  FLOPS+=",smsp__sass_thread_inst_executed_op_${op}_pred_on.sum.per_cycle_elapsed"; done
TENSOR="sm__cycles_elapsed.avg.per_second"
for t in bf16_dst_fp32 fp16 fp64 fp8_sparsity_off int8 tf32_dst_fp32; do
  TENSOR+=",sm__ops_path_tensor_src_${t}.sum.per_cycle_elapsed"; done
DRAM="dram__bytes.sum.per_second,dram__bytes.sum.peak_sustained,dram__cycles_elapsed.avg.per_second"
run() {  # NAME ARGS...
  local name=$1; shift
  local s=$(date +%s.%N)
  $NCU "$@" --clock-control none -k regex:^k_ -f -o "$O/$name" ./suite > "$O/$name.log" 2>&1
  local rc=$? e=$(date +%s.%N)
  local passes=$(grep -o -- '- [0-9]* passes' "$O/$name.log" | awk '{print $2}' | sort -n | uniq -c | tr '\n' ' ')
  printf '%-14s rc=%s %6.1fs passes(count value): %s\n' "$name" "$rc" "$(awk "BEGIN{print $e - $s}")" "$passes"
  grep -m3 "==WARNING==\|==ERROR==" "$O/$name.log"
}
run full --set full
run basic --set basic
run sol --section SpeedOfLight
run core $CORE
run core_stalls $CORE --metrics "$STALLS"
run core_flops $CORE --metrics "$FLOPS"
run core_tensor $CORE --metrics "$TENSOR"
run core_dram $CORE --metrics "$DRAM"
run core_pcsamp $CORE --metrics group:smsp__pcsamp_warp_stall_reasons
run bd_metrics --metrics breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed,breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
run all_stalls $CORE --metrics "$FLOPS,$TENSOR,$DRAM,$STALLS"
run all_pcsamp $CORE --metrics "$FLOPS,$TENSOR,$DRAM,group:smsp__pcsamp_warp_stall_reasons"
run all_nostall $CORE --metrics "$FLOPS,$TENSOR,$DRAM"
run sol_all_pcsamp --section SpeedOfLight --metrics "launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_blocks,launch__occupancy_limit_barriers,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct,launch__registers_per_thread,launch__shared_mem_per_block,$FLOPS,$TENSOR,$DRAM,group:smsp__pcsamp_warp_stall_reasons"
# The same comparison on a PyTorch program (eager decode step + prefill GEMM).
cp "$R/tools/capture/workload_decode.py" .
prun() {
  local name=$1; shift
  local s=$(date +%s.%N)
  $NCU "$@" --clock-control none --launch-skip 20 --launch-count 30 -f -o "$O/$name" python3 workload_decode.py 4 > "$O/$name.log" 2>&1
  local rc=$? e=$(date +%s.%N)
  local passes=$(grep -o -- '- [0-9]* passes' "$O/$name.log" | awk '{print $2}' | sort -n | uniq -c | tr '\n' ' ')
  printf '%-14s rc=%s %6.1fs passes(count value): %s\n' "$name" "$rc" "$(awk "BEGIN{print $e - $s}")" "$passes"
}
s=$(date +%s.%N); python3 workload_decode.py 4; echo "no profiler: $(awk "BEGIN{print $(date +%s.%N) - $s}") s"
prun torch_full --set full
prun torch_basic --set basic
prun torch_all_stalls $CORE --metrics "$FLOPS,$TENSOR,$DRAM,$STALLS"
prun torch_all_pcsamp $CORE --metrics "$FLOPS,$TENSOR,$DRAM,group:smsp__pcsamp_warp_stall_reasons"
# 2026-12-01 (bench/README.md, "Cutting triage"): GH100 has no combined tensor counter; this
# list collects no tensor rate at all (12 passes), and without $FLOPS 11.
run core_combined_tensor $CORE --metrics "$DRAM,$FLOPS,sm__cycles_elapsed.avg.per_second,sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32.sum.per_cycle_elapsed,group:smsp__pcsamp_warp_stall_reasons"
