"""Recorded rows by name, for a notebook that shows another notebook's recording or every recorded
GPU side by side (day 1 · 01's null result from day 5 · 05; day 2 · 01's latency in day 5 · 01;
both GPUs in day 2 · 01, day 2 · 03 and day 5 · 02).

A notebook's own measurement goes through :func:`utils.core.results.record_or_load`; these two
functions only read, and only the rows they are asked for by name, so a row that no course code
produces fails here with the names that exist, never silently.
"""
from __future__ import annotations

from . import results


def _named(doc: dict, names) -> dict:
    if isinstance(names, str) or not names:
        raise TypeError(f"names must be a non-empty tuple of row names, got {names!r}")
    return {n: results.pick(doc["rows"], n) for n in names}


def by_device(stem: str, names) -> dict:
    """``{device: {name: row}}`` for every GPU that recorded ``stem``, sorted by device name."""
    docs = results.documents(stem)
    if not docs:
        raise FileNotFoundError(f"no recording of {stem!r}: record it on a Hopper GPU (COURSE_RECORD=1)")
    return {d["device"]: _named(d, names) for d in docs}


def one_device(stem: str, names, device: str | None = None) -> tuple[dict, str]:
    """``({name: row}, label)`` from the recording of ``device`` (any part of its name or slug) if
    that GPU recorded ``stem``, else from the most recent recording (``device=None``: what
    :func:`utils.core.results.load` picks)."""
    try:
        doc = results.load(stem, device)
    except LookupError:                      # this GPU never recorded the stem: the latest recording
        doc = results.load(stem, max(results.documents(stem), key=lambda d: d["date"])["device"])
    return _named(doc, names), results.label(doc)
