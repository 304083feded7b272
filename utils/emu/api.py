"""The public entry points: :func:`launch` and :func:`tensor_map` (see the package docstring)."""
from __future__ import annotations

import numpy as np

from ..tma.descriptor import TensorMapSpec, make_spec
from . import errors
from .errors import Report
from .launch import Launch, _dim3
from .memory import GlobalMemory
from .operands import NP
from .program import program, ptx_of
from .tensormap import encode


class TensorMap:
    """A descriptor argument: the spec (``utils.tma.descriptor.make_spec``) and the array it
    describes. Passed by value to a ``const __grid_constant__`` CUtensorMap parameter as the
    emulator's 128-byte encoding (:mod:`.tensormap`)."""

    def __init__(self, spec: TensorMapSpec, array: np.ndarray):
        if not isinstance(spec, TensorMapSpec) or not isinstance(array, np.ndarray):
            raise TypeError("TensorMap(spec, array) takes a TensorMapSpec and the NumPy array it describes")
        self.spec, self.array = spec, array

    def bytes(self) -> np.ndarray:
        """The 128 descriptor bytes the kernel's parameter receives."""
        return encode(self.spec).view(np.uint8)

    def __repr__(self):
        return f"TensorMap(box {self.spec.array_box_shape} of a {self.spec.array_shape} {self.spec.dtype} array)"


def tensor_map(array: np.ndarray, box_shape, **spec_kwargs) -> TensorMap:
    """``TensorMap(make_spec(array, box_shape, **spec_kwargs), array)``: array order, like make_spec."""
    return TensorMap(make_spec(array, box_shape, **spec_kwargs), array)


def device_empty(shape, dtype, fill=None) -> np.ndarray:
    """A C-contiguous array at a 256-byte aligned address, like ``cudaMalloc`` memory (NumPy's own
    allocations may be only 16-byte aligned, which breaks TMA's alignment rules for no reason)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(n + 256, np.uint8)
    start = (-raw.ctypes.data) % 256
    a = raw[start:start + n].view(dtype).reshape(shape)
    if fill is not None:
        a[...] = fill
    return a


def to_device(array) -> np.ndarray:
    """A 256-byte aligned copy of ``array`` (:func:`device_empty`)."""
    array = np.asarray(array)
    out = device_empty(array.shape, array.dtype)
    out[...] = array
    return out


def _param_bytes(value, typ: str, size: int, name: str, gmem: GlobalMemory) -> np.ndarray:
    """The bytes a launch argument occupies in the parameter space."""
    if isinstance(value, TensorMap):
        gmem.register(value.array)
        raw = value.bytes()
    elif isinstance(value, np.ndarray) and value.dtype.kind != "V":
        gmem.register(value)
        raw = np.array([value.ctypes.data], np.uint64).view(np.uint8)
    elif isinstance(value, (np.ndarray, np.void, bytes, bytearray)):
        raw = np.frombuffer(bytes(value) if not isinstance(value, np.ndarray) else value.tobytes(), np.uint8)
    elif isinstance(value, (bool, int, float, np.integer, np.floating)):
        T = np.dtype(NP.get(typ, np.uint8))
        if T.kind == "f":
            raw = np.array([value], T).view(np.uint8)
        else:
            v = int(value)
            if not -(1 << (8 * T.itemsize - 1)) <= v < (1 << (8 * T.itemsize)):
                raise ValueError(f"argument {name} = {v} does not fit the parameter's .{typ}")
            raw = np.array([v & ((1 << (8 * T.itemsize)) - 1)], np.uint64).view(np.uint8)[:T.itemsize]
    else:
        raise TypeError(f"argument {name}: pass a NumPy array (a device pointer), a TensorMap, a number, or "
                        f"raw bytes (np.void / V-dtype array); got {type(value).__name__}")
    if raw.size > size or (raw.size < size and not isinstance(value, (int, float, np.integer, np.floating))
                           and typ == "b8"):
        raise ValueError(f"argument {name} is {raw.size} B but the kernel's parameter is {size} B (.{typ})")
    return raw


def launch(source: str, kernel: str, grid, block, args, *, shared_bytes: int = 0, cluster=None,
           seed: int = 0, strict: bool = True, arrays=(), max_instructions: int = 2_000_000,
           max_resident: int = 4, completion: str = "adversarial") -> Report:
    """Run ``kernel`` of ``source`` (PTX, or CUDA C++ compiled by NVRTC for sm_90a) on the emulator.

    ``args`` match the kernel's ``.param`` list: NumPy arrays (device pointers: the kernel reads
    and writes them in place), :class:`TensorMap` for CUtensorMap parameters, Python/NumPy numbers
    (typed by the parameter), or raw bytes (``np.void``, a ``V``-dtype array: structs by value).
    ``arrays`` are further arrays the kernel reaches only through pointers stored in memory.
    ``cluster`` defaults to the kernel's ``__cluster_dims__``. ``strict`` raises at the first race;
    otherwise races are collected in the report. ``completion`` says when asynchronous copies land:
    "adversarial" (each copy at once, at a random later point, or as late as possible, by ``seed``),
    "eager" (all at once), "lazy" (all as late as possible) or "never" (no copy lands: a fault injected
    to check that a kernel's bounded wait times out). Returns the :class:`Report`.
    """
    ptx = ptx_of(source)
    prog = program(ptx, kernel)
    grid, block = _dim3(grid, "grid"), _dim3(block, "block")
    if block[0] * block[1] * block[2] > 1024:
        raise ValueError(f"block {block} has more than 1024 threads")
    cluster = _dim3(cluster or prog.kernel.cluster_dims or 1, "cluster")
    if any(g % c for g, c in zip(grid, cluster)):
        raise ValueError(f"grid {grid} is not a whole number of clusters {cluster}")
    if len(args) != len(prog.params):
        raise TypeError(f"{kernel} takes {len(prog.params)} arguments "
                        f"({', '.join(p[0] for p in prog.params)}), got {len(args)}")
    gmem = GlobalMemory()
    gmem.register(prog.gbuf)
    for a in arrays:
        gmem.register(a)
    params = np.zeros(prog.param_size, np.uint8)
    for (name, typ, size, off), value in zip(prog.params, args):
        raw = _param_bytes(value, typ, size, name, gmem)
        params[off:off + raw.size] = raw
    if not isinstance(shared_bytes, (int, np.integer)) or shared_bytes < 0:
        raise ValueError(f"shared_bytes must be an int >= 0, got {shared_bytes!r}")
    modes = {"adversarial": ("now", "soon", "late"), "eager": ("now",), "lazy": ("late",),
             "never": ("never",)}      # fault injection: no copy ever lands (a bounded wait must time out)
    if completion not in modes:
        raise ValueError(f"completion must be one of {sorted(modes)}, got {completion!r}")
    run = Launch(prog, grid, block, params, gmem, int(shared_bytes), cluster, seed, strict, max_instructions)
    run.modes = modes[completion]
    errors.SOURCE.append((prog.locs, errors.source_lines(source) if ptx is not source else {}))
    try:
        return run.run(max_resident)
    finally:
        errors.SOURCE.pop()
