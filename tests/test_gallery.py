"""utils.core.gallery: one table and one chart per metric per results file, labelled as recorded."""
import json

import matplotlib
import matplotlib.pyplot
import pytest

from utils.core import gallery

matplotlib.use("Agg")

ROW = {"name": "TMA copy", "metric": "GB/s", "value": 3000.0, "reference": "memcpy",
       "reference_value": 3100.0, "ratio": 0.97, "shape": [8192, 8192], "dtype": "float16"}
LATENCY = dict(ROW, name="HBM latency", metric="ns", value=340.0, reference=None,
               reference_value=None, ratio=None, shape=[1 << 27], dtype="int32")


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    doc = {"device": "NVIDIA H100", "driver": "580", "versions": {}, "date": "2026-11-21T10:00:00",
           "command": "x", "rows": [dict(ROW, name="memcpy", ratio=1.0), ROW, LATENCY]}
    (tmp_path / "demo.json").write_text(json.dumps(doc))
    yield tmp_path
    matplotlib.pyplot.close("all")


def test_show_recorded_one_chart_per_metric(recorded, capsys):
    figs = gallery.show_recorded("demo")
    assert [f.axes[0].get_xlabel() for f in figs] == ["GB/s", "ns"]
    assert all("recorded on NVIDIA H100, 2026-11-21" in f.axes[0].get_title() for f in figs)
    ns_texts = [t.get_text() for t in figs[1].axes[0].texts]
    assert ns_texts == [], "a row without a reference shows its value only"
    out = capsys.readouterr().out
    assert "results/demo.json, recorded on NVIDIA H100, 2026-11-21" in out
    latency_line = next(l for l in out.splitlines() if l.startswith("HBM latency"))
    assert " - " in latency_line and "0.97x" in out


def test_overview_and_stems(recorded):
    assert gallery.stems() == ["demo"]
    assert gallery.label(json.loads((recorded / "demo.json").read_text())) == \
        "recorded on NVIDIA H100, 2026-11-21"
    line = gallery.overview().splitlines()[2]
    assert line.startswith("demo") and "GB/s, ns" in line and "NVIDIA H100, 2026-11-21" in line


def test_real_results_each_name_their_notebook():
    assert gallery.stems(), "the repository records results"
    assert all(gallery.source(s) != "?" for s in gallery.stems())


@pytest.mark.parametrize("stem", ["", "demo.json", "../demo", 3])
def test_bad_stem_rejected(recorded, stem):
    with pytest.raises(ValueError, match="stem must be"):
        gallery.show_recorded(stem)


def test_missing_file_explains(recorded):
    with pytest.raises(FileNotFoundError, match="COURSE_RECORD=1"):
        gallery.show_recorded("absent")
    (recorded / "demo.json").unlink()
    with pytest.raises(FileNotFoundError, match="no results"):
        gallery.overview()


H200_DOC = {"device": "NVIDIA H200", "driver": "580", "cuda": "13.0", "date": "2026-12-02T10:00:00",
            "versions": {"torch": "2.13.0", "triton": "3.7.1", "matplotlib": "3.11"},
            "command": "x", "rows": [dict(ROW, name="memcpy", ratio=1.0, ms=0.07, timing="sustained",
                                          ratio_lo=1.0, ratio_hi=1.0),
                                     dict(ROW, ms=0.072, timing="sustained", ratio_lo=0.95,
                                          ratio_hi=0.98)]}


def test_two_devices_side_by_side(recorded, capsys):
    """The old-layout H100 file and an H200 folder: each chart has one panel per device."""
    (recorded / "nvidia-h200").mkdir()
    (recorded / "nvidia-h200" / "demo.json").write_text(json.dumps(H200_DOC))
    assert gallery.stems() == ["demo"]
    figs = gallery.show_recorded("demo")
    gbs, ns = figs
    titles = [ax.get_title() for ax in gbs.axes]
    assert len(titles) == 2 and "recorded on NVIDIA H100, 2026-11-21" in titles[0]
    assert titles[1].endswith("recorded on NVIDIA H200, 2026-12-02"), "sustained: no timing note"
    assert len(ns.axes) == 1 and "NVIDIA H100" in ns.axes[0].get_title(), "only the H100 has ns"
    assert " 0.97x [0.95-0.98]" in [t.get_text() for t in gbs.axes[1].texts]
    out = capsys.readouterr().out
    assert "results/nvidia-h200/demo.json, recorded on NVIDIA H200, 2026-12-02" in out
    assert "driver 580, CUDA 13.0, torch 2.13.0, triton 3.7.1; command: x" in out
    lines = gallery.overview().splitlines()[2:]
    assert len(lines) == 2 and "NVIDIA H100, 2026-11-21" in lines[0] and "NVIDIA H200" in lines[1]


def test_old_burst_timing_is_labelled():
    doc = dict(H200_DOC, rows=[dict(ROW, ms=0.07)])
    assert gallery.label(doc) == "recorded on NVIDIA H200, 2026-12-02 (timing: burst, older harness)"
    doc = dict(H200_DOC, rows=[dict(ROW, ms=0.07, timing="burst")])
    assert gallery.label(doc).endswith("(timing: burst)")


