#!/usr/bin/env bash
# GPU check of tools/serving on one GPU (written for one H200, PyTorch 2.11, transformers, no
# network): starts serve.py (hf backend: random-weight Llama, CUDA-graph decode), waits for
# /health, drives load.py at c=1 and c=16, opens and closes a profiler window with load inside it,
# optionally keeps load flowing for HOLD_S seconds (for attaching ncu while requests flow), stops
# the server and checks what each step left. Everything goes to OUTDIR; summary.txt ends with
# "N passed, M failed" and the exit status is 0 only when nothing failed.
#
# usage: tools/serving/gpu-check.sh OUTDIR [serve.py options...]
#
# It may run under ncu: as the target of `ncu --target-processes all ... gpu-check.sh OUTDIR`
# (launch-and-attach) or of `ncu --mode launch --target-processes all --nvtx gpu-check.sh OUTDIR`
# with attaches from another shell; tools/serving/README.md gives the exact commands. This script
# itself, curl-free, never touches CUDA: only serve.py's two processes do (load.py and the python
# one-liners below import neither torch nor CUDA), so under `ncu --mode launch` only those wait.
#
# Environment (defaults in brackets):
#   PYTHON [python3]  PORT [8011]  HEALTH_TIMEOUT [1800 s; under ncu --mode launch this includes
#   the time until you attach]  PROMPT_LEN [128]  OUTPUT_LEN [64]  C1_REQUESTS [16]
#   C16_REQUESTS [64]  WINDOW_REQUESTS [32] (at c=16, inside /start_profile../stop_profile)
#   HOLD_S [0] (then HOLD_CONCURRENCY [16] for HOLD_S seconds)  REQUEST_TIMEOUT [3600 s: a request
#   whose kernels ncu replays is slow]  STOP_TIMEOUT [120 s]
set -u -o pipefail

if [ $# -lt 1 ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
out=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3}
PORT=${PORT:-8011}
HEALTH_TIMEOUT=${HEALTH_TIMEOUT:-1800}
PROMPT_LEN=${PROMPT_LEN:-128}
OUTPUT_LEN=${OUTPUT_LEN:-64}
C1_REQUESTS=${C1_REQUESTS:-16}
C16_REQUESTS=${C16_REQUESTS:-64}
WINDOW_REQUESTS=${WINDOW_REQUESTS:-32}
HOLD_S=${HOLD_S:-0}
HOLD_CONCURRENCY=${HOLD_CONCURRENCY:-16}
REQUEST_TIMEOUT=${REQUEST_TIMEOUT:-3600}
STOP_TIMEOUT=${STOP_TIMEOUT:-120}

for v in PORT HEALTH_TIMEOUT PROMPT_LEN OUTPUT_LEN C1_REQUESTS C16_REQUESTS WINDOW_REQUESTS HOLD_S \
  HOLD_CONCURRENCY REQUEST_TIMEOUT STOP_TIMEOUT; do
  case ${!v} in '' | *[!0-9]*)
    echo "gpu-check.sh: $v must be a whole number, got '${!v}'" >&2
    exit 2
    ;;
  esac
done
if [ -e "$out/serve.log" ]; then
  echo "gpu-check.sh: $out already holds a check (serve.log); give a new directory" >&2
  exit 2
fi
mkdir -p "$out" || exit 2
url="http://127.0.0.1:$PORT"
check_log="$out/check.log"
summary="$out/summary.txt"
: >"$summary"
passed=0
failed=0

say() { echo "[check $(date +%H:%M:%S)] $*" | tee -a "$check_log"; }
result() { # result ok|FAIL|skip WHAT (a skip is counted neither way)
  case $1 in ok) passed=$((passed + 1)) ;; FAIL) failed=$((failed + 1)) ;; esac
  printf '%-4s %s\n' "$1" "$2" | tee -a "$summary" "$check_log"
}
# http METHOD PATH: prints the status code (000 when nothing answered); no curl needed.
http() {
  "$PYTHON" - "$1" "$url$2" <<'EOF'
import sys, urllib.error, urllib.request
method, url = sys.argv[1], sys.argv[2]
req = urllib.request.Request(url, data=b"" if method == "POST" else None, method=method)
try:
    with urllib.request.urlopen(req, timeout=3600) as r:
        print(r.status)
except urllib.error.HTTPError as e:
    print(e.code)
except OSError:
    print("000")
EOF
}
# field FILE KEY...: one value from a load.py JSON report (empty when absent).
field() {
  "$PYTHON" - "$@" <<'EOF'
import json, sys
try:
    value = json.load(open(sys.argv[1]))
    for key in sys.argv[2:]:
        value = value[key]
    print(value)
except (OSError, ValueError, KeyError, TypeError):
    print("")
EOF
}

