#!/usr/bin/env python3
"""Runs `kprof analyze --json` on real captures and validates each output against
docs/kprof.analysis.schema.json (draft 2020-12). usage: validate_analysis_json.py KPROF SCHEMA DATA_DIR"""
import json
import subprocess
import sys

try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema is not installed (scripts/install-deps installs it)")
    sys.exit(77)

kprof, schema_path, data = sys.argv[1:4]
schema = json.load(open(schema_path))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
captures = ["big_full.ncu-rep.zst", "big_basic.ncu-rep.zst", "big_min.ncu-rep.zst",
            "bottleneck_suite_full.ncu-rep.zst", "big_full_details.csv.zst",
            "multi_process_basic_raw.csv"]
runs = [(capture, [kprof, "analyze", "--json", f"{data}/h200/{capture}"]) for capture in captures]
# With a calibration (measured_ceilings filled in): the constructed H200 calibration of the tests.
tests_dir = schema_path.rsplit("/docs/", 1)[0] + "/tests"
runs.append(("bottleneck_suite_full + calibration",
             [kprof, "analyze", "--json", "--gpus", f"{tests_dir}/selftest/data/constructed_h200_calibration.json",
              f"{data}/h200/bottleneck_suite_full.ncu-rep.zst"]))
runs.append(("report big_full + trace_eager",
             [kprof, "report", "--json", "--trace", f"{data}/h200/trace_eager.json.gz",
              f"{data}/h200/big_full.ncu-rep.zst"]))
# A trace of kprof's tracer with a graph node table: its fix list's rows split per batch bucket.
runs.append(("report compiled_decode_full + tracer_graph_nodes (rows per batch bucket)",
             [kprof, "report", "--json", "--trace", f"{tests_dir}/timeline/data/tracer_graph_nodes.json",
              f"{data}/h200/compiled_decode_full.ncu-rep.zst"]))
failures = 0
for capture, command in runs:
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    document = json.loads(out)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.path))
    for error in errors[:5]:
        print(f"{capture}: {'/'.join(map(str, error.path))}: {error.message}")
    failures += bool(errors)
    # The product's field names are kept (PRODUCT.md, "JSON").
    for kernel in document["kernels"]:
        for field in ["target", "roofline", "tflops", "memory_bw_utilization", "sm_occupancy",
                      "shared_memory_usage_bytes", "warp_stall_reasons", "wall_clock_us",
                      "fraction_of_pipeline", "pipeline_stage", "optimization_headroom"]:
            assert field in kernel, f"{capture}: kernel lacks {field}"
    print(f"{capture}: {len(document['kernels'])} kernels valid" if not errors else f"{capture}: INVALID")
sys.exit(1 if failures else 0)
