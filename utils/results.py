"""Recorded GPU results: ``results/<notebook-stem>.json``, written only by the course's own
benchmark code on a real GPU, and shown (labelled as recorded) on machines without one.

File format::

    {"device", "driver", "versions": {...}, "date", "command",
     "rows": [{"name", "metric", "value", "reference", "reference_value", "ratio",
               "shape", "dtype", ...}]}
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
ROW_KEYS = ("name", "metric", "value", "reference", "reference_value", "ratio", "shape", "dtype")
METRICS = ("GB/s", "TFLOP/s", "ns", "ms", "cycles", "count")


def results_dir() -> pathlib.Path:
    """``$COURSE_RESULTS_DIR`` if set, else the project's ``results/`` folder."""
    return pathlib.Path(os.environ.get("COURSE_RESULTS_DIR", ROOT / "results"))


def validate_rows(rows) -> None:
    """Raise ValueError naming the first row or key that breaks the format."""
    if not isinstance(rows, list) or not rows:
        raise ValueError("rows must be a non-empty list of dicts")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"row {i} is a {type(row).__name__}, not a dict")
        missing = [k for k in ROW_KEYS if k not in row]
        if missing:
            raise ValueError(f"row {i} ({row.get('name')!r}) lacks keys {missing}")
        if row["metric"] not in METRICS:
            raise ValueError(f"row {i}: metric {row['metric']!r} is not one of {METRICS}")
        if not isinstance(row["value"], (int, float)) or not row["value"] > 0:
            raise ValueError(f"row {i}: value must be a positive number, got {row['value']!r}")


def _driver() -> str:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0]
    except Exception:
        return "unknown"


def save(stem: str, rows: list, command: str | None = None, merge: bool = False) -> pathlib.Path:
    """Record ``rows`` measured on this machine's GPU into ``results/<stem>.json``.

    With ``merge``, rows already in the file under other names are kept (a notebook records
    several measurements into one file). Refuses without a GPU: a result must come from a run.
    """
    import torch
    from .report import versions
    if not isinstance(stem, str) or not stem or "/" in stem:
        raise ValueError(f"stem must be a notebook stem like '01_tma_concepts', got {stem!r}")
    validate_rows(rows)
    if not torch.cuda.is_available():
        raise RuntimeError("results are recorded only from a run on a real GPU")
    doc = {"device": torch.cuda.get_device_name(0), "driver": _driver(), "versions": versions(),
           "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "command": command or " ".join(sys.argv), "rows": rows}
    path = results_dir() / f"{stem}.json"
    if merge and path.exists():
        new = {r["name"] for r in rows}
        doc["rows"] = [r for r in json.loads(path.read_text())["rows"] if r["name"] not in new] + rows
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def load(stem: str) -> dict:
    """Read ``results/<stem>.json``; a missing file raises FileNotFoundError saying so."""
    path = results_dir() / f"{stem}.json"
    if not path.exists():
        raise FileNotFoundError(f"no recorded results for {stem!r} ({path}); they are made by "
                                "running the notebook on a Hopper GPU with COURSE_RECORD=1")
    doc = json.loads(path.read_text())
    validate_rows(doc.get("rows"))
    return doc


def record_or_load(stem: str, measure, tier, names: tuple | None = None,
                   needs: str = "gpu") -> tuple[list, str]:
    """If the tier provides ``needs`` ("gpu" or "tma"), run ``measure()`` for fresh rows
    (recorded when ``COURSE_RECORD=1``); otherwise load the recorded rows (only those in
    ``names``, if given). Returns ``(rows, label)``: the label says measured now or recorded.
    """
    if needs not in ("gpu", "tma"):
        raise ValueError(f"needs must be 'gpu' or 'tma', got {needs!r}")
    if tier.has_tma if needs == "tma" else tier.has_gpu:
        rows = measure()
        if os.environ.get("COURSE_RECORD") == "1":
            save(stem, rows, command=f"COURSE_RECORD=1 pytest --nbval-lax ({stem})", merge=True)
        return rows, f"measured now on {tier.device_name}"
    doc = load(stem)
    rows = doc["rows"] if names is None else [r for r in doc["rows"] if r["name"] in names]
    if not rows:
        raise KeyError(f"results/{stem}.json has none of the rows {names}")
    return rows, f"recorded on {doc['device']}, {doc['date'][:10]}"


def pick(rows: list, name: str, **match) -> dict:
    """The one row called ``name`` (optionally also matching other keys, e.g. dtype='float16')."""
    hits = [r for r in rows if r["name"] == name and all(r.get(k) == v for k, v in match.items())]
    if len(hits) != 1:
        raise KeyError(f"expected one row named {name!r} with {match}, found {len(hits)}; "
                       f"names: {sorted({r['name'] for r in rows})}")
    return hits[0]