say "gpu-check: output in $out; serve.py on $url; extra serve.py options: ${*:-none}"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -a)"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used \
    --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  command -v ncu >/dev/null && echo "ncu: $(ncu --version 2>&1 | tail -1)"
  # versions only: importing torch does not initialise CUDA (under ncu --mode launch this process
  # must not wait for a profiler)
  "$PYTHON" -c 'import sys, torch, transformers; print("python", sys.version.split()[0], "torch", torch.__version__,
"(CUDA", str(torch.version.cuda) + ")", "transformers", transformers.__version__)' 2>&1 | tail -1
  env | grep -E '^(NV_|NVIDIA|CUDA_VISIBLE)' | sed 's/^/env: /' | sort
} >"$out/env.txt"
cat "$out/env.txt" >>"$check_log"

server_pid=""
stop_server() {
  [ -n "$server_pid" ] || return 0
  if kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null
    for _ in $(seq 1 "$STOP_TIMEOUT"); do
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 1
    done
    if kill -0 "$server_pid" 2>/dev/null; then
      say "serve.py pid $server_pid did not stop within $STOP_TIMEOUT s after SIGTERM; SIGKILL"
      kill -KILL "$server_pid" 2>/dev/null
    fi
  fi
  wait "$server_pid" 2>/dev/null
  server_status=$?
  server_pid=""
}
trap 'stop_server' EXIT
trap 'say "interrupted"; exit 130' INT TERM

"$PYTHON" "$here/serve.py" --backend hf --port "$PORT" --request-log "$out/requests.jsonl" "$@" \
  >"$out/serve.log" 2>&1 &
server_pid=$!
say "serve.py pid $server_pid started; waiting up to $HEALTH_TIMEOUT s for GET /health = 200"
say "(under ncu --mode launch: attach to the front now, then to the engine once serve.log says 'engine pid N started')"

# --- readiness -------------------------------------------------------------------------------
started=$(date +%s)
ready=no
last_note=0
while :; do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    say "serve.py exited before it was ready; its log:"
    tail -40 "$out/serve.log" | tee -a "$check_log"
    break
  fi
  status=$(http GET /health)
  if [ "$status" = 200 ]; then
    ready=yes
    break
  fi
  now=$(date +%s)
  if [ $((now - started)) -ge "$HEALTH_TIMEOUT" ]; then
    say "GET /health still $status after $HEALTH_TIMEOUT s"
    break
  fi
  if [ $((now - last_note)) -ge 30 ]; then
    say "GET /health: $status after $((now - started)) s; last serve.py line: $(tail -1 "$out/serve.log")"
    last_note=$now
  fi
  sleep 2
done
if [ $ready = yes ]; then
  result ok "GET /health answered 200 after $(($(date +%s) - started)) s"
else
  result FAIL "serve.py never became ready (GET /health)"
  stop_server
  echo "$passed passed, $failed failed" | tee -a "$summary"
  exit 1
fi
fake=no
grep -q '\] pid [0-9]*, backend fake' "$out/serve.log" && fake=yes
decode=$(grep -m1 -E '\] decode: ' "$out/serve.log" | sed 's/^.*\] decode: //')
if [ $fake = yes ]; then
  result skip "decode kind: --backend fake has no GPU decode (a rehearsal of this script, not a GPU check)"
elif grep -q '\] decode: CUDA graphs' "$out/serve.log"; then
  result ok "engine decodes with CUDA graphs: $decode"
elif grep -q '\] decode: eager, .*(--decode-graph off)' "$out/serve.log"; then
  result ok "engine decodes eagerly, as asked: $decode"
else
  result FAIL "engine fell back to eager decode: $decode"
fi

