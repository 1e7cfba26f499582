"""A number never differs between the CLI and Python: on the same inputs, the package's JSON is the
one `kprof VERB --json` prints (run here directly, parsed with json.loads), every DataFrame cell is
that JSON's field, and the CLI's text tables print the same figures."""
import math
import re

import pytest

import kprof
from conftest import H200

def case(verb, cli_args, *args, **options):
    """The package's VERB(*ARGS, **OPTIONS) beside the CLI's `kprof CLI_ARGS --json`."""
    return pytest.param(verb, args, options, cli_args, id=f"{verb.__name__}-{args[0].name}")


EAGER, GRAPH = H200 / "budget_eager_decode.json.gz", H200 / "budget_graph_decode.json.gz"
SUITE_A, SUITE_B = H200 / "diff_suite_basic_base_a.ncu-rep.zst", H200 / "diff_suite_basic_base_b.ncu-rep.zst"
COMPILED_TRACE, COMPILED = H200 / "trace_compiled_decode.json.gz", H200 / "compiled_decode_full.ncu-rep.zst"
WAITS = H200 / "trace_dependency_wait.json.gz"
CASES = [
    case(kprof.analyze, ["analyze", H200 / "big_full.ncu-rep.zst"], H200 / "big_full.ncu-rep.zst"),
    case(kprof.rank, ["rank", H200 / "budget_eager_b1.json.gz"], H200 / "budget_eager_b1.json.gz"),
    case(kprof.rank, ["rank", H200 / "trace_eager.json.gz", "--by", "op"], H200 / "trace_eager.json.gz",
         by="op"),
    case(kprof.budget, ["budget", EAGER], EAGER),
    case(kprof.budget, ["budget", WAITS, "--step", "^dependency_step$"], WAITS, step="^dependency_step$"),
    case(kprof.report, ["report", "--trace", COMPILED_TRACE, COMPILED], COMPILED_TRACE, COMPILED),
    case(kprof.diff, ["diff", SUITE_A, SUITE_B], SUITE_A, SUITE_B),
    case(kprof.diff, ["diff", EAGER, GRAPH], EAGER, GRAPH),
]


def without_argv(document):
    """The document less the command line that made it (the package passes `--` and its flags
    in its own order)."""
    return dict(document, tool={k: v for k, v in document["tool"].items() if k != "argv"})


def rows_of(document, path):
    for key in path.split("."):
        document = document[key]
    return document


def same(cell, value):
    if value is None:
        return cell is None or (isinstance(cell, float) and math.isnan(cell))
    if isinstance(value, float):
        return cell == value or (math.isnan(value) and math.isnan(cell))
    return cell == value


@pytest.mark.parametrize("verb, args, options, cli_args", CASES)
def test_the_package_answers_what_the_cli_prints(verb, args, options, cli_args, cli_json):
    result = verb(*args, **options)
    printed = cli_json(*cli_args)
    assert without_argv(result.json) == without_argv(printed)
    rows = rows_of(printed, result.rows)
    assert len(result.df) == len(rows)
    checked = 0
    for i, row in enumerate(rows):
        for field, value in row.items():
            if isinstance(value, dict):
                for inner, inner_value in value.items():
                    if not isinstance(inner_value, dict):
                        assert same(result.df.at[i, f"{field}.{inner}"], inner_value), (i, field, inner)
                        checked += 1
            elif value is None and field not in result.df.columns:
                # A null object in this row, fields in others: every field of it is NaN here.
                inner = [c for c in result.df.columns if c.startswith(field + ".")]
                assert inner and result.df.loc[i, inner].isna().all(), (i, field)
                checked += 1
            else:
                assert same(result.df.at[i, field], value), (i, field)
                checked += 1
    assert checked > 0


def numbers(text):
    """The numbers a text table row prints, as printed ("1,837", "0.584")."""
    return re.findall(r"(?<![\w#.])\d[\d,]*(?:\.\d+)?(?![\w.])", text)


def agrees(printed, value):
    """PRINTED is VALUE rounded to the digits printed."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(float(printed.replace(",", "")) - value) <= 0.5 * 10 ** -decimals + 1e-9


def test_budget_text_table_prints_the_dataframes_figures(cli):
    trace = H200 / "budget_eager_decode.json.gz"
    df = kprof.budget(trace).df
    text = cli("budget", trace).splitlines()
    step_lines = [line for line in text if line.startswith("ProfilerStep#")]
    assert len(step_lines) == len(df)
    for line, (_, step) in zip(step_lines, df.iterrows()):
        name, rest = line.split(None, 1)
        assert name == step["name"]
        host_ms, wall_ms, span_ms, busy_ms, gap_ms, idle_ms, busy_pct = numbers(rest)[:7]
        assert agrees(host_ms, step["host_duration_us"] / 1000), (name, host_ms)
        assert agrees(wall_ms, step["wall_span_us"] / 1000), (name, wall_ms)
        assert agrees(span_ms, step["gpu_span_us"] / 1000), (name, span_ms)
        assert agrees(busy_ms, step["gpu_busy_us"] / 1000), (name, busy_ms)
        assert agrees(gap_ms, step["host_gap_us"] / 1000), (name, gap_ms)
        assert agrees(idle_ms, step["device_idle_us"] / 1000), (name, idle_ms)
        assert agrees(busy_pct, 100 * step["busy_fraction"]), (name, busy_pct)


def test_rank_text_table_prints_the_dataframes_figures(cli):
    trace = H200 / "budget_eager_b1.json.gz"
    df = kprof.rank(trace).df
    text = cli("rank", trace, "-n", len(df), "--name-width", 10000).splitlines()
    rows = [line for line in text if re.match(r"^\d+\s", line)][:len(df)]
    assert len(rows) == len(df)
    for line, (_, kernel) in zip(rows, df.iterrows()):
        after_name = line.split(kernel["name"], 1)[1].split()
        assert after_name[0] == kernel["stage"]
        count, total_ms, mean_us, gpu_pct, wall_pct = numbers(" ".join(after_name[1:]))[:5]
        assert int(count) == kernel["count"]
        assert agrees(total_ms, kernel["total_us"] / 1000), (kernel["name"], total_ms)
        assert agrees(mean_us, kernel["mean_us"]), (kernel["name"], mean_us)
        assert agrees(gpu_pct, 100 * kernel["share_of_gpu_time"]), (kernel["name"], gpu_pct)
        assert agrees(wall_pct, 100 * kernel["share_of_wall"]), (kernel["name"], wall_pct)


@pytest.mark.parametrize("verb", ["analyze", "rank", "budget", "report", "diff"])
def test_every_keyword_is_a_flag_of_the_verb(verb, cli):
    """The package's keyword tables name flags the binary has (`kprof VERB --help`)."""
    from kprof import _verbs
    table = getattr(_verbs, f"{verb.upper()}_OPTIONS")
    help_text = cli(verb, "--help")
    for keyword, (flag, kind) in table.items():
        assert re.search(rf"(^|[\s,]){re.escape(flag)}\b", help_text, re.M), (keyword, flag)
        assert flag == "--" + keyword.replace("_", "-"), "keywords are named as their flags"
