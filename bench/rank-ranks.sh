#!/usr/bin/env bash
# kprof rank and kprof budget over 8 rank files at once (one trace per tensor-parallel rank), each
# built by repeating a real trace's events (kprof's tracer on the H200, tracer_two_process_a) to
# SIZE_MB, against the real alternative: ranking them one by one. Wall time and peak RSS of each.
# usage: bench/rank-ranks.sh [KPROF=build/kprof] [SIZE_MB=500] [RANKS=8]
set -euo pipefail
cd "$(dirname "$0")/.."
kprof=${1:-build/kprof}
size=${2:-500}
ranks=${3:-8}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 bench/make-big-trace.py data/h200/tracer_two_process_a.json.gz "$dir/r0.json" "$size"
files=("$dir/r0.json")
for ((i = 1; i < ranks; i++)); do
  cp "$dir/r0.json" "$dir/r$i.json"  # separate files: each is read from its own pages
  files+=("$dir/r$i.json")
done
du -cb "${files[@]}" | tail -1 | awk -v n="$ranks" '{printf "%d rank files, %.2f GB in all\n", n, $1 / 1e9}'
cat "${files[@]}" >/dev/null  # every run starts from the page cache
/usr/bin/time -f "kprof rank, all ranks at once:   %e s wall, %M KB peak RSS" \
  "$kprof" rank "${files[@]}" -n 3 >/dev/null
/usr/bin/time -f "kprof budget, all ranks at once: %e s wall, %M KB peak RSS" \
  "$kprof" budget "${files[@]}" >/dev/null
start=$(date +%s.%N)
peak=0
for f in "${files[@]}"; do
  rss=$( { /usr/bin/time -f "%M" "$kprof" rank "$f" -n 3 >/dev/null; } 2>&1 | tail -1)
  ((rss > peak)) && peak=$rss
done
end=$(date +%s.%N)
echo "kprof rank, one rank at a time: $(echo "$end - $start" | bc) s wall, $peak KB peak RSS (largest run)"
rss=$( { /usr/bin/time -f "%M" "$kprof" rank "${files[0]}" -n 3 >/dev/null; } 2>&1 | tail -1)
echo "kprof rank, one rank file alone: $rss KB peak RSS"
