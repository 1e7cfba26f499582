#!/usr/bin/env python3
"""Runs `kprof-selftest-runner calibrate` against the stand-in libcuda and validates its output
against docs/kprof.calibration.schema.json (draft 2020-12); then checks the schema refuses what
the GPU database refuses (a non-positive figure, a missing GPU name).
usage: validate_calibration_json.py RUNNER FAKE_LIBCUDA SCHEMA"""
import copy
import json
import os
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema is not installed (scripts/install-deps installs it)")
    sys.exit(77)

runner, fake, schema_path = sys.argv[1:4]
schema = json.load(open(schema_path))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
failures = 0
for label, environment in [("sm_90", {}), ("sm_80 (old driver)", {"KPROF_FAKE_CUDA_MAX_PTX_ISA": "8.0"})]:
    env = dict(os.environ, KPROF_FAKE_CUDA_KERNEL_US="k_empty=2", KPROF_CUBLASLT="none", **environment)
    out = subprocess.run([runner, "calibrate", "--repeats", "2", "--driver", fake],
                         capture_output=True, text=True, check=True, env=env).stdout
    document = json.loads(out)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    for error in errors[:5]:
        print(f"{label}: {'/'.join(map(str, error.path))}: {error.message}")
    failures += bool(errors)
    print(f"{label}: {len(document['ceilings'])} ceilings, " + ("valid" if not errors else "INVALID"))
    # What the schema must refuse.
    bad = copy.deepcopy(document)
    bad["ceilings"][0]["figure"] = 0
    if validator.is_valid(bad):
        print(f"{label}: a zero figure passed the schema")
        failures += 1
    bad = copy.deepcopy(document)
    del bad["gpu"]["name"]
    if validator.is_valid(bad):
        print(f"{label}: a calibration without gpu.name passed the schema")
        failures += 1
sys.exit(1 if failures else 0)
