#!/usr/bin/env python3
"""Stands between kprof and the real kubectl in tests: appends the argv kprof gave it (one JSON
list per line) to $KUBECTL_LOG, then becomes $REAL_KUBECTL with the same arguments."""
import json
import os
import sys

with open(os.environ["KUBECTL_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\n")
os.execv(os.environ["REAL_KUBECTL"], [os.environ["REAL_KUBECTL"]] + sys.argv[1:])
