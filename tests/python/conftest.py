"""What the Python package's tests share: the package imported from the source tree, the data
folder, and the kprof binary run directly (for the expected values, independent of the package)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SOURCE / "python"))
H200 = SOURCE / "data" / "h200"


@pytest.fixture(scope="session")
def kprof_binary():
    binary = os.environ.get("KPROF_BINARY")
    if not binary:
        pytest.fail("KPROF_BINARY is not set (tests/python/run_pytest.py sets it)")
    return binary


@pytest.fixture(scope="session")
def cli(kprof_binary):
    """cli(*args) -> stdout of `kprof ARGS`, the binary run directly (no package code)."""
    def run(*args):
        done = subprocess.run([kprof_binary, *map(str, args)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout
    return run


@pytest.fixture(scope="session")
def cli_json(cli):
    """cli_json(*args) -> `kprof ARGS --json` parsed with json.loads, without the package."""
    return lambda *args: json.loads(cli(*args, "--json"))
