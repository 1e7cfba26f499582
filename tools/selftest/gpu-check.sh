#!/usr/bin/env bash
# GPU-side check of the selftest kernels and the calibration (issue 16), to run on a GPU machine
# (the H200). Builds nothing: give it the kprof binary of a build; kprof-selftest-runner is taken
# from the same folder (or $RUNNER), ncu from $NCU, PATH or /usr/local/cuda/bin.
#
#   tools/selftest/gpu-check.sh build/kprof [OUT]
#
# Writes into OUT (default selftest-gpu-check-UTCTIME), logging every command and its output to
# OUT/gpu-check.log:
#   device.json               the device and the PTX modules it can JIT (runner info)
#   run_timings.json          each selftest kernel launched 3 times without ncu: event-timed
#                             durations (each should be >= 50 us), registers after the JIT
#   selftest_full.ncu-rep     ncu --set full --clock-control none of one launch of each kernel,
#   selftest_full.ncu.log     with ncu's console output, and its raw/details CSV exports
#   analyze.txt, analyze.json kprof analyze of that capture
#   judge.txt, judge.json     every kernel's verdict, binding unit and occupancy limiter against
#                             data/selftest_expectations.json (runner judge; MISMATCH marks one)
#   capture_triage/           the same kernels through `kprof capture` (its default triage preset),
#   judge_triage.txt          judged the same way: whether triage suffices for a selftest
#   calibration.json          runner calibrate --repeats 20 (kprof.calibration/1)
#   gpus_calibrated.txt       kprof gpus --gpus calibration.json for this GPU: measured ceilings
#                             beside the datasheet figures
# and ends with a summary of which steps passed. Exit 0 when every step passed.
set -uo pipefail

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 PATH/TO/kprof [OUT]" >&2
  exit 2
fi
kprof=$(realpath "$1")
runner=${RUNNER:-$(dirname "$kprof")/kprof-selftest-runner}
if [ ! -x "$runner" ]; then
  echo "gpu-check: no kprof-selftest-runner beside $kprof (build it, or set RUNNER)" >&2
  exit 2
