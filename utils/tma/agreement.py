"""The NumPy TMA model against the hardware, on random boxes (Hopper only).

Random configurations (dtypes of 1 to 8 bytes, ranks 2-4, odd shapes, boxes, element strides,
every swizzle mode, boxes that overhang the edges) are loaded by a real ``cp.async.bulk.tensor``
(``runtime.load_dump``) and every shared-memory byte is compared with ``smem_positions`` of the
model's tile; bytes TMA must not write must keep their poison. ``measure_agreement`` returns
the result as a results row, so ``day05_tma/02_descriptors_cupy`` records what it shows.
"""
from __future__ import annotations

import random

import numpy as np

from . import runtime
from .descriptor import make_spec
from .model import smem_positions, tma_load
from .swizzle import swizzle_span

DTYPES = ("uint8", "float16", "float32", "float64", "int32", "uint16")
ROW_NAME = "model == hardware (random TMA loads)"


def random_config(rng: random.Random) -> tuple:
    """``(dtype, shape, box, element_strides, swizzle, coords)``: one legal random TMA load."""
    dtype = np.dtype(rng.choice(DTYPES))
    rank = rng.choice([2, 2, 3, 3, 4])
    swizzle = rng.choice(["none", "none", "32B", "64B", "128B"])
    span = swizzle_span(swizzle) or 256 * dtype.itemsize
    inner_max = min(256, span // dtype.itemsize)
    inner = 16 // dtype.itemsize * rng.randint(1, max(1, inner_max * dtype.itemsize // 16))
    box = [rng.randint(1, 12) for _ in range(rank - 1)] + [min(inner, 256)]
    shape = [rng.randint(1, 40) for _ in range(rank - 1)]           # odd shapes; rows keep
    shape.append(16 // dtype.itemsize * rng.randint(1, 24))         # 16-byte-multiple strides
    estr = [rng.randint(1, 3) for _ in range(rank - 1)] + [1]
    while np.prod([-(-b // e) for b, e in zip(box[:-1], estr)]) * box[-1] * dtype.itemsize > 65536:
        i = int(np.argmax(box[:-1]))
        box[i] = max(1, box[i] // 2)
    coords = [rng.randint(-b + 1, n) for b, n in zip(box, shape)]
    step = 16 // dtype.itemsize                       # innermost coordinate at a 16-B boundary
    coords[-1] = step * rng.randint(-((box[-1] - 1) // step), (shape[-1] - 1) // step)
    return dtype, tuple(shape), tuple(box), tuple(estr), swizzle, tuple(coords)


def hw_matches_model(cfg: tuple) -> bool:
    """Load ``cfg`` with real TMA; True if every byte matches the model (and no other changed)."""
    import cupy as cp
    dtype, shape, box, estr, swizzle, coords = cfg
    host = (np.random.standard_normal(shape) * 100).astype(dtype)
    dev = cp.asarray(host)
    spec = make_spec(dev, box, swizzle=swizzle, element_strides=estr)
    hw = runtime.load_dump(dev, box, coords, swizzle=swizzle, element_strides=estr)
    tile = tma_load(host, box, coords, element_strides=estr)
    raw = np.ascontiguousarray(tile).reshape(-1).view(np.uint8)
    where = smem_positions(tile.shape, dtype.itemsize, swizzle)
    if raw.size != spec.box_bytes:
        return False
    holes = np.setdiff1d(np.arange(hw.size), where)
    return bool(np.array_equal(hw[where], raw) and (hw[holes] == 0xAB).all())


def measure_agreement(n: int = 200, seed: int = 2026) -> list:
    """Try ``n`` random loads; one row: how many matched the model byte for byte, of ``n``."""
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n must be a positive int, got {n!r}")
    rng = random.Random(seed)
    ok = sum(hw_matches_model(random_config(rng)) for _ in range(n))
    return [{"name": ROW_NAME, "metric": "count", "value": float(ok),
             "reference": "configurations tried", "reference_value": float(n), "ratio": ok / n,
             "shape": [n], "dtype": ",".join(DTYPES), "seed": seed}]
