"""Day 1 figures: memory capacities, the roofline, sweeps, sectors and banks (``show_*`` only
draw; the numbers come from :mod:`utils.day01.memory_model` and the recorded rows)."""
from __future__ import annotations

import numpy as np

from . import memory_model as mm


def _plt():
    import matplotlib.pyplot as plt
    return plt


def show_hierarchy(facts: dict, title: str = "Where bytes live"):
    """Bar chart (log scale) of the whole GPU's registers, shared memory, L2 and HBM."""
    if not isinstance(facts, dict) or "sms" not in facts:
        raise TypeError("facts must be the dict of memory_model.device_facts")
    levels = {"registers (all SMs)": facts["regs_per_sm"] * 4 * facts["sms"],
              "shared memory / L1 (all SMs)": facts["smem_per_sm"] * facts["sms"],
              "L2 cache": facts["l2_bytes"], "HBM": facts["hbm_bytes"]}
    _, ax = _plt().subplots(figsize=(7, 2.4))
    ax.barh(list(levels), [v / 2**20 for v in levels.values()], color="tab:blue")
    for y, v in enumerate(levels.values()):
        ax.text(v / 2**20, y, f" {v / 2**20:,.0f} MiB", va="center", fontsize=8)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("capacity (MiB, log scale)")
    ax.set_title(f"{title}: {facts['name']} ({facts['source']})", fontsize=10)
    ax.figure.tight_layout()
    return ax.figure


def show_roofline(peak_tflops: float, bandwidth_gbs: float, points: list, label: str = "",
                  datasheet: tuple | None = None):
    """Log-log roofline from measured ceilings; ``points`` are (name, FLOP/byte, TFLOP/s).
    ``datasheet`` = (peak TFLOP/s, GB/s) adds the datasheet roof, dashed."""
    ridge = mm.ridge_point(peak_tflops, bandwidth_gbs)
    ai = np.logspace(-2, 4, 200)
    _, ax = _plt().subplots(figsize=(7, 4.2))
    ax.plot(ai, [mm.roofline_tflops(a, peak_tflops, bandwidth_gbs) for a in ai], "k-",
            label=f"measured roof (ridge at {ridge:.0f} FLOP/B)")
    if datasheet and all(datasheet):
        ax.plot(ai, [mm.roofline_tflops(a, *datasheet) for a in ai], "k--", lw=0.8,
                label="datasheet roof")
    for name, x, y in points:
        ax.plot(x, y, "o", label=f"{name}: {y:.3g} TFLOP/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("Roofline from measured ceilings" + (f"\n{label}" if label else ""), fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    ax.figure.tight_layout()
    return ax.figure


def show_sweep(xs, series: dict, title: str, xlabel: str, label: str = "", ylabel: str = "GB/s",
               logx: bool = True):
    """Lines of ``series`` (name -> values over ``xs``, log2 x axis unless ``logx`` is False);
    names starting with "model" are dashed."""
    if not series or any(len(v) != len(xs) for v in series.values()):
        raise ValueError("every series needs one value per x")
    _, ax = _plt().subplots(figsize=(7, 3.6))
    for name, ys in series.items():
        ax.plot(xs, ys, "--" if name.startswith("model") else "o-", label=name)
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xticks(list(xs), [str(x) for x in xs])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(title + (f"\n{label}" if label else ""), fontsize=10)
    ax.legend(fontsize=8)
    ax.figure.tight_layout()
    return ax.figure


def show_sectors(patterns: dict, access_bytes: int = 4):
    """One row per pattern (name -> a warp's byte addresses): the 32-B sectors it touches,
    shaded by the fraction of each sector's bytes the warp uses."""
    rows = {k: np.asarray(v, dtype=np.int64) for k, v in patterns.items()}
    width = int(max(a.max() + access_bytes - 1 for a in rows.values()) // mm.SECTOR) + 1
    grid = np.zeros((len(rows), width))
    for i, a in enumerate(rows.values()):
        used = np.unique((a[:, None] + np.arange(access_bytes)).ravel())
        np.add.at(grid[i], used // mm.SECTOR, 1 / mm.SECTOR)
    _, ax = _plt().subplots(figsize=(8, 0.6 + 0.4 * len(rows)))
    im = ax.imshow(np.where(grid > 0, grid, np.nan), cmap="Blues", aspect="auto", vmin=0, vmax=1)
    ax.set_yticks(range(len(rows)),
                  [f"{k}: {mm.sectors_touched(a, access_bytes)} sectors" for k, a in rows.items()])
    ax.set_xlabel("32-byte sector of memory (4 per 128-byte line); white: not touched")
    for x in np.arange(4, width, 4) - 0.5:
        ax.axvline(x, color="gray", lw=0.5)
    ax.figure.colorbar(im, ax=ax, label="fraction used", fraction=0.03)
    ax.figure.tight_layout()
    return ax.figure


def show_banks(patterns: dict):
    """One row per warp access (name -> byte addresses): distinct words requested per bank.
    A row with one bank holding k words is a k-way conflict."""
    counts = []
    for a in patterns.values():
        words = np.unique(np.asarray(a, dtype=np.int64) // mm.WORD)
        counts.append(np.bincount(words % mm.BANKS, minlength=mm.BANKS))
    grid = np.array(counts)
    _, ax = _plt().subplots(figsize=(8, 0.6 + 0.45 * len(counts)))
    ax.imshow(grid, cmap="Reds", aspect="auto", vmin=0, vmax=max(2, grid.max()))
    for (i, j), v in np.ndenumerate(grid):
        if v:
            ax.text(j, i, str(v), ha="center", va="center", fontsize=7,
                    color="white" if v > grid.max() / 2 and v > 1 else "black")
    ax.set_yticks(range(len(counts)),
                  [f"{k}: {mm.conflict_ways(a)}-way" for k, a in patterns.items()])
    ax.set_xticks(range(0, 32, 4))
    ax.set_xlabel("bank (each cell: distinct 4-byte words the warp asks of that bank)")
    ax.figure.tight_layout()
    return ax.figure
