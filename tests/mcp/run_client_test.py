#!/usr/bin/env python3
"""Runs tests/mcp/mcp_client_test.mjs (the official MCP TypeScript SDK client against kprof mcp).

  run_client_test.py KPROF REPO WORK_DIR

The client package (tests/mcp/client: package.json and package-lock.json) is installed with
`npm ci --prefix WORK_DIR` once and kept there: a re-run with the same lock file needs no
network. Exit 77 (ctest's SKIP_RETURN_CODE) with the reason when node or npm is missing or npm
cannot reach the registry; any other npm failure fails the test.
"""
import os
import shutil
import subprocess
import sys

NETWORK_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT",
                  "ENETUNREACH", "EHOSTUNREACH", "network", "proxy", "socket hang up")


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


def main():
    kprof, repo, work = sys.argv[1:4]
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        skip("node and npm are needed for the MCP SDK client (apt-get install nodejs npm)")
    client = os.path.join(repo, "tests", "mcp", "client")
    os.makedirs(work, exist_ok=True)
    lock = open(os.path.join(client, "package-lock.json"), "rb").read()
    stamp = os.path.join(work, "node_modules", ".kprof-lock")
    installed = os.path.exists(stamp) and open(stamp, "rb").read() == lock
    if not installed:
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(os.path.join(client, name), os.path.join(work, name))
        r = subprocess.run([npm, "ci", "--prefix", work, "--no-audit", "--no-fund",
                            "--loglevel=error"], capture_output=True, text=True, timeout=500)
        if r.returncode != 0:
            message = (r.stderr or r.stdout).strip()
            reasons = [line for line in message.splitlines()
                       if any(e in line for e in NETWORK_ERRORS)]
            if reasons:
                skip(f"npm cannot reach the registry to install @modelcontextprotocol/sdk: "
                     f"{reasons[0]}")
            print(f"npm ci failed:\n{message}")
            return 1
        open(stamp, "wb").write(lock)
    script = os.path.join(work, "mcp_client_test.mjs")
    shutil.copyfile(os.path.join(repo, "tests", "mcp", "mcp_client_test.mjs"), script)
    return subprocess.run([node, script, kprof, repo], timeout=580).returncode


if __name__ == "__main__":
    sys.exit(main())
