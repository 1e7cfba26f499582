#!/bin/bash
# On a GPU machine: builds l2_variants.cu for sm_90, times each variant, and captures the timed
# launch of each with ncu (SpeedOfLight, clocks left alone); kprof analyze gives the verdicts.
# usage: tools/selftest/experiments/l2_variants.sh KPROF OUT
set -u
kprof=$1; out=$2; here=$(cd "$(dirname "$0")" && pwd); mkdir -p "$out"
nvcc -O3 -arch=sm_90 -Xptxas -v -o "$out/l2_variants" "$here/l2_variants.cu" > "$out/ptxas.txt" 2>&1
"$out/l2_variants" > "$out/timings.txt" 2>&1
ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
  -k regex:^l2_ -f -o "$out/l2_variants" "$out/l2_variants" > "$out/ncu.log" 2>&1
"$kprof" analyze "$out/l2_variants.ncu-rep" > "$out/analyze.txt" 2>&1
cat "$out/timings.txt" "$out/analyze.txt"
