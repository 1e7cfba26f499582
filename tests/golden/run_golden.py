#!/usr/bin/env python3
"""Golden tests: runs kprof command lines on the committed real data and compares what a user sees
(stdout, stderr, exit code) with the expected files under tests/golden/expected/ (perfetto's diff
tests are the model). README.md in this folder documents the case format and the normalisation.

usage: run_golden.py --kprof KPROF --repo REPO [--update] [--check-readme] [--orphans] [NAME...]
  NAME...        cases to run (default: all of cases.txt)
  --update       rewrite the expected files from what kprof prints now (scripts/update-golden)
  --check-readme the README.md example block equals the stdout of its golden case
  --orphans      every expected file belongs to a case of cases.txt
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases.txt")
EXPECTED = os.path.join(HERE, "expected")
# The README's example blocks, each the fenced block after its marker, and the case it shows.
README_EXAMPLES = [("Its real output", "analyze_readme_example"),
                   ("The fix list's real output", "report_fix_list")]


def read_cases():
    """cases.txt: `NAME EXIT ARGS...`; ARGS are shell words run as `kprof ARGS`. Several kprof runs
    joined by `&&` are setup steps (they must exit 0; their output is not compared) and the last
    one is the case."""
    cases = {}
    with open(CASES, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            words = shlex.split(line)
            if len(words) < 3 or not re.fullmatch(r"[a-z0-9_]+", words[0]) or not words[1].isdigit():
                sys.exit(f"{CASES}: line {number}: want `NAME EXIT ARGS...`")
            if words[0] in cases:
                sys.exit(f"{CASES}: line {number}: case {words[0]} given twice")
            runs, current = [], []
            for word in words[2:]:
                if word == "&&":
                    runs.append(current)
                    current = []
                else:
                    current.append(word)
            runs.append(current)
            cases[words[0]] = (int(words[1]), runs)
    return cases


def normalise(text, version, scratch, repo):
    """The one normalisation every output gets (README.md here): kprof's version in a JSON
    "tool" head ("version": "0.1.0") becomes <VERSION>, the scratch folder the case ran in
    <SCRATCH>, the repository <REPO>, and UTC timestamps (2026-12-01T01:02:03Z) <TIME>. argv[0]
    is always `kprof` and paths are relative to the scratch folder, so a "tool" head needs
    nothing else."""
    text = re.sub(r'("version": )"' + re.escape(version) + '"', r'\1"<VERSION>"', text)
    text = text.replace(os.path.realpath(scratch), "<SCRATCH>").replace(scratch, "<SCRATCH>")
    text = text.replace(os.path.realpath(repo), "<REPO>").replace(repo, "<REPO>")
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<TIME>", text)


def run_kprof(kprof, args, scratch):
    # A clean environment: no KPROF_* override, no user's PATH or locale.
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "TZ": "UTC", "HOME": scratch}
    return subprocess.run(["kprof"] + args, executable=kprof, cwd=scratch, env=env,
                          capture_output=True, timeout=300)


def run_case(kprof, repo, version, name, runs):
    scratch = tempfile.mkdtemp(prefix="kprof-golden-")
    try:
        # Inputs are named as a user in the repository would name them: data/…, tests/….
        for folder in ("data", "tests"):
            os.symlink(os.path.join(repo, folder), os.path.join(scratch, folder))
        for setup in runs[:-1]:
            done = run_kprof(kprof, setup, scratch)
            if done.returncode != 0:
                raise RuntimeError(f"{name}: setup `kprof {shlex.join(setup)}` exited "
                                   f"{done.returncode}: {done.stderr.decode(errors='replace')}")
        done = run_kprof(kprof, runs[-1], scratch)
        out = normalise(done.stdout.decode("utf-8", errors="replace"), version, scratch, repo)
        err = normalise(done.stderr.decode("utf-8", errors="replace"), version, scratch, repo)
        return done.returncode, out, err
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def read_expected(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def write_expected(path, text):
    if text:
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    elif os.path.exists(path):
        os.remove(path)


def first_difference(expected, actual):
    e, a = expected.splitlines(), actual.splitlines()
    for i in range(max(len(e), len(a))):
        left = e[i] if i < len(e) else "<end>"
        right = a[i] if i < len(a) else "<end>"
        if left != right:
            return f"line {i + 1}:\n  expected: {left}\n  actual:   {right}"
    return "trailing newline differs"


def readme_example_block(repo, marker_text):
    """The fenced block after marker_text in README.md."""
    text = open(os.path.join(repo, "README.md"), encoding="utf-8").read()
    marker = text.index(marker_text)
    start = text.index("```\n", marker) + 4
    return text[start:text.index("```\n", start)]


def readme_matches(block, golden):
    """A README line `…` alone stands for one or more golden lines (rows cut); every other line
    must be the golden file's, in order."""
    shown, lines = block.splitlines(), golden.splitlines()
    pattern = "".join(r"(?:[^\n]*\n)+?" if line.strip() == "…" else re.escape(line) + r"\n"
                      for line in shown)
    return re.fullmatch(pattern, "".join(line + "\n" for line in lines)) is not None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kprof", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--update", action="store_true")
    parser.add_argument("--check-readme", action="store_true")
    parser.add_argument("--orphans", action="store_true")
    parser.add_argument("names", nargs="*")
    options = parser.parse_args()
    kprof, repo = os.path.abspath(options.kprof), os.path.abspath(options.repo)
    cases = read_cases()

    if options.orphans:
        known = {f"{name}.{part}" for name in cases for part in ("stdout", "stderr")}
        orphans = sorted(set(os.listdir(EXPECTED)) - known)
        missing = sorted(name for name in cases
                         if not os.path.exists(os.path.join(EXPECTED, name + ".stdout"))
                         and not os.path.exists(os.path.join(EXPECTED, name + ".stderr")))
        for orphan in orphans:
            print(f"expected/{orphan}: no case of that name in cases.txt")
        for name in missing:
            print(f"{name}: no expected output (run scripts/update-golden {name})")
        return 1 if orphans or missing else 0

    if options.check_readme:
        for marker, case in README_EXAMPLES:
            golden = read_expected(os.path.join(EXPECTED, case + ".stdout"))
            if golden is None or not readme_matches(readme_example_block(repo, marker), golden):
                print(f"README.md's block after \"{marker}\" is not "
                      f"tests/golden/expected/{case}.stdout (lines cut with a lone … allowed): "
                      "update the README block")
                return 1
        print("README.md example blocks match the golden output")
        return 0

    # "kprof 0.1.0 (commit …, BuildType)": the version is the second word.
    version = subprocess.run([kprof, "--version"], capture_output=True, text=True,
                             check=True).stdout.split()[1]
    names = options.names or list(cases)
    failures = 0
    for name in names:
        if name not in cases:
            sys.exit(f"no case {name} in {CASES}")
        want_exit, runs = cases[name]
        code, out, err = run_case(kprof, repo, version, name, runs)
        stdout_path = os.path.join(EXPECTED, name + ".stdout")
        stderr_path = os.path.join(EXPECTED, name + ".stderr")
        if code != want_exit:
            print(f"{name}: exit {code}, expected {want_exit} (cases.txt)\nstderr: {err}")
            failures += 1
            continue
        if options.update:
            os.makedirs(EXPECTED, exist_ok=True)
            write_expected(stdout_path, out)
            write_expected(stderr_path, err)
            print(f"{name}: updated")
            continue
        for stream, path, actual in (("stdout", stdout_path, out), ("stderr", stderr_path, err)):
            expected = read_expected(path)
            if expected is None:
                expected = ""
            if expected != actual:
                print(f"{name}: {stream} differs from {os.path.relpath(path, repo)}, "
                      f"{first_difference(expected, actual)}")
                failures += 1
        if not failures:
            print(f"{name}: ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
