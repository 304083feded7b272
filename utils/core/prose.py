"""How much prose a notebook asks a learner to read: markdown words (code fences excluded),
decimal numbers typed into prose, and the longest markdown cell.

The definitions are those of issue 36's table: a word is a run of non-space characters in a
markdown cell once its fenced code blocks (```...```) are removed; a decimal number is digits,
a point and digits (``0.97``, ``1.6``), not part of a longer word or version (``sm_90a``,
``v1.2`` and the ``2.3`` of ``1.2.3`` do not count); the longest cell is the largest word count
of one markdown cell. ``limits`` gives the course's limits for a notebook (COURSE_DESIGN.md,
"Prose and numbers"); ``tests/test_prose.py`` asserts them.
"""
from __future__ import annotations

import json
import pathlib
import re

WORDS = 4000            # markdown words per notebook, about
WORDS_05 = 3500         # notebook 05 (the GEMM ladder lesson): §1-5 and one page on multicast
CELL_WORDS = 400        # words in one markdown cell
DECIMALS = 15           # decimal numbers typed into a notebook's prose

_FENCE = re.compile(r"```.*?```", re.S)
_DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+")
# Identifiers, not measurements: a version after its tool's name ("Triton 3.9", "PTX ISA 8.6") and a
# compute capability ("12.0", "10.7": major 7-12 with one digit of minor) are not typed figures.
_VERSIONED = re.compile(r"(Triton|CuteDSL|PTX ISA|NVRTC|ptxas|CUDA|torch|Python|CuPy|driver)\s+$")
_CAPABILITY = re.compile(r"(?:[7-9]|1[0-2])\.\d$")


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def load(path) -> dict:
    """The notebook at ``path`` as a dict; ValueError if it is not a notebook with cells."""
    path = pathlib.Path(path)
    if path.suffix != ".ipynb":
        raise ValueError(f"expected a .ipynb notebook, got {str(path)!r}")
    nb = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError(f"{path} is not a notebook: no 'cells' list")
    return nb


def markdown_cells(nb: dict) -> list:
    """The text of every markdown cell, code fences removed, in order."""
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("nb must be a notebook dict with a 'cells' list")
    return [_FENCE.sub(" ", _source(c)) for c in nb["cells"] if c.get("cell_type") == "markdown"]


def count_words(text: str) -> int:
    """Runs of non-space characters in ``text`` (fences already removed)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return len(re.findall(r"\S+", text))


def count_decimals(text: str) -> int:
    """Decimal numbers in ``text``: ``0.97`` counts, ``sm_90a``, ``v1.2`` and ``1.2.3`` do not
    count as decimals of their own (the last gives one: ``1.2``), nor do identifiers: a version
    after its tool's name (``Triton 3.9``) and a compute capability (``9.0``, ``12.1``)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    count = 0
    for m in _DECIMAL.finditer(text):
        if _VERSIONED.search(text[max(0, m.start() - 12):m.start()]) or _CAPABILITY.fullmatch(m.group()):
            continue
        count += 1
    return count


def stats(nb: dict) -> dict:
    """``{"words", "decimals", "longest", "cells"}`` of a notebook dict: total markdown words,
    decimal numbers in prose, the word count of the longest markdown cell, markdown cells."""
    texts = markdown_cells(nb)
    per_cell = [count_words(t) for t in texts]
    return {"words": sum(per_cell), "decimals": sum(count_decimals(t) for t in texts),
            "longest": max(per_cell, default=0), "cells": len(texts)}


def is_lab_report(path, nb: dict | None = None) -> bool:
    """A lab report (research beside a lesson) is named so: its file stem holds ``05b`` or ends in
    ``_lab_report``. Keyed on the name only, so a lesson that links to a lab report in its first
    cell is not exempted by accident. Lab reports have no word limit (they keep the cell limit)."""
    stem = pathlib.Path(path).stem
    return "05b" in stem or stem.endswith("_lab_report")


def limits(path, nb: dict) -> dict:
    """The course's limits for one notebook: ``{"words", "decimals", "longest"}``, words None for
    a lab report. Notebook 05 (``05_gemm_ladder``) has the lower word limit."""
    words = None if is_lab_report(path, nb) else (
        WORDS_05 if pathlib.Path(path).stem.startswith("05_") else WORDS)
    return {"words": words, "decimals": DECIMALS, "longest": CELL_WORDS}


def breaches(path) -> dict:
    """``{rule: (measured, limit)}`` for every limit the notebook at ``path`` exceeds (empty if
    none): what a reviewer reads before asking for a cut."""
    nb = load(path)
    got, lim = stats(nb), limits(path, nb)
    return {k: (got[k], lim[k]) for k in ("words", "decimals", "longest")
            if lim[k] is not None and got[k] > lim[k]}
