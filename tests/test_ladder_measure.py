"""Day 5 · 05's measurement helpers that need no GPU (utils.day05.ladder_measure): the FULL switch's
quick settings, the clock split into clock x work per clock, the recordings shown when a live
measurement is not run, and the rules on their arguments."""
import json
import re

import pytest

import utils

utils.setup(quiet=True)

from utils.core import bench, results  # noqa: E402
from utils.cute_dsl import ladder  # noqa: E402
from utils.day05 import ladder_measure as LM  # noqa: E402

ROW = "tile order: row-major"


def clock_row(name, n, mhz, tflops):
    return dict(name=name, metric="MHz", value=mhz, tflops=tflops, tflops_per_ghz=tflops / (mhz / 1e3),
                shape=[n, n, n], dtype="float16", part="clocks", watts=690.0)


def test_quick_settings_are_a_subset_of_the_full_ones():
    assert set(LM.QUICK["sizes"]) <= set(LM.SIZES) and set(LM.QUICK["dtypes"]) <= set(LM.DTYPES)
    assert 1 <= LM.CLOCK_QUICK_SECONDS < LM.CLOCK_SECONDS
    assert LM.clock_names(True) == LM.rung_names()
    assert LM.clock_names(False) == [ladder.ORDER_BASE, ROW]
    assert set(LM.clock_names(False)) < set(LM.clock_names(True))


def test_per_clock_splits_throughput_into_clock_times_work_per_clock():
    rows = [clock_row(LM.CUBLAS, 4096, 1425.0, 614.0), clock_row(ladder.ORDER_BASE, 4096, 1425.0, 582.0),
            clock_row(LM.CUBLAS, 8192, 1290.0, 636.0), clock_row(ladder.ORDER_BASE, 8192, 1305.0, 639.0)]
    small = LM.per_clock(rows, 4096, ladder.ORDER_BASE)
    assert small["clock"] == pytest.approx(1.0) and small["per_ghz"] == pytest.approx(582 / 614)
    for n in (4096, 8192):
        d = LM.per_clock(rows, n, ladder.ORDER_BASE)
        assert d["tflops"] == pytest.approx(d["clock"] * d["per_ghz"])
    peak = 132 * 4096 / 1e3
    assert small["cublas_of_peak"] == pytest.approx(614 / 1.425 / peak)
    assert LM.per_clock(rows, 8192, ladder.ORDER_BASE, sms=114)["of_peak"] > small["of_peak"]


def test_per_clock_on_the_recordings():
    """Notebook 05's reading of its clocks at 4096³. Replayed from CUDA graphs (rows with ``launch``),
    rung 6 ties cuBLAS in TFLOP/s and in work per clock (the claim 05 asserts). Recordings made
    before that, with each kernel called directly from Python, read rung 6 a few percent short in
    work per clock at cuBLAS's clock: the GPU's idle wait for the host, which 05's launch cells
    measure (``measure_launch``)."""
    for doc in results.documents("05_gemm_ladder"):
        clocks = [r for r in doc["rows"] if r.get("part") == "clocks"]
        d = LM.per_clock(clocks, 4096, ladder.ORDER_BASE)
        if all(r.get("launch") == bench.LAUNCH_GRAPH for r in clocks):
            assert abs(d["tflops"] - 1) < 0.03 and abs(d["per_ghz"] - 1) < 0.03, doc["device"]
        else:
            assert d["per_ghz"] < 0.99 and abs(d["clock"] - 1) < abs(d["per_ghz"] - 1), doc["device"]
        assert d["cublas_of_peak"] < 0.95


def test_the_launch_recordings_show_the_gap_was_the_host():
    """05's launch cells, on every recording: called directly, rung 6 is slower than replayed and
    seems to do less work per clock than cuBLAS; replayed, it does not."""
    docs = list(results.documents(LM.LAUNCH_STEM))
    assert docs, "no recording of notebook 05's launch experiment"
    for doc in docs:
        cub, r6 = LM.launch_pair(doc["rows"], LM.CUBLAS), LM.launch_pair(doc["rows"], ladder.ORDER_BASE)
        direct, graph = LM.LAUNCHES
        assert r6[direct]["tflops"] < 0.97 * r6[graph]["tflops"], doc["device"]
        assert r6[direct]["tflops_per_ghz"] < 0.97 * cub[direct]["tflops_per_ghz"], doc["device"]
        assert r6[graph]["tflops_per_ghz"] > 0.97 * cub[graph]["tflops_per_ghz"], doc["device"]
        assert r6[direct]["host_us_per_call"] > 3 * cub[direct]["host_us_per_call"], doc["device"]
        for p in (cub, r6):                  # each loses at least the idle share its host cost predicts
            gemm_us = 2 * p[graph]["shape"][0] ** 3 / (p[graph]["tflops"] * 1e12) * 1e6
            idle = p[direct]["host_us_per_call"] / (p[direct]["host_us_per_call"] + 10 * gemm_us)
            assert 1 - p[direct]["tflops"] / p[graph]["tflops"] >= idle, doc["device"]


