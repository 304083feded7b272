"""Recorded results: format validation, the per-device layout (old files still load), recording
a notebook into an empty folder, and that recording needs a real GPU."""
import json
import pathlib
import re

import pytest
import torch

from utils.core import plots, results
from utils.core.tier import Tier

ROW = {"name": "TMA copy", "metric": "GB/s", "value": 3000.0, "reference": "memcpy",
       "reference_value": 3100.0, "ratio": 0.97, "shape": [8192, 8192], "dtype": "float16"}


def write(tmp_path, rows, stem="demo"):
    doc = {"device": "NVIDIA H100", "driver": "580", "versions": {}, "date": "2026-11-21T00:00:00",
           "command": "x", "rows": rows}
    (tmp_path / f"{stem}.json").write_text(json.dumps(doc))


def test_load_and_pick(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    write(tmp_path, [ROW, dict(ROW, name="memcpy", ratio=1.0)])
    rows, label = results.record_or_load("demo", None, Tier("cpu", None, None, ""), names=("TMA copy",))
    assert rows == [ROW] and label == "recorded on NVIDIA H100, 2026-11-21"
    assert results.pick(results.load("demo")["rows"], "memcpy")["ratio"] == 1.0
    with pytest.raises(KeyError, match="expected one row named 'nope'"):
        results.pick(rows, "nope")


def test_missing_file_explains(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="COURSE_RECORD=1"):
        results.load("absent")


@pytest.mark.parametrize("rows,match", [([], "non-empty list"), ([1], "not a dict"),
                                        ([{"name": "x"}], "lacks keys"),
                                        ([dict(ROW, metric="GFLOPS")], "metric"),
                                        ([dict(ROW, value=-1)], "positive number")])
def test_bad_rows_rejected(rows, match):
    with pytest.raises(ValueError, match=match):
        results.validate_rows(rows)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a CUDA GPU (checks the no-GPU refusal)")
def test_save_refuses_without_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="only from a run on a real GPU"):
        results.save("demo", [ROW])
    with pytest.raises(ValueError, match="stem must be"):
        results.save("a/b", [ROW])


def test_recorded_files_are_valid():
    from utils.core import gallery
    for stem in gallery.stems():
        for doc in results.documents(stem):
            assert {"device", "driver", "versions", "date", "command"} <= set(doc), doc["path"]
            assert "H100" in doc["device"] or "H200" in doc["device"], "recorded on Hopper"


def test_table_and_bars():
    text = plots.format_table([ROW], "label")
    assert "TMA copy" in text and "0.97x" in text and "8192x8192" in text
    fig = plots.show_bars([ROW, dict(ROW, name="memcpy")], "title", "label")
    assert fig.axes[0].get_xlabel() == "GB/s"
    with pytest.raises(ValueError, match="one metric per chart"):
        plots.show_bars([ROW, dict(ROW, metric="ns")], "t")
    with pytest.raises(ValueError, match="no rows"):
        plots.format_table([])


# ---- one file per device: results/<device-slug>/<stem>.json; the old results/<stem>.json loads ----

H100, H200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"


def write_device(root, device, rows, date, stem="demo", **extra):
    doc = dict({"device": device, "driver": "580", "versions": {}, "date": date, "command": "x",
                "rows": rows}, **extra)
    folder = root / results.device_slug(device)
    folder.mkdir(exist_ok=True)
    (folder / f"{stem}.json").write_text(json.dumps(doc))


@pytest.mark.parametrize("name,slug", [(H100, "nvidia-h100-80gb-hbm3"), (H200, "nvidia-h200"),
                                       ("NVIDIA H100 PCIe", "nvidia-h100-pcie"),
                                       ("  GH200 / 480GB ", "gh200-480gb")])
def test_device_slug(name, slug):
    assert results.device_slug(name) == slug


@pytest.mark.parametrize("bad", ["", "  ", None, 3])
def test_device_slug_rejects(bad):
    with pytest.raises(ValueError, match="device name must be"):
        results.device_slug(bad)


