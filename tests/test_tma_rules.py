"""One set of TMA rules (utils.tma.rules): every door gives the same error for the same bad input.

The doors: the validator (make_spec), the NumPy model (tma_load, smem_bytes, tma_store,
tma_reduce_add) and the runtime's coordinate check (runtime.check_coords, CPU-side). Each bad
input below breaks exactly one rule; every door that takes that input must raise the same
exception type with the same text, and the text must name the rule and the offending value.
"""
from dataclasses import dataclass, field

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from utils.tma import make_spec, rules, smem_bytes, tma_load, tma_reduce_add, tma_store
from utils.tma import runtime

F16 = np.zeros((200, 136), np.float16)              # 272-B rows
A = np.arange(40 * 52, dtype=np.float32).reshape(40, 52)
# Strides the driver accepts and TMA loads follow (measured: .gpu_jobs/h5/stride_probe.py), but a store
# into them would write some addresses twice.
BROADCAST = np.broadcast_to(np.arange(64, dtype=np.float16), (8, 64))              # strides (0, 2)
OVERLAP = as_strided(np.arange(1024, dtype=np.float16), (8, 64), (32, 2))          # rows 32 B apart
OVERLAP_3D = as_strided(np.arange(4096, dtype=np.float16), (4, 8, 64), (256, 128, 2))
PERMUTED = np.arange(4 * 8 * 64, dtype=np.float16).reshape(4, 8, 64).transpose(1, 0, 2)  # (128, 1024, 2)


def misaligned(offset=8):
    """A (32, 64) fp16 array whose address is ``offset`` bytes past a 16-B boundary."""
    buf = np.zeros(32 * 64 * 2 + 32, np.uint8)
    start = (offset - buf.ctypes.data) % 16
    return buf[start:start + 32 * 64 * 2].view(np.float16).reshape(32, 64)


@dataclass
class Case:
    array: np.ndarray
    box: tuple
    coords: tuple = None             # default: all zeros
    swizzle: str = "none"
    es: tuple = None                 # element strides
    fill: str = None                 # oob_fill
    store: bool = False              # a store-only rule (loads accept the input)
    doors: tuple = field(default=None)

    def __post_init__(self):
        if self.coords is None:
            self.coords = (0,) * np.ndim(self.array)


def _tile(c):
    return np.zeros(c.box, c.array.dtype)


DOORS = {
    "make_spec": lambda c: make_spec(c.array, c.box, swizzle=c.swizzle, element_strides=c.es,
                                     oob_fill=c.fill or "zero"),
    "tma_load": lambda c: tma_load(c.array, c.box, c.coords, element_strides=c.es, oob_fill=c.fill),
    "smem_bytes": lambda c: smem_bytes(c.array, c.box, c.coords, element_strides=c.es, oob_fill=c.fill,
                                       swizzle=c.swizzle),
    "tma_store": lambda c: tma_store(c.array, _tile(c), c.coords),
    "tma_reduce_add": lambda c: tma_reduce_add(c.array, _tile(c), c.coords),
    "check_coords": lambda c: runtime.check_coords(make_spec(c.array, c.box), c.coords, store=c.store),
}
LOADS, STORES = ("tma_load", "smem_bytes"), ("tma_store", "tma_reduce_add")
TENSOR = ("make_spec",) + LOADS + STORES            # rules about the array and the box
COORDS = LOADS + STORES + ("check_coords",)          # rules about where the box starts