def test_per_clock_names_what_is_missing():
    rows = [clock_row(LM.CUBLAS, 4096, 1425.0, 614.0)]
    with pytest.raises(KeyError, match="no clock rows for"):
        LM.per_clock(rows, 4096, ladder.ORDER_BASE)
    with pytest.raises(KeyError, match="no clock rows for"):
        LM.per_clock(rows, 8192, LM.CUBLAS)


def test_recorded_prefers_the_tiers_own_device(monkeypatch):
    monkeypatch.delenv(results.DEVICE_ENV, raising=False)
    devices = [d["device"] for d in results.documents("05_gemm_ladder")]
    assert len(devices) >= 2
    for dev in devices:
        rows, label = LM.recorded("05_gemm_ladder", "FULL = False: shown", type("T", (), {"device_name": dev})())
        assert dev in label and label.endswith("(FULL = False: shown)") and rows
    rows, label = LM.recorded("05_gemm_ladder", "why", None)        # no tier: as results.load picks
    assert label.endswith("(why)")


def test_recorded_needs_a_reason_and_a_recording():
    with pytest.raises(ValueError, match="why must say why"):
        LM.recorded("05_gemm_ladder", "")
    with pytest.raises(FileNotFoundError):
        LM.recorded("05_gemm_ladder_never_recorded", "why")


@pytest.mark.parametrize("seconds", [0.5, 0, "2", None])
@pytest.mark.parametrize("measure", ["measure_clocks", "measure_launch"])
def test_clock_windows_too_short_to_sample_are_refused(measure, seconds):
    with pytest.raises(ValueError, match="seconds must be >= 1"):
        getattr(LM, measure)(seconds=seconds)


def test_launch_pair_needs_both_launch_paths():
    rows = [dict(part="launch", name="k", launch=how, value=1.0) for how in LM.LAUNCHES]
    assert set(LM.launch_pair(rows, "k")) == set(LM.LAUNCHES)
    with pytest.raises(KeyError, match="for both"):
        LM.launch_pair(rows[:1], "k")
    with pytest.raises(KeyError, match="for both"):
        LM.launch_pair(rows, "other")


def test_measure_counters_rejects_unknown_kernels():
    with pytest.raises(ValueError, match=r"names must be rungs or order variants"):
        LM.measure_counters(names=["8 · warp-specialized magic"])


def test_the_notebooks_full_switch_follows_the_recording_flag():
    """One switch, FULL, near the top of notebook 05 (and 05b), on when recording or when
    COURSE_FULL=1 asks for the whole measurement (results.full_run, as 04, 06 and 07 use it)."""
    for env, full in (({}, False), ({"COURSE_RECORD": "1"}, True), ({"COURSE_FULL": "1"}, True)):
        assert results.full_run(env) is full
    for stem in ("05_gemm_ladder", "05b_ladder_lab_report"):
        nb = json.loads((results.ROOT / "solutions" / "day05_tma" / f"{stem}.ipynb").read_text())
        code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
        assert re.search(r"^FULL = results\.full_run\(\)", code[1], re.M), stem
        assert sum(len(re.findall(r"^FULL\s*=", c, re.M)) for c in code) == 1, stem


