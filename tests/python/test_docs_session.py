"""The Python session of docs/python.md (the package's page) is what Python prints: each `>>> `
line is run again, in order, in one interactive interpreter from the source folder, and its
output must be the lines that follow it on the page."""
import code
import contextlib
import io
import os
import re

from conftest import SOURCE

PAGE = "docs/python.md"
MARKER = "On the eager and CUDA-graph decode traces of `data/h200/` (real output):"


def page_session():
    """[(statement, expected output lines)] of the fenced block after MARKER on PAGE."""
    text = (SOURCE / PAGE).read_text(encoding="utf-8")
    block = re.search(re.escape(MARKER) + r"\n+```python\n(.*?)\n```", text, re.S).group(1)
    session = []
    for line in block.split("\n"):
        if line.startswith(">>> "):
            session.append((line[4:], []))
        else:
            session[-1][1].append(line)
    return session


def test_docs_session_prints_what_python_prints(monkeypatch):
    monkeypatch.chdir(SOURCE)  # the page's paths are relative to the checkout
    console = code.InteractiveConsole()
    session = page_session()
    assert len(session) >= 5
    for statement, expected in session:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
            more = console.push(statement)
        assert not more, f"not one statement: {statement}"
        got = printed.getvalue().rstrip("\n").split("\n") if printed.getvalue() else []
        assert [line.rstrip() for line in got] == [line.rstrip() for line in expected], statement
    assert os.environ["KPROF_BINARY"]  # the session ran the binary under test
