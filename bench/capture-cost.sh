#!/usr/bin/env bash
# Capture cost against resident device memory (issue 13): for each RESIDENT_GB, kprof capture
# of one elementwise add and one GEMM (bench/capture_cost_target.py) with each preset, beside a
# run under ncu that profiles nothing (same program, a filter matching no kernel): the
# difference is what profiling those two kernels cost. Needs a GPU, ncu and PyTorch.
# usage: bench/capture-cost.sh KPROF OUT_DIR [SIZES="5 40 100"] [PRESETS="triage basic full"]
set -u
kprof=$(realpath "$1"); out=$(realpath -m "$2"); mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
sizes=${SIZES:-5 40 100}; presets=${PRESETS:-triage basic full}
filter='regex:CUDAFunctor_add|gemm|nvjet|xmma|cutlass'
printf '%-8s %-8s %8s %10s %8s  %s\n' resident preset wall_s profiled exit warnings | tee "$out/table.txt"
for gb in $sizes; do
  for preset in none $presets; do
    name=${gb}gb_$preset
    args=(--preset triage -k 'regex:^NO_SUCH_KERNEL$')
    [ "$preset" != none ] && args=(--preset "$preset" -k "$filter" --launch-count 2 --force)
    start=$(date +%s%N)
    "$kprof" capture --clock-control none --kernel-name-base demangled "${args[@]}" -o "$out/$name" \
      --json -- python3 "$here/capture_cost_target.py" "$gb" > "$out/$name.json" 2> "$out/$name.stderr"
    rc=$?
    wall=$(( ($(date +%s%N) - start) / 100000000 ))  # tenths of a second (no bc needed)
    wall="$((wall / 10)).$((wall % 10))"
    bundle=$(ls -d "$out/$name"* 2>/dev/null | grep -v '\.json$\|\.stderr$' | head -1)
    profiled=$(python3 -c "import json,sys; m=json.load(open('$out/$name.json')); print(m.get('progress',{}).get('kernels_profiled','?'))" 2>/dev/null || echo '?')
    warnings=$(grep -c "Backing up device memory" "$bundle/ncu.log" 2>/dev/null)
    printf '%-8s %-8s %8s %10s %8s  %s\n' "$gb" "$preset" "$wall" "$profiled" "$rc" "backing-up x$warnings" | tee -a "$out/table.txt"
  done
done