# --- load ------------------------------------------------------------------------------------
# run_load NAME CONCURRENCY load.py-options...: one load phase, its report in NAME.json/.log
run_load() {
  local name=$1 c=$2
  shift 2
  say "load $name: c=$c $*"
  "$PYTHON" "$here/load.py" --url "$url" -c "$c" --prompt-len "$PROMPT_LEN" --output-len "$OUTPUT_LEN" \
    --timeout "$REQUEST_TIMEOUT" --json "$out/load-$name.json" "$@" >"$out/load-$name.log" 2>&1
  local rc=$?
  tee -a "$check_log" <"$out/load-$name.log" >/dev/null
  local sent completed bad most
  sent=$(field "$out/load-$name.json" sent)
  completed=$(field "$out/load-$name.json" completed)
  bad=$(field "$out/load-$name.json" failed)
  most=$(field "$out/load-$name.json" most_in_flight)
  local line
  line=$(tail -1 "$out/load-$name.log")
  if [ $rc -eq 0 ] && [ -n "$sent" ] && [ "$sent" = "$completed" ] && [ "$bad" = 0 ] && [ "$most" = "$c" ]; then
    result ok "$line"
  else
    result FAIL "load $name (exit $rc, $most of $c in flight): $line"
  fi
}

run_load c1 1 --requests "$C1_REQUESTS"
run_load c16 16 --requests "$C16_REQUESTS"

# --- profiler window with load inside it ------------------------------------------------------
status=$(http POST /start_profile)
if [ "$status" = 200 ]; then result ok "POST /start_profile: 200"; else result FAIL "POST /start_profile: $status"; fi
run_load window 16 --requests "$WINDOW_REQUESTS"
status=$(http POST /stop_profile)
if [ "$status" = 200 ]; then result ok "POST /stop_profile: 200"; else result FAIL "POST /stop_profile: $status"; fi
if [ $fake = yes ]; then
  result skip "cudaProfilerStart()/Stop(): --backend fake calls no profiler"
elif grep -q 'stop_profile: PyTorch profiler stopped; wrote .*trace.json' "$out/serve.log"; then
  # --profile-mode torch: the window is the PyTorch profiler's, and its trace must be written.
  result ok "the engine's PyTorch profiler wrote its trace: $(grep -o 'wrote .*' "$out/serve.log" | tail -1)"
elif grep -q 'start_profile: cudaProfilerStart() called in the engine' "$out/serve.log" &&
  grep -q 'stop_profile: cudaProfilerStop() called in the engine' "$out/serve.log"; then
  result ok "the engine called cudaProfilerStart() and cudaProfilerStop()"
else
  result FAIL "the engine's log does not show cudaProfilerStart()/cudaProfilerStop() (profile mode not cuda?)"
fi

if [ "$HOLD_S" -gt 0 ]; then
  say "holding load for $HOLD_S s (c=$HOLD_CONCURRENCY): attach ncu to the engine now"
  run_load hold "$HOLD_CONCURRENCY" --duration "$HOLD_S"
fi

# --- stop and account -------------------------------------------------------------------------
engine_pid=$(grep -m1 -oE 'engine pid [0-9]+ started' "$out/serve.log" | grep -oE '[0-9]+')
server_status=""
stop_server
if [ "$server_status" = 0 ]; then result ok "serve.py stopped on SIGTERM, exit status 0"; else
  result FAIL "serve.py exit status after SIGTERM: $server_status"
fi
if [ -n "$engine_pid" ] && grep -q "engine pid $engine_pid stopped (exit status 0)" "$out/serve.log"; then
  result ok "engine pid $engine_pid stopped with exit status 0"
else
  result FAIL "the engine did not stop cleanly (see serve.log)"
fi
sent_total=0
for f in "$out"/load-*.json; do
  [ -e "$f" ] && sent_total=$((sent_total + $(field "$f" sent)))
done
logged=$(grep -c '"event":"request"' "$out/requests.jsonl" 2>/dev/null || echo 0)
if [ "$logged" = "$sent_total" ]; then result ok "request log: $logged requests, as many as load.py sent"; else
  result FAIL "request log: $logged requests, load.py sent $sent_total"
fi
grep -E 'ms/step|captured .* decode graphs|graph decode vs eager|weights: |profiling run:' "$out/serve.log" |
  sed 's/^/serve: /' >>"$check_log"
echo "$passed passed, $failed failed" | tee -a "$summary"
[ "$failed" -eq 0 ]
