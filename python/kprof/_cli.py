"""Finding the kprof binary and running one verb of it with --json.

The package holds no analysis of its own: every number comes from the kprof binary's --json, so
a figure never differs between the CLI and Python. The binary is run with an argv list
(subprocess, never a shell): a path or a regex is passed to kprof as one argument, whatever
characters it holds.
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

# Written by `cmake --install` (cmake/Install.cmake) into the installed package: the path of the
# installed bin/kprof relative to the package's own folder. Absent from the source tree and from
# a `pip install ./python`, which find kprof on PATH instead.
_INSTALLED_BINARY_FILE = "installed_binary"


class KprofError(Exception):
    """Raised whenever kprof could not give an answer, and only then.

    exit_code: kprof's exit status (docs/exit-codes.md: 2 usage, 3 unreadable input, 4 invalid
        input, 5 nothing selected, ...; minus the signal's number when a signal ended it), or
        None when no kprof could be run at all (not found, not executable) or it printed no JSON.
    message: kprof's one-line message from standard error (e.g. "kprof: x.ncu-rep: No such
        file or directory"), or this package's own when kprof did not run.
    argv: the command line that was run (None when there was none).
    stderr: everything kprof wrote to standard error (warnings before the message included).
    """

    def __init__(self, message, exit_code=None, argv=None, stderr=""):
        super().__init__(message if exit_code is None else f"{message} (exit {exit_code})")
        self.message = message
        self.exit_code = exit_code
        self.argv = argv
        self.stderr = stderr


def _installed_binary():
    """The kprof installed beside this package by `cmake --install` / the .deb, if there is one."""
    here = Path(__file__).resolve().parent
    try:
        relative = (here / _INSTALLED_BINARY_FILE).read_text().strip()
    except OSError:
        return None
    candidate = (here / relative).resolve()
    return str(candidate) if os.access(candidate, os.X_OK) else None


def find_binary():
    """The kprof executable this package runs, looked for in this order:

    1. the KPROF_BINARY environment variable (used as given: a wrong path is an error, not a
       reason to look elsewhere);
    2. the kprof installed together with this package (`cmake --install`, the .deb);
    3. `kprof` on PATH.

    Raises KprofError (exit_code None) naming the places looked in when none is there.
    """
    configured = os.environ.get("KPROF_BINARY")
    if configured:
        if os.path.isfile(configured) and os.access(configured, os.X_OK):
            # The file checked is the file run: a bare name ("kprof") checks ./kprof, which
            # subprocess would look up on PATH instead.
            return os.path.abspath(configured)
        raise KprofError(f"KPROF_BINARY={configured!r} is not an executable file")
    installed = _installed_binary()
    if installed:
        return installed
    on_path = shutil.which("kprof")
    if on_path:
        return on_path
    raise KprofError("kprof binary not found: KPROF_BINARY is not set, no kprof is installed "
                     f"beside the package ({Path(__file__).resolve().parent}), none is on PATH")


def _one_line(stderr):
    """kprof's message: the last "kprof: …" line it wrote to standard error (warnings come before
    it; a usage error is followed by "Run 'kprof --help' …", which says no reason)."""
    lines = [line for line in stderr.split("\n") if line.strip()]
    said = [line for line in lines if line.startswith("kprof: ")]
    if said:
        return said[-1]
    return lines[-1] if lines else "kprof printed no message"


def run_json(verb, flags, inputs):
    """Runs `kprof VERB FLAGS... --json -- INPUTS...`; returns (parsed document, argv, stderr).

    Every element is handed to the binary as one argument, as it is; after `--` an input path
    that starts with '-' is still a path. A non-zero exit, or output that is not one JSON
    document, raises KprofError.
    """
    argv = [find_binary(), verb] + flags + ["--json", "--"] + inputs
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              encoding="utf-8", errors="replace")
    except OSError as e:
        raise KprofError(f"cannot run {argv[0]}: {e.strerror}", argv=argv) from e
    except ValueError as e:  # an argument holding a NUL byte, which no argv can carry
        raise KprofError(f"cannot run {argv[0]}: an argument holds a NUL byte, which no command "
                         "line can carry", argv=argv) from e
    if done.returncode < 0:
        raise KprofError(f"{argv[0]} was killed by signal {-done.returncode} (a crash: please "
                         "report it)", exit_code=done.returncode, argv=argv, stderr=done.stderr)
    if done.returncode != 0:
        raise KprofError(_one_line(done.stderr), exit_code=done.returncode, argv=argv,
                         stderr=done.stderr)
    try:
        document = json.loads(done.stdout)
    except ValueError as e:
        raise KprofError(f"{argv[0]} printed no JSON document ({e})", argv=argv,
                         stderr=done.stderr) from e
    return document, argv, done.stderr
