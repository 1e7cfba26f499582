#!/usr/bin/env bash
# How `kprof rank` and `kprof budget` scale with the size of a PyTorch trace, against python's
# json.load of the same file (issue 38): for each size, a trace built by bench/make-big-trace.py
# (kept in DIR, outside the repository), read from the page cache RUNS times by each reader, each
# kprof binary given in turn (so that two builds are compared in one session). One table row per
# size, reader and binary: the fastest run's wall time and its user+sys CPU time, GB/s over that
# wall, the largest peak RSS of the runs, and the load average when the fastest run started (a
# shared machine's walls are noisy).
#
# usage: bench/big-trace-scaling.sh [SIZES_MB="1024 3072 10240"] [[LABEL=]KPROF ...]
#        (KPROF: build/kprof when none is given; LABEL: the binary's name in the table)
#        environment: DIR=/work/bigtraces RUNS=3 READERS="rank budget python"
#        KEEP=1 (keep the traces this run made; a trace already in DIR is never removed)
#        PIN="taskset -c 0,1" (each run under it: two cores of a larger machine)
# json.load is left out where the machine's available memory is under 5.5x the trace (it needs
# about 5.2x), and said so.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=${1:-1024 3072 10240}
shift || true
[ $# -gt 0 ] || set -- build/kprof
labels=() binaries=()
for given in "$@"; do
  if [[ $given == *=* ]]; then
    labels+=("${given%%=*}")
    binaries+=("$(realpath "${given#*=}")")
  else
    labels+=("$given")
    binaries+=("$(realpath "$given")")
  fi
done
dir=${DIR:-/work/bigtraces}
runs=${RUNS:-3}
wanted=" ${READERS:-rank budget python} "
mkdir -p "$dir"

# One run: "wall user sys maxrss_kb load" of the command, its output thrown away.
measure() {
  local load times
  load=$(cut -d' ' -f1 /proc/loadavg)
  times=$(mktemp)
  # shellcheck disable=SC2086  # PIN is words
  ${PIN:-} /usr/bin/time -f "%e %U %S %M" -o "$times" "$@" >/dev/null 2>&1 || {
    echo "kprof bench: failed: $*" >&2
    rm -f "$times"
    return 1
  }
  echo "$(cat "$times") $load"
  rm -f "$times"
}

# RUNS runs of the command; prints its table row.
row() {
  local bytes=$1 reader=$2 binary=$3 best="" peak=0 result wall user sys rss load
  shift 3
  for _ in $(seq "$runs"); do
    result=$(measure "$@")
    read -r wall user sys rss load <<<"$result"
    [ "$rss" -gt "$peak" ] && peak=$rss
    if [ -z "$best" ] || awk -v a="$wall" -v b="${best%% *}" 'BEGIN {exit !(a < b)}'; then
      best="$wall $user $sys $load"
    fi
  done
  read -r wall user sys load <<<"$best"
  awk -v size="$bytes" -v reader="$reader" -v binary="$binary" -v wall="$wall" -v user="$user" \
    -v sys="$sys" -v rss="$peak" -v load="$load" -v runs="$runs" 'BEGIN {
      printf "| %.2f GB | %s | %s | %.2f | %.2f | %.2f | %.0f | %s | %d |\n",
             size / 1e9, reader, binary, wall, user + sys, size / 1e9 / wall, rss / 1024, load,
             runs }'
}

echo "| trace | reader | binary | wall s | user+sys s | GB/s | peak RSS MB | load | runs |"
echo "|---|---|---|---|---|---|---|---|---|"
for size in $sizes; do
  trace="$dir/big-$size.json"
  made=false
  if [ ! -e "$trace" ]; then
    python3 bench/make-big-trace.py data/h200/trace_eager.json.gz "$trace" "$size" >/dev/null
    made=true
  fi
  bytes=$(stat -L -c %s "$trace")
  cat "$trace" >/dev/null # every reader starts from the page cache
  for reader in rank budget; do
    [[ $wanted == *" $reader "* ]] || continue
    for k in "${!binaries[@]}"; do
      arguments=("$trace")
      [ "$reader" = rank ] && arguments+=(-n 3)
      row "$bytes" "kprof $reader" "${labels[$k]}" "${binaries[$k]}" "$reader" "${arguments[@]}"
    done
  done
  if [[ $wanted == *" python "* ]]; then
    available_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
    if [ $((bytes * 55 / 10 / 1024)) -lt "$available_kb" ]; then
      row "$bytes" "python json.load" "python3" \
        python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$trace"
    else
      printf "| %s | python json.load | python3 | not run: needs ~5.2x the trace in memory, " \
        "$(awk -v b="$bytes" 'BEGIN {printf "%.2f GB", b / 1e9}')"
      echo "$((available_kb / 1024)) MB available | | | | | |"
    fi
  fi
  if $made && [ "${KEEP:-0}" != 1 ]; then rm -f "$trace"; fi
done
