"""The results gallery (``course/results_gallery.ipynb``): every recorded results file shown as
a table and one bar chart per metric, each labelled with the device and date it was recorded
on, so a learner without a GPU sees what the course measured. Where a notebook was recorded on
several devices (e.g. an H100 and an H200), each chart shows them side by side, one panel per
device.
"""
from __future__ import annotations

import pathlib
import textwrap

from . import plots, results


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


def source(stem: str) -> str:
    """The exercise or course notebook that records ``stem`` (e.g. ``day05_tma/01_tma_concepts``).
    A notebook may record a second file named after it plus a suffix (``05_gemm_ladder_multicast``
    comes from ``05_gemm_ladder``): the longest notebook name the stem starts with."""
    books = sorted(p for p in results.ROOT.glob("*/*.ipynb") if p.parent.name != "solutions")
    found = [p for p in books if p.stem == stem] or \
        sorted((p for p in books if stem.startswith(p.stem + "_")), key=lambda p: -len(p.stem))
    return str(found[0].relative_to(results.ROOT).with_suffix("")) if found else "?"


def by_metric(rows: list) -> dict:
    """Rows grouped by metric, metrics in the order they first appear."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(r["metric"], []).append(r)
    return groups


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
    metrics = list(dict.fromkeys(r["metric"] for doc in docs for r in doc["rows"]))
    figs = []
    for metric in metrics:
        panels = [(doc, by_metric(doc["rows"]).get(metric, [])) for doc in docs]
        panels = [(doc, rows) for doc, rows in panels if rows]
        height = max(2.0, 0.9 + 0.4 * max(len(rows) for _, rows in panels))
        # at least 2 inches high: a one-row chart still fits its two-line title and axis label
        fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), height), squeeze=False)
        for ax, (doc, rows) in zip(axes[0], panels):
            plots.show_bars(rows, f"{stem}: {metric}", label=label(doc), ax=ax)
            ticks = [textwrap.fill(t.get_text(), 48) for t in ax.get_yticklabels()]
            ax.set_yticks(range(len(ticks)), ticks)  # long names wrap instead of squeezing
        fig.tight_layout()
        figs.append(fig)
    return figs


GEMM_STEMS = {"03_triton_tma_gemm": "Triton", "04_cutedsl_tma_gemm": "CuteDSL", "05_gemm_ladder": "CuteDSL"}


def gemm_summary() -> list:
    """The day's GEMMs side by side: for each device, dtype and square shape recorded by both
    GEMM notebooks, the best step of each stack (by its ratio to cuBLAS in its own run) with the
    ratio's spread. Rows: ``{device, dtype, size, stack, name, ratio, ratio_lo, ratio_hi}``,
    cuBLAS itself as ratio 1.0. Each ratio compares a kernel with cuBLAS timed in the same run."""
    out = []
    for stem, stack in GEMM_STEMS.items():
        for doc in results.documents(stem):
            for r in doc["rows"]:
                if r.get("metric") != "TFLOP/s" or r.get("ratio") is None or r["name"] == r.get("reference"):
                    continue
                shape = r.get("shape") or []
                if len(shape) != 3 or len(set(shape)) != 1:
                    continue                                  # square shapes only
                out.append({"device": doc["device"], "dtype": r.get("dtype"), "size": shape[0],
                            "stack": stack, "name": r["name"], "ratio": r["ratio"],
                            "ratio_lo": r.get("ratio_lo"), "ratio_hi": r.get("ratio_hi")})
    best = {}
    for r in out:
        key = (r["device"], r["dtype"], r["size"], r["stack"])
        if key not in best or r["ratio"] > best[key]["ratio"]:
            best[key] = r
    stacks = list(dict.fromkeys(GEMM_STEMS.values()))     # Triton, CuteDSL (04 and 05 are both CuteDSL)
    keys = {k[:3] for k in best}
    both = sorted(k for k in keys if all((*k, s) in best for s in stacks))
    return [best[(*k, s)] for k in both for s in stacks]


def show_gemm_summary(rows: list):
    """Grouped bars: the best Triton and CuteDSL step against cuBLAS (the line at 1.0), one panel
    per device, with each ratio's spread as an error bar where recorded. Returns the figure."""
    import matplotlib.pyplot as plt
    if not rows:
        raise ValueError("no GEMM rows recorded by both GEMM notebooks on one device")
    devices = list(dict.fromkeys(r["device"] for r in rows))
    fig, axes = plt.subplots(1, len(devices), figsize=(6 * len(devices), 3.2), squeeze=False)
    for ax, dev in zip(axes[0], devices):
        mine = [r for r in rows if r["device"] == dev]
        groups = list(dict.fromkeys((r["dtype"], r["size"]) for r in mine))
        for j, stack in enumerate(GEMM_STEMS.values()):
            pts = [next(r for r in mine if (r["dtype"], r["size"]) == g and r["stack"] == stack) for g in groups]
            xs = [i + 0.38 * (j - 0.5) for i in range(len(groups))]
            err = None
            if all(p.get("ratio_lo") is not None for p in pts):
                err = [[p["ratio"] - p["ratio_lo"] for p in pts], [p["ratio_hi"] - p["ratio"] for p in pts]]
            ax.bar(xs, [p["ratio"] for p in pts], width=0.36, yerr=err, capsize=3, label=f"best {stack} step")
        ax.axhline(1.0, color="gray", lw=1, ls="--", label="cuBLAS")
        ax.set_xticks(range(len(groups)), [f"{d} {n}³" for d, n in groups], fontsize=8)
        lo, hi = min(r["ratio_lo"] or r["ratio"] for r in mine), max(r["ratio_hi"] or r["ratio"] for r in mine)
        ax.set_ylim(min(0.8, lo - 0.05), max(1.1, hi + 0.05))
        ax.set_ylabel("ratio to cuBLAS (same run)")
        ax.set_title(dev, fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
