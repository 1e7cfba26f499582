#!/usr/bin/env bash
# kprof against NVIDIA's own readers, on the same reports, in the same run (needs an Nsight
# Compute installation; no GPU needed). For each REPORT: the median wall time of
#   ncu --import REPORT --csv --page raw            (ncu's export, the usual scripted path)
#   python3 ncu_report: load + read every metric   (NVIDIA's Python reader)
#   kprof inspect REPORT --json                     (every metric of every kernel, as JSON)
#   kprof analyze REPORT --json                     (verdicts as JSON)
#   kprof analyze REPORT                            (the verdict table)
# and, in a second table, the peak RSS of one run of each (GNU time's %M, when installed).
# ncu only imports here: no GPU, no clock control involved.
# usage: bench/compare-readers.sh KPROF_BINARY REPORT... [RUNS=3 in the environment]
set -uo pipefail
kprof=${1:?usage: bench/compare-readers.sh KPROF_BINARY REPORT...}; shift
runs=${RUNS:-3}
ncu=$(command -v ncu || ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
[ -n "$ncu" ] || { echo "compare-readers: ncu not found" >&2; exit 1; }
pydir=$(ls -d "$(dirname "$(readlink -f "$ncu")")"/extras/python /opt/nvidia/nsight-compute/*/extras/python 2>/dev/null | tail -1)
echo "ncu: $("$ncu" --version | tail -1); python reader: $pydir; runs per measurement: $runs"

median_ms() {  # runs "$@" $runs times, prints the median wall time in ms
  local times=()
  for ((i = 0; i < runs; i++)); do
    local start=$(date +%s%N)
    "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
    times+=($(( ($(date +%s%N) - start) / 1000000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p"
}

read_all_metrics() {
  PYTHONPATH="$pydir" python3 -c '
import sys, ncu_report
ctx = ncu_report.load_report(sys.argv[1])
n = 0
for r in range(ctx.num_ranges()):
    rng = ctx.range_by_idx(r)
    for a in range(rng.num_actions()):
        act = rng.action_by_idx(a)
        for name in act.metric_names():
            act[name].value(); n += 1
' "$1"
}

peak_mb() {  # peak RSS of one run of "$@" in MB, or "-" without GNU time
  [ -x /usr/bin/time ] || { echo -; return; }
  local kb
  kb=$(/usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1)
  echo $(( kb / 1024 ))
}

export -f read_all_metrics 2>/dev/null
export pydir

printf '%-28s %6s %14s %16s %16s %16s %13s\n' report MB "ncu --import" "ncu_report(py)" \
  "inspect --json" "analyze --json" "analyze"
for report in "$@"; do
  mb=$(( $(stat -c %s "$report") / 1000000 ))
  a=$(median_ms "$ncu" --import "$report" --csv --page raw)
  b=$(median_ms read_all_metrics "$report")
  c=$(median_ms "$kprof" inspect "$report" --json)
  d=$(median_ms "$kprof" analyze "$report" --json)
  e=$(median_ms "$kprof" analyze "$report")
  printf '%-28s %6s %11s ms %13s ms %13s ms %13s ms %10s ms\n' "$(basename "$report")" "$mb" \
    "$a" "$b" "$c" "$d" "$e"
done
echo "peak RSS, MB (one run each):"
for report in "$@"; do
  a=$(peak_mb "$ncu" --import "$report" --csv --page raw)
  b=$(peak_mb bash -c 'read_all_metrics "$1"' _ "$report")
  c=$(peak_mb "$kprof" inspect "$report" --json)
  d=$(peak_mb "$kprof" analyze "$report" --json)
  e=$(peak_mb "$kprof" analyze "$report")
  printf '%-28s %6s %14s %16s %16s %16s %13s\n' "$(basename "$report")" "" "$a" "$b" "$c" "$d" "$e"
done
