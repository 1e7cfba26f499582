#!/usr/bin/env bash
# Reads a ~1 GB .ncu-rep (decode_eager_full's blocks repeated 11 times, built in a temporary file
# and removed after) with inspect --json and analyze --json: wall time, peak RSS and the largest
# RssAnon/RssFile of each (bench/peak-memory.py), one run, file in the page cache. Several
# binaries may be given to compare them on the same file.
# usage: bench/read-big-report.sh [KPROF=build/kprof...]   (COPIES=11 in the environment)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- build/kprof
report=$(mktemp --suffix=.ncu-rep)
trap 'rm -f "$report"' EXIT
python3 bench/make-big-report.py data/h200/decode_eager_full.ncu-rep.zst "$report" "${COPIES:-11}"
ls -l "$report" | awk '{printf "report: %.3f GB\n", $5 / 1e9}'
cat "$report" >/dev/null
for kprof in "$@"; do
  for command in "inspect --json" "analyze --json"; do
    bench/peak-memory.py "$kprof" $command "$report"
  done
done
