"""A model of what memory accesses cost, that runs on any machine. Used by day 1.

* **Sectors**: global memory is served in 32-byte sectors (four per 128-byte line). What a
  warp's load costs the memory system is the number of distinct sectors its 32 addresses
  touch (:func:`sectors_touched`), not the number of bytes it asked for.
* **Banks**: shared memory is 32 banks of 4-byte words; word ``w`` lives in bank ``w % 32``
  (:func:`bank_of`). Distinct words in one bank, requested by one warp access, serialise
  (:func:`conflict_ways`; the same rule as ``utils.tma.bank_conflict_ways``).
* **Roofline**: attainable FLOP/s = min(peak FLOP/s, intensity x bandwidth)
  (:func:`roofline_tflops`, :func:`gemm_intensity`, :func:`ridge_point`).
* **Device facts**: sizes read off the device (torch properties) when there is one, else the
  datasheet values of H100/H200 (:func:`device_facts`, :data:`DATASHEET`).
"""
from __future__ import annotations

import numpy as np

WARP, SECTOR, LINE, BANKS, WORD = 32, 32, 128, 32, 4

# NVIDIA datasheets (H100 Tensor Core GPU datasheet, H200 Tensor Core GPU datasheet; the
# Hopper architecture in-depth blog for SM counts, L2 and shared memory). Peak bandwidth and
# dense FP16/BF16 tensor FLOP/s cannot be read off the device; they come from here. The sizes
# are used only on the cpu tier; on a GPU they are read from the device.
_HOPPER_SM = {"regs_per_sm": 65536, "smem_per_sm": 228 * 1024, "smem_per_block": 227 * 1024,
              "l2_bytes": 50 * 2**20, "threads_per_sm": 2048}
DATASHEET = {  # matched in this order against the device name
    "H200 NVL": dict(_HOPPER_SM, sms=132, hbm_bytes=141 * 10**9, hbm_peak_gbs=4800, fp16_tflops=835),
    "H200": dict(_HOPPER_SM, sms=132, hbm_bytes=141 * 10**9, hbm_peak_gbs=4800, fp16_tflops=989),
    "H100 NVL": dict(_HOPPER_SM, sms=132, hbm_bytes=94 * 10**9, hbm_peak_gbs=3900, fp16_tflops=835),
    "H100 PCIe": dict(_HOPPER_SM, sms=114, hbm_bytes=80 * 10**9, hbm_peak_gbs=2000, fp16_tflops=756),
    "H100": dict(_HOPPER_SM, sms=132, hbm_bytes=80 * 10**9, hbm_peak_gbs=3350, fp16_tflops=989),
}
_PROPS = {"sms": "multi_processor_count", "regs_per_sm": "regs_per_multiprocessor",
          "smem_per_sm": "shared_memory_per_multiprocessor",
          "smem_per_block": "shared_memory_per_block_optin", "l2_bytes": "L2_cache_size",
          "hbm_bytes": "total_memory", "threads_per_sm": "max_threads_per_multi_processor"}


def _int(name, v, minimum=0):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(v).__name__} {v!r}")
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return int(v)


def _positive(**values):
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not v > 0:
            raise ValueError(f"{name} must be a positive number, got {v!r}")


def _addresses(byte_addresses) -> np.ndarray:
    a = np.asarray(byte_addresses)
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    if a.dtype.kind not in "iu":
        raise TypeError(f"byte addresses must be integers, got dtype {a.dtype}")
    if a.size and a.min() < 0:
        raise ValueError(f"byte addresses must be >= 0, got {int(a.min())}")
    return a.astype(np.int64).ravel()


def warp_addresses(stride: int = 1, offset: int = 0, elem_bytes: int = 4, warp: int = 0,
                   lanes: int = WARP) -> np.ndarray:
    """Byte addresses read by the lanes of warp ``warp`` when thread ``t`` reads element
    ``offset + t * stride`` of an array of ``elem_bytes``-byte elements starting at address 0."""
    stride, offset = _int("stride", stride, 1), _int("offset", offset)
    elem_bytes, warp, lanes = _int("elem_bytes", elem_bytes, 1), _int("warp", warp), _int("lanes", lanes, 1)
    t = warp * lanes + np.arange(lanes, dtype=np.int64)
    return (offset + t * stride) * elem_bytes


def sectors_touched(byte_addresses, access_bytes: int = 4) -> int:
    """Distinct 32-byte sectors covered by accesses of ``access_bytes`` bytes starting at each
    address (one per thread). An access may straddle a sector boundary."""
    a = _addresses(byte_addresses)
    n = _int("access_bytes", access_bytes, 1)
    if not a.size:
        return 0
    first, last = a // SECTOR, (a + n - 1) // SECTOR
    spans = [np.arange(f, l + 1) for f, l in zip(first, last)] if (last > first).any() else [first]
    return int(np.unique(np.concatenate(spans)).size)


def strided_read_efficiency(stride: int, offset: int = 0, elem_bytes: int = 4) -> float:
    """Useful fraction of the bytes one warp's strided read moves: 32 x elem_bytes / (sectors x 32)."""
    a = warp_addresses(stride, offset, elem_bytes)
    return WARP * elem_bytes / (sectors_touched(a, elem_bytes) * SECTOR)