def test_two_devices_and_an_old_file(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    monkeypatch.delenv(results.DEVICE_ENV, raising=False)
    write(tmp_path, [ROW])                                          # old layout: an H100
    write_device(tmp_path, H200, [dict(ROW, value=3300.0)], "2026-12-02T00:00:00")
    assert [d["device"] for d in results.documents("demo")] == ["NVIDIA H100", H200]
    assert results.load("demo")["device"] == H200, "default: the most recent recording"
    assert results.load("demo", device="h100")["device"] == "NVIDIA H100"
    monkeypatch.setenv(results.DEVICE_ENV, "NVIDIA H100")
    rows, label = results.record_or_load("demo", None, Tier("cpu", None, None, ""))
    assert rows == [ROW]
    assert label == "recorded on NVIDIA H100, 2026-11-21; also recorded on NVIDIA H200 (results gallery)"
    with pytest.raises(LookupError, match="recorded on: \\['NVIDIA H100', 'NVIDIA H200'\\]"):
        results.load("demo", device="A100")
    # a recording in the device's folder replaces the old-layout file of the same device
    write_device(tmp_path, "NVIDIA H100", [dict(ROW, value=2900.0)], "2026-12-01T00:00:00")
    docs = results.documents("demo")
    assert len(docs) == 2 and docs[0]["rows"][0]["value"] == 2900.0
    assert pathlib.Path(docs[0]["path"]).parent.name == "nvidia-h100"


def test_every_cell_shows_the_gpu_that_recorded_most(tmp_path, monkeypatch):
    """Unset $COURSE_RESULTS_DEVICE: the device with recordings of the most notebooks, even where
    another recorded a notebook later, so two cells of one notebook never show two GPUs; a notebook
    it never recorded shows its most recent recording; the variable still wins."""
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    monkeypatch.delenv(results.DEVICE_ENV, raising=False)
    assert results.default_device() is None
    for stem in ("demo", "other", "third"):
        write_device(tmp_path, H100, [ROW], "2026-11-21T00:00:00", stem=stem)
    write_device(tmp_path, H200, [ROW], "2026-12-02T00:00:00", stem="demo")       # later, fewer files
    write_device(tmp_path, H200, [ROW], "2026-12-02T00:00:00", stem="h200_only")
    assert results.default_device() == "nvidia-h100-80gb-hbm3"
    assert results.load("demo")["device"] == H100 and results.load("h200_only")["device"] == H200
    monkeypatch.setenv(results.DEVICE_ENV, "h200")
    assert results.load("demo")["device"] == H200


@pytest.mark.parametrize("bad,match", [
    (dict(ROW, ratio_lo=0.98, ratio_hi=0.99), "ratio_lo <= ratio <= ratio_hi"),
    (dict(ROW, ratio_lo=0.95), "ratio_lo <= ratio <= ratio_hi"),
    (dict(ROW, ratio=None, ratio_lo=0.9, ratio_hi=1.0), "ratio_lo <= ratio <= ratio_hi")])
def test_spread_must_contain_the_ratio(bad, match):
    with pytest.raises(ValueError, match=match):
        results.validate_rows([bad])


def test_rows_with_and_without_spread_are_valid():
    results.validate_rows([ROW, dict(ROW, ratio_lo=0.95, ratio_hi=0.99, rounds=10, timing="sustained",
                                     ms_rounds=[0.1] * 10)])


# ---- recording one notebook into an empty results folder ----

FAKE_MACHINE = {"device": H100, "capability": "9.0", "sm_count": 132, "driver": "580.95",
                "cuda": "13.0", "versions": {"torch": "2.13.0", "triton": "3.7.1"},
                "date": "2026-12-01T00:00:00+00:00"}
HOPPER = Tier("hopper", H100, (9, 0), "fake")


@pytest.fixture
def recording(tmp_path, monkeypatch):
    """An empty results folder, COURSE_RECORD=1, a fake Hopper machine, a fresh notebook run."""
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_RECORD", "1")
    monkeypatch.setattr(results, "machine", lambda: dict(FAKE_MACHINE))
    monkeypatch.setattr(results, "_RECORDED_THIS_RUN", set())
    return tmp_path


def test_recording_one_notebook_into_an_empty_folder(recording):
    """A notebook's cells in order: each measures and records, and reads only what it measured."""
    col = [dict(ROW, name="column read", metric="cycles", value=51.0)]
    copy = [dict(ROW, name="memcpy", ratio=1.0), ROW]
    agree = [dict(ROW, name="model == hardware", metric="count", value=200.0)]
    for rows in (col, copy, agree):
        got, label = results.record_or_load("demo", lambda rows=rows: rows, HOPPER,
                                            names=tuple(r["name"] for r in rows), needs="tma")
        assert got == rows and label == f"measured now on {H100}"
    path = recording / "nvidia-h100-80gb-hbm3" / "demo.json"
    doc = json.loads(path.read_text())
    assert doc["rows"] == col + copy + agree
    assert {k: doc[k] for k in FAKE_MACHINE} == FAKE_MACHINE and doc["commit"]
    assert doc["command"] == "COURSE_RECORD=1 pytest --nbval-lax (demo)"
    # the same notebook on the cpu tier now finds every row it shows
    cpu = Tier("cpu", None, None, "")
    for rows in (col, copy, agree):
        got, label = results.record_or_load("demo", None, cpu, names=tuple(r["name"] for r in rows))
        assert got == rows and label == f"recorded on {H100}, 2026-12-01"


def test_a_new_run_starts_the_file_afresh(recording):
    results.record_or_load("demo", lambda: [dict(ROW, name="renamed since")], HOPPER)
    results._RECORDED_THIS_RUN.clear()                  # a new notebook run (a new kernel)
    results.record_or_load("demo", lambda: [ROW], HOPPER)
    results.record_or_load("demo", lambda: [dict(ROW, shape=[64, 64])], HOPPER)
    doc = results.load("demo")
    assert [(r["name"], r["shape"]) for r in doc["rows"]] == [("TMA copy", [8192, 8192]),
                                                             ("TMA copy", [64, 64])]


def test_a_notebook_shows_only_rows_it_measures(recording, monkeypatch):
    with pytest.raises(ValueError, match="made no rows named \\['model == hardware'\\]"):
        results.record_or_load("demo", lambda: [ROW], HOPPER, names=("TMA copy", "model == hardware"))
    monkeypatch.delenv("COURSE_RECORD")
    write(recording, [ROW])
    with pytest.raises(KeyError, match="no rows named \\['model == hardware'\\]"):
        results.record_or_load("demo", None, Tier("cpu", None, None, ""),
                               names=("TMA copy", "model == hardware"))


def test_notebooks_read_recorded_rows_only_through_record_or_load():
    """A notebook that picks rows out of a loaded file shows rows its own code may not produce
    (issue 12: one row was written only by a unit test)."""
    nbs = sorted(results.ROOT.glob("solutions/*/*.ipynb")) + sorted(results.ROOT.glob("course/*.ipynb"))
    assert nbs
    for nb in nbs:
        for cell in json.loads(nb.read_text())["cells"]:
            src = "".join(cell["source"])
            if cell["cell_type"] == "code":
                assert '["rows"]' not in src and "results.save(" not in src, (nb.name, src[:200])


def test_counter_rows_need_ncu_on_hopper(recording, monkeypatch):
    """needs="ncu": measured on Hopper only where ncu exists; elsewhere the recording is shown."""
    from utils.core import ncu
    rows = [dict(ROW, name="L2 read bytes", metric="count", value=1.0e6)]
    monkeypatch.setattr(ncu, "available", lambda: True)
    got, label = results.record_or_load("demo", lambda: rows, HOPPER, needs="ncu")
    assert got == rows and label.startswith("measured now")
    monkeypatch.setattr(ncu, "available", lambda: False)
    got, label = results.record_or_load("demo", lambda: 1 / 0, HOPPER, needs="ncu",
                                        names=("L2 read bytes",))
    assert got == rows and label == f"recorded on {H100}, 2026-12-01"
    with pytest.raises(ValueError, match="needs must be"):
        results.record_or_load("demo", lambda: rows, HOPPER, needs="counters")


def test_format_table_marks_host_bound_rows():
    fine = dict(ROW, host_bound=False, host_pace="drained queue")
    starved = dict(ROW, name="short kernel", host_bound=True, host_pace="drained queue")
    assert "host-bound" not in plots.format_table([fine])
    assert "host-bound" not in plots.format_table([dict(starved, host_pace=None)])   # the old, back-pressured flag
    text = plots.format_table([fine, starved])
    line = next(l for l in text.splitlines() if l.startswith("short kernel"))
    assert line.endswith("(host-bound *)") and "launch overhead" in text.splitlines()[-1]


def test_commit_is_read_from_git_unless_course_commit_names_it(monkeypatch):
    monkeypatch.delenv("COURSE_COMMIT", raising=False)
    got = results._commit()
    assert got == "unknown" or re.fullmatch(r"[0-9a-f]{12}(\+changes)?", got)
    monkeypatch.setenv("COURSE_COMMIT", "c666ea4d0e1f")        # a tree copied to a GPU machine
    assert results._commit() == "c666ea4d0e1f"


def test_a_stem_the_chosen_device_never_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    write_device(tmp_path, "NVIDIA H100", [ROW], "2026-12-01T00:00:00")
    monkeypatch.setenv(results.DEVICE_ENV, "h200")
    cpu = Tier("cpu", None, None, "")
    with pytest.raises(LookupError, match="no recording of 'demo' on a device matching 'h200'"):
        results.record_or_load("demo", None, cpu)                     # by default: say so
    rows, label = results.record_or_load("demo", None, cpu, any_device=True)
    assert rows == [ROW]
    assert label == "recorded on NVIDIA H100, 2026-12-01 (no recording on a device matching 'h200')"
    monkeypatch.setenv(results.DEVICE_ENV, "h100")                   # a device that has it: as before
    assert results.record_or_load("demo", None, cpu, any_device=True)[1] == "recorded on NVIDIA H100, 2026-12-01"


def test_a_recording_that_predates_the_rows_asked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    new = dict(ROW, name="new contender")
    write_device(tmp_path, "NVIDIA H100", [ROW, new], "2026-12-01T00:00:00")
    write_device(tmp_path, "NVIDIA H200", [ROW], "2026-12-03T00:00:00")       # later, but without the new row
    monkeypatch.setenv(results.DEVICE_ENV, "h200")
    cpu = Tier("cpu", None, None, "")
    with pytest.raises(KeyError, match="no rows named \\['new contender'\\]: re-record"):
        results.record_or_load("demo", None, cpu, names=(ROW["name"], "new contender"))
    rows, label = results.record_or_load("demo", None, cpu, names=(ROW["name"], "new contender"), any_device=True)
    assert [r["name"] for r in rows] == [ROW["name"], "new contender"]
    assert label.startswith("recorded on NVIDIA H100, 2026-12-01 (the recording on NVIDIA H200 has no rows named")
    assert results.record_or_load("demo", None, cpu, names=(ROW["name"],), any_device=True)[1].startswith(
        "recorded on NVIDIA H200, 2026-12-03")                              # rows it has: its own
    with pytest.raises(KeyError, match="re-record"):                        # no device has them: say so
        results.record_or_load("demo", None, cpu, names=("nobody's",), any_device=True)


def test_format_table_keeps_long_names_apart_from_the_shape():
    long = dict(ROW, name="thread-driven copy (16 B/thread), a long name")
    line = plots.format_table([ROW, long]).splitlines()[-1]
    assert line.startswith(long["name"] + "  "), line


def test_counters_refused_fall_back_to_the_recording(recording, monkeypatch, capsys):
    """ncu installed but ERR_NVGPUCTRPERM (a learner account): the recording, said so, not a crash;
    any other error, or a refusal in a cell that does not need ncu, still raises."""
    from utils.core import ncu
    monkeypatch.setattr(ncu, "available", lambda: True)
    monkeypatch.setattr(Tier, "has", lambda self, f: True, raising=False)
    write(recording, [ROW])
    monkeypatch.delenv("COURSE_RECORD")

    def refused():
        raise RuntimeError("ncu may not read the GPU's counters here (ERR_NVGPUCTRPERM): ...")
    rows, label = results.record_or_load("demo", refused, HOPPER, needs="ncu")
    assert rows == [ROW] and label.startswith("recorded on")
    assert "counters were refused" in capsys.readouterr().out
    with pytest.raises(RuntimeError, match="ERR_NVGPUCTRPERM"):
        results.record_or_load("demo", refused, HOPPER, needs="tma")

    def broken():
        raise RuntimeError("ncu crashed")
    with pytest.raises(RuntimeError, match="crashed"):
        results.record_or_load("demo", broken, HOPPER, needs="ncu")


def test_claim_asserts_on_a_recording_and_reports_on_a_live_run(capsys):
    assert results.claim("recorded on NVIDIA H200, 2026-11-23", True, "v1 gains")
    with pytest.raises(AssertionError, match="v1 gains: not true of the recording shown"):
        results.claim("recorded on NVIDIA H200, 2026-11-23", False, "v1 gains")
    assert results.claim("measured now on NVIDIA H100 80GB HBM3", False, "v1 gains") is False
    assert "did NOT hold: v1 gains" in capsys.readouterr().out
    assert results.claim("measured now on NVIDIA H100 80GB HBM3", 1, "v1 gains") is True
    with pytest.raises(TypeError, match="label"):
        results.claim(None, True, "v1 gains")


def test_a_recording_older_than_a_cells_method_is_replaced_by_the_newest_since(tmp_path, monkeypatch):
    """``since``: the device chosen by $COURSE_RESULTS_DEVICE recorded before the notebook's method
    changed, so its rows may not bear out the prose; the newest recording made since then is shown,
    and the label names the one it replaces. Newer recordings, and since=None, are left alone."""
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    write_device(tmp_path, H200, [dict(ROW, value=1.0)], "2026-11-23T00:00:00")
    write_device(tmp_path, H100, [dict(ROW, value=2.0)], "2026-11-27T10:00:00")
    monkeypatch.setenv(results.DEVICE_ENV, "h200")
    cpu = Tier("cpu", None, None, "")
    rows, label = results.record_or_load("demo", None, cpu)
    assert rows[0]["value"] == 1.0 and "predates" not in label
    rows, label = results.record_or_load("demo", None, cpu, since="2026-11-27")
    assert rows[0]["value"] == 2.0 and label.startswith(f"recorded on {H100}, 2026-11-27")
    assert f"the recording on {H200}, 2026-11-23, predates this cell's method of 2026-11-27" in label
    rows, label = results.recorded("demo", "FULL = False: the recording", cpu, since="2026-11-27")
    assert rows[0]["value"] == 2.0 and "FULL = False: the recording; the recording on" in label
    assert results.record_or_load("demo", None, cpu, since="2026-11-20")[0][0]["value"] == 1.0
    with pytest.raises(LookupError, match="no recording of 'demo' made since 2026-12-01"):
        results.record_or_load("demo", None, cpu, since="2026-12-01")
    for bad in ("27-11-2026", "2026-11", 20261127):
        with pytest.raises(ValueError, match="since must be a date"):
            results.record_or_load("demo", None, cpu, since=bad)


def test_day5_notebooks_run_on_the_h200s_recordings():
    """$COURSE_RESULTS_DEVICE is a learner's switch (the welcome notebook names it): the day-5
    solution notebooks, whose prose is written from the newest recordings, must run on the cpu tier
    whichever device is chosen (03, 05, 06b and 07 once failed under h200: its recordings predate
    their method or lack their stems). The default device (the H100's recordings) is the main nbval
    run's; this runs nbval under h200 in a subprocess, about a minute."""
    import os
    import subprocess
    import sys
    root = pathlib.Path(__file__).resolve().parents[1]
    env = dict(os.environ, COURSE_RESULTS_DEVICE="h200", COURSE_TIER="cpu")
    env.pop("COURSE_RECORD", None)
    env.pop("COURSE_FULL", None)
    nbs = sorted(str(p) for p in (root / "solutions/day05_tma").glob("*.ipynb"))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                          "-o", "addopts=", "--nbval-lax", *nbs], cwd=root, env=env, capture_output=True, text=True,
                         timeout=1200)
    assert run.returncode == 0, run.stdout[-3000:]
