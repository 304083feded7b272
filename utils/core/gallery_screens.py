"""The day screens of the results gallery: one figure per course day with the day's key
comparison on every recorded device side by side, and the day's takeaways checked against the
recordings. What each screen shows and claims is in :mod:`utils.core.gallery_days`;
:mod:`utils.core.gallery` re-exports these functions for the notebook.
"""
from __future__ import annotations

import re

from . import gallery_days, results

MAX_BARS = 20     # bars in one chart (issue 36: a chart a learner can read)


def short_device(name: str) -> str:
    """``"NVIDIA H100 80GB HBM3"`` -> ``"H100"`` (the model), else the name itself."""
    m = re.search(r"\b([A-Z]{1,2}\d{2,3}[A-Z]?)\b", name)
    return m.group(1) if m else name


def bar_ratio(doc: dict, bar) -> dict:
    """One bar of a day screen from one recording: ``{ratio, lo, hi, value, reference_value, unit}``.
    The row's own ratio (and spread) when its reference is the bar's; otherwise value over the
    reference row's value, both from this recording. KeyError names a row that is missing."""
    row = results.pick(doc["rows"], bar.name, **bar.match)
    if row.get("reference") == bar.ref and row.get("ratio") is not None:
        return {"ratio": row["ratio"], "lo": row.get("ratio_lo"), "hi": row.get("ratio_hi"),
                "value": row["value"], "reference_value": row["reference_value"], "unit": row["metric"]}
    ref = results.pick(doc["rows"], bar.ref, **{k: v for k, v in bar.match.items() if k != "causal"})
    return {"ratio": row["value"] / ref["value"], "lo": None, "hi": None,
            "value": row["value"], "reference_value": ref["value"], "unit": row["metric"]}


def _screen(key: str) -> dict:
    if key not in gallery_days.SCREENS:
        raise ValueError(f"screen must be one of {sorted(gallery_days.SCREENS)}, got {key!r}")
    return gallery_days.SCREENS[key]


def screen_rows(key: str) -> list:
    """Every bar of screen ``key`` on every device that recorded it: ``{chart, label, device,
    stem, date, ratio, lo, hi, value, reference_value, unit}``."""
    out = []
    for chart in _screen(key)["charts"]:
        if len(chart.bars) > MAX_BARS:
            raise ValueError(f"chart {chart.title!r} has {len(chart.bars)} bars, more than {MAX_BARS}")
        for bar in chart.bars:
            for doc in results.documents(bar.stem):
                if bar.newer and not any(r["name"] == bar.name for r in doc["rows"]):
                    continue                     # a recording made before this step existed: "-"
                out.append({"chart": chart.title, "label": bar.label, "device": short_device(doc["device"]),
                            "stem": bar.stem, "date": doc["date"][:10], **bar_ratio(doc, bar)})
    return out


def show_screen(key: str):
    """Print screen ``key``'s table (per device: the ratio, then the value and the reference's
    value it divides, in the chart's unit) and draw it: one row of panels per chart, one panel per
    device, bars = ratio to the reference timed in the same run (a dashed line at 1). Returns the
    figure."""
    rows, screen = screen_rows(key), _screen(key)
    devices = list(dict.fromkeys(r["device"] for r in rows))
    cell = {(r["chart"], r["label"], r["device"]): r for r in rows}
    print(screen["title"])
    for chart in screen["charts"]:
        unit = next(r["unit"] for r in rows if r["chart"] == chart.title)
        print(f"\n{chart.title}\n{'':<50}" + "".join(f"{d + ': ratio (' + unit + ' / reference)':>36}" for d in devices))
        for bar in chart.bars:
            vals = [cell.get((chart.title, bar.label, d)) for d in devices]
            print(f"{bar.label[:48]:<50}" + "".join(
                f"{v['ratio']:>18.2f}x ({v['value']:>6.0f} / {v['reference_value']:>6.0f})" if v else f"{'-':>36}"
                for v in vals))
    for d in devices:
        dates = sorted({r["date"] for r in rows if r["device"] == d})
        print(f"recorded on the {d}: " + (dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"))
    return _draw(screen, devices, cell)


def _draw(screen: dict, devices: list, cell: dict):
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(screen["charts"]), len(devices), squeeze=False,
                             figsize=(6.5 * len(devices), sum(1 + 0.32 * len(c.bars) for c in screen["charts"])))
    for i, chart in enumerate(screen["charts"]):
        for ax, dev in zip(axes[i], devices):
            pts = [cell.get((chart.title, b.label, dev)) for b in chart.bars]
            ys = list(range(len(pts)))[::-1]
            ax.barh(ys, [p["ratio"] if p else 0 for p in pts], color="tab:blue")
            ax.axvline(1.0, color="gray", ls="--", lw=1)
            for y, p in zip(ys, pts):
                if p:
                    ax.text(p["ratio"], y, f" {p['ratio']:.2f}x", va="center", fontsize=6)
            ax.set_yticks(ys, [b.label for b in chart.bars], fontsize=7)
            ax.set_title(f"{dev}: {chart.title}", fontsize=8)
            ax.set_xlim(0, max(1.2, max((p["ratio"] for p in pts if p), default=1) + 0.15))
    fig.tight_layout()
    return fig


def takeaways(key: str) -> list:
    """The day's takeaways checked on every device: ``[(claim, holds, figures)]``, ``figures``
    the ratios the claim reads, per device, as printed text."""
    rows = screen_rows(key)
    out = []
    for t in _screen(key)["takeaways"]:
        per_dev, ok = [], True
        for dev in dict.fromkeys(r["device"] for r in rows):
            v = {r["label"]: r["ratio"] for r in rows if r["device"] == dev and r["label"] in t.labels}
            missing = sorted(set(t.labels) - set(v))
            if missing:
                raise KeyError(f"takeaway {t.claim!r}: no recording on {dev} of {missing}")
            ok = ok and bool(t.holds(v))
            per_dev.append(f"{dev}: " + ", ".join(f"{k} {v[k]:.2f}x" for k in t.labels))
        out.append((t.claim, ok, "; ".join(per_dev)))
    return out


def covered() -> dict:
    """``{stem: where it is shown}``: the day screen that draws it, or the on-demand note."""
    out = {b.stem: k for k, s in gallery_days.SCREENS.items() for c in s["charts"] for b in c.bars}
    return {**out, **gallery_days.ON_DEMAND}
