"""Models of day 2 (pipelining): Little's law at the scale of a warp, a block, an SM and the GPU;
how many pipeline stages hide a latency; the slot and phase of a ring buffer; a timeline of
loads and compute per stage; and a small model of an mbarrier.

Units: ns, GB/s (= bytes per ns), bytes. Every function checks its inputs and names the rule.
"""
from __future__ import annotations

import math

from .cost_model import bytes_in_flight_ref, predicted_bandwidth_gbs

WARP = 32
__all__ = ["bytes_in_flight_ref", "predicted_bandwidth_gbs", "in_flight_capacity",
           "loads_per_thread_needed", "stages_needed", "slot_and_phase", "timeline", "MBarrier", "ctas_per_sm"]


def _pos(kind=(int, float), **values):
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, kind) or not v > 0:
            want = "int" if kind is int else "number"
            raise ValueError(f"{name} must be a positive {want}, got {v!r}")


def in_flight_capacity(loads_per_thread: int, bytes_per_load: int = 16, threads_per_block: int = 128,
                       blocks_per_sm: int = 1, n_sm: int = 132) -> dict:
    """Bytes one warp, one block, one SM and the whole GPU keep in flight when every thread has
    ``loads_per_thread`` independent loads of ``bytes_per_load`` outstanding."""
    _pos(int, loads_per_thread=loads_per_thread, bytes_per_load=bytes_per_load,
         threads_per_block=threads_per_block, blocks_per_sm=blocks_per_sm, n_sm=n_sm)
    if threads_per_block % WARP:
        raise ValueError(f"threads_per_block must be a multiple of 32 (whole warps), got {threads_per_block}")
    thread = loads_per_thread * bytes_per_load
    return {"warp": WARP * thread, "block": threads_per_block * thread,
            "SM": blocks_per_sm * threads_per_block * thread,
            "GPU": n_sm * blocks_per_sm * threads_per_block * thread}


def loads_per_thread_needed(latency_ns: float, bandwidth_gbs: float, n_sm: int, threads_per_sm: int,
                            bytes_per_load: int = 16) -> int:
    """Independent loads each thread must keep in flight so that the GPU sustains
    ``bandwidth_gbs``: Little's law per SM, shared by the SM's threads, rounded up."""
    _pos(latency_ns=latency_ns, bandwidth_gbs=bandwidth_gbs)
    _pos(int, n_sm=n_sm, threads_per_sm=threads_per_sm, bytes_per_load=bytes_per_load)
    per_sm = bytes_in_flight_ref(latency_ns, bandwidth_gbs) / n_sm
    return math.ceil(per_sm / (threads_per_sm * bytes_per_load) - 1e-9)


def stages_needed(latency_ns: float, tile_bytes: int, bandwidth_gbs: float) -> int:
    """Stages of a ring buffer so that one consumer, using a tile every ``tile_bytes /
    bandwidth_gbs`` ns, never waits for a load of ``latency_ns``: the tiles in flight
    (latency / time per tile, rounded up) plus the one being used."""
    _pos(latency_ns=latency_ns, bandwidth_gbs=bandwidth_gbs)
    _pos(int, tile_bytes=tile_bytes)
    per_tile_ns = tile_bytes / bandwidth_gbs
    return math.ceil(latency_ns / per_tile_ns - 1e-9) + 1


def ctas_per_sm(regs_per_thread: int, smem_per_cta: int, threads_per_cta: int, *,
                smem_per_sm: int = 233472, regs_per_sm: int = 65536, max_ctas: int = 32,
                reserved_smem_per_cta: int = 1024) -> dict:
    """How many CTAs of a kernel fit on one SM, and which resource decides it.

    ``regs_per_thread`` and ``smem_per_cta`` (bytes) are what the compiler reports (Triton:
    ``kernel.n_regs`` and ``kernel.metadata.shared``). Registers are allocated per warp in units
    of 256; the driver reserves ``reserved_smem_per_cta`` bytes of shared memory per CTA
    (1 KiB on sm_90). Defaults are Hopper's (228 KiB shared memory, 64 Ki registers per SM).
    Returns ``{"ctas": n, "by_regs": ..., "by_smem": ..., "limit": "registers" | "shared memory" | "max CTAs"}``.
    """
    _pos(int, regs_per_thread=regs_per_thread, threads_per_cta=threads_per_cta, smem_per_sm=smem_per_sm,
         regs_per_sm=regs_per_sm, max_ctas=max_ctas)
    if isinstance(smem_per_cta, bool) or not isinstance(smem_per_cta, int) or smem_per_cta < 0:
        raise ValueError(f"smem_per_cta must be an int >= 0 (bytes), got {smem_per_cta!r}")
    if regs_per_thread > 255:
        raise ValueError(f"regs_per_thread {regs_per_thread} is over the 255 a thread can have")
    warps = math.ceil(threads_per_cta / WARP)
    regs_per_warp = math.ceil(regs_per_thread * WARP / 256) * 256
    by_regs = regs_per_sm // (regs_per_warp * warps)
    by_smem = smem_per_sm // (smem_per_cta + reserved_smem_per_cta)
    ctas = min(by_regs, by_smem, max_ctas)
    limit = "max CTAs" if ctas == max_ctas else "registers" if by_regs <= by_smem else "shared memory"
    return {"ctas": ctas, "by_regs": by_regs, "by_smem": by_smem, "limit": limit}


