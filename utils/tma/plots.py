"""Pictures of TMA's shared-memory layouts: where each 16-byte chunk lands, and which banks a
column read touches. (``show_*`` draw; checks never do.)"""
from __future__ import annotations

import numpy as np

from .swizzle import SWIZZLE_MODES, bank_conflict_ways, smem_offsets, swizzle_span


def widest_row(mode: str) -> int:
    """Bytes in the widest box row a mode allows (its span; 128 shown for "none")."""
    return swizzle_span(mode) or 128


def chunk_grid(mode: str, rows: int = 8) -> np.ndarray:
    """[row, position] = logical 16-B chunk of that row stored at chunk position ``position``
    of the row's smem line, for fp16 rows as wide as the mode allows."""
    row_bytes = widest_row(mode)
    offs = smem_offsets((rows, row_bytes // 2), 2, mode)[:, ::8]      # first element of each chunk
    grid = np.full((rows, offs.shape[1]), -1)
    for r in range(rows):
        for logical, off in enumerate(offs[r]):
            grid[r, (off % row_bytes) // 16] = logical
    return grid


def column_read_ways(mode: str, chunk: int = 0, rows: int = 32) -> int:
    """Shared-memory wavefronts for one 8-thread phase of a 16-byte-per-thread column read
    (thread t reads chunk ``chunk`` of row t) of an fp16 tile with the widest rows the mode allows."""
    offs = smem_offsets((rows, widest_row(mode) // 2), 2, mode)[:, chunk * 8]
    phase = offs[:8]                                # 16-B accesses are served 8 threads a time
    words = (phase[:, None] + np.arange(0, 16, 4)[None, :]).ravel()
    return bank_conflict_ways(words)


def show_swizzle(modes=SWIZZLE_MODES, rows: int = 8):
    """One panel per swizzle mode: the logical chunk stored at each position of 8 rows."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(modes), figsize=(3.2 * len(modes), 3))
    for ax, mode in zip(np.atleast_1d(axes), modes):
        grid = chunk_grid(mode, rows)
        ax.imshow(grid, cmap="tab10", vmin=0, vmax=9)
        for (r, p), v in np.ndenumerate(grid):
            ax.text(p, r, str(v), ha="center", va="center", fontsize=8)
        ax.set_title(f"{mode}: {column_read_ways(mode)}-way column read", fontsize=9)
        ax.set_xlabel("16-B position in the 128-B line (4 banks each)")
        ax.set_ylabel("tile row")
    fig.tight_layout()
    return fig
