#!/usr/bin/env bash
# Warm capture on a GPU (issues 13 and 20): tools/serving/serve.py (hf backend: front process that
# initialises CUDA + engine process `serve::engine` with CUDA-graph decode) started under
# `ncu --mode launch --target-processes all --nvtx`; then, against that one running server:
#   1. startup   kprof capture --attach-process serve::engine --nvtx-include profile_run/
#                (the front held, the engine followed; kernels of the start-up profiling forward)
#   2. warm_c1   the warm sequence at --load-concurrency 1 (hold while starting, /health, warm-up
#                requests, detach, attach with --nvtx-include decode_step/ while requests flow)
#   3. warm_c16  the same at --load-concurrency 16
#   4. the captured kernels' grids: decode (warm) against start-up, c=1 against c=16
# Every ncu gets --clock-control none (kprof's default). Everything is written under OUT; every
# process started is stopped by PID (the server's processes are not ncu's children: they are
# found by a tag in their environment); every wait is bounded; the whole run ends within 9 min.
# summary.txt ends with "N passed, M failed"; exit 0 only when nothing failed.
#
# usage: tools/capture/warm-check.sh OUT
# Environment: KPROF [build-dev/kprof]  KPROF_LIBS [LD_LIBRARY_PATH for kprof alone, default
#   none]  NCU [ncu]  PYTHON [python3]  PORT [8011]  LAUNCH_COUNT [6]  PRESET [triage]
#   KERNEL_FILTER [none: a -k for every capture]  ROUNDS [1 16: the warm captures' concurrencies,
#   in order, against one server]  SERVE_ARGS [none: more serve.py options]  STARTUP [1; 0 skips
#   the start-up capture and the grids]  TOTAL_S [540: seconds for the whole check]
set -u -o pipefail

if [ $# -ne 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
R=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(realpath -m "$1")
KPROF=$(realpath -m "${KPROF:-$R/build-dev/kprof}")
KPROF_LIBS=${KPROF_LIBS:-}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
PYTHON=${PYTHON:-python3}
PORT=${PORT:-8011}
LAUNCH_COUNT=${LAUNCH_COUNT:-6}
PRESET=${PRESET:-triage}
# KERNEL_FILTER: a -k for every capture (e.g. 'regex:nvjet|gemm|gemv': GEMMs, whose grids follow
# the batch); default none (the first LAUNCH_COUNT kernels of each range).
KFILTER=(); [ -n "${KERNEL_FILTER:-}" ] && KFILTER=(-k "$KERNEL_FILTER")
ROUNDS=${ROUNDS:-1 16}
read -r -a SERVE_EXTRA <<<"${SERVE_ARGS:-}"
STARTUP=${STARTUP:-1}
if [ -e "$OUT/summary.txt" ]; then
  echo "warm-check.sh: $OUT already holds a check; give a new directory" >&2
  exit 2
fi
mkdir -p "$OUT" || exit 2
START=$(date +%s)
TOTAL_S=${TOTAL_S:-540}   # 9 minutes for everything, the stops included
STOP_RESERVE_S=40
TAG="kprof-warm-check-$$-$START"
URL="http://127.0.0.1:$PORT"
passed=0
failed=0
: >"$OUT/summary.txt"

say() { echo "[warm-check $(date +%H:%M:%S)] $*" | tee -a "$OUT/check.log"; }
result() { # ok|FAIL WHAT
  case $1 in ok) passed=$((passed + 1)) ;; *) failed=$((failed + 1)) ;; esac
  printf '%-4s %s\n' "$1" "$2" | tee -a "$OUT/summary.txt" "$OUT/check.log"
}
# Seconds this step may take (at least 5): what is left of the 9 minutes, less the stops.
left() {
  local l=$((TOTAL_S - STOP_RESERVE_S - ($(date +%s) - START)))
  [ "$l" -lt 5 ] && l=5
  echo "$l"
}
# Lines "ok WHAT" / "FAIL WHAT" of a file, counted in this shell (not in a pipeline's subshell).
read_results() {
  local line
  while read -r line; do [ -n "$line" ] && result "${line%% *}" "${line#* }"; done <"$1"
}
# kprof with its libraries; LD_LIBRARY_PATH is set for kprof alone, never for this script.
kp() { LD_LIBRARY_PATH="$KPROF_LIBS" "$KPROF" "$@"; }

