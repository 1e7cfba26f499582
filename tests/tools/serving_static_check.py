#!/usr/bin/env python3
"""Static checks of tools/serving's code paths that CI cannot run (serve.py's hf backend needs
torch, transformers and a GPU): pyflakes finds undefined names, misspelt attributes of modules it
can see, unused variables and the like in every function, run or not; and torch/transformers are
imported only inside functions, never at module level, so the fake backend and load.py never load
them (serve.py must still import them somewhere: its hf backend).

usage: serving_static_check.py SERVE_PY [OTHER_PY...]
       (exit 77 when pyflakes, Debian's python3-pyflakes, is absent)"""
import os
import ast
import subprocess
import sys

GPU_MODULES = {"torch", "transformers"}


def module_level_imports(tree):
    """Imports executed when the module loads: those not inside a function or class body."""
    found = []

    def visit(nodes):
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Import):
                found.extend((node.lineno, alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                found.append((node.lineno, node.module or ""))
            visit(list(ast.iter_child_nodes(node)))

    visit(tree.body)
    return found


def check(path, checks):
    name = os.path.basename(path)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    tree = ast.parse(source, path)
    bad = [(line, module) for line, module in module_level_imports(tree) if module.split(".")[0] in GPU_MODULES]
    for line, module in bad:
        print(f"{path}:{line}: module-level import of {module}: it must run where torch is not installed")
    checks[f"{name}: no module-level torch/transformers import"] = not bad
    if name != "serve.py":
        return
    lazy = [node.lineno for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
            and any((alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0] in GPU_MODULES
                    for alias in node.names)]
    if not lazy:
        print(f"{path}: no import of torch or transformers at all: is the hf backend gone?")
    checks[f"{name}: hf backend imports torch/transformers in functions"] = bool(lazy)


def main():
    paths = sys.argv[1:]
    checks = {}
    for path in paths:
        check(path, checks)
    try:
        import pyflakes  # noqa: F401  (only to know it is there)
    except ImportError:
        failed = [name for name, ok in checks.items() if not ok]
        print("skipped: pyflakes (Debian's python3-pyflakes) is not installed" +
              (f"; failed meanwhile: {', '.join(failed)}" if failed else ""))
        return 1 if failed else 77
    r = subprocess.run([sys.executable, "-m", "pyflakes", *paths], capture_output=True, text=True)
    if r.returncode != 0 or r.stdout.strip() or r.stderr.strip():
        print(r.stdout + r.stderr, end="")
    checks["pyflakes clean"] = r.returncode == 0 and not (r.stdout.strip() or r.stderr.strip())
    failures = sum(1 for ok in checks.values() if not ok)
    for name, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    print(f"{len(checks) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
