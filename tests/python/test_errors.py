"""How the Python package fails: one exception type (kprof.KprofError) with kprof's exit code and
its one-line message, TypeError for a keyword a verb does not know, and a clear error when no
kprof binary can be found. Also: no argument ever goes through a shell."""
import os
import shutil

import pytest

import kprof
from conftest import H200


def test_missing_file_is_exit_3_with_kprofs_message(tmp_path):
    missing = tmp_path / "no_such.ncu-rep"
    with pytest.raises(kprof.KprofError) as caught:
        kprof.analyze(missing)
    e = caught.value
    assert e.exit_code == 3  # docs/exit-codes.md: an input cannot be read
    assert e.message.startswith("kprof: ") and str(missing) in e.message
    assert "\n" not in e.message
    assert e.argv[1] == "analyze" and e.argv[-1] == str(missing)


def test_invalid_input_is_exit_4():
    # A text file where a report belongs.
    with pytest.raises(kprof.KprofError) as caught:
        kprof.analyze(H200 / "bottleneck_suite_ptxas.txt")
    assert caught.value.exit_code == 4


def test_nothing_selected_is_exit_5():
    with pytest.raises(kprof.KprofError) as caught:
        kprof.analyze(H200 / "big_full.ncu-rep.zst", kernel="no_kernel_is_called_this")
    assert caught.value.exit_code == 5
    with pytest.raises(kprof.KprofError) as caught:  # two captures with no kernel in common
        kprof.diff(H200 / "big_full.ncu-rep.zst", H200 / "bottleneck_suite_full.ncu-rep.zst")
    assert caught.value.exit_code == 5


def test_a_bad_option_value_is_kprofs_usage_error():
    with pytest.raises(kprof.KprofError) as caught:
        kprof.analyze(H200 / "big_full.ncu-rep.zst", compute_threshold=250)
    assert caught.value.exit_code == 2


def test_unknown_keyword_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="'top'"):
        kprof.rank(H200 / "budget_eager_b1.json.gz", top=3)  # a text-only option: not offered
    with pytest.raises(TypeError, match="'step_regex'"):
        kprof.budget(H200 / "budget_eager_b1.json.gz", step_regex="x")
    with pytest.raises(TypeError, match="per_step"):
        kprof.rank(H200 / "budget_eager_b1.json.gz", per_step="yes")  # a switch takes True/False
    with pytest.raises(TypeError):
        kprof.analyze(42)


def test_binary_not_found(monkeypatch, tmp_path):
    monkeypatch.delenv("KPROF_BINARY")
    monkeypatch.setenv("PATH", str(tmp_path))  # no kprof there; the source tree has no installed one
    with pytest.raises(kprof.KprofError) as caught:
        kprof.rank(H200 / "budget_eager_b1.json.gz")
    assert caught.value.exit_code is None
    assert "kprof binary not found" in caught.value.message


def test_kprof_binary_that_is_not_there(monkeypatch, tmp_path):
    monkeypatch.setenv("KPROF_BINARY", str(tmp_path / "kprof"))
    with pytest.raises(kprof.KprofError, match="KPROF_BINARY=.* is not an executable file"):
        kprof.find_binary()


def test_found_on_path(monkeypatch, tmp_path, kprof_binary):
    os.symlink(os.path.abspath(kprof_binary), tmp_path / "kprof")
    monkeypatch.delenv("KPROF_BINARY")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert kprof.find_binary() == str(tmp_path / "kprof")
    assert len(kprof.rank(H200 / "budget_eager_b1.json.gz").df) == 9


def test_names_reach_kprof_as_they_are_never_through_a_shell(tmp_path, monkeypatch):
    # Shell syntax in a path, and a path that looks like an option: both are one argument.
    monkeypatch.chdir(tmp_path)
    for name in ("a b;touch pwned;$(touch pwned2)`touch pwned3`.json.gz", "-budget.json.gz"):
        shutil.copy(H200 / "budget_eager_b1.json.gz", tmp_path / name)
        assert len(kprof.rank(name).df) == 9
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["a b;touch pwned;$(touch pwned2)`touch pwned3`.json.gz", "-budget.json.gz"])
    # A regex value that starts with '-' stays the option's value.
    with pytest.raises(kprof.KprofError) as caught:
        kprof.analyze(H200 / "big_full.ncu-rep.zst", kernel="-x")
    assert caught.value.exit_code == 5  # matched nothing: it was taken as the regex


# Issue 39, problem 19: KPROF_BINARY=kprof checked ./kprof but ran the kprof on PATH.
def test_kprof_binary_as_a_bare_name_runs_the_file_it_checked(monkeypatch, tmp_path, kprof_binary):
    here = tmp_path / "here"
    elsewhere = tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    os.symlink(os.path.abspath(kprof_binary), here / "kprof")
    impostor = elsewhere / "kprof"
    impostor.write_text("#!/bin/sh\necho impostor >&2\nexit 99\n")
    impostor.chmod(0o755)
    monkeypatch.chdir(here)
    monkeypatch.setenv("KPROF_BINARY", "kprof")
    monkeypatch.setenv("PATH", str(elsewhere))
    assert kprof.find_binary() == str(here / "kprof")
    assert len(kprof.rank(H200 / "budget_eager_b1.json.gz").df) == 9


# Issue 39, problem 19: a usage error's message was "Run 'kprof --help'…", the reason only in
# .stderr.
def test_a_usage_errors_message_says_the_reason():
    with pytest.raises(kprof.KprofError) as caught:
        kprof.analyze(H200 / "big_full.ncu-rep.zst", compute_threshold=250)
    e = caught.value
    assert e.exit_code == 2
    assert e.message.startswith("kprof: --compute-threshold: "), e.message
    assert "Run 'kprof --help'" in e.stderr


# Issue 39, problem 19: a NUL in a path raised ValueError, not KprofError.
def test_a_nul_in_a_path_is_a_kprof_error():
    with pytest.raises(kprof.KprofError) as caught:
        kprof.analyze("report\0.ncu-rep")
    assert "NUL" in caught.value.message
    assert caught.value.exit_code is None


# Issue 39, problem 15: a newline or ESC in a file path forged a line of kprof's stderr, and of
# KprofError.message.
def test_a_newline_in_a_path_forges_no_line(tmp_path):
    missing = tmp_path / "x\nkprof: forged\x1b[2J.ncu-rep"
    with pytest.raises(kprof.KprofError) as caught:
        kprof.analyze(missing)
    e = caught.value
    assert e.exit_code == 3
    assert "\n" not in e.message and "\x1b" not in e.message, e.message
    assert e.stderr.count("\n") == 1, e.stderr
    assert "forged" in e.message
