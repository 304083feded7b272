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


def test_gemm_summary_picks_each_stacks_best_step_per_device(tmp_path, monkeypatch):
    import json
    from utils.core import gallery, results
    monkeypatch.setattr(results, "results_dir", lambda: tmp_path)
    def doc(device, rows):
        return {"device": device, "date": "2026-11-23T00:00:00+00:00", "rows": rows}
    def row(name, ratio, lo=None, hi=None, shape=(4096, 4096, 4096), ref="cuBLAS (torch.matmul)"):
        r = {"name": name, "metric": "TFLOP/s", "value": 700.0 * ratio, "ratio": ratio, "reference": ref,
             "reference_value": 700.0, "shape": list(shape), "dtype": "float16"}
        if lo is not None:
            r.update(ratio_lo=lo, ratio_hi=hi)
        return r
    for dev in ("nvidia-h100", "nvidia-h200"):
        (tmp_path / dev).mkdir()
        name = dev.upper().replace("-", " ")
        (tmp_path / dev / "03_triton_tma_gemm.json").write_text(json.dumps(doc(name, [
            row("cuBLAS (torch.matmul)", 1.0), row("Triton v1", 0.95), row("Triton v3", 0.99, 0.98, 1.0),
            row("Triton v3", 0.5, shape=(128, 8192, 8192))])))
        (tmp_path / dev / "04_cutedsl_tma_gemm.json").write_text(json.dumps(doc(name, [
            row("CuteDSL 4 stages", 0.97), row("CuteDSL ws", 0.98, 0.97, 0.99)])))
    rows = gallery.gemm_summary()
    assert [(r["device"], r["stack"], r["name"]) for r in rows] == [
        ("NVIDIA H100", "Triton", "Triton v3"), ("NVIDIA H100", "CuteDSL", "CuteDSL ws"),
        ("NVIDIA H200", "Triton", "Triton v3"), ("NVIDIA H200", "CuteDSL", "CuteDSL ws")]
    assert all(r["size"] == 4096 for r in rows)            # the skinny shape is not square: left out
    import matplotlib
    matplotlib.use("Agg")
    fig = gallery.show_gemm_summary(rows)
    assert len(fig.axes) == 2
    with pytest.raises(ValueError, match="no GEMM rows"):
        gallery.show_gemm_summary([])
