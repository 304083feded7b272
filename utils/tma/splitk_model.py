"""Split-K through the NumPy TMA model: every split's partial C tile is ADDED into C by a TMA
reduce-add store (``cp.reduce.async.bulk.tensor ... .add``), modelled by
:func:`.model.tma_reduce_add` (same rules, same out-of-bounds clipping).

What the hardware does (PTX ISA, ``cp.reduce.async.bulk.tensor``, PTX ISA 8.0, sm_90):
  * ``.add`` exists for ``.u32 .s32 .u64 .f32 .f16 .bf16`` elements only (PTX ISA 9.0, section
    9.7.9.25.5.3, table "valid combinations of .redOp and element type"); the element type is the
    tensor map's. The rule is :func:`.rules.reduce_add_dtype`, the one every reduce-add door applies;
  * "each reduction operation ... has individually .relaxed.gpu memory ordering semantics": the
    splits arrive in no defined order, so a float C may differ in its last bits from run to run.
    :func:`reduce_partials` takes an ``order`` so a test can try several.
  * the reduce adds to what C holds: C must be zeroed (or hold beta * C) before the first split.

Verified on a CPU against a float64 reference (tests/test_skinny.py); the GPU kernel that does
the same (``update_kernels.cu``: ``splitk_reduce_add``, launched by ``utils.tma.update_run.reduce_add``)
runs on a Hopper GPU; the Triton kernels of notebook ``day05_tma/06`` use the same instruction.
"""
from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from . import rules
from .model import tma_reduce_add
from .rules import REDUCE_ADD_DTYPES, reduce_add_dtype  # noqa: F401  (re-exported: the one rule)


class ReduceTraffic(NamedTuple):
    """What the reduce-adds of a split-K combine moved."""
    reduce_ops: int        # cp.reduce.async.bulk.tensor instructions (splits x output tiles)
    elements_added: int    # in-bounds elements added into C (splits x M x N)
    smem_bytes: int        # bytes the boxes read from shared memory (edge boxes count whole)


def reduce_partials(c, partials, box_shape, order=None):
    """Add every partial (each shaped like ``c``) into a copy of ``c``, one TMA reduce-add per
    ``box_shape`` box (array order), boxes starting at multiples of the box; a box hanging past
    the edge is clipped as the hardware clips it. C's rows are padded to a multiple of 16 B (the
    returned array is a view of that padded buffer; ``c`` is not changed). ``order``: the order in which the splits
    arrive (a permutation of ``range(len(partials))``; default 0, 1, ...).

    Returns ``(new_c, ReduceTraffic)``.
    """
    if not isinstance(c, np.ndarray) or c.ndim != 2:
        raise TypeError(f"c must be a 2-D NumPy array (the output C), got {type(c).__name__}")
    reduce_add_dtype(c.dtype.name)
    rules.global_shape("c.shape", c.shape)          # no empty C: TMA needs every dimension >= 1
    if not isinstance(partials, (list, tuple)) or not partials:
        raise TypeError("partials must be a non-empty list of arrays, one per split")
    for s, p in enumerate(partials):
        if not isinstance(p, np.ndarray) or p.shape != c.shape or p.dtype != c.dtype:
            got = f"{p.shape} {p.dtype}" if isinstance(p, np.ndarray) else type(p).__name__
            raise ValueError(f"partial {s} is {got}; every partial must be a {c.shape} {c.dtype} array like C")
    box = rules.box(box_shape, c.itemsize, rank_=2)[0]
    order = list(range(len(partials))) if order is None else list(order)
    if sorted(order) != list(range(len(partials))):
        raise ValueError(f"order {order} is not a permutation of the {len(partials)} splits")
    # C lives in memory TMA can describe: rows padded to a multiple of 16 B (N = 70 fp32 is 280 B),
    # and kept so between reduces (the model returns a fresh contiguous array: copy it back)
    pitch = -(-c.shape[1] * c.itemsize // 16) * 16 // c.itemsize
    out = np.zeros((c.shape[0], pitch), dtype=c.dtype)[:, :c.shape[1]]
    out[...] = c
    ops = added = 0
    for s in order:
        for y, x in itertools.product(range(0, c.shape[0], box[0]), range(0, c.shape[1], box[1])):
            tile = np.zeros(box, dtype=c.dtype)                      # the box as shared memory holds it
            part = partials[s][y:y + box[0], x:x + box[1]]
            tile[:part.shape[0], :part.shape[1]] = part
            new, n = tma_reduce_add(out, tile, (y, x))
            out[...] = new
            ops, added = ops + 1, added + n
    return out, ReduceTraffic(ops, added, ops * box[0] * box[1] * c.itemsize)
