"""The verbs: each builds a kprof command line from its arguments and returns a Result.

Keyword options map to kprof's flags through one explicit table per verb (below); a keyword a
verb does not know is a TypeError naming it, never passed on as a guessed flag. Options that
only shape kprof's text output (--top, --name-width, --html, --csv) are not offered: the JSON
always holds every row.
"""
import os

from ._cli import run_json
from ._result import Result

# keyword -> (kprof flag, kind): "value" options take one value, "switch" options are True/False,
# "values" options (repeatable flags) a list or tuple of values, one flag each (or one value).
_VERDICT_OPTIONS = {
    "kernel": ("--kernel", "value"),                        # RE2 regex over the kernel names
    "sort": ("--sort", "value"),                            # duration, pipeline or id
    "compute_threshold": ("--compute-threshold", "value"),  # % of peak, default 80
    "memory_threshold": ("--memory-threshold", "value"),    # % of peak, default 80
    "gpus": ("--gpus", "value"),            # a GPU table or kprof calibrate's calibration JSON
    "stages": ("--stages", "value"),        # a stage rule table replacing data/stages.json
    "expectations": ("--expectations", "value"),
}
ANALYZE_OPTIONS = dict(_VERDICT_OPTIONS, trace=("--trace", "value"))
REPORT_OPTIONS = dict(_VERDICT_OPTIONS)
RANK_OPTIONS = {
    "by": ("--by", "value"),                # kernel (default), op, module, range
    "per_step": ("--per-step", "switch"),   # rank within each step
    "step": ("--step", "value"),            # regex over the annotations that delimit steps
    "raw_names": ("--raw-names", "switch"),
    "stages": ("--stages", "value"),
    "graph_capture": ("--graph-capture", "value"),  # by op/module/range: the capture's trace
}
BUDGET_OPTIONS = {
    "step": ("--step", "value"),
    "host_bound_below": ("--host-bound-below", "value"),    # GPU busy %, default 60
    "kernel_bound_from": ("--kernel-bound-from", "value"),  # GPU busy %, default 90
}
DIFF_OPTIONS = {
    "threshold": ("--threshold", "value"),                  # %, default 5
    "noise_factor": ("--noise-factor", "value"),
    "single_sample_floor": ("--single-sample-floor", "value"),  # us
    "pair": ("--pair", "values"),                # "BASELINE=CANDIDATE": a renamed kernel
    "min_coverage": ("--min-coverage", "value"),  # % of each side's GPU time, default 50
    "no_auto_pair": ("--no-auto-pair", "switch"),
    "alpha": ("--alpha", "value"),                          # traces: Welch's t-test level
    "step": ("--step", "value"),                            # traces: step annotations
}

# Which list of each JSON format holds the rows: one per kernel, op, step or rank-compared kernel.
_ROWS = {
    "kprof.analysis/1": "kernels",
    "kprof.rank/1": "kernels",
    "kprof.rank-ops/1": "ops",
    "kprof.rank-steps/1": "steps",
    "kprof.rank-ranks/1": "kernels",
    "kprof.budget/1": "steps",
    "kprof.budget-ranks/1": "steps",
    "kprof.diff/1": "kernels",
    "kprof.trace-diff/1": "kernels",
}


def _path(value, what):
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{what} must be a path (str or os.PathLike), not {type(value).__name__}")
    return os.fsdecode(value)


def _paths(value, what):
    """One path, or a list/tuple of them (several reports, one trace per rank)."""
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError(f"{what}: no path given")
        return [_path(v, what) for v in value]
    return [_path(value, what)]


def _flags(verb, table, options):
    """kprof flags for OPTIONS, by TABLE; unknown keywords and wrong kinds are TypeErrors."""
    flags = []
    for keyword, value in options.items():
        if keyword not in table:
            raise TypeError(f"kprof.{verb}() got an unexpected keyword argument {keyword!r} "
                            f"(known: {', '.join(sorted(table))})")
        flag, kind = table[keyword]
        if value is None:
            continue
        if kind == "switch":
            if not isinstance(value, bool):
                raise TypeError(f"kprof.{verb}(): {keyword} must be True or False")
            if value:
                flags.append(flag)
            continue
        values = list(value) if kind == "values" and isinstance(value, (list, tuple)) else [value]
        for item in values:
            if isinstance(item, bool) or not isinstance(item, (str, int, float, os.PathLike)):
                raise TypeError(f"kprof.{verb}(): {keyword} must be a string, a number or a path"
                                f"{' (or a list of them)' if kind == 'values' else ''}, "
                                f"not {type(item).__name__}")
            # One argument FLAG=VALUE: a value starting with '-' stays a value.
            text = os.fsdecode(item) if isinstance(item, os.PathLike) else str(item)
            flags.append(f"{flag}={text}")
    return flags


