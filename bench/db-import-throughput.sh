#!/usr/bin/env bash
# Import throughput of the findings database on its two back-ends, for the same 100 reports:
# an SQLite file, and a PostgreSQL server started here (initdb and pg_ctl in a temporary folder,
# a Unix socket in it, as `nobody` when run as root; stopped by its PID and removed after). The
# reports are 100 copies of data/h200/big_full.ncu-rep.zst (24 kernels), each with a zstd
# skippable frame of its own appended: the same kernels, 100 different SHA-256s, so that no
# import is skipped as already there. Two ways, each into a fresh database: one `kprof db import`
# of the 100 (one transaction), and 100 imports of one report each (a CI job importing captures
# as they come). Median wall time of RUNS (3) runs of each.
# usage: bench/db-import-throughput.sh [KPROF]   (default build/kprof; RUNS=N in the environment)
set -euo pipefail
cd "$(dirname "$0")/.."
kprof=$(realpath "${1:-build/kprof}")
runs=${RUNS:-3}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/initdb" ] || { echo "bench/db-import-throughput.sh: no PostgreSQL server binaries (Debian's postgresql)" >&2; exit 1; }

work=$(mktemp -d /tmp/kprof-dbbench-XXXXXX)
as_owner=()
if [ "$(id -u)" -eq 0 ]; then
  chown nobody "$work"
  as_owner=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
fi
stop_server() {
  if [ -f "$work/pg/postmaster.pid" ]; then
    pid=$(head -1 "$work/pg/postmaster.pid")
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -rf "$work"
}
trap stop_server EXIT

mkdir "$work/reports"
python3 - "$work/reports" <<'PY'
import struct, sys
source = open("data/h200/big_full.ncu-rep.zst", "rb").read()
for i in range(100):
    # A skippable frame (magic 0x184D2A50): decoders pass over it, the file's digest changes.
    note = f"copy {i}".encode()
    with open(f"{sys.argv[1]}/big_full_{i:03d}.ncu-rep.zst", "wb") as f:
        f.write(source + struct.pack("<II", 0x184D2A50, len(note)) + note)
PY
chmod -R a+rX "$work/reports"
"${as_owner[@]}" "$bin/initdb" -D "$work/pg" -U kprof -A trust -E UTF8 --locale=C >/dev/null
"${as_owner[@]}" "$bin/pg_ctl" -D "$work/pg" -l "$work/pg.log" -w -o "-k $work -c listen_addresses=" start >/dev/null
socket=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$work")
psql_bin="$bin/psql"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# seconds of one run of "$@"
timed() {
  local began ended
  began=$(date +%s.%N)
  "$@" >/dev/null
  ended=$(date +%s.%N)
  echo "$ended - $began" | bc
}
reports=("$work"/reports/*.ncu-rep.zst)
fresh() {  # a fresh database of each kind, named $2: its --db
  if [ "$1" = sqlite ]; then
    echo "$work/$2.db"
  else
    "$psql_bin" -q -h "$work" -U kprof -d postgres -c "CREATE DATABASE $2" >/dev/null
    echo "postgresql://kprof@$socket/$2"
  fi
}
one_by_one() {
  local db=$1
  for report in "${reports[@]}"; do "$kprof" db --db "$db" import "$report" >/dev/null; done
}
printf '%-11s %-22s %10s %12s %12s\n' back-end way "median s" reports/s kernels/s
for backend in sqlite postgresql; do
  for way in "one import of 100" "100 imports of one"; do
    times=()
    for run in $(seq "$runs"); do
      db=$(fresh "$backend" "${backend}_${way// /_}_$run")
      if [ "$way" = "one import of 100" ]; then
        times+=("$(timed "$kprof" db --db "$db" import "${reports[@]}")")
      else
        times+=("$(timed one_by_one "$db")")
      fi
      # Every report went in as a run of its own (none skipped as already there).
      got=$("$kprof" db --db "$db" query history --json |
        python3 -c 'import json, sys; print(len({row["run"] for row in json.load(sys.stdin)}))')
      [ "$got" = 100 ] || { echo "bench: $db holds $got runs, not 100" >&2; exit 1; }
    done
    m=$(printf '%s\n' "${times[@]}" | median)
    printf '%-11s %-22s %10.2f %12.1f %12.0f\n' "$backend" "$way" "$m" \
      "$(echo "100 / $m" | bc -l)" "$(echo "2400 / $m" | bc -l)"
  done
done