BAD = [  # (name, case, doors, exception, regex the text must match)
    ("inner axis strided", Case(F16[:, ::2], (8, 8)), TENSOR, ValueError,
     r"innermost stride 4 B \(array axis 1\) must equal the element size 2 B"),
    ("transposed (column-major)", Case(np.zeros((32, 16), np.float32).T, (8, 8)), TENSOR, ValueError,
     r"innermost stride 64 B .* must equal the element size 4 B"),
    ("misaligned address", Case(misaligned(8), (8, 64)), TENSOR, ValueError,
     r"global address 0x[0-9a-f]+ is not 16-B aligned \(address % 16 = 8\)"),
    ("complex data", Case(np.zeros((4, 16), np.complex64), (4, 16)), TENSOR, ValueError,
     r"dtype 'complex64' is not a TMA tile type"),
    ("bool data", Case(np.zeros((4, 16), bool), (4, 16)), TENSOR, ValueError, r"dtype 'bool' is not a TMA tile type"),
    ("object data", Case(np.zeros((4, 16), object), (4, 16)), TENSOR, ValueError,
     r"dtype 'object' is not a TMA tile type"),
    ("int8 data", Case(np.zeros((4, 16), np.int8), (4, 16)), TENSOR, ValueError, r"'int8' is not a TMA tile type.*uint8"),
    ("row stride 280 B", Case(np.zeros((10, 70), np.float32), (8, 8)), TENSOR, ValueError,
     r"global stride 280 B \(dim 1 = array axis 0\) is not a multiple of 16 B"),
    ("negative stride", Case(F16[::-1], (8, 8)), TENSOR, ValueError, r"global stride -272 B .* is negative"),
    ("store into broadcast rows (stride 0)", Case(BROADCAST, (8, 64), store=True), STORES + ("check_coords",),
     ValueError, r"a TMA store needs every element at its own address, but global stride 0 B \(dim 1 = array "
     r"axis 0\) does not step past the 2 B of one element: stride 0 sends every index along it to the same"),
    ("store into overlapping rows", Case(OVERLAP, (8, 64), store=True), STORES + ("check_coords",), ValueError,
     r"global stride 32 B \(dim 1 = array axis 0\) does not step past the 128 B the axes with smaller strides "
     r"cover: elements would overlap"),
    ("store into overlapping planes", Case(OVERLAP_3D, (2, 8, 64), store=True), STORES + ("check_coords",),
     ValueError, r"global stride 256 B \(dim 2 = array axis 0\) does not step past the 1024 B"),
    ("rank 6", Case(np.zeros((2,) * 5 + (8,), np.float32), (2,) * 5 + (8,)), TENSOR, ValueError,
     r"rank 6 is outside 1\.\.5"),
    ("empty dimension", Case(np.zeros((0, 16), np.float32), (1, 4)), TENSOR, ValueError,
     r"global dimension 0 \(dim 1 = array axis 0\) must be in 1\.\.2\*\*32"),
    ("box over 256 (load and store)", Case(F16, (300, 64)), TENSOR, ValueError,
     r"box dimension 300 \(dim 1 = array axis 0\) exceeds 256 elements"),
    ("empty box", Case(F16, (0, 64)), TENSOR, ValueError, r"box dimension 0 .* must be at least 1"),
    ("inner box 8 B", Case(F16, (8, 4)), TENSOR, ValueError, r"inner box is 8 B \(4 x 2 B\), not a multiple of 16 B"),
    ("box rank", Case(F16, (8, 8, 8)), TENSOR, ValueError, r"box_shape \(8, 8, 8\) has 3 entries but a rank-2"),
    ("box of floats", Case(F16, (8.0, 64)), ("make_spec",) + LOADS, TypeError, r"box_shape must hold ints, got 8\.0"),
    ("inner box over the swizzle span", Case(F16, (8, 128), swizzle="128B"), ("make_spec", "smem_bytes"),
     ValueError, r"inner box is 256 B but SWIZZLE_128B allows at most 128 B"),
    ("unknown swizzle", Case(F16, (8, 64), swizzle="256B"), ("make_spec", "smem_bytes"), ValueError,
     r"swizzle '256B' is not one of"),
    ("element stride 9", Case(F16, (8, 64), es=(9, 1)), ("make_spec",) + LOADS, ValueError,
     r"element stride 9 \(dim 1 = array axis 0\) is outside 1\.\.8"),
    ("NaN fill on integers", Case(np.zeros((8, 8), np.int32), (8, 8), fill="nan"), ("make_spec",) + LOADS,
     ValueError, r"oob_fill 'nan' needs a float dtype, got int32"),
    ("unaligned innermost coordinate", Case(F16, (8, 64), coords=(0, 4)), COORDS, ValueError,
     r"innermost coordinate 4 is 8 B from the row start, not a multiple of 16 B"),
    ("coordinate beyond int32", Case(F16, (8, 64), coords=(2**31, 0)), COORDS, ValueError,
     r"coordinate 2147483648 \(dim 1 = array axis 0\) does not fit in int32"),
    ("coordinate below int32", Case(F16, (8, 64), coords=(0, -2**31 - 8)), COORDS, ValueError,
     r"coordinate -2147483656 \(dim 0 = array axis 1\) does not fit in int32"),
    ("float coordinate", Case(F16, (8, 64), coords=(0.5, 0)), COORDS, TypeError, r"coords must be 2 ints"),
    ("too few coordinates", Case(F16, (8, 64), coords=(0,)), COORDS, TypeError, r"coords must be 2 ints"),
    ("store starting below 0 (outer)", Case(F16, (8, 64), coords=(-1, 0), store=True), STORES + ("check_coords",),
     ValueError, r"store coordinates \(-1, 0\) start below 0: a TMA store box must start inside the tensor"),
    ("store starting below 0 (inner)", Case(F16, (8, 64), coords=(0, -8), store=True), STORES + ("check_coords",),
     ValueError, r"store coordinates \(0, -8\) start below 0"),
]