fi
runner=$(realpath "$runner")
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
out=${2:-selftest-gpu-check-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
out=$(realpath "$out")
log="$out/gpu-check.log"
: >"$log"
declare -a results=()

note() { echo "== $*" | tee -a "$log"; }
# Runs a command, its stdout to FILE (and the log), stderr to the log; returns its status.
run_to() {
  local file=$1
  shift
  echo "\$ $*" >>"$log"
  "$@" >"$file" 2> >(tee -a "$log" >&2)
  local status=$?
  cat "$file" >>"$log"
  echo "(exit $status)" >>"$log"
  return $status
}
record() {  # record NAME STATUS [expected statuses...]
  local name=$1 status=$2
  shift 2
  local ok=no
  for expected in "${@:-0}"; do [ "$status" = "$expected" ] && ok=yes; done
  results+=("$(printf '%-28s %s (exit %s)' "$name" "$([ $ok = yes ] && echo ok || echo FAILED)" "$status")")
}

note "kprof: $kprof ($("$kprof" --version 2>&1))"
note "runner: $runner"
note "ncu: $ncu ($("$ncu" --version 2>&1 | tail -1))"
note "nvidia driver: $(cat /sys/module/nvidia/version 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv >>"$log" 2>&1 || true

note "1. device and PTX"
run_to "$out/device.json" "$runner" info
record "device" $?
cat "$out/device.json"

note "2. selftest kernels without ncu (3 launches each, event-timed)"
run_to "$out/run_timings.json" "$runner" run --repeat 3
record "run (no ncu)" $?
if command -v python3 >/dev/null; then
  python3 - "$out/run_timings.json" <<'EOF' | tee -a "$log"
import json, sys
run = json.load(open(sys.argv[1]))
print(f"PTX {run['ptx_arch']} on {run['device']['name']}")
for k in run["kernels"]:
    best = k["best_us"]
    flag = "" if best >= 50 else "   <-- under 50 us"
    print(f"  {k['kernel']:22} grid {k['grid']:6} block {k['block']:4} smem {k['shared_bytes']:6} "
          f"regs {k['registers']:3}  best {best:9.1f} us{flag}")
for n in run["notes"]:
    print("  note:", n)
EOF
fi

note "3. ncu --set full --clock-control none of one launch of each selftest kernel"
echo "\$ $ncu --config-file off --set full --clock-control none --target-processes application-only -k regex:^k_ -f -o $out/selftest_full $runner run --repeat 1" >>"$log"
"$ncu" --config-file off --set full --clock-control none --target-processes application-only \
  -k regex:^k_ -f -o "$out/selftest_full" "$runner" run --repeat 1 \
  >"$out/selftest_full.ncu.log" 2>&1
status=$?
cat "$out/selftest_full.ncu.log" >>"$log"
record "ncu --set full" $status
report="$out/selftest_full.ncu-rep"
if [ -f "$report" ]; then
  "$ncu" --import "$report" --csv --page raw >"$out/selftest_full_raw.csv" 2>>"$log"
  "$ncu" --import "$report" --csv --page details >"$out/selftest_full_details.csv" 2>>"$log"

  note "4. kprof analyze"
  run_to "$out/analyze.txt" "$kprof" analyze --sort id "$report"
  record "analyze" $?
  cat "$out/analyze.txt"
  run_to "$out/analyze.json" "$kprof" analyze --json --sort id "$report"
  record "analyze --json" $?

  note "5. judge: expected vs measured verdict, binding unit, occupancy limiter"
  run_to "$out/judge.txt" "$runner" judge "$report"
  record "judge (full)" $?
  cat "$out/judge.txt"
  run_to "$out/judge.json" "$runner" judge --json "$report"
  record "judge --json" $? 0 6
fi

note "6. the same kernels through kprof capture (triage preset), judged"
run_to "$out/capture_triage.txt" "$kprof" capture -k '^k_' -o "$out/capture_triage" -- "$runner" run --repeat 1
record "kprof capture (triage)" $?
if [ -f "$out/capture_triage/report.ncu-rep" ]; then
  run_to "$out/judge_triage.txt" "$runner" judge "$out/capture_triage/report.ncu-rep"
  record "judge (triage)" $?
  cat "$out/judge_triage.txt"
fi

note "7. calibration (best of 20 runs each, clocks as found)"
run_to "$out/calibration.json" "$runner" calibrate --repeats 20
record "calibrate" $?
if command -v python3 >/dev/null && [ -s "$out/calibration.json" ]; then
  python3 - "$out/calibration.json" <<'EOF' | tee -a "$log"
import json, sys
c = json.load(open(sys.argv[1]))
print(f"{c['gpu']['name']} (cc {c['gpu']['cc']}, {c['ptx_arch']}), CUDA {c['driver']['cuda']}, driver {c['driver']['nvidia']}, {c['date']}")
scale = {"byte/s": (1e12, "TB/s"), "flop/s": (1e12, "TFLOP/s"), "s": (1e-6, "us")}
for x in c["ceilings"]:
    factor, unit = scale[x["unit"]]
    spread = x["median_seconds"] / x["best_seconds"]
    print(f"  {x['name']:22} {x['figure'] / factor:10.3f} {unit:8} best of {x['repeats']}, median/best {spread:.3f}")
for n in c["notes"]:
    print("  note:", n)
EOF
fi
run_to "$out/gpus_calibrated.txt" "$kprof" gpus --gpus "$out/calibration.json" \
  "$(sed -n 's/.*"name": "NVIDIA \([^"]*\)".*/\1/p' "$out/calibration.json" | head -1)"
record "gpus --gpus calibration" $?
cat "$out/gpus_calibrated.txt"

if command -v zstd >/dev/null; then
  for file in "$out"/selftest_full.ncu-rep "$out"/selftest_full_raw.csv "$out"/selftest_full_details.csv; do
    [ -f "$file" ] && zstd -q -19 -f "$file" -o "$file.zst"
  done
fi

note "summary"
failed=0
for line in "${results[@]}"; do
  echo "  $line" | tee -a "$log"
  [[ $line == *FAILED* ]] && failed=1
done
echo "everything is in $out" | tee -a "$log"
exit $failed
