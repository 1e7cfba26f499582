#!/usr/bin/env python3
"""Runs one pytest module of the Python package's tests (tests/python) against a kprof binary.

usage: run_pytest.py KPROF TEST_FILE
The package is imported from the source tree (python/), the binary given as KPROF_BINARY. Exit 77
(skipped, not passed) without Debian's python3-pandas or python3-pytest (scripts/install-deps
installs both)."""
import importlib.util
import os
import sys

missing = [name for name in ("pandas", "pytest") if importlib.util.find_spec(name) is None]
if missing:
    print(f"SKIP: {', '.join(missing)} not installed (scripts/install-deps installs python3-pandas "
          "and python3-pytest)")
    sys.exit(77)
import pytest  # noqa: E402

kprof, test_file = sys.argv[1:3]
os.environ["KPROF_BINARY"] = os.path.abspath(kprof)
sys.dont_write_bytecode = True  # nothing written into the source tree
# -p no:cacheprovider: no .pytest_cache in the source tree either.
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-rs", test_file]))