@pytest.mark.parametrize("name, case, doors, exc, match", BAD, ids=[b[0] for b in BAD])
def test_every_door_gives_the_same_error(name, case, doors, exc, match):
    texts = {}
    for door in doors:
        with pytest.raises(exc) as info:
            DOORS[door](case)
        assert type(info.value) is exc, (door, info.value)
        texts[door] = str(info.value)
    assert len(set(texts.values())) == 1, f"{name}: the doors disagree:\n" + "\n".join(
        f"  {d}: {t}" for d, t in texts.items())
    assert pytest.raises(exc, DOORS[doors[0]], case).match(match)


GOOD = [  # (name, case): accepted by every door
    ("interior box", Case(A, (8, 16), coords=(8, 16))),
    ("box overhanging the end", Case(A, (8, 16), coords=(36, 44))),
    ("padded rows (a slice of a wider array)", Case(np.zeros((64, 256), np.float16)[:, :136], (16, 64),
                                                    coords=(0, 128))),
    ("length-1 axis with stride 0 (x[None])", Case(np.zeros((4, 16), np.float32)[None], (1, 4, 16))),
    ("1-D", Case(np.zeros(1000, np.float32), (64,), coords=(992,))),
    ("5-D", Case(np.zeros((2, 3, 4, 5, 16), np.uint8), (1, 2, 3, 4, 16), coords=(1, 1, 1, 1, 0))),
    ("uint8, 32-B swizzle", Case(np.zeros((40, 64), np.uint8), (8, 32), swizzle="32B", coords=(3, 32))),
    ("float64, 128-B swizzle", Case(np.zeros((40, 32), np.float64), (8, 16), swizzle="128B", coords=(4, 16))),
    ("element strides", Case(A, (7, 8), es=(3, 1), coords=(1, 4))),
    ("NaN fill", Case(A, (8, 16), fill="nan", coords=(32, 48))),
    ("permuted outer axes (no overlap)", Case(PERMUTED, (8, 4, 64), coords=(3, 1, 0))),
    ("largest legal box and coordinate", Case(np.zeros((300, 256), np.uint8), (256, 256),
                                              coords=(2**31 - 1, 2**31 - 16))),
]


