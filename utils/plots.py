"""Show benchmark rows: a side-by-side table and a bar chart. (Checks never plot; ``show_*`` do.)"""
from __future__ import annotations


def format_table(rows: list, label: str = "") -> str:
    """A fixed-width text table of result rows with their ratio to the reference."""
    if not rows:
        raise ValueError("no rows to show")
    head = f"{'contender':<28}{'shape':<22}{'dtype':<10}{'value':>12}  {'ratio':>7}  reference"
    lines = [label, head, "-" * len(head)] if label else [head, "-" * len(head)]
    for r in rows:
        shape = "x".join(str(s) for s in r.get("shape", [])) or "-"
        ratio = f"{r['ratio']:.2f}x" if r.get("ratio") is not None else "-"
        lines.append(f"{r['name']:<28}{shape:<22}{r.get('dtype', '-'):<10}"
                     f"{r['value']:>8.4g} {r['metric']:<4} {ratio:>7}  {r.get('reference') or '-'}")
    return "\n".join(lines)


def show_bars(rows: list, title: str, label: str = "", ax=None):
    """Bar chart of ``value`` per row (one metric), the reference drawn as a dashed line."""
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
            ax.text(r["value"], y, f" {r['ratio']:.2f}x", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(metrics.pop())
    ax.set_title(f"{title}\n{label}" if label else title, fontsize=10)
    ax.figure.tight_layout()
    return ax.figure