# The server's processes: every process whose environment carries this run's tag (ncu's launch
# mode does not keep them as its children). By PID only.
tagged_pids() {
  for env in /proc/[0-9]*/environ; do
    pid=${env#/proc/}
    pid=${pid%/environ}
    [ "$pid" = "$$" ] && continue
    { tr '\0' '\n' <"$env"; } 2>/dev/null | grep -qx "KPROF_WARM_CHECK_TAG=$TAG" && echo "$pid"
  done
}
LAUNCHER=""
stop_all() {
  local pids
  pids=$(tagged_pids)
  [ -n "$LAUNCHER" ] && pids="$pids $LAUNCHER"
  [ -z "${pids// /}" ] && return
  say "stopping pids: $pids"
  for p in $pids; do kill -TERM "$p" 2>/dev/null; done
  for _ in $(seq 50); do
    local alive=""
    for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
    [ -z "$alive" ] && break
    sleep 0.2
  done
  for p in $pids; do kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null; done
  [ -n "$LAUNCHER" ] && wait "$LAUNCHER" 2>/dev/null
  LAUNCHER=""
}
finish() {
  stop_all
  local rest
  rest=$(tagged_pids)
  if [ -z "$rest" ]; then result ok "no process of the run is left"; else result FAIL "left running: $rest"; fi
  echo "$passed passed, $failed failed ($(($(date +%s) - START)) s)" | tee -a "$OUT/summary.txt"
  [ "$failed" -eq 0 ]
  exit $?
}
trap 'say "interrupted"; finish' INT TERM

say "kprof $KPROF ($(kp --version 2>&1 | head -1)); ncu $($NCU --version 2>&1 | tail -1)"

# The server under ncu's launch mode: --nvtx so that the attach side may filter on NVTX ranges;
# --target-processes all so that the engine (a child of the front) waits for a profiler too.
start_server() { # LOG
  say "starting serve.py (hf) under ncu --mode launch"
  KPROF_WARM_CHECK_TAG=$TAG "$NCU" --mode launch --target-processes all --nvtx \
    "$PYTHON" "$R/tools/serving/serve.py" --backend hf --port "$PORT" --max-batch 16 \
    --max-prefill-len 256 --max-len 512 --request-log "$OUT/requests.jsonl" "${SERVE_EXTRA[@]}" \
    >"$1" 2>&1 &
  LAUNCHER=$!
  for _ in $(seq 100); do grep -q "Waiting for profiler" "$1" && break; sleep 0.2; done
  grep -q "Waiting for profiler" "$1" && result ok "the front waits for a profiler ($(basename "$1"))" ||
    result FAIL "no 'Waiting for profiler' line within 20 s ($(basename "$1"))"
}
start_server "$OUT/serve.log"

# 2./3. The warm sequence at c=1 and c=16 against the same server.
warm() { # NAME CONCURRENCY
  say "$1: warm capture at concurrency $2"
  timeout -s INT "$(left)" env LD_LIBRARY_PATH="$KPROF_LIBS" "$KPROF" capture --ncu "$NCU" \
    -o "$OUT/$1" --attach 127.0.0.1 --attach-process serve::engine --attach-timeout 60 \
    --load-url "$URL" --ready-timeout 240 --warmup-requests 16 --load-concurrency "$2" \
    --prompt-len 64 --output-len 32 --nvtx-include decode_step/ "${KFILTER[@]}" \
    --launch-count "$LAUNCH_COUNT" --preset "$PRESET" --timeout 180 --json \
    >"$OUT/$1.json" 2>"$OUT/$1.stderr"
  local rc=$?
  [ $rc -eq 0 ] && result ok "$1: exit 0" || result FAIL "$1: exit $rc ($1.stderr)"
  "$PYTHON" - "$OUT/$1" "$2" >"$OUT/$1.checks" <<'EOF'
import json, sys
path, c = sys.argv[1], int(sys.argv[2])
name = path.rsplit("/", 1)[-1]
try:
    m = json.load(open(path + "/manifest.json"))
except Exception as e:
    print(f"FAIL {name}: no manifest ({e})"); sys.exit()
steps = [w["step"] for w in m["attach"].get("warm", {}).get("sequence", [])]
want = ["released_at_startup", "ready", "warmup", "detached", "load_started"]
print(("ok" if steps == want else "FAIL") + f" {name}: sequence {steps}")
load = m.get("load", {})
print(("ok" if load.get("warmup", {}).get("completed", 0) >= 16 else "FAIL") +
      f" {name}: warm-up completed {load.get('warmup', {}).get('completed')}")
print(("ok" if load.get("completed", 0) > 0 and load.get("failed", 1) == 0 else "FAIL") +
      f" {name}: during the capture {load.get('sent')} sent, {load.get('completed')} completed, "
      f"{load.get('failed')} failed at concurrency {load.get('concurrency')}")
print(("ok" if m["progress"]["kernels_profiled"] > 0 else "FAIL") +
      f" {name}: {m['progress']['kernels_profiled']} kernels profiled, status {m['status']}")
EOF
  read_results "$OUT/$1.checks"
}
declare -A seen_round=()
for c in $ROUNDS; do
  name=warm_c$c
  [ -n "${seen_round[$c]:-}" ] && name=warm_c${c}_again
  seen_round[$c]=1
  warm "$name" "$c"
done
[ "$STARTUP" = 1 ] || finish

# 1b. The start-up capture needs an engine in start-up: a second server. It comes last because
# on the H200 (2026-12-01) an engine detached from in the middle of its start-up died of SIGSEGV
# seconds later (serve.log), which took the warm captures' server with it when it came first.
stop_all
start_server "$OUT/serve-startup.log"
# 1. A start-up capture of the engine: the front is held (it runs on, profiled for nothing), the
# engine it spawns is followed and captured inside its start-up profiling forward.
say "1. start-up capture"
timeout -s INT "$(left)" env LD_LIBRARY_PATH="$KPROF_LIBS" "$KPROF" capture --ncu "$NCU" \
  -o "$OUT/startup" --attach 127.0.0.1 --attach-process serve::engine --attach-timeout 120 \
  --nvtx-include profile_run/ "${KFILTER[@]}" --launch-count "$LAUNCH_COUNT" --preset "$PRESET" \
  --timeout 150 --json >"$OUT/startup.json" 2>"$OUT/startup.stderr"
rc=$?
[ $rc -eq 0 ] && result ok "startup: exit 0" || result FAIL "startup: exit $rc (startup.stderr)"
grep -q "attach: held pid" "$OUT/startup.stderr" && result ok "startup: the front was held" ||
  result FAIL "startup: no front held"
grep -q "attach: target_found pid" "$OUT/startup.stderr" &&
  result ok "startup: the engine (serve::engine) was followed" || result FAIL "startup: engine not found"


# 4. The proof: the decode kernels' grids under load differ from the start-up forward's.
for b in startup warm_c1 warm_c16; do
  [ -f "$OUT/$b/report.ncu-rep" ] && kp inspect --json "$OUT/$b/report.ncu-rep" >"$OUT/$b.inspect.json" 2>>"$OUT/check.log"
done
"$PYTHON" - "$OUT" >"$OUT/grids.txt" <<'EOF'
import json, os, sys
out = sys.argv[1]
def grids(name):
    path = os.path.join(out, name + ".inspect.json")
    if not os.path.exists(path):
        return None
    doc = json.load(open(path))
    kernels = doc["kernels"] if "kernels" in doc else [k for r in doc.get("reports", []) for k in r["kernels"]]
    found = {}
    for k in kernels:
        found.setdefault(k.get("function_name") or k["name"], set()).add(tuple(k["grid"]))
    return found
g = {n: grids(n) for n in ("startup", "warm_c1", "warm_c16")}
for a, b in (("startup", "warm_c1"), ("startup", "warm_c16"), ("warm_c1", "warm_c16")):
    if g[a] is None or g[b] is None:
        print(f"FAIL grids {a} vs {b}: a report is missing"); continue
    common = sorted(set(g[a]) & set(g[b]))
    differ = [n for n in common if g[a][n] != g[b][n]]
    detail = "; ".join(f"{n}: {sorted(g[a][n])} vs {sorted(g[b][n])}" for n in common)
    everything = f"{a} {sorted((n, sorted(v)) for n, v in g[a].items())} | {b} {sorted((n, sorted(v)) for n, v in g[b].items())}"
    if a == "startup":
        ok = bool(common) and len(differ) == len(common) or (not common and g[a] and g[b])
        print(("ok" if ok else "FAIL") + f" grids {a} vs {b}: {len(common)} kernel names in both, "
              f"{len(differ)} with other grids ({detail or 'no name in common: ' + everything})")
    else:
        print(f"ok grids {a} vs {b} (for the record): {len(differ)} of {len(common)} names with other grids ({detail})")
EOF
read_results "$OUT/grids.txt"

finish
