"""The results gallery (``course/results_gallery.ipynb``): one screen per course day with the
day's key comparison on every recorded device side by side (``show_screen``) and the day's
takeaways checked against the recordings (``takeaways``); any results file in full on demand
(``show_recorded``: a table, and bar charts of at most ``MAX_BARS`` bars, one quantity each),
every chart labelled with the device and date it was recorded on. What each screen shows is in
``utils.core.gallery_days``.
"""
from __future__ import annotations

import pathlib
import textwrap

from . import plots, results
from .gallery_screens import (MAX_BARS, bar_ratio, covered, screen_rows, short_device,  # noqa: F401
                              show_screen, takeaways)


def stems() -> list:
    """The stems of every recorded results file (``results/<device>/<stem>.json`` and the older
    ``results/<stem>.json``), sorted."""
    root = results.results_dir()
    return sorted({p.stem for p in [*root.glob("*.json"), *root.glob("*/*.json")]})


def timing_note(doc: dict) -> str:
    """How the document's timed rows were timed: "" when all sustained, else a short warning."""
    timed = [r for r in doc["rows"] if "ms" in r]
    kinds = {r.get("timing", "burst, older harness") for r in timed}
    return "" if kinds <= {"sustained"} else f" (timing: {', '.join(sorted(kinds))})"


def label(doc: dict) -> str:
    """``recorded on <device>, <date>`` for one results document (plus how it was timed, when
    not all sustained)."""
    return f"recorded on {doc['device']}, {doc['date'][:10]}{timing_note(doc)}"


def provenance(doc: dict) -> str:
    """One line: what produced the document (driver, CUDA, library versions, command)."""
    v = doc.get("versions") or {}
    libs = [f"{k} {v[k]}" for k in ("torch", "triton", "cupy-cuda13x", "cupy-cuda12x", "cupy",
                                     "nvidia-cutlass-dsl") if v.get(k)]
    parts = [f"driver {doc.get('driver', '?')}"] + ([f"CUDA {doc['cuda']}"] if doc.get("cuda") else [])
    return ", ".join(parts + libs) + f"; command: {doc.get('command', '?')}"


# Files recorded by a notebook whose name they do not start with: 05's copy study moved to the
# lab report 05b, 06's grouped research to the lab report 06b, and their files kept their names.
RECORDED_BY = {"05_gemm_ladder_copy": "05b_ladder_lab_report",
               "05_gemm_ladder_copy_1gib": "05b_ladder_lab_report",
               "07_harness_study": "05b_ladder_lab_report",
               **{f"06_skinny_grouped_{k}": "06b_skinny_grouped_lab_report" for k in ("cluster", "padded", "loop", "clocks")}}


def source(stem: str) -> str:
    """The exercise or course notebook that records ``stem`` (e.g. ``day05_tma/01_tma_concepts``).
    A notebook may record a second file named after it plus a suffix (``05_gemm_ladder_multicast``
    comes from ``05_gemm_ladder``): the longest notebook name the stem starts with, unless
    :data:`RECORDED_BY` names the notebook."""
    stem = RECORDED_BY.get(stem, stem)
    books = sorted(p for p in results.ROOT.glob("*/*.ipynb") if p.parent.name != "solutions")
    found = [p for p in books if p.stem == stem] or \
        sorted((p for p in books if stem.startswith(p.stem + "_")), key=lambda p: -len(p.stem))
    return str(found[0].relative_to(results.ROOT).with_suffix("")) if found else "?"


def by_metric(rows: list) -> dict:
    """Rows grouped by metric, metrics in the order they first appear."""
    return by_key(rows, lambda r: r["metric"])


def overview() -> str:
    """One line per results file and device: stem, notebook, rows, metrics, device, date."""
    if not stems():
        raise FileNotFoundError(f"no results/*.json in {results.results_dir()}")
    head = f"{'results file':<26}{'notebook':<44}{'rows':>5}  {'metrics':<22}recorded on"
    lines = [head, "-" * (len(head) + 20)]
    for stem in stems():
        for doc in results.documents(stem):
            metrics = ", ".join(by_metric(doc["rows"]))
            lines.append(f"{stem:<26}{source(stem):<44}{len(doc['rows']):>5}  {metrics:<22}"
                         f"{doc['device']}, {doc['date'][:10]}{timing_note(doc)}")
    return "\n".join(lines)


def show_recorded(stem: str) -> list:
    """Print the table of every recording of ``stem`` (one per device) and draw one figure per
    metric, one panel per device side by side, each titled with its device and date.

    Rows whose ratio is None (no reference) show their value only. Returns the figures.
    """
    if not isinstance(stem, str) or not stem or "/" in stem or stem.endswith(".json"):
        raise ValueError(f"stem must be a results file stem like '01_tma_concepts', got {stem!r}")
    docs = results.documents(stem)
    if not docs:
        results.load(stem)  # raises FileNotFoundError, saying how results are made
    for doc in docs:
        where = pathlib.Path(doc["path"]).relative_to(results.results_dir()).as_posix()
        print(f"results/{where}, {label(doc)}\n{provenance(doc)}")
        print(plots.format_table(doc["rows"]) + "\n")
    import matplotlib.pyplot as plt
    figs = []
    for title in dict.fromkeys(t for doc in docs for t, _ in charts(doc["rows"])):
        panels = [(doc, dict(charts(doc["rows"])).get(title, [])) for doc in docs]
        panels = [(doc, rows) for doc, rows in panels if rows]
        height = max(2.0, 0.9 + 0.4 * max(len(rows) for _, rows in panels))
        # at least 2 inches high: a one-row chart still fits its two-line title and axis label
        fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), height), squeeze=False)
        for ax, (doc, rows) in zip(axes[0], panels):
            plots.show_bars(rows, f"{stem}: {title}", label=label(doc), ax=ax)
            ticks = [textwrap.fill(t.get_text(), 48) for t in ax.get_yticklabels()]
            ax.set_yticks(range(len(ticks)), ticks)  # long names wrap instead of squeezing
        fig.tight_layout()
        figs.append(fig)
    return figs


def _kind(row: dict) -> str:
    """What a row's value is: its metric, or for a subprocess's wall time (a row with an
    ``exit_status``) a quantity of its own, never drawn beside kernel times."""
    return f"{row['metric']}, subprocess wall time" if "exit_status" in row else row["metric"]


def charts(rows: list) -> list:
    """``[(title, rows)]``: the rows split into charts of one quantity and at most MAX_BARS bars:
    by metric (a subprocess's wall time apart), then, where that is too many, by shape, dtype and
    causal mask, then in runs of MAX_BARS."""
    out = []
    for kind, group in by_key(rows, _kind).items():
        parts = {"": group} if len(group) <= MAX_BARS else by_key(group, _shape_key)
        for sub, part in parts.items():
            for i in range(0, len(part), MAX_BARS):
                more = f" ({i // MAX_BARS + 1})" if len(part) > MAX_BARS else ""
                out.append((kind + (f", {sub}" if sub else "") + more, part[i:i + MAX_BARS]))
    return out


def _shape_key(row: dict) -> str:
    shape = "x".join(str(n) for n in row.get("shape") or [])
    causal = {True: ", causal", False: ""}.get(row.get("causal"), "")
    return f"{shape} {row.get('dtype')}{causal}"


def by_key(rows: list, key) -> dict:
    """Rows grouped by ``key(row)``, groups in the order they first appear."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    return groups

