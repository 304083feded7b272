"""Claims about benchmark rows that hold only beyond their run-to-run spread.

``utils.core.bench.compare`` times contenders in interleaved rounds and records, per row, the
per-round medians (``ms_rounds``) and the lowest and highest per-round ratio to the reference
(``ratio_lo``, ``ratio_hi``). "A is at least as fast as B" is claimed only when even A's worst
round says so: ``verdict`` / ``holds``; ``describe`` says it in one line. (Also importable
from ``utils.core.bench``.)
"""
from __future__ import annotations

import statistics


def ratio_between(a: dict, b: dict) -> dict:
    """``a``'s throughput over ``b``'s, round by round (both rows from one ``compare`` call):
    ``{"ratio": median, "lo": min, "hi": max, "rounds": n}``."""
    ra, rb = a.get("ms_rounds"), b.get("ms_rounds")
    if not ra or not rb:
        raise ValueError(f"rows {a.get('name')!r} and {b.get('name')!r} need per-round times "
                         "('ms_rounds'), recorded by the interleaved utils.core.bench.compare")
    if len(ra) != len(rb) or (a.get("shape"), a.get("dtype")) != (b.get("shape"), b.get("dtype")):
        raise ValueError(f"rows {a['name']!r} and {b['name']!r} were not timed together "
                         "(different shape, dtype or number of rounds)")
    ratios = [tb / ta for ta, tb in zip(ra, rb)]
    return {"ratio": statistics.median(ratios), "lo": min(ratios), "hi": max(ratios),
            "rounds": len(ratios)}


def verdict(row: dict, other: dict | None = None, at_least: float = 1.0) -> str:
    """Is ``row`` at least ``at_least`` times as fast as ``other`` (default: its reference)?

    "holds": even its worst round reaches ``at_least``; "fails": even its best round falls
    short; "within spread": the rounds disagree (not a claim either way); "no spread recorded":
    the row predates interleaved timing.
    """
    if not isinstance(at_least, (int, float)) or not at_least > 0:
        raise ValueError(f"at_least must be a positive number, got {at_least!r}")
    if other is not None:
        if not (row.get("ms_rounds") and other.get("ms_rounds")):
            return "no spread recorded"
        s = ratio_between(row, other)
        lo, hi = s["lo"], s["hi"]
    elif row.get("ratio_lo") is None or row.get("ratio_hi") is None:
        return "no spread recorded"
    else:
        lo, hi = row["ratio_lo"], row["ratio_hi"]
    return "holds" if lo >= at_least else "fails" if hi < at_least else "within spread"


def holds(row: dict, other: dict | None = None, at_least: float = 1.0) -> bool:
    """True only if ``verdict(row, other, at_least) == "holds"`` (beyond the spread)."""
    return verdict(row, other, at_least) == "holds"


def describe(row: dict, other: dict | None = None, at_least: float = 1.0) -> str:
    """One line for prose and tables, e.g. ``"Triton v4: 0.97x cuBLAS [0.95-0.98 over 10 rounds];
    >= 1.00x: fails"``; against ``other`` (default: the row's reference)."""
    what = verdict(row, other, at_least)
    if other is None:
        ratio, over = row["ratio"], row.get("reference")
        lo, hi, n = row.get("ratio_lo"), row.get("ratio_hi"), row.get("rounds")
    elif what == "no spread recorded":
        return f"{row['name']} vs {other['name']}: no per-round times recorded, no claim"
    else:
        s = ratio_between(row, other)
        ratio, lo, hi, n, over = s["ratio"], s["lo"], s["hi"], s["rounds"], other["name"]
    spread = f" [{lo:.2f}-{hi:.2f} over {n} rounds]" if lo is not None else " [no spread recorded]"
    return f"{row['name']}: {ratio:.2f}x {over}{spread}; >= {at_least:.2f}x: {what}"
