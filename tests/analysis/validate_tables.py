#!/usr/bin/env python3
"""The tables kprof ships (data/gpus.json, data/stages.json, data/expected_bottlenecks.json)
validate against their published JSON Schemas (docs/kprof.*.schema.json, draft 7), and the
schemas reject what kprof's own check rejects (a few wrong tables).
usage: validate_tables.py DOCS_DIR DATA_DIR"""
import copy
import json
import sys

try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema is not installed (scripts/install-deps installs it)")
    sys.exit(77)

docs, data = sys.argv[1:3]
tables = {"gpus": "gpus.json", "stages": "stages.json", "expectations": "expected_bottlenecks.json"}
failures = 0
validators = {}
for schema_name, table in tables.items():
    schema = json.load(open(f"{docs}/kprof.{schema_name}.schema.json"))
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    validators[schema_name] = validator
    document = json.load(open(f"{data}/{table}"))
    errors = list(validator.iter_errors(document))
    for error in errors[:5]:
        print(f"data/{table}: {'/'.join(map(str, error.path))}: {error.message}")
    failures += bool(errors)
    print(f"data/{table}: {'INVALID' if errors else 'valid'} against kprof.{schema_name}.schema.json")

# Wrong tables the schemas must refuse (the C++ check refuses the same; tests/analysis/user_tables_test.cpp).
gpus = json.load(open(f"{data}/gpus.json"))
expectations = json.load(open(f"{data}/expected_bottlenecks.json"))
stages = json.load(open(f"{data}/stages.json"))
wrong = []
bad = copy.deepcopy(expectations); bad["expectations"][0]["expected"] = "DRAM"; wrong.append(("expectations", bad))
bad = copy.deepcopy(expectations); bad["expectations"][0]["note"] = "x"; wrong.append(("expectations", bad))
bad = copy.deepcopy(stages); del bad["rules"][0]["regex"]; wrong.append(("stages", bad))
bad = copy.deepcopy(stages); bad["rules"][0]["stage"] = ""; wrong.append(("stages", bad))
bad = copy.deepcopy(gpus); bad["gpus"][0]["sms"] = -1; wrong.append(("gpus", bad))
bad = copy.deepcopy(gpus); bad["gpus"][0]["peak_tflops"]["fp16"] = 1; wrong.append(("gpus", bad))
bad = copy.deepcopy(gpus); bad["gpus"][0]["memory_bandwidth_tbs"] = "2"; wrong.append(("gpus", bad))
for schema_name, document in wrong:
    if validators[schema_name].is_valid(document):
        print(f"kprof.{schema_name}.schema.json accepts a wrong table")
        failures += 1
sys.exit(1 if failures else 0)
