"""Each verb of the Python package on the real H200 recordings, its DataFrame held to values found
without kprof: ncu's own CSV export, the trace's events read with json, the second budget
implementation of tests/timeline/budget_reference.py, and totals data/h200/README.md and the
pages of docs/ state."""
import csv
import gzip
import json
import sys

import pandas
import pytest

import kprof
from conftest import H200, SOURCE

sys.path.insert(0, str(SOURCE / "tests" / "timeline"))
import budget_reference  # noqa: E402  (a second implementation of kprof budget, in Python)


def gpu_events(trace):
    """The trace's GPU activities (kernels, memcpy, memset), read with Python's json module."""
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    return [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def test_analyze_durations_and_grids_are_ncus_own_csv_export():
    r = kprof.analyze(H200 / "big_min.ncu-rep.zst", sort="id")
    with open(H200 / "big_min_raw.csv", newline="") as f:
        rows = list(csv.reader(f))
    header, units, exported = rows[0], rows[1], rows[2:]
    duration = header.index("gpu__time_duration.sum")
    assert units[duration] == "us"
    assert len(r.df) == len(exported) == 24
    assert list(r.df["launch"]) == [int(row[header.index("ID")]) for row in exported]
    expected_us = [float(row[duration]) for row in exported]
    assert r.df["wall_clock_us"].tolist() == pytest.approx(expected_us, rel=1e-6)
    expected_grids = [json.loads(row[header.index("Grid Size")].replace("(", "[").replace(")", "]"))
                      for row in exported]
    assert r.df["grid"].tolist() == expected_grids


def test_analyze_verdicts_of_the_bottleneck_suite():
    r = kprof.analyze(H200 / "bottleneck_suite_full.ncu-rep.zst")
    assert len(r.df) == 10  # data/h200/README.md: ten kernels with known bottlenecks
    by_name = r.df.set_index("target")
    assert by_name.loc["k_dram_stream", "roofline"] == "memory-bound"
    assert by_name.loc["k_dram_stream", "bound_by"] == "dram"
    # Nested objects are flattened into path-named columns; kprof's JSON order (longest first).
    assert "expected_bottleneck.expected" in r.df.columns or "expected_bottleneck" in r.df.columns
    assert r.df["wall_clock_us"].is_monotonic_decreasing


def test_analyze_kernel_option_selects_by_regex():
    r = kprof.analyze(H200 / "big_full.ncu-rep.zst", kernel="cudnn")
    assert len(r.df) == 2 and r.df["target"].str.contains("cudnn").all()


def test_missing_figures_are_nan_never_zero():
    # `--set basic` collects no warp states (docs/verdicts.md: such fields are null, never 0).
    r = kprof.analyze(H200 / "big_basic.ncu-rep.zst")
    assert r.df["tflops"].isna().all()
    assert (r.df["missing"].map(len) > 0).all()


def test_rank_totals_are_the_traces_own_events():
    trace = H200 / "budget_eager_b1.json.gz"
    events = gpu_events(trace)
    r = kprof.rank(trace)
    assert len(events) == 520 and len(r.df) == 9  # docs/rank.md: 520 GPU activities, 9 distinct names
    assert r.df["count"].sum() == len(events)
    assert r.df["total_us"].sum() == pytest.approx(sum(e["dur"] for e in events), rel=1e-9)
    assert r.df["share_of_gpu_time"].sum() == pytest.approx(1.0)
    top = r.df.iloc[0]
    assert (top["name"], top["count"]) == ("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT", 80)
    # A name kprof did not normalise keeps its count in the trace.
    assert top["total_us"] == pytest.approx(sum(e["dur"] for e in events if e["name"] == top["name"]))
    stages = r.table("stages")
    assert stages["total_us"].sum() == pytest.approx(r.df["total_us"].sum())
    assert set(stages["stage"]) == set(r.df["stage"])


def test_rank_by_op():
    r = kprof.rank(H200 / "trace_eager.json.gz", by="op")
    assert r.json["schema"] == "kprof.rank-ops/1" and r.rows == "ops"
    assert len(r.df) == 18  # docs/rank.md: 18 distinct operators
    cat = r.df.set_index("name").loc["aten::cat"]
    assert cat["kernels"] == 12
    assert r.df["kernels"].sum() == len(gpu_events(H200 / "trace_eager.json.gz")) == 786


def test_rank_per_step_and_by_device():
    r = kprof.rank(H200 / "budget_graph_decode.json.gz", per_step=True)
    assert r.rows == "steps" and list(r.df["name"]) == [f"ProfilerStep#{i}" for i in range(2, 7)]
    devices = kprof.rank(H200 / "tracer_two_device.json.gz").table("devices")
    assert list(devices["device"]) == [0, 1]
    assert devices["gpu_events"].sum() == 14406  # docs/rank.md: 14406 GPU activities on 2 devices


def test_budget_steps_are_the_second_implementations():
    for trace in ("budget_eager_decode.json.gz", "tracer_two_device.json.gz"):
        r = kprof.budget(H200 / trace)
        expected = budget_reference.budget(str(H200 / trace), None)
        assert list(r.df["name"]) == [s["name"] for s in expected]
        for column, figure in (("gpu_span_us", "span_us"), ("gpu_busy_us", "busy_us"),
                               ("host_gap_us", "host_gap_us"), ("device_idle_us", "device_idle_us")):
            want = [sum(d[figure] for d in s["devices"].values()) for s in expected]
            assert r.df[column].tolist() == pytest.approx(want, rel=1e-6, abs=1e-6), (trace, column)


def test_budget_of_the_graph_replay():
    r = kprof.budget(H200 / "budget_graph_decode.json.gz")
    # docs/budget.md: five ProfilerSteps, one cudaGraphLaunch each; the graph keeps its GPU span 99.5 %
    # busy, but the host's time before and after each replay makes every step mixed.
    assert len(r.df) == 5
    assert (r.df["verdict"] == "mixed").all()
    assert (r.df["gpu_span_busy_fraction"] > 0.99).all()
    assert (r.df["graph_launches"] == 1).all()
    assert r.json["verdict"] == "mixed"
    # The per-step device lists stay lists in their cell; result.table() reads the top level's.
    assert r.df["devices"].map(len).tolist() == [1] * 5
    assert r.table("devices")["busy_us"].sum() == pytest.approx(r.df["gpu_busy_us"].sum())


def test_report_is_the_fix_list():
    r = kprof.report(H200 / "trace_compiled_decode.json.gz", H200 / "compiled_decode_full.ncu-rep.zst",
                     gpus=H200 / "h200_calibration.json")
    assert r.rows == "fix_list.opportunities"
    fix_list = r.json["fix_list"]
    assert len(r.df) == 10 and fix_list["steps"] == 30  # docs/report.md: 10 kernel groups, 30 steps
    first = r.df.iloc[0]
    assert first["kernel"].startswith("cudnn_generated_fort_native_sdpa_sm80_flash")
    assert (first["launches_captured"], first["trace_launches"]) == (4, 120)
    # Groups are disjoint trace time: their savings add up to the list's total.
    assert r.df["estimated_saving_us"].sum() == pytest.approx(fix_list["total_estimated_saving_us"])
    assert r.df["estimated_saving_us"].fillna(0).is_monotonic_decreasing
    # Every captured launch is in one group; the per-launch verdicts are the same answer's.
    with gzip.open(H200 / "compiled_decode_full_raw.csv.gz", "rt", newline="") as f:
        captured = len(list(csv.reader(f))) - 2  # ncu's own export: a header, a units row
    assert r.df["launches_captured"].sum() == len(r.table("kernels")) == captured


def test_diff_of_captures_reports_a_regression_without_raising():
    r = kprof.diff(H200 / "diff_suite_basic_base_a.ncu-rep.zst", H200 / "diff_suite_basic_slow_fp32.ncu-rep.zst")
    assert r.json["schema"] == "kprof.diff/1" and r.json["regressed"] is True
    fma = r.df.set_index("name").loc["k_fp32_fma"]
    assert fma["change_pct"] == pytest.approx(100, abs=1)  # docs/diff.md: +100.0%: twice the work
    assert fma["change"] == "regression"
    same = kprof.diff(H200 / "diff_suite_basic_base_a.ncu-rep.zst", H200 / "diff_suite_basic_base_b.ncu-rep.zst")
    assert same.json["regressed"] is False
    assert same.df["change_pct"].abs().max() <= 0.8  # docs/diff.md: unchanged runs differ by at most 0.8%


RENAMED = SOURCE / "tests" / "analysis" / "data" / "renamed_kernel"


def test_diff_pairs_a_renamed_kernel_and_says_what_it_covers():
    """Issue 43's captures: vectorize became warp_tile (+17.5 %) beside an unchanged helper."""
    base, cand = RENAMED / "vectorize_raw.csv", RENAMED / "warp_tile_raw.csv"
    auto = kprof.diff(base, cand)
    assert auto.json["regressed"] is True and auto.json["passed"] is False
    assert [p["how"] for p in auto.json["pairs"]] == ["automatic"]
    # Unpaired, the helper alone is compared: too little of either side's time, never a pass.
    helper_only = kprof.diff(base, cand, no_auto_pair=True)
    assert helper_only.json["regressed"] is False and helper_only.json["passed"] is False
    assert helper_only.json["coverage"]["baseline_pct"] == pytest.approx(4.224 / 42.656 * 100)
    assert [u["name"] for u in helper_only.json["unmatched_candidate"]] == [
        "warp_tile(const float4 *, float4 *, int)"]
    # pair takes one "BASELINE=CANDIDATE" or a list of them, each its own --pair.
    for pair in ("vectorize=warp_tile", ["vectorize=warp_tile"]):
        paired = kprof.diff(base, cand, no_auto_pair=True, pair=pair)
        assert [p["request"] for p in paired.json["pairs"]] == ["vectorize=warp_tile"]
        assert paired.json["coverage"]["sufficient"] is True
    assert kprof.diff(base, cand, no_auto_pair=True, min_coverage=5).json["passed"] is True


def test_diff_of_traces():
    r = kprof.diff(H200 / "budget_eager_decode.json.gz", H200 / "budget_graph_decode.json.gz")
    assert r.json["schema"] == "kprof.trace-diff/1" and r.json["verdict"] == "improved"
    # Nested before/after objects become before.* and after.* columns.
    assert {"before.total_us", "after.total_us"} <= set(r.df.columns)
    before = gpu_events(H200 / "budget_eager_decode.json.gz")
    assert r.df["before.total_us"].sum() == pytest.approx(sum(e["dur"] for e in before), rel=1e-9)


def test_results_show_as_their_dataframe():
    r = kprof.rank(H200 / "budget_eager_b1.json.gz")
    assert isinstance(r.df, pandas.DataFrame) and len(r) == len(r.df)
    assert r._repr_html_() == r.df._repr_html_()
    assert "kprof.rank/1" in repr(r)
    assert r.argv[0] == kprof.find_binary() and r.argv[1] == "rank"
