"""Recorded results: format validation, loading, and that recording needs a real GPU."""
import json

import pytest
import torch

from utils import plots, results
from utils.tier import Tier

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


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU refusal")
def test_save_refuses_without_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="only from a run on a real GPU"):
        results.save("demo", [ROW])
    with pytest.raises(ValueError, match="stem must be"):
        results.save("a/b", [ROW])


def test_recorded_files_are_valid():
    for path in results.results_dir().glob("*.json"):
        doc = results.load(path.stem)
        assert {"device", "driver", "versions", "date", "command"} <= set(doc), path
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
