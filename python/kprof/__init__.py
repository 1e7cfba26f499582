"""kprof from Python: its answers as pandas DataFrames, for notebooks.

    import kprof
    r = kprof.budget("data/h200/budget_eager_decode.json.gz")
    r.df        # one row per step, columns named as kprof's JSON fields (gpu_span_us, verdict, ...)
    r.json      # the whole `kprof budget --json` document

Each verb runs the kprof binary with --json (found by find_binary(): KPROF_BINARY, the kprof
installed beside this package, then PATH) and returns a Result. Every failure is a KprofError
carrying kprof's exit code and its one-line message.
"""
from ._cli import KprofError, find_binary
from ._result import Result
from ._verbs import analyze, budget, diff, rank, report

__version__ = "0.1.0"
__all__ = ["KprofError", "Result", "analyze", "budget", "diff", "find_binary", "rank", "report"]