def test_measure_launch_rows_are_recordable(monkeypatch):
    """measure_launch's rows, with the GPU stood in for on the CPU: both launch paths of each kernel,
    every output checked, and rows the results format accepts (a recording was once lost to a row
    without ``reference``)."""
    import torch
    want = torch.ones(4, 4)
    c = torch.empty(4, 4)
    calls = []

    def fake_problem(n, tdt, names, device="cuda", run=None):
        fns = {LM.CUBLAS: lambda: want.clone()}
        fns.update({name: (lambda: c.copy_(want)) for name in names})
        return c, want, fns
    monkeypatch.setattr(LM, "problem", fake_problem)
    monkeypatch.setattr(LM, "host_us", lambda fns, calls=50: {n: 20.0 if n == LM.CUBLAS else 120.0 for n in fns})
    monkeypatch.setattr(LM.bench, "graphed", lambda fns: dict(fns))
    monkeypatch.setattr(LM, "_run_for", lambda fn, seconds: (10, seconds))
    monkeypatch.setattr(LM, "_sample_gpu", lambda fn, seconds: calls.append(fn) or
                        {"mhz": 1400.0, "watts": 690.0, "calls_per_s": 4000.0, "samples": 20})
    monkeypatch.setattr(LM, "check_close", lambda name, out, ref, K: calls.append(name))
    rows = LM.measure_launch(n=4096, seconds=1)
    results.validate_rows(rows)
    assert {(r["name"], r["launch"]) for r in rows} == {(n, how) for n in (LM.CUBLAS, ladder.ORDER_BASE)
                                                         for how in LM.LAUNCHES}
    assert sum(1 for x in calls if isinstance(x, str)) == 4          # each kernel, each launch path checked
    assert all(r["reference"] == LM.CUBLAS and r["ratio"] == 1.0 for r in rows)
    assert LM.launch_pair(rows, ladder.ORDER_BASE)["direct"]["host_us_per_call"] == 120.0


def test_measure_clocks_rows_are_recordable(monkeypatch):
    """measure_clocks with the GPU stood in for: every kernel at every size, replayed (``launch``),
    checked, and rows the results format accepts, ratios against cuBLAS's clock at the same size."""
    import torch
    want, c, checked = torch.ones(4, 4), torch.empty(4, 4), []

    def fake_problem(n, tdt, names, device="cuda", run=None):
        return c, want, {LM.CUBLAS: lambda: want.clone(), **{name: (lambda: c.copy_(want)) for name in names}}
    mhz = iter(range(1000, 2000, 10))
    monkeypatch.setattr(LM, "problem", fake_problem)
    monkeypatch.setattr(LM.bench, "graphed", lambda fns: dict(fns))
    monkeypatch.setattr(LM, "_run_for", lambda fn, seconds: (10, seconds))
    monkeypatch.setattr(LM, "_sample_gpu", lambda fn, seconds: {"mhz": float(next(mhz)), "watts": 690.0,
                                                                 "calls_per_s": 100.0, "samples": 20})
    monkeypatch.setattr(LM, "check_close", lambda name, out, ref, K: checked.append(name))
    rows = LM.measure_clocks(sizes=(4096, 8192), seconds=1, names=[ladder.ORDER_BASE])
    results.validate_rows(rows)
    assert len(rows) == 4 and checked == [ladder.ORDER_BASE] * 2
    assert all(r["launch"] == bench.LAUNCH_GRAPH and r["part"] == "clocks" and len(r["passes"]) == 2 for r in rows)
    for r in rows:
        ref = next(q for q in rows if q["name"] == LM.CUBLAS and q["shape"] == r["shape"])
        assert r["ratio"] == pytest.approx(r["value"] / ref["value"])
        assert r["tflops_per_ghz"] == pytest.approx(r["tflops"] / (r["value"] / 1e3))


def test_sample_passes_settles_then_samples_each_kernel_twice_the_second_time_reversed(monkeypatch):
    """The one sampling loop of 05's and 06's clock cells: settle, sample; two passes, reversed."""
    log = []
    monkeypatch.setattr(LM, "_run_for", lambda fn, seconds: log.append(("settle", fn(), seconds)))
    monkeypatch.setattr(LM, "_sample_gpu", lambda fn, seconds: log.append(("sample", fn(), seconds)) or fn())
    ticks = []
    got = LM.sample_passes({"a": lambda: "A", "b": lambda: "B"}, 2.0, after=lambda: ticks.append(1))
    assert got == {"a": ["A", "A"], "b": ["B", "B"]}
    assert [(k, v) for k, v, _ in log] == [("settle", "A"), ("sample", "A"), ("settle", "B"), ("sample", "B"),
                                           ("settle", "B"), ("sample", "B"), ("settle", "A"), ("sample", "A")]
    assert {s for k, _, s in log if k == "settle"} == {0.5} and {s for k, _, s in log if k == "sample"} == {2.0}
    assert len(ticks) == 4


@pytest.mark.parametrize("seconds", [0.5, 0, True, "2", None])
def test_every_clock_window_follows_one_rule(seconds):
    """measure_clocks and measure_launch refuse what the other days' clock cells refuse (a bool
    once passed here as 1 s): one rule, ladder_measure.check_seconds, before anything is compiled."""
    for measure in (LM.measure_clocks, LM.measure_launch):
        with pytest.raises(ValueError, match="seconds must be >= 1"):
            measure(seconds=seconds)
