#!/usr/bin/env python3
"""Holds src/ to the layers of ARCHITECTURE.md ("Layers": one `name ← deps` line per folder).

  check_layers.py arrows SOURCE_DIR
      every `#include "FOLDER/…"` in src/NAME names NAME or one of its arrows, and
      src/NAME/CMakeLists.txt links exactly the kprof_ libraries of its arrows;
  check_layers.py compile SOURCE_DIR COMPILE_COMMANDS_JSON
      with the very flags each library's own sources are compiled with (compile_commands.json),
      a file including a header of a folder its arrows do not reach (analysis/ including cli/…)
      fails to compile for want of the header, and one including a header of each arrow is found
      with every header it includes. Preprocessing is enough for both (an include path either
      reaches a header or not) and is what is run: a whole parse of each allowed header took
      77 s of CPU for nothing the build does not check already.
"""
import collections
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/[^"]+"', re.M)


def read_arrows(source_dir):
    """The fenced block under "## Layers" in ARCHITECTURE.md: `name ← a, b` or `← (…)`."""
    text = open(os.path.join(source_dir, "ARCHITECTURE.md"), encoding="utf-8").read()
    section = text.split("\n## Layers", 1)
    if len(section) != 2:
        sys.exit("ARCHITECTURE.md has no '## Layers' section")
    block = re.search(r"```\n(.*?)```", section[1], re.S)
    arrows = {}
    for line in block.group(1).splitlines():
        m = re.match(r"^(\w+)\s+←\s*(.*)$", line)
        if not m:
            sys.exit(f"ARCHITECTURE.md, Layers: cannot read line {line!r}")
        deps = re.sub(r"\(.*?\)", "", m.group(2))
        arrows[m.group(1)] = {d.strip() for d in deps.split(",") if d.strip()}
    for name, deps in arrows.items():
        for dep in deps:
            if dep not in arrows:
                sys.exit(f"ARCHITECTURE.md, Layers: {name} ← {dep}, which is no layer")
    return arrows


def folder_of(source_dir, path):
    rel = os.path.relpath(path, os.path.join(source_dir, "src")).split(os.sep)
    return rel[0] if len(rel) > 1 else os.path.splitext(rel[0])[0]  # src/main.cpp is `main`


def source_files(source_dir):
    for root, _, files in os.walk(os.path.join(source_dir, "src")):
        for f in sorted(files):
            if f.endswith((".h", ".cpp")):
                yield os.path.join(root, f)


def check_arrows(source_dir):
    arrows = read_arrows(source_dir)
    problems = []
    folders = {folder_of(source_dir, p) for p in source_files(source_dir)}
    for missing in sorted(folders - arrows.keys()):
        problems.append(f"src/{missing} has no line in ARCHITECTURE.md's Layers")
    checked = 0
    for path in source_files(source_dir):
        name = folder_of(source_dir, path)
        allowed = arrows.get(name, set()) | {name}
        text = open(path, encoding="utf-8", errors="replace").read()
        for m in INCLUDE.finditer(text):
            checked += 1
            if m.group(1) in arrows and m.group(1) not in allowed:
                line = text.count("\n", 0, m.start()) + 1
                problems.append(f"{os.path.relpath(path, source_dir)}:{line}: includes "
                                f"{m.group(1)}/, but {name} ← {', '.join(sorted(arrows[name])) or 'nothing'}")
    for name, deps in sorted(arrows.items()):
        cmake = os.path.join(source_dir, "src", name, "CMakeLists.txt")
        if name == "main" or not os.path.exists(cmake):
            continue
        text = re.sub(r"#.*", "", open(cmake, encoding="utf-8").read())
        linked = set()
        for call in re.finditer(rf"target_link_libraries\(\s*kprof_{name}\b(.*?)\)", text, re.S):
            linked |= set(re.findall(r"\bkprof_(\w+)", call.group(1)))
        linked = {l for l in linked - {"warnings", "version"} if not l.startswith(name + "_")}
        if linked != deps:
            problems.append(f"src/{name}/CMakeLists.txt links kprof_ "
                            f"{', '.join(sorted(linked)) or 'nothing'}; its arrows are "
                            f"{', '.join(sorted(deps)) or 'nothing'}")
    for p in problems:
        print(p)
    print(f"{checked} includes in src/ checked against {len(arrows)} layers: "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


def reachable(arrows, name):
    seen, todo = set(), list(arrows[name])
    while todo:
        dep = todo.pop()
        if dep not in seen:
            seen.add(dep)
            todo.extend(arrows[dep])
    return seen


def probe_command(entry, probe):
    """The library's compile command for `probe`: same flags, preprocessing only, no outputs."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    if os.path.basename(args[0]) == "ccache":
        args = args[1:]
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-MF", "-MT", "-MQ", "-c"):
            skip = True
        elif a in ("-MD", "-MMD") or a == entry["file"]:
            pass
        else:
            out.append(a)
    return out + ["-fdiagnostics-color=never", "-E", "-o", os.devnull, "-x", "c++", probe]


def check_compile(source_dir, compile_commands):
    arrows = read_arrows(source_dir)
    entries = {}
    for e in json.load(open(compile_commands, encoding="utf-8")):
        path = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if path.startswith(os.path.realpath(os.path.join(source_dir, "src")) + os.sep):
            entries.setdefault(folder_of(os.path.realpath(source_dir), path), e)
        else:
            # A unity batch (KPROF_UNITY_BUILD) is compiled from the build tree, in the mirror
            # of the library's folder: BUILD/src/FOLDER/CMakeFiles/kprof_FOLDER.dir/Unity/….
            rel = os.path.relpath(path, os.path.realpath(e["directory"])).split(os.sep)
            if len(rel) > 4 and rel[0] == "src" and rel[3] == f"kprof_{rel[1]}.dir" and rel[4] == "Unity":
                entries.setdefault(rel[1], e)
    headers = collections.defaultdict(list)
    for path in source_files(source_dir):
        if path.endswith(".h"):
            headers[folder_of(source_dir, path)].append(
                os.path.relpath(path, os.path.join(source_dir, "src")))
    jobs = []  # (library, included folder, header, must compile)
    for name in sorted(entries):
        if name not in arrows:
            continue
        near = reachable(arrows, name)
        for other in sorted(headers):
            if other == name or other not in arrows:
                continue
            header = headers[other][0]
            if other in arrows[name]:
                jobs.append((name, other, header, True))
            elif other not in near:
                jobs.append((name, other, header, False))
    if not any(not ok for _, _, _, ok in jobs) or ("analysis", "cli") not in {
            (n, o) for n, o, _, ok in jobs if not ok}:
        print("no forbidden include to try (is analysis/ compiled in this build?)")
        return 1
    tmp = tempfile.mkdtemp(prefix="kprof-layers-")

    def run(job):
        name, other, header, must_compile = job
        probe = os.path.join(tmp, f"{name}_includes_{other}.cpp")
        with open(probe, "w") as f:
            f.write(f'#include "{header}"\n')
        r = subprocess.run(probe_command(entries[name], probe), cwd=entries[name]["directory"],
                           capture_output=True, text=True)
        return job, r

    problems = 0
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for (name, other, header, must_compile), r in pool.map(run, jobs):
            if must_compile and r.returncode != 0:
                problems += 1
                print(f"FAIL {name} ← {other}: an allowed include of {header} does not preprocess:\n"
                      f"{r.stderr[-2000:]}")
            elif not must_compile and r.returncode == 0:
                problems += 1
                print(f"FAIL {name} ↛ {other}: #include \"{header}\" compiled in {name}")
            elif not must_compile and f"{header}: No such file or directory" not in r.stderr:
                problems += 1
                print(f"FAIL {name} ↛ {other}: {header} failed for another reason:\n"
                      f"{r.stderr[-2000:]}")
            elif not must_compile and (name, other) == ("analysis", "cli"):
                print(f"analysis/ including {header}: {r.stderr.strip().splitlines()[0]}")
    shutil.rmtree(tmp)
    allowed = sum(1 for j in jobs if j[3])
    print(f"{len(jobs) - allowed} forbidden includes tried, {allowed} allowed ones tried, over {len(entries)} libraries: {problems} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "arrows":
        sys.exit(check_arrows(sys.argv[2]))
    if len(sys.argv) == 4 and sys.argv[1] == "compile":
        sys.exit(check_compile(sys.argv[2], sys.argv[3]))
    sys.exit(__doc__)
