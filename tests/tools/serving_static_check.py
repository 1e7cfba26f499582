#!/usr/bin/env python3
"""Static checks of tools/serving/serve.py's code paths that CI cannot run (the hf backend needs
torch, transformers and a GPU): pyflakes finds undefined names, misspelt attributes of modules it
can see, unused variables and the like in every function, run or not; and torch/transformers are
imported only inside functions, never at module level, so the fake backend never loads them.

usage: serving_static_check.py SERVE_PY      (exit 77 when pyflakes, Debian's python3-pyflakes, is absent)"""
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


def main():
    path = sys.argv[1]
    with open(path, encoding="utf-8") as f:
        source = f.read()
    tree = ast.parse(source, path)
    checks = {}
    bad = [(line, name) for line, name in module_level_imports(tree) if name.split(".")[0] in GPU_MODULES]
    for line, name in bad:
        print(f"{path}:{line}: module-level import of {name}: the fake backend must run without it")
    checks["no module-level torch/transformers import"] = not bad
    lazy = [node.lineno for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
            and any((alias.name if isinstance(node, ast.Import) else node.module or "").split(".")[0] in GPU_MODULES
                    for alias in node.names)]
    if not lazy:
        print(f"{path}: no import of torch or transformers at all: is the hf backend gone?")
    checks["hf backend imports torch/transformers in functions"] = bool(lazy)
    try:
        import pyflakes  # noqa: F401  (only to know it is there)
    except ImportError:
        failed = [name for name, ok in checks.items() if not ok]
        print("skipped: pyflakes (Debian's python3-pyflakes) is not installed" +
              (f"; failed meanwhile: {', '.join(failed)}" if failed else ""))
        return 1 if failed else 77
    r = subprocess.run([sys.executable, "-m", "pyflakes", path], capture_output=True, text=True)
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
