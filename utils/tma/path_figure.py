"""One picture of the path a TMA load and a TMA store take (day 5 · 02's closing figure, the bridge
to the GEMMs of 5.3): who issues what, where the bytes go, and what each waiter waits on.

:data:`LANES` are the places involved, :data:`LOAD_PATH` and :data:`STORE_PATH` the numbered steps
(``(from lane, to lane, what happens, the PTX that does it)``; a step whose two lanes are the same is
an ordering step, drawn as a dot). ``show_tma_path`` draws them as a swim-lane diagram; checks never
draw. Each PTX name is one the course's kernels use (``utils/tma/tma_kernels.cu``).
"""
from __future__ import annotations

LANES = ("threads", "mbarrier", "shared memory", "TMA unit", "global memory (via L2)", "descriptor")
LANE_NOTES = {"threads": "producer / consumer", "mbarrier": "in shared memory",
              "shared memory": "the box, swizzled", "TMA unit": "the SM's copy engine",
              "global memory (via L2)": "HBM; L2 caches it", "descriptor": "128 B in param, const\nor global memory"}

LOAD_PATH = (
    ("threads", "mbarrier", "init the barrier once; make the init visible to TMA",
     "mbarrier.init + fence.mbarrier_init"),
    ("threads", "mbarrier", "one thread declares the box's bytes (the full box, edges included)",
     "mbarrier.arrive.expect_tx"),
    ("threads", "TMA unit", "the same thread issues the copy: descriptor, box coordinates, barrier",
     "cp.async.bulk.tensor (load)"),
    ("descriptor", "TMA unit", "the unit reads the descriptor: base, sizes, strides, box, swizzle", ""),
    ("global memory (via L2)", "TMA unit", "it reads the box's rows from global memory, through L2", ""),
    ("TMA unit", "shared memory", "the bytes land swizzled; out-of-bounds elements arrive filled", ""),
    ("TMA unit", "mbarrier", "the landed bytes are counted off the transaction count",
     "complete_tx"),
    ("mbarrier", "threads", "the phase completes: the consumer's wait on its parity returns",
     "mbarrier.try_wait.parity"),
    ("shared memory", "threads", "the consumer reads the tile (ld.shared, ldmatrix, wgmma)", ""),
)
STORE_PATH = (
    ("threads", "shared memory", "threads write the tile with ordinary stores (generic proxy)",
     "st.shared"),
    ("threads", "threads", "order those writes before the async proxy reads them, then sync",
     "fence.proxy.async.shared::cta + bar.sync"),
    ("threads", "TMA unit", "one thread issues the store and commits it to a bulk group",
     "cp.async.bulk.tensor (store) + commit_group"),
    ("shared memory", "TMA unit", "the unit reads the tile from shared memory", ""),
    ("TMA unit", "global memory (via L2)", "it writes the box; out-of-bounds elements are skipped", ""),
    ("TMA unit", "threads", "the source has been read: the tile may be reused or the CTA may exit",
     "cp.async.bulk.wait_group.read 0"),
)


def steps() -> list:
    """Every step, numbered: ``[(n, "load" | "store", from_lane, to_lane, what, ptx), ...]``."""
    out = [("load", *s) for s in LOAD_PATH] + [("store", *s) for s in STORE_PATH]
    for kind, a, b, what, ptx in out:
        if a not in LANES or b not in LANES:
            raise ValueError(f"step {what!r} names a lane that is not one of {LANES}")
    return [(n, *s) for n, s in enumerate(out, 1)]


def show_tma_path(ax=None):
    """Draw :func:`steps` as a swim-lane diagram (time runs down); returns the figure."""
    import matplotlib.pyplot as plt
    all_steps = steps()
    if ax is None:
        _, ax = plt.subplots(figsize=(16, 0.6 * len(all_steps) + 2.6))
    x = {lane: i * 3.0 for i, lane in enumerate(LANES)}
    top, bottom = 0.0, -(len(all_steps) + 1.5)
    for lane, lx in x.items():
        ax.plot([lx, lx], [top - 0.4, bottom], color="0.8", lw=1, zorder=0)
        ax.text(lx, top + 0.75, lane.replace(" (", "\n("), ha="center", va="bottom", fontsize=9.5, weight="bold")
        ax.text(lx, top + 0.05, LANE_NOTES[lane], ha="center", va="bottom", fontsize=8, color="0.35")
    for n, kind, a, b, what, ptx in all_steps:
        y = -(n + (0.8 if kind == "store" else 0))
        color = "tab:blue" if kind == "load" else "tab:red"
        if a == b:
            ax.plot([x[a]], [y], "o", color=color, ms=7)
        else:
            ax.annotate("", xy=(x[b], y), xytext=(x[a], y),
                        arrowprops=dict(arrowstyle="-|>", color=color, lw=1.6))
        label = f"{n}. {what}" + (f"   [{ptx}]" if ptx else "")
        ax.text(max(x.values()) + 1.2, y, label, va="center", fontsize=8.5, color=color)
    n_load = len(LOAD_PATH)
    ax.text(-1.0, -(n_load + 1) / 2, "load", rotation=90, ha="center", va="center", color="tab:blue", weight="bold")
    ax.text(-1.0, -((n_load + 1 + len(all_steps)) / 2 + 0.8), "store",
            rotation=90, ha="center", va="center", color="tab:red", weight="bold")
    ax.axhline(-(n_load + 0.9), color="0.6", lw=0.8, ls="--")
    ax.set_xlim(-1.5, max(x.values()) + 13.5)
    ax.set_ylim(bottom, top + 1.9)
    ax.axis("off")
    ax.set_title("The path of a TMA load (blue) and a TMA store (red); time runs down", fontsize=11)
    return ax.figure
