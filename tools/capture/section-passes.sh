#!/usr/bin/env bash
# ncu's replay passes per section, per set and for a few section lists, on this GPU and ncu
# (issue 41: kprof plan estimates a --section list as --set full's 38 passes; these are the
# figures to replace that estimate with). One small kernel (axpy over 1 M floats), profiled once
# per ncu run with --clock-control none; each ncu prints "N passes" per kernel.
# Not yet run: the H100 session of 2026-12-08 ran out of device time before it.
#
# usage: tools/capture/section-passes.sh OUT
# Environment: NCU [/usr/local/cuda/bin/ncu]  NVCC [/usr/local/cuda/bin/nvcc]
# Writes OUT/passes.txt ("section ID N", "set NAME N", "list A+B N"), OUT/sections.txt,
# OUT/sets.txt and OUT/ncu_version.txt. About 2-3 minutes.
set -u -o pipefail
if [ $# -ne 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
OUT=$(realpath -m "$1")
NCU=${NCU:-/usr/local/cuda/bin/ncu}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$OUT" || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/k.cu" <<'CU'
#include <cstdio>
__global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
int main() {
  int n = 1 << 20;
  float *x, *y;
  cudaMalloc(&x, n * 4);
  cudaMalloc(&y, n * 4);
  axpy<<<n / 256, 256>>>(2.f, x, y, n);
  cudaDeviceSynchronize();
  printf("ok\n");
  return 0;
}
CU
"$NVCC" -O2 -o "$work/k" "$work/k.cu" || exit 1
"$NCU" --version | tail -1 >"$OUT/ncu_version.txt"
"$NCU" --list-sections >"$OUT/sections.txt" 2>&1
"$NCU" --list-sets >"$OUT/sets.txt" 2>&1
passes() { "$NCU" --clock-control none "$@" "$work/k" 2>&1 | grep -o '[0-9]* passes' | head -1 | cut -d' ' -f1; }
lists=("SpeedOfLight MemoryWorkloadAnalysis" "SpeedOfLight Occupancy LaunchStats"
  "WarpStateStats SourceCounters" "SchedulerStats WarpStateStats"
  "SpeedOfLight ComputeWorkloadAnalysis MemoryWorkloadAnalysis Occupancy"
  "MemoryWorkloadAnalysis MemoryWorkloadAnalysis_Tables MemoryWorkloadAnalysis_Chart"
  "ComputeWorkloadAnalysis InstructionStats SchedulerStats")
{
  for s in $(awk 'NR > 3 && NF >= 3 {print $1}' "$OUT/sections.txt"); do
    echo "section $s $(passes --section "$s")"
  done
  for set in basic detailed full roofline nvlink pmsampling; do
    echo "set $set $(passes --set "$set")"
  done
  for list in "${lists[@]}"; do
    args=()
    for s in $list; do args+=(--section "$s"); done
    echo "list ${list// /+} $(passes "${args[@]}")"
  done
} | tee "$OUT/passes.txt"
