#!/usr/bin/env python3
"""Golden tests: runs kprof command lines on the committed real data and compares what a user sees
(stdout, stderr, exit code) with the expected files under tests/golden/expected/ (perfetto's diff
tests are the model). README.md in this folder documents the case format and the normalisation.

usage: run_golden.py --kprof KPROF --repo REPO [--update] [--check-docs] [--orphans]
                     [--db-url URL] [NAME...]
  NAME...        cases to run (default: all of cases.txt)
  --update       rewrite the expected files from what kprof prints now (scripts/update-golden)
  --check-docs   each example block of README.md and docs/ listed in DOC_EXAMPLES is the stdout
                 of its golden case, and the command it shows the case's
  --orphans      every expected file belongs to a case of cases.txt
  --db-url URL   the cases on the findings database `f.db` run against this PostgreSQL URL
                 instead ({case} in it becomes the case's name: a fresh database each), and
                 their output, the URL read back as `f.db`, must be the same expected files
                 (tests/store/postgres_findings_test.cpp starts the server)
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
# The example outputs of README.md and docs/: (file, marker, cases) — the fenced block after the
# marker's first occurrence in the file shows the stdout of the cases, in order. A block of output
# alone is the one case's stdout. A block of `$ kprof ARGS` lines (or `$ build/kprof`; a line
# ending in `\` goes on) shows each command's output after it: a command followed by output is
# the next case's own run and prints its stdout; one followed by none (`> FILE`: the output kept)
# is one of the setup runs of the entry's cases. A line of only `…` stands for lines cut.
DOC_EXAMPLES = [
    # README.md: the walk-through of the main question
    ("README.md", "### 1. Is the step kernel-bound?", ["budget_pvr_eager", "budget_pvr_graph"]),
    ("README.md", "### 2. Which kernels carry it?", ["rank_pvr_graph"]),
    ("README.md", "### 3. Why is each one slow?", ["analyze_pvr"]),
    ("README.md", "### 4. What does fixing it buy?", ["report_pvr_graph"]),
    ("README.md", "### 5. What did the fix buy?", ["diff_predicted_graph", "diff_predicted_eager"]),
    # README.md: graph replays from kprof's tracer, recorded on an H100
    ("README.md", "captured as an engine's graph runner does under vLLM-style",
     ["rank_h100_graph_layerwise_by_module"]),
    ("README.md", "repetition, and the LM head's GEMM is found after them",
     ["rank_h100_graph_compile_by_range"]),
    ("README.md", "(kernel group, batch bucket), each weighted by that bucket's replays:",
     ["report_h100_graph_buckets"]),
    # docs/: each verb's examples
    ("docs/analyze.md", "Its real output", ["analyze_readme_example"]),
    ("docs/report.md", "The fix list's real output", ["report_fix_list"]),
    ("docs/report.md", "the tracer-shaped fixture of rank.md", ["report_tracer_graph_buckets"]),
    ("docs/inspect.md", "and ncu's own rule findings:", ["inspect_rules"]),
    ("docs/diff.md", "eager and as a CUDA-graph replay), the replay keeps",
     ["diff_predicted_graph", "diff_predicted_eager"]),
    ("docs/diff.md", "SciPy's values in the tests.", ["diff_traces_graph_improves_top2"]),
    ("docs/rank.md", "separate Python computation", ["rank_by_op_top4"]),
    ("docs/rank.md", "its own capture, matched by position", ["rank_by_op_graph_capture"]),
    ("docs/rank.md", "matched by an independent Python computation", ["rank_tracer_graph_by_op"]),
    ("docs/rank.md", "A file that is not a trace, or has no GPU events", ["rank_two_devices"]),
    ("docs/rank.md", "being held. GPU work is joined to its launch", ["rank_b1_top3"]),
    ("docs/budget.md", "the advice says the host's share lies outside", ["budget_graph"]),
    ("docs/budget.md", "its graph (0.6–0.7 ms of a 3.4 ms step)", ["budget_serving_window"]),
    ("docs/selftest.md", "judged again here with `--judge`", ["selftest_judge"]),
    ("docs/calibrate.md", "the note, cut here", ["calibrate_from"]),
    ("docs/plan.md", "## Output", ["plan_decode_full_over_probe"]),
]


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


def run_case(kprof, repo, version, name, runs, db_url=None):
    scratch = tempfile.mkdtemp(prefix="kprof-golden-")
    try:
        # Inputs are named as a user in the repository would name them: data/…, tests/….
        for folder in ("data", "tests"):
            os.symlink(os.path.join(repo, folder), os.path.join(scratch, folder))
        if db_url:
            url = db_url.replace("{case}", name)
            runs = [[url if word == "f.db" else word for word in run] for run in runs]
        for setup in runs[:-1]:
            # `ARGS > FILE`: the setup's stdout kept in FILE (a fix list that a case reads).
            kept = setup[-1] if len(setup) > 2 and setup[-2] == ">" else None
            done = run_kprof(kprof, setup[:-2] if kept else setup, scratch)
            if done.returncode != 0:
                raise RuntimeError(f"{name}: setup `kprof {shlex.join(setup)}` exited "
                                   f"{done.returncode}: {done.stderr.decode(errors='replace')}")
            if kept:
                with open(os.path.join(scratch, kept), "wb") as f:
                    f.write(done.stdout)
        done = run_kprof(kprof, runs[-1], scratch)
        out = normalise(done.stdout.decode("utf-8", errors="replace"), version, scratch, repo)
        err = normalise(done.stderr.decode("utf-8", errors="replace"), version, scratch, repo)
        if db_url:
            out, err = out.replace(url, "f.db"), err.replace(url, "f.db")
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


def example_block(repo, path, marker_text):
    """The fenced block (```, with or without an info string) after marker_text in path; None
    when the marker or the block is not there."""
    text = open(os.path.join(repo, path), encoding="utf-8").read()
    marker = text.find(marker_text)
    if marker < 0:
        return None
    fence = re.compile(r"^```[^\n]*\n(.*?)^```$", re.M | re.S).search(text, marker)
    return fence.group(1) if fence else None


def readme_matches(block, golden):
    """A line `…` alone stands for one or more golden lines (rows cut); every other line must be
    the golden file's, in order, once its UTC timestamps are <TIME> as the golden file's are."""
    block = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<TIME>", block)
    shown, lines = block.splitlines(), golden.splitlines()
    pattern = "".join(r"(?:[^\n]*\n)+?" if line.strip() == "…" else re.escape(line) + r"\n"
                      for line in shown)
    return re.fullmatch(pattern, "".join(line + "\n" for line in lines)) is not None


def shown_commands(block):
    """[(argv, output)] of a block of `$ kprof ARGS` lines, each with the lines after it; None for
    a block of output alone."""
    lines = block.splitlines()
    if not lines or not lines[0].startswith("$ "):
        return None
    commands = []
    while lines:
        command = lines.pop(0)[2:]
        while command.endswith("\\") and lines:
            command = command[:-1] + lines.pop(0).strip()
        output = []
        while lines and not lines[0].startswith("$ "):
            output.append(lines.pop(0))
        argv = shlex.split(command)
        if not argv or argv[0] not in ("kprof", "build/kprof"):
            raise ValueError(f"not a kprof command: $ {command}")
        commands.append((argv[1:], "".join(line + "\n" for line in output)))
    return commands


def check_example(repo, cases, path, marker, names):
    """None when the block shows the cases, else why not."""
    block = example_block(repo, path, marker)
    if block is None:
        return f"no fenced block after \"{marker}\""
    goldens = [read_expected(os.path.join(EXPECTED, name + ".stdout")) or "" for name in names]
    try:
        commands = shown_commands(block)
    except ValueError as error:
        return str(error)
    if commands is None:
        if len(names) != 1 or not readme_matches(block, goldens[0]):
            return (f"the block after \"{marker}\" is not tests/golden/expected/{names[0]}.stdout "
                    "(lines cut with a lone … allowed)")
        return None
    setups = [run for name in names for run in cases[name][1][:-1]]
    shown = [(argv, output) for argv, output in commands if output]
    for argv, output in commands:
        if not output and argv not in setups:
            return f"`$ kprof {shlex.join(argv)}` is no setup run of {', '.join(names)}"
    if len(shown) != len(names):
        return f"the block shows {len(shown)} commands with output, for {len(names)} cases"
    for (argv, output), name, golden in zip(shown, names, goldens):
        if argv != cases[name][1][-1]:
            return f"`$ kprof {shlex.join(argv)}` is not case {name}'s command (cases.txt)"
        if not readme_matches(output, golden):
            return (f"the output of `$ kprof {shlex.join(argv)}` is not tests/golden/expected/"
                    f"{name}.stdout (lines cut with a lone … allowed)")
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kprof", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--update", action="store_true")
    parser.add_argument("--check-docs", action="store_true")
    parser.add_argument("--orphans", action="store_true")
    parser.add_argument("--db-url")
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

    if options.check_docs:
        failures = 0
        for path, marker, names in DOC_EXAMPLES:
            unknown = [name for name in names if name not in cases]
            problem = (f"no case {', '.join(unknown)} in cases.txt" if unknown
                       else check_example(repo, cases, path, marker, names))
            if problem:
                print(f"{path}: {problem}: update the block (or DOC_EXAMPLES in "
                      "tests/golden/run_golden.py)")
                failures += 1
        if not failures:
            print(f"{len(DOC_EXAMPLES)} example blocks of README.md and docs/ match the golden "
                  "output")
        return 1 if failures else 0

    # "kprof 0.1.0 (commit …, BuildType)": the version is the second word.
    version = subprocess.run([kprof, "--version"], capture_output=True, text=True,
                             check=True).stdout.split()[1]
    names = options.names or list(cases)
    failures = 0
    for name in names:
        if name not in cases:
            sys.exit(f"no case {name} in {CASES}")
        want_exit, runs = cases[name]
        if options.db_url and not any("f.db" in run for run in runs):
            sys.exit(f"case {name} uses no database f.db (--db-url)")
        code, out, err = run_case(kprof, repo, version, name, runs, options.db_url)
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
