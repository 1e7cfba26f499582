#!/usr/bin/env bash
# Ranks a ~1 GB trace built by repeating a real trace's events, against python's json.load of the
# same file, in one run: wall time and peak memory of each.
# usage: bench/rank-big-trace.sh [KPROF=build/kprof] [SIZE_MB=1024]
set -euo pipefail
cd "$(dirname "$0")/.."
kprof=${1:-build/kprof}
size=${2:-1024}
trace=$(mktemp --suffix=.json)
trap 'rm -f "$trace"' EXIT
python3 bench/make-big-trace.py data/h200/trace_eager.json.gz "$trace" "$size"
ls -l "$trace" | awk '{printf "trace: %.2f GB\n", $5 / 1e9}'
cat "$trace" >/dev/null  # both readers start from the page cache
/usr/bin/time -f "kprof rank:        %e s wall, %M KB peak RSS" "$kprof" rank "$trace" -n 3 >/dev/null
/usr/bin/time -f "python3 json.load: %e s wall, %M KB peak RSS" \
  python3 -c "import json, sys; json.load(open(sys.argv[1]))" "$trace"
