"""Figures of day 2. ``show_*`` draw and return the figure; they never check anything."""
from __future__ import annotations


def _ax(ax, size):
    import matplotlib.pyplot as plt
    return plt.subplots(figsize=size)[1] if ax is None else ax


def show_timeline(tl: dict, title: str = "", ax=None):
    """Gantt chart of :func:`utils.day02.pipeline_model.timeline`: one row per stage buffer with its
    loads (light) and the compute row (dark); tile numbers written on the bars."""
    if not isinstance(tl, dict) or "events" not in tl:
        raise TypeError("pass the dict returned by pipeline_model.timeline(...)")
    ev = tl["events"]
    stages = 1 + max(e[2] for e in ev)
    ax = _ax(ax, (9, 1.0 + 0.45 * (stages + 1)))
    for k, kind, slot, t0, t1 in ev:
        y = stages if kind == "compute" else slot
        color = "tab:orange" if kind == "compute" else "tab:blue"
        ax.barh(y, t1 - t0, left=t0, color=color, alpha=0.9 if kind == "compute" else 0.45,
                edgecolor="black", linewidth=0.5)
        ax.text((t0 + t1) / 2, y, str(k), ha="center", va="center", fontsize=7)
    ax.set_yticks(range(stages + 1), [f"load, stage {s}" for s in range(stages)] + ["compute"])
    ax.invert_yaxis()
    ax.set_xlabel("time (ns)")
    ax.set_title(title or f"{stages} stage(s): {tl['total_ns']:.0f} ns, "
                 f"{tl['per_tile_ns']:.0f} ns per tile in steady state", fontsize=10)
    ax.figure.tight_layout()
    return ax.figure


def show_latency(sizes: list, ns: list, label: str, marks: dict | None = None, ax=None):
    """Latency of a dependent load against the working-set size (log x), with optional
    vertical lines ``marks = {"L1": bytes, "L2": bytes}``."""
    if len(sizes) != len(ns) or not sizes:
        raise ValueError(f"need one latency per size, got {len(sizes)} sizes and {len(ns)} values")
    ax = _ax(ax, (7, 3.5))
    ax.plot(sizes, ns, "o-")
    for name, x in (marks or {}).items():
        ax.axvline(x, ls="--", color="gray")
        ax.text(x, max(ns), f" {name}", va="top", fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("working set (bytes)")
    ax.set_ylabel("ns per dependent load")
    ax.set_title(f"Pointer chase: latency by working set\n{label}", fontsize=10)
    ax.figure.tight_layout()
    return ax.figure


def show_inflight(points: dict, model: tuple, label: str, ax=None):
    """Achieved GB/s against bytes in flight per SM. ``points`` maps a series name to a list of
    ``(bytes_per_sm, gbs)``; ``model = (latency_ns, peak_gbs, n_sm)`` draws Little's law."""
    import numpy as np
    from .cost_model import predicted_bandwidth_gbs
    if not points:
        raise ValueError("no points to show")
    ax = _ax(ax, (7, 4))
    for name, pts in points.items():
        xs, ys = zip(*sorted(pts))
        ax.plot(xs, ys, "o-", label=name, ms=4)
    lat, peak, n_sm = model
    xs = np.geomspace(min(x for p in points.values() for x, _ in p) / 2,
                      max(x for p in points.values() for x, _ in p) * 2, 100)
    ax.plot(xs, [predicted_bandwidth_gbs(x, n_sm, lat, peak) for x in xs], "k--",
            label=f"Little's law: min(peak, bytes x {n_sm} SMs / {lat:.0f} ns)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes in flight per SM")
    ax.set_ylabel("GB/s")
    ax.legend(fontsize=7)
    ax.set_title(f"Bandwidth needs bytes in flight\n{label}", fontsize=10)
    ax.figure.tight_layout()
    return ax.figure


def show_stages(series: dict, ylabel: str, title: str, ax=None):
    """Lines of a metric against the number of stages; ``series`` maps a name to
    ``{stages: value}``."""
    if not series:
        raise ValueError("no series to show")
    ax = _ax(ax, (6, 3.5))
    for name, pts in series.items():
        xs = sorted(pts)
        ax.plot(xs, [pts[x] for x in xs], "o-", label=name)
    ax.set_xlabel("stages")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.figure.tight_layout()
    return ax.figure
