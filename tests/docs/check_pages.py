#!/usr/bin/env python3
"""The documentation's map holds: the man page's SEE ALSO names each page of docs/ (a page per
command kprof --help lists, and the topic pages) and docs/ has no page it does not name;
docs/README.md, the index, links every page; every relative link of README.md, ARCHITECTURE.md,
docs/*.md and the folders' README.md files names a file that exists.

usage: check_pages.py KPROF REPO"""
import glob
import os
import re
import subprocess
import sys

kprof, repo = sys.argv[1:3]
failures = []


def read(path):
    with open(os.path.join(repo, path), encoding="utf-8") as f:
        return f.read()


man = subprocess.run([kprof, "manpage"], check=True, capture_output=True, text=True).stdout
see_also = man[man.index(".SH SEE ALSO"):].replace("\\-", "-")
named = set(re.findall(r"\b([a-z0-9-]+)\.md\b", see_also)) - {"README"}
pages = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(repo, "docs", "*.md"))} - {"README"}
commands = set(subprocess.run([kprof, "docs-options"], check=True, capture_output=True,
                              text=True).stdout.split())
for page in sorted(named - pages):
    failures.append(f"man kprof's SEE ALSO names docs/{page}.md, which does not exist")
for page in sorted(pages - named):
    failures.append(f"docs/{page}.md is not named in man kprof's SEE ALSO "
                    "(src/cli/completion_command.cpp: kTopicPages)")
for command in sorted(commands - pages):
    failures.append(f"kprof {command} has no page docs/{command}.md")

index = read("docs/README.md")
for page in sorted(pages):
    if f"]({page}.md)" not in index:
        failures.append(f"docs/README.md does not link {page}.md")

documents = ["README.md", "ARCHITECTURE.md"] + sorted(
    os.path.relpath(p, repo) for p in glob.glob(os.path.join(repo, "docs", "*.md"))
    + glob.glob(os.path.join(repo, "src", "**", "README.md"), recursive=True))
for document in documents:
    text = re.sub(r"^```.*?^```", "", read(document), flags=re.M | re.S)
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path = os.path.normpath(os.path.join(repo, os.path.dirname(document), target))
        if not os.path.exists(path):
            failures.append(f"{document}: the link ({target}) names no file")

for failure in failures:
    print(failure)
if not failures:
    print(f"{len(pages)} pages of docs/ named by man kprof and linked by the index; the links of "
          f"{len(documents)} documents resolve")
sys.exit(1 if failures else 0)