def _sectors_per_group(addr, access_bytes, group) -> int:
    """Sum over consecutive groups of ``group`` accesses of the distinct sectors each touches
    (accesses of at most 32 bytes, so each spans one or two sectors)."""
    g = np.arange(addr.size, dtype=np.int64) // group
    s = np.concatenate([addr // SECTOR, (addr + access_bytes - 1) // SECTOR])
    return int(np.unique(np.concatenate([g, g]) * (int(s.max()) + 1) + s).size)


def copy_traffic(n: int, stride: int = 1, offset: int = 0, elem_bytes: int = 4) -> dict:
    """Bytes a kernel ``y[i] = x[offset + i*stride]`` (i < n, warps of 32 consecutive i) moves.

    ``requested``: sectors summed over warps (what the warps ask L1/L2 for); ``unique``: distinct
    sectors over the whole kernel (a lower bound on DRAM traffic: neighbours share the rest);
    ``useful``: bytes the program needs (n read + n written). Reads and writes both counted.
    """
    n, elem_bytes = _int("n", n, 1), _int("elem_bytes", elem_bytes, 1)
    if elem_bytes > SECTOR:
        raise ValueError(f"elem_bytes must be at most {SECTOR}, got {elem_bytes}")
    i = np.arange(n, dtype=np.int64)
    src = (_int("offset", offset) + i * _int("stride", stride, 1)) * elem_bytes
    dst = i * elem_bytes
    out = {"useful": 2 * n * elem_bytes}
    for key, group in (("requested", WARP), ("unique", n)):
        out[key] = SECTOR * sum(_sectors_per_group(a, elem_bytes, group) for a in (src, dst))
    return out


def bank_of(byte_address: int) -> int:
    """Shared-memory bank (0..31) of a byte address: its 4-byte word index modulo 32."""
    return _int("byte_address", byte_address) // WORD % BANKS


def conflict_ways(byte_addresses) -> int:
    """Wavefronts one warp access needs: the most distinct 4-byte words that fall in one bank
    (threads reading the same word share it). 1 means conflict-free."""
    words = np.unique(_addresses(byte_addresses) // WORD)
    return int(np.bincount(words % BANKS, minlength=BANKS).max()) if words.size else 0


def tile_word(r, c, cols: int = 32, pad: int = 0, swizzle: bool = False):
    """Word index of element (r, c) of a shared tile of 4-byte elements stored row by row with
    ``cols + pad`` words per row; with ``swizzle`` the column is XORed with the row
    (``c ^ (r % cols)``, ``cols`` a power of two), as in ``tile[r][c ^ r]``."""
    cols, pad = _int("cols", cols, 1), _int("pad", pad)
    if swizzle and (cols & (cols - 1) or pad):
        raise ValueError(f"swizzle needs a power-of-two cols and pad=0, got cols={cols}, pad={pad}")
    r, c = np.asarray(r, dtype=np.int64), np.asarray(c, dtype=np.int64)
    return r * (cols + pad) + ((c ^ (r % cols)) if swizzle else c)


def conflict_free_pad(tile_cols: int) -> int:
    """Smallest pad (words) such that 32 lanes reading one column (lane t reads row t) of a tile
    with ``tile_cols + pad`` 4-byte words per row hit 32 different banks."""
    cols = _int("tile_cols", tile_cols, 1)
    rows = np.arange(WARP)
    return next(p for p in range(BANKS) if conflict_ways(tile_word(rows, 0, cols, p) * WORD) == 1)


def gemm_intensity(M: int, N: int, K: int, elem_bytes: int = 2) -> float:
    """Arithmetic intensity (FLOP per byte) of C = A @ B with A MxK, B KxN, C MxN, when each
    matrix crosses DRAM exactly once: 2MNK / (elem_bytes (MK + KN + MN))."""
    M, N, K, e = (_int(k, v, 1) for k, v in dict(M=M, N=N, K=K, elem_bytes=elem_bytes).items())
    return 2 * M * N * K / (e * (M * K + K * N + M * N))


def roofline_tflops(intensity: float, peak_tflops: float, bandwidth_gbs: float) -> float:
    """Attainable TFLOP/s at ``intensity`` FLOP/byte: min(peak, intensity x bandwidth)."""
    _positive(intensity=intensity, peak_tflops=peak_tflops, bandwidth_gbs=bandwidth_gbs)
    return min(peak_tflops, intensity * bandwidth_gbs / 1e3)


def ridge_point(peak_tflops: float, bandwidth_gbs: float) -> float:
    """Intensity (FLOP/byte) where the memory roof meets the compute roof."""
    _positive(peak_tflops=peak_tflops, bandwidth_gbs=bandwidth_gbs)
    return peak_tflops * 1e3 / bandwidth_gbs


def datasheet(device_name: str) -> dict | None:
    """The :data:`DATASHEET` entry whose key appears in ``device_name`` (None if unknown)."""
    if not isinstance(device_name, str):
        raise TypeError(f"device_name must be a str, got {type(device_name).__name__}")
    return next((dict(v) for k, v in DATASHEET.items() if k in device_name), None)


def device_facts(device_name: str, props=None) -> dict:
    """Memory sizes and peaks of a device. With ``props`` (``torch.cuda.get_device_properties``)
    sizes are read off the device (``source`` says which); peaks come from the datasheet
    (None for an unknown device). Without props, the datasheet entry (ValueError if unknown)."""
    sheet = datasheet(device_name)
    if props is None and sheet is None:
        raise ValueError(f"no datasheet entry for {device_name!r} (known: {list(DATASHEET)}); "
                         "pass torch.cuda.get_device_properties(0) to read sizes off the device")
    facts = {"name": device_name, "source": "read off the device" if props is not None else
             "datasheet (no GPU here)", "hbm_peak_gbs": None, "fp16_tflops": None}
    facts.update(dict.fromkeys(_PROPS))
    facts.update(sheet or {})
    for key, attr in _PROPS.items():
        value = getattr(props, attr, None) if props is not None else None
        if value is not None:
            facts[key] = int(value)
    return facts