def slot_and_phase(k: int, stages: int) -> tuple[int, int]:
    """Tile ``k`` goes to slot ``k % stages``; it is that slot's ``k // stages``-th use, so its
    mbarrier wait uses parity ``(k // stages) % 2``."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k (tile index) must be a non-negative int, got {k!r}")
    _pos(int, stages=stages)
    return k % stages, (k // stages) % 2


def timeline(n_tiles: int, stages: int, load_ns: float, compute_ns: float) -> dict:
    """Schedule ``n_tiles`` tiles through a ring of ``stages`` buffers.

    A load takes ``load_ns`` (latency: several overlap) and needs a free buffer: the one that
    tile ``k - stages`` used, released when its compute ends. Compute takes ``compute_ns``,
    one tile at a time, in order, once the tile has landed. Returns ``{"events": [(tile,
    "load"|"compute", slot, start, end)], "total_ns", "per_tile_ns" (steady state)}``."""
    _pos(int, n_tiles=n_tiles, stages=stages)
    _pos(load_ns=load_ns, compute_ns=compute_ns)
    load_end, comp_end, events = [], [], []
    for k in range(n_tiles):
        start = comp_end[k - stages] if k >= stages else 0.0
        load_end.append(start + load_ns)
        events.append((k, "load", k % stages, start, load_end[k]))
        c0 = max(load_end[k], comp_end[k - 1] if k else 0.0)
        comp_end.append(c0 + compute_ns)
        events.append((k, "compute", k % stages, c0, comp_end[k]))
    steady = max(compute_ns, (load_ns + compute_ns) / stages)
    return {"events": events, "total_ns": comp_end[-1], "per_tile_ns": steady}


class MBarrier:
    """A model of one mbarrier: a phase completes when all ``count`` expected arrivals happened
    and the transaction count (bytes announced with ``expect_tx`` and not yet delivered) is 0.

    ``test_wait(parity)`` answers like ``mbarrier.test_wait.parity``: True when the phase with
    that parity has completed, i.e. the current (incomplete) phase has the other parity."""

    def __init__(self, count: int):
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count < 2**20:
            raise ValueError(f"expected arrival count must be in 1 .. 2^20 - 1, got {count!r}")
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    def _maybe_complete(self):
        if self.pending == 0 and self.tx == 0:
            self.phase, self.pending = self.phase + 1, self.count

    def arrive(self, n: int = 1) -> None:
        """``n`` arrivals (``mbarrier.arrive``)."""
        if not isinstance(n, int) or not 1 <= n <= self.pending:
            raise ValueError(f"arrive({n!r}): only {self.pending} arrivals are pending in this phase")
        self.pending -= n
        self._maybe_complete()

    def expect_tx(self, nbytes: int) -> None:
        """``mbarrier.arrive.expect_tx``: one arrival, and ``nbytes`` more to be delivered."""
        _pos(int, nbytes=nbytes)
        self.tx += nbytes
        self.arrive(1)

    def complete_tx(self, nbytes: int) -> None:
        """The copy engine delivered ``nbytes`` (``complete_tx`` of a TMA or bulk copy)."""
        _pos(int, nbytes=nbytes)
        self.tx -= nbytes
        self._maybe_complete()

    @property
    def parity(self) -> int:
        """Parity of the current, incomplete phase."""
        return self.phase % 2

    def test_wait(self, parity: int) -> bool:
        """Has the phase with ``parity`` (0 or 1) completed?"""
        if parity not in (0, 1):
            raise ValueError(f"parity must be 0 or 1, got {parity!r}")
        return parity != self.parity
