#!/usr/bin/env bash
# On a GPU machine (issue 32): kprof calibrate beside the vendor's own figures in the same run —
# torch's cuBLAS GEMMs and device copy (tools/selftest/experiments/vendor_ceilings.py) before and
# after, and calibrate once with the cuBLASLt it finds on the usual paths and once with torch's
# own copy of cuBLASLt (the library the torch figures come from), then kprof selftest under ncu.
#
# usage: [SKIP_SELFTEST=1] tools/selftest/gpu-ceilings.sh KPROF_DIR OUT_DIR
#   KPROF_DIR holds kprof and the non-glibc libraries it links (put on LD_LIBRARY_PATH for kprof
#   only: ncu's launch mode and Python misbehave with them).
set -u
dir=$1
out=$2
mkdir -p "$out"
kp() { LD_LIBRARY_PATH=$dir "$dir/kprof" "$@"; }
gpu_state() {
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >>"$out/gpu_state.csv"
}
gpu_state
python3 tools/selftest/experiments/vendor_ceilings.py >"$out/vendor_before.json" 2>"$out/vendor_before.err"
kp calibrate --repeats 20 -o "$out/h200_calibration.json" >"$out/calibrate.txt" 2>&1
echo "exit $?" >>"$out/calibrate.txt"
gpu_state
torch_lt=$(python3 - <<'PY'
import glob, os, torch
root = os.path.dirname(os.path.dirname(torch.__file__))
found = sorted(glob.glob(os.path.join(root, "nvidia", "**", "libcublasLt.so.*"), recursive=True))
print(found[0] if found else "")
PY
)
echo "torch's cuBLASLt: ${torch_lt:-none found}" >"$out/torch_cublaslt.txt"
if [ -n "$torch_lt" ]; then
  kp calibrate --repeats 20 --cublaslt "$torch_lt" -o "$out/h200_calibration_torch_cublaslt.json" \
    >"$out/calibrate_torch_cublaslt.txt" 2>&1
  echo "exit $?" >>"$out/calibrate_torch_cublaslt.txt"
fi
gpu_state
python3 tools/selftest/experiments/vendor_ceilings.py >"$out/vendor_after.json" 2>"$out/vendor_after.err"
gpu_state
if [ -z "${SKIP_SELFTEST:-}" ]; then
  kp selftest --clock-control none >"$out/selftest.txt" 2>&1
  echo "exit $?" >>"$out/selftest.txt"
fi
