"""`pip install ./python` installs a package that imports and runs kprof, and the package's
version is kprof's. (The installed tree of `cmake --install`, where the package finds the kprof
installed beside it, is tests/packaging/install_test.py's.)"""
import os
import re
import shutil
import subprocess
import sys

import pytest

import kprof
from conftest import H200, SOURCE


def test_versions_agree():
    cmake = (SOURCE / "CMakeLists.txt").read_text()
    pyproject = (SOURCE / "python" / "pyproject.toml").read_text()
    version = re.search(r"project\(kprof VERSION (\S+)", cmake).group(1)
    assert re.search(r'^version = "(.*)"$', pyproject, re.M).group(1) == version
    assert kprof.__version__ == version


def test_pip_install(tmp_path, kprof_binary):
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode:
        pytest.skip("pip is not installed for this Python (Debian: python3-pip)")
    # A copy: setuptools builds in the source folder it is given.
    source = shutil.copytree(SOURCE / "python", tmp_path / "src",
                             ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    target = tmp_path / "site"
    # Offline: Debian's setuptools builds it; pandas is Debian's (not fetched).
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-index",
                           "--no-build-isolation", "--no-deps", "--target", str(target), str(source)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (target / "kprof" / "__init__.py").is_file()
    assert not (target / "kprof" / "installed_binary").exists()  # pip's: kprof from PATH or KPROF_BINARY
    code = ("import kprof, sys; r = kprof.rank(sys.argv[1]); "
            "print(kprof.__file__); print(len(r.df), r.json['schema'])")
    env = dict(os.environ, PYTHONPATH=str(target), KPROF_BINARY=os.path.abspath(kprof_binary))
    done = subprocess.run([sys.executable, "-c", code, str(H200 / "budget_eager_b1.json.gz")],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    where, answer = done.stdout.splitlines()
    assert where == str(target / "kprof" / "__init__.py")
    assert answer == "9 kprof.rank/1"