@pytest.mark.parametrize("name, case", GOOD, ids=[g[0] for g in GOOD])
def test_good_input_passes_every_door(name, case):
    swizzled = case.swizzle != "none"
    for door, call in DOORS.items():
        if swizzled and door not in ("make_spec", "smem_bytes", "check_coords"):
            continue
        if case.es is not None and door in STORES:
            continue
        if case.fill is not None and door in STORES:
            continue
        if door == "tma_reduce_add" and case.array.dtype.name not in rules.REDUCE_ADD_DTYPES:
            continue                 # .add takes fewer types than a copy (tests/test_doors.py)
        call(case)


def test_negative_coordinates_are_legal_for_loads_only():
    case = Case(A, (8, 16), coords=(-4, -4))
    for door in LOADS:
        DOORS[door](case)
    assert runtime.check_coords(make_spec(A, (8, 16)), (-4, -4)) == (-4, -4)
    for door in STORES:
        with pytest.raises(ValueError, match="start below 0"):
            DOORS[door](case)


@pytest.mark.parametrize("array, box, coords", [(BROADCAST, (8, 64), (3, 0)), (OVERLAP, (8, 64), (5, 32)),
                                                 (OVERLAP_3D, (2, 8, 64), (2, 4, 0))])
def test_loads_follow_any_strides_the_driver_accepts(array, box, coords):
    """Measured on H100 (stride_probe.py): these encode and load base + sum(coord x stride)."""
    runtime.check_coords(make_spec(array, box), coords)
    tile = tma_load(array, box, coords)
    inside = tuple(slice(c, min(c + b, n)) for c, b, n in zip(coords, box, array.shape))
    assert np.array_equal(tile[tuple(slice(0, s.stop - s.start) for s in inside)], array[inside])
    assert smem_bytes(array, box, coords).tobytes() == tile.tobytes()


def test_store_into_permuted_axes_lands_where_numpy_says():
    tile = np.full((4, 2, 64), 7, np.float16)
    out, n = tma_store(PERMUTED, tile, (2, 1, 0))
    want = PERMUTED.copy()
    want[2:6, 1:3, :] = 7
    assert n == tile.size and np.array_equal(out, want)


def test_distinct_elements():
    rules.distinct_elements((64, 8, 4), (128, 1024), 2)           # dense
    rules.distinct_elements((64, 8, 4), (144, 1152), 2)           # padded
    rules.distinct_elements((64, 4, 8), (1024, 128), 2)           # permuted outer axes
    rules.distinct_elements((64, 1), (0,), 2)                     # stride 0 on a length-1 axis
    with pytest.raises(ValueError, match="elements would overlap"):
        rules.distinct_elements((64, 8), (112,), 2)
    with pytest.raises(ValueError, match="stride 0 sends every index"):
        rules.distinct_elements((64, 8), (0,), 2)


def test_length_1_axis_gets_a_legal_stride():
    assert rules.legal_strides((1, 70), (280, 4), 4) == (288, 4)  # 280 B is never used: any legal value
    assert make_spec(np.zeros((1, 70), np.float32), (1, 64)).global_strides_bytes == (288,)
    assert rules.legal_strides((3, 1, 8), (64, 7, 2), 2) == (64, 16, 2)
    assert rules.legal_strides((1, 4, 16), (0, 64, 4), 4) == (0, 64, 4)   # stride 0 is legal (x[None])
    assert rules.legal_strides((2, 70), (280, 4), 4) == (280, 4)   # length > 1: kept (and refused later)


def test_model_reads_numpy_arrays_only():
    with pytest.raises(TypeError, match="the TMA model reads a NumPy array"):
        tma_load(A.tolist(), (8, 16), (0, 0))
    with pytest.raises(ValueError, match="spec describes a"):
        tma_load(A[:8], make_spec(A, (8, 16)), (0, 0))


def test_store_tile_must_match_dtype():
    with pytest.raises(ValueError, match="tile dtype float16 differs from global dtype float32"):
        tma_store(A, np.zeros((8, 16), np.float16), (0, 0))
