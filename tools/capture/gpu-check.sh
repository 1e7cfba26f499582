#!/bin/bash
# Capture checks on a real GPU (run on the H200 through the device tool; summary in the closing
# note of issue 4): kprof capture of a CUDA program and of a PyTorch program with each preset;
# attach, detach and attach again to a long-running process; each diagnosis provoked for real.
# Every capture leaves its bundle in OUT/bundles — the CI's ncu stand-in replays some of them.
# usage: tools/capture/gpu-check.sh KPROF OUT     (CASES="suite_triage attach ..." runs only those)
set -u
KPROF=$(realpath "$1"); OUT=$(realpath -m "$2"); R=$(cd "$(dirname "$0")/../.." && pwd)
B=$OUT/bundles; mkdir -p "$B"; W=$(mktemp -d); cd "$W"
nvcc -O3 -arch=sm_90 -o targets "$R/tools/capture/capture_targets.cu" || exit 1
nvcc -O3 -arch=sm_90 -o suite "$R/tools/bottleneck_suite/suite.cu" || exit 1
cp "$R/tools/capture/workload_decode.py" .
summary() {  # NAME EXPECTED_RC ACTUAL_RC
  local b=$B/$1; [ -d "$b" ] || b=$B/$1.incomplete
  local line="$1: exit $3 (expected $2)"
  [ -f "$b/manifest.json" ] && line+=$(python3 -c "
import json,sys; m=json.load(open(sys.argv[1]))
print(f\" status={m['status']} kernels={m['progress']['kernels_profiled']} passes={m['progress']['passes_per_kernel']} {m['elapsed_s']:.1f}s diagnoses={[d['id'] for d in m['diagnoses']]}\")" "$b/manifest.json")
  [ "$2" = "$3" ] && echo "PASS $line" || echo "FAIL $line"
}
wanted() { [ -z "${CASES:-}" ] || [[ " $CASES " == *" $1 "* || " $CASES " == *" ${1%%_*} "* ]]; }
cap() {  # NAME EXPECTED_RC ARGS...
  local name=$1 want=$2; shift 2
  wanted "$name" || return 0
  "$KPROF" capture -o "$B/$name" "$@" > "$OUT/$name.stdout" 2> "$OUT/$name.stderr"
  summary "$name" "$want" $?
}
echo "== presets: a CUDA program (10 kernels of known bottlenecks) and a PyTorch program"
for p in triage basic full; do cap suite_$p 0 --preset $p -k '^k_' -- ./suite; done
for p in triage basic full; do
  cap torch_$p 0 --preset $p --launch-skip 20 --launch-count 30 -- python3 workload_decode.py 4
done
wanted baseline && { s=$(date +%s%N); python3 workload_decode.py 4 > /dev/null; echo "torch program without ncu: $(( ($(date +%s%N) - s) / 1000000 )) ms"
s=$(date +%s%N); ./suite > /dev/null; echo "suite without ncu: $(( ($(date +%s%N) - s) / 1000000 )) ms"; }

echo "== attach, detach, attach again"
if wanted attach; then
ncu --mode launch ./targets long 60 > "$OUT/launch.log" 2>&1 &
LAUNCH=$!
for i in $(seq 100); do grep -q "Waiting for profiler" "$OUT/launch.log" && break; sleep 0.2; done
cap attach_1 0 --attach 127.0.0.1 -k k_alpha --launch-count 2 --preset basic --timeout 120
kill -0 $LAUNCH && echo "PASS target still runs after the first detach" || echo "FAIL target gone"
cap attach_2 0 --attach 127.0.0.1:49152 -k k_beta --launch-count 2 --timeout 120
kill -0 $LAUNCH && echo "PASS target still runs after the second detach" || echo "FAIL target gone"
# Stopping `ncu --mode launch` leaves its application running: stop the application itself.
kill $LAUNCH; pkill -f "targets long"; wait $LAUNCH 2>/dev/null; sleep 1
fi
cap attach_nothing 7 --attach 127.0.0.1 --launch-count 1 --timeout 60

echo "== diagnoses, each provoked"
cap ok_plain 0 -- ./targets plain
cap no_match 7 -k doesnotexist -- ./targets plain
cap children 7 --launch-count 1 -- python3 -c "import subprocess; subprocess.run(['./targets','plain'])"
cap children_ok 0 --children --launch-count 1 -- python3 -c "import subprocess; subprocess.run(['./targets','plain'])"
cap profiler_stop 0 --honor-profiler-start-stop --launch-count 5 -- ./targets stop
cap profiler_stop_ignored 0 --launch-count 5 -- ./targets stop
cap never_started 7 --ncu-arg=--profile-from-start --ncu-arg=off -- ./targets plain
cap unknown_section 7 --section NoSuchSection -- ./targets plain
cap unknown_metric 7 --metrics no__such_metric.sum -- ./targets plain
cap app_replay_random 7 --replay-mode application --preset basic -- ./targets random
cap target_crash 7 -- ./targets crash
cap missing_app 7 -- ./no_such_program
cap not_cuda 7 -- /bin/true
cap injection_taken 0 --env CUDA_INJECTION64_PATH=/nonexistent/libother.so -- ./targets plain
cap timeout 8 --timeout 5 -- ./targets long 60
if wanted timeout; then
  pgrep -f "targets long" > /dev/null && echo "FAIL a target survived the timeout" || echo "PASS nothing left running after the timeout"
fi
wanted refusals && "$KPROF" capture -o "$B/env_refused" -- env FOO=1 ./targets plain > /dev/null 2> "$OUT/env_refused.stderr"; echo "env wrapper refused: exit $? $(head -c 200 "$OUT/env_refused.stderr")"
wanted refusals && "$KPROF" capture -o "$B/full_refused" --preset full -- ./targets plain > /dev/null 2> "$OUT/full_refused.stderr"; echo "unscoped full refused: exit $? $(head -c 200 "$OUT/full_refused.stderr")"
wanted doctor || exit 0
echo "RmProfilingAdminOnly: $(grep RmProfilingAdminOnly /proc/driver/nvidia/params)"
"$KPROF" doctor; echo "doctor exit $?"
"$KPROF" doctor --json > "$OUT/doctor.json"
cat /sys/module/nvidia/version /usr/local/cuda/version.json > "$OUT/doctor_facts.txt" 2>&1
