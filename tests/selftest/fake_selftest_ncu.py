#!/usr/bin/env python3
"""A stand-in for ncu around `kprof selftest`: runs the program after its options (kprof's
hidden `selftest-kernels`, against the stand-in libcuda), prints ncu's progress lines for the
kernels that program says it launched, and writes FAKE_NCU_REPORT (a real H200 capture) at the
-o path + .ncu-rep, as ncu would. FAKE_NCU_EXIT: exit with this status and write nothing
(after an ==ERROR== line). FAKE_NCU_LOG: a file to write the argv to (JSON)."""
import json
import os
import shutil
import subprocess
import sys

argv = sys.argv[1:]
if os.environ.get("FAKE_NCU_LOG"):
    with open(os.environ["FAKE_NCU_LOG"], "w") as f:
        json.dump(sys.argv, f)
if argv == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.1.0 (fake)")
    sys.exit(0)
status = int(os.environ.get("FAKE_NCU_EXIT", "0"))
if status:
    print("==ERROR== the fake ncu was told to fail", file=sys.stderr)
    sys.exit(status)
options_with_values = {"--config-file", "--set", "--clock-control", "--target-processes", "-k", "-o"}
i = 0
output = None
while i < len(argv) and argv[i].startswith("-"):
    if argv[i] == "-o":
        output = argv[i + 1]
    i += 2 if argv[i] in options_with_values else 1
program = argv[i:]
print(f"==PROF== Connected to process 1 ({program[0]})")
ran = subprocess.run(program, capture_output=True, text=True)
sys.stderr.write(ran.stderr)
for line in ran.stdout.splitlines():
    print(f'==PROF== Profiling "{line.split()[0]}": 0%....50%....100% - 38 passes', flush=True)
if ran.returncode != 0:
    print(f"==ERROR== The application returned an error code ({ran.returncode}).")
    sys.exit(ran.returncode)
shutil.copyfile(os.environ["FAKE_NCU_REPORT"], output + ".ncu-rep")
print(f"==PROF== Report: {output}.ncu-rep")
