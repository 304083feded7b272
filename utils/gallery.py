"""The results gallery (``course/results_gallery.ipynb``): every recorded ``results/*.json``
shown as a table and one bar chart per metric, labelled with the device and date it was
recorded on, so a learner without a GPU sees what the course measured.
"""
from __future__ import annotations

import textwrap

from . import plots, results


def stems() -> list:
    """The stems of every recorded results file (``results/<stem>.json``), sorted."""
    return sorted(p.stem for p in results.results_dir().glob("*.json"))


def label(doc: dict) -> str:
    """``recorded on <device>, <date>`` for one results document."""
    return f"recorded on {doc['device']}, {doc['date'][:10]}"


def source(stem: str) -> str:
    """The exercise or course notebook that records ``stem`` (e.g. ``day05_tma/01_tma_concepts``)."""
    found = sorted(p for p in results.ROOT.glob(f"*/{stem}.ipynb") if p.parent.name != "solutions")
    return str(found[0].relative_to(results.ROOT).with_suffix("")) if found else "?"


def by_metric(rows: list) -> dict:
    """Rows grouped by metric, metrics in the order they first appear."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(r["metric"], []).append(r)
    return groups


def overview() -> str:
    """One line per results file: stem, notebook, device, date, number of rows, metrics."""
    if not stems():
        raise FileNotFoundError(f"no results/*.json in {results.results_dir()}")
    head = f"{'results file':<26}{'notebook':<44}{'rows':>5}  {'metrics':<22}recorded on"
    lines = [head, "-" * (len(head) + 20)]
    for stem in stems():
        doc = results.load(stem)
        metrics = ", ".join(by_metric(doc["rows"]))
        lines.append(f"{stem:<26}{source(stem):<44}{len(doc['rows']):>5}  {metrics:<22}"
                     f"{doc['device']}, {doc['date'][:10]}")
    return "\n".join(lines)


def show_recorded(stem: str) -> list:
    """Print the table of ``results/<stem>.json`` and draw one bar chart per metric in it.

    Rows whose ratio is None (no reference) show their value only. Returns the figures.
    """
    if not isinstance(stem, str) or not stem or "/" in stem or stem.endswith(".json"):
        raise ValueError(f"stem must be a results file stem like '01_tma_concepts', got {stem!r}")
    doc = results.load(stem)
    where = label(doc)
    print(plots.format_table(doc["rows"], label=f"results/{stem}.json, {where}"))
    import matplotlib.pyplot as plt
    figs = []
    for metric, rows in by_metric(doc["rows"]).items():
        # at least 2 inches high: a one-row chart still fits its two-line title and axis label
        _, ax = plt.subplots(figsize=(7, max(2.0, 0.9 + 0.4 * len(rows))))
        fig = plots.show_bars(rows, f"{stem}: {metric}", label=where, ax=ax)
        ticks = [textwrap.fill(t.get_text(), 48) for t in ax.get_yticklabels()]
        ax.set_yticks(range(len(ticks)), ticks)  # long contender names wrap instead of squeezing
        fig.tight_layout()
        figs.append(fig)
    return figs