def _answer(verb, flags, inputs, rows=None):
    document, argv, stderr = run_json(verb, flags, inputs)
    return Result(document, rows or _ROWS[document["schema"]], argv, stderr)


def analyze(report, **options):
    """Per-kernel verdicts of an Nsight Compute report (`kprof analyze REPORT... --json`).

    report: an .ncu-rep (.zst too) or an ncu CSV export, or a list of them.
    options: kernel, sort, compute_threshold, memory_threshold, gpus, stages, expectations,
        trace (a profiler trace to join: each kernel's fraction_of_pipeline).
    Rows: one per profiled kernel (`kernels`), longest first unless sort says otherwise.
    """
    flags = _flags("analyze", ANALYZE_OPTIONS, options)
    return _answer("analyze", flags, _paths(report, "report"))


def rank(trace, **options):
    """Which kernels carry the GPU time of a trace (`kprof rank TRACE... --json`).

    trace: a PyTorch profiler trace (.json, .json.gz) or an Nsight Systems SQLite export; a list
        of them (one per rank) compares the ranks.
    options: by ("kernel", "op", "module", "range"), per_step, step, raw_names, stages,
        graph_capture (with by="op"/"module"/"range": the trace of the graphs' capture, whose
        operators a graph replay's kernels take; a kprof tracer trace carrying its graph node
        table needs none: its replays take the ranges open at their capture).
    Rows: one per kernel name (`kernels`); with by="op"/"module"/"range" one per operator, module
        or range stack (`ops`; `json["graph_nodes"]`: how the graph replays were attributed);
        with per_step=True one per step (`steps`). result.table("stages") is the stage
        breakdown.
    """
    return _answer("rank", _flags("rank", RANK_OPTIONS, options), _paths(trace, "trace"))


def budget(trace, **options):
    """Per step: is it kernel-bound or host-bound (`kprof budget TRACE... --json`).

    trace: a trace or Nsight Systems export, or a list (one per rank: compared step by step).
    options: step, host_bound_below, kernel_bound_from.
    Rows: one per step (`steps`); the totals and the verdict are in result.json.
    """
    return _answer("budget", _flags("budget", BUDGET_OPTIONS, options), _paths(trace, "trace"))


def report(trace, reports, **options):
    """The fix list: captured kernels joined to a trace (`kprof report --trace TRACE REPORT...`).

    trace: the profiler trace of the program the captures came from.
    reports: an .ncu-rep (or CSV export), or a list of them.
    options: as analyze() (gpus: kprof calibrate's calibration JSON for measured ceilings).
    Rows: one per kernel group (name, grid, block), by estimated saving
        (`fix_list.opportunities`); the per-launch verdicts are result.table("kernels").
    """
    flags = [f"--trace={_path(trace, 'trace')}"] + _flags("report", REPORT_OPTIONS, options)
    return _answer("report", flags, _paths(reports, "reports"), rows="fix_list.opportunities")


def diff(baseline, candidate, **options):
    """Two captures, or two traces, compared (`kprof diff BASELINE CANDIDATE --json --no-fail`).

    A regression is an answer here, not an error: result.json["regressed"] says whether there is
    one (kprof's exit 6 is for CI gates), result.json["coverage"]["sufficient"] whether the
    kernels compared hold enough of each side's GPU time (exit 13), result.json["passed"] both.
    Two captures with no kernel in common raise KprofError (exit 5).
    options: threshold, noise_factor, single_sample_floor, pair ("BASELINE=CANDIDATE", or a list
        of them: kernels renamed between the captures), min_coverage, no_auto_pair; for traces
        alpha, step.
    Rows: one per kernel (`kernels`; for traces also result.table("stages")).
    """
    flags = ["--no-fail"] + _flags("diff", DIFF_OPTIONS, options)
    return _answer("diff", flags, [_path(baseline, "baseline"), _path(candidate, "candidate")])
