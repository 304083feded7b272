"""Show benchmark rows: a side-by-side table and a bar chart. (Checks never plot; ``show_*`` do.)

Ratios are shown with their run-to-run spread when the row has one (``ratio_lo``-``ratio_hi``,
the lowest and highest of the interleaved rounds, see ``utils.core.bench``).
"""
from __future__ import annotations


def format_ratio(row: dict) -> str:
    """``"0.97x"``, or ``"0.97x [0.95-0.98]"`` with the spread across rounds; ``"-"`` without a
    reference."""
    if row.get("ratio") is None:
        return "-"
    text = f"{row['ratio']:.2f}x"
    if row.get("ratio_lo") is not None and row["name"] != row.get("reference"):
        text += f" [{row['ratio_lo']:.2f}-{row['ratio_hi']:.2f}]"
    return text


def _host_bound(row) -> bool:
    """The row's ``host_bound`` flag, if it was read the reliable way (``host_pace``, from repetitions
    issued onto a drained queue; see ``bench.run_interleaved``). Older rows read it from the timed
    repetitions, where a full launch queue made the host wait as long as the GPU: not shown."""
    from .bench import PACE_FROM
    return bool(row.get("host_bound")) and row.get("host_pace") == PACE_FROM


def format_table(rows: list, label: str = "") -> str:
    """A fixed-width text table of result rows with their ratio to the reference (and its
    spread across rounds, where recorded)."""
    if not rows:
        raise ValueError("no rows to show")
    w = max(28, 2 + max(len(r["name"]) for r in rows))   # the longest name still leaves a gap
    head = (f"{'contender':<{w}}{'shape':<22}{'dtype':<10}{'value':>12}  "
            f"{'ratio [spread]':<20}reference")
    lines = [label, head, "-" * len(head)] if label else [head, "-" * len(head)]
    for r in rows:
        shape = "x".join(str(s) for s in r.get("shape", [])) or "-"
        lines.append(f"{r['name']:<{w}}{shape:<22}{r.get('dtype', '-'):<10}"
                     f"{r['value']:>8.4g} {r['metric']:<4}  {format_ratio(r):<20}"
                     f"{r.get('reference') or '-'}{'  (host-bound *)' if _host_bound(r) else ''}")
    if any(_host_bound(r) for r in rows):
        lines.append("* the host needed as long to issue a repetition as the GPU to run it: the time "
                     "includes launch overhead (bench.host_pace)")
    return "\n".join(lines)


def show_bars(rows: list, title: str, label: str = "", ax=None):
    """Bar chart of ``value`` per row (one metric); the reference's bar is gray, every other bar
    is annotated with its ratio and spread. ``label`` (who recorded it, on which device) goes
    under the title."""
    import matplotlib.pyplot as plt
    metrics = {r["metric"] for r in rows}
    if len(metrics) != 1:
        raise ValueError(f"one metric per chart, got {sorted(metrics)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.5 + 0.45 * len(rows)))
    names = [f"{r['name']} {r.get('dtype', '')} {'x'.join(map(str, r.get('shape', [])))}"
             for r in rows]
    values = [r["value"] for r in rows]
    colors = ["tab:gray" if r["name"] == r.get("reference") else "tab:blue" for r in rows]
    ax.barh(names, values, color=colors)
    for y, r in enumerate(rows):
        if r.get("ratio") is not None:
            ax.text(r["value"], y, f" {format_ratio(r)}", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(metrics.pop())
    ax.set_title(f"{title}\n{label}" if label else title, fontsize=10)
    ax.figure.tight_layout()
    return ax.figure