def test_charts_split_long_files_and_keep_subprocess_times_apart():
    kernel = [dict(ROW, name=f"k{i}", metric="ms", shape=[64 * (i % 2 + 1)]) for i in range(30)]
    lab = [dict(ROW, name=f"lab{i}", metric="ms", exit_status=0) for i in range(3)]
    out = gallery.charts(kernel + lab)
    assert all(len(rows) <= gallery.MAX_BARS for _, rows in out)
    titles = [t for t, _ in out]
    assert titles[-1] == "ms, subprocess wall time" and len(out[-1][1]) == 3
    assert not any("exit_status" in r for _, rows in out[:-1] for r in rows), "never beside kernel times"
    assert sum(len(rows) for _, rows in out) == 33 and len(titles) == len(set(titles))


def test_real_gallery_charts_stay_small():
    for stem in gallery.stems():
        from utils.core import results
        for doc in results.documents(stem):
            assert all(len(rows) <= gallery.MAX_BARS for _, rows in gallery.charts(doc["rows"])), stem


def _screen_docs(tmp_path, ratio_h200):
    (tmp_path / "nvidia-h200").mkdir()
    base = dict(ROW, reference="memcpy", ratio_lo=None, ratio_hi=None)
    for folder, device, r in ((tmp_path, "NVIDIA H100 80GB HBM3", 0.97), (tmp_path / "nvidia-h200", "NVIDIA H200", ratio_h200)):
        rows = [dict(base, name="memcpy", ratio=1.0), dict(base, ratio=r, value=3100.0 * r),
                dict(base, name="plain", reference="plain", ratio=1.0, value=1000.0)]
        (folder / "demo.json").write_text(json.dumps({"device": device, "date": "2026-11-23T00:00:00", "rows": rows}))


@pytest.fixture
def screen(recorded, monkeypatch):
    from utils.core import gallery_days as gd
    chart = gd.Chart("copies / memcpy", [gd.Bar("TMA", "demo", "TMA copy", "memcpy", {}),
                                          gd.Bar("plain / memcpy", "demo", "plain", "memcpy", {})])
    take = gd.Takeaway("TMA does not beat memcpy", ["TMA"], lambda v: v["TMA"] <= 1.0)
    monkeypatch.setitem(gd.SCREENS, "demo", {"title": "Demo day", "charts": [chart], "takeaways": [take]})
    return recorded


def test_screen_side_by_side_and_ratio_from_values(screen, capsys):
    _screen_docs(screen, 0.95)
    rows = gallery.screen_rows("demo")
    assert [(r["device"], r["label"]) for r in rows] == [
        ("H100", "TMA"), ("H200", "TMA"), ("H100", "plain / memcpy"), ("H200", "plain / memcpy")]
    plain = rows[2]
    assert plain["ratio"] == pytest.approx(1000 / 3000), "a row with another reference: value / reference value"
    fig = gallery.show_screen("demo")
    assert len(fig.axes) == 2 and fig.axes[0].get_title().startswith("H100")
    out = capsys.readouterr().out
    assert "Demo day" in out and "0.97x" in out and "0.95x" in out
    assert gallery.takeaways("demo") == [("TMA does not beat memcpy", True, "H100: TMA 0.97x; H200: TMA 0.95x")]


def test_takeaway_that_a_recording_breaks_is_reported(screen):
    _screen_docs(screen, 1.04)
    [(claim, holds, figures)] = gallery.takeaways("demo")
    assert not holds and "H200: TMA 1.04x" in figures


def test_screen_bad_key_and_missing_row(screen):
    with pytest.raises(ValueError, match="screen must be one of"):
        gallery.show_screen("day9")
    _screen_docs(screen, 0.95)
    from utils.core import gallery_days as gd
    gd.SCREENS["demo"]["charts"][0].bars.append(gd.Bar("x", "demo", "absent", "memcpy", {}))
    with pytest.raises(KeyError, match="absent"):
        gallery.screen_rows("demo")


def test_a_newer_bar_is_left_out_where_a_recording_predates_it(screen, capsys):
    """A bar marked ``newer`` (a step added after a device recorded) is drawn "-" on that device;
    the same row missing from a bar not so marked is still an error (test above)."""
    _screen_docs(screen, 0.95)
    from utils.core import gallery_days as gd
    gd.SCREENS["demo"]["charts"][0].bars.append(gd.Bar("step 5", "demo", "absent", "memcpy", {}, True))
    rows = gallery.screen_rows("demo")
    assert not any(r["label"] == "step 5" for r in rows)
    gallery.show_screen("demo")
    assert any(line.startswith("step 5") and line.split()[-1] == "-" for line in capsys.readouterr().out.splitlines())


def test_too_many_bars_rejected(screen):
    from utils.core import gallery_days as gd
    bars = [gd.Bar(f"b{i}", "demo", "TMA copy", "memcpy", {}) for i in range(gallery.MAX_BARS + 1)]
    gd.SCREENS["demo"]["charts"] = [gd.Chart("too many", bars)]
    with pytest.raises(ValueError, match="more than 20"):
        gallery.screen_rows("demo")


def test_real_screens_hold_and_cover_every_file():
    from utils.core import gallery_days as gd
    assert set(gallery.stems()) <= set(gallery.covered())
    for key in gd.SCREENS:
        assert all(holds for _, holds, _ in gallery.takeaways(key)), key
    assert gallery.short_device("NVIDIA H100 80GB HBM3") == "H100" and gallery.short_device("NVIDIA H200") == "H200"
