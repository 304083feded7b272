"""The L2 feed, with and without cluster multicast (``feed_c1/c2/c4`` in ``tma_kernels.cu``).

A cluster of ``R`` CTAs reads the same ``per_cta`` chunks of a source (1-D ``cp.async.bulk``,
``stages`` shared-memory buffers, a producer warp and four consumer warps that sum what they
read: every 2 KiB line of each chunk, or only its first ``lines`` of them, to measure what the SM
takes in when its own work is almost nothing). Without multicast every CTA fetches each chunk
itself, so L2 serves it ``R`` times; with multicast each CTA fetches one ``1/R`` slice for the
whole cluster and L2 serves each chunk once.
The bytes delivered to shared memory are the same either way: only the L2 reads change. A
multicast buffer may be refilled only when every CTA of the cluster has read it; mode
``"cluster release"`` keeps that coupling but loads as ``"each loads"`` (one change at a time).
Their remote arrives are the plain ``mbarrier.arrive.shared::cluster.b64``, as in CUTLASS's
pipelines; ``"cluster release, fenced arrive"`` gives each one ``.release.cluster`` semantics
(the only change), which measures what a cluster-scope release costs.

* :func:`feed_launcher` checks its inputs and returns ``(launch, out, status)`` (Hopper);
* :func:`feed_reference` is what ``out`` must hold (float64, computed on the GPU with CuPy);
* :func:`delivered_bytes` / :func:`l2_bytes` are the byte counts the rates are built from;
* :func:`release_sass` cuts the consumers' remote arrives out of a kernel's SASS.
"""
from __future__ import annotations

import numpy as np

from . import rules, runtime

CLUSTERS = (1, 2, 4)
MODES = {"each loads": 0, "multicast": 1, "cluster release": 2,     # the kernel's `mode` argument
         "cluster release, fenced arrive": 3, "each loads, out of step": 4}
CONSUMERS = 128              # consumer threads per CTA (warps 1-4); warp 0 is the producer
THREADS = 32 + CONSUMERS
LINE = 16 * CONSUMERS        # bytes one pass of the consumers reads (one uint4 each)
CTAS_PER_SM = 12             # the default grid: a multiple of every cluster size
STATIC_SMEM = runtime.STATIC_SMEM   # the kernel's own mbarriers (full[8], empty[8]), next to the buffers


def _cluster_mode(R, mode=None) -> None:
    """The cluster size (:func:`.rules.cluster_size`) and, if given, a mode it can run."""
    rules.cluster_size(R)
    if mode is None:
        return
    if mode not in MODES:
        raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
    if mode != "each loads" and R == 1:
        raise ValueError(f"mode {mode!r} needs a cluster of 2 or 4 CTAs: with R = 1 there is no peer to share with")


def _chunk(chunk_bytes) -> int:
    return rules.multiple("chunk_bytes", chunk_bytes, LINE, of_text=f"{LINE} B",
                          why=" (one 16-byte read per consumer thread)")


def _counts(chunk_bytes, per_cta, ctas, R=1) -> None:
    """The sizes every feed function takes, one rule each (zero is refused: nothing to feed)."""
    _chunk(chunk_bytes)
    rules.positive("per_cta (chunks each CTA receives)", per_cta)
    rules.multiple("ctas", ctas, R, of_text=f"the cluster size {R}")


def _lines(lines, chunk_bytes) -> None:
    if lines is not None:
        rules.in_range(f"lines (the {LINE} B lines of each chunk the consumers read)", lines, 1,
                       chunk_bytes // LINE, f" for {chunk_bytes} B chunks")


def check_args(src_nbytes: int, R: int, mode: str, chunk_bytes: int, stages: int, per_cta: int,
               ctas: int, lines: int | None = None) -> None:
    """Raise ``ValueError`` naming the rule a feed launch would break (``TypeError`` for an
    argument of the wrong kind: None, a bool or a float where an int belongs)."""
    _cluster_mode(R, mode)
    _chunk(chunk_bytes)
    rules.in_range("stages", stages, 1, 8)
    need = stages * chunk_bytes + runtime.ALIGN_SLACK + STATIC_SMEM
    if need > runtime.MAX_SMEM:
        raise ValueError(f"{stages} stages of {chunk_bytes} B need {need} B of shared memory (with the "
                         f"alignment slack and the barriers); a block may use {runtime.MAX_SMEM} B")
    rules.multiple("the source's size (src.nbytes)", src_nbytes, chunk_bytes,
                   of_text=f"chunk_bytes ({chunk_bytes})")
    _counts(chunk_bytes, per_cta, ctas, R)
    _lines(lines, chunk_bytes)


def feed_launcher(src, R: int = 2, mode: str = "multicast", chunk_bytes: int = 16384, stages: int = 4,
                  per_cta: int = 32, ctas: int | None = None, lines: int | None = None):
    """``(launch, out, status)`` for the feed kernel on the contiguous fp16 CuPy array ``src``.
    ``ctas`` defaults to ``CTAS_PER_SM`` per SM (a multiple of 4); ``lines`` (default: all) is how
    many 2 KiB lines of each chunk the consumers read and sum (the copy lands the whole chunk
    either way).
    ``launch()`` enqueues one run; ``out`` (ctas x 128 float32) holds each consumer thread's sum;
    ``status`` is 1 after a timed-out wait."""
    import cupy as cp
    if src.dtype != cp.float16 or not src.flags.c_contiguous:
        raise ValueError(f"src must be a contiguous float16 array, got {src.dtype}"
                         f"{'' if src.flags.c_contiguous else ', not contiguous'}")
    runtime.check_aligned("src", src)
    ctas = CTAS_PER_SM * cp.cuda.Device().attributes["MultiProcessorCount"] if ctas is None else ctas
    check_args(src.nbytes, R, mode, chunk_bytes, stages, per_cta, ctas, lines)
    lines = chunk_bytes // LINE if lines is None else lines
    smem = stages * chunk_bytes + runtime.ALIGN_SLACK
    k = runtime.kernel(f"feed_c{R}", smem)
    out = cp.full((ctas, CONSUMERS), np.nan, dtype=cp.float32)
    status = runtime._status()
    args = (src, np.int64(src.nbytes // chunk_bytes), np.uint32(chunk_bytes), np.int32(stages), np.int32(per_cta),
            np.int32(lines), np.int32(MODES[mode]), out, status, np.uint64(runtime.TIMEOUT_NS))
    return (lambda: k((ctas,), (THREADS,), args, shared_mem=smem)), out, status


def feed_reference(src, R: int, chunk_bytes: int, per_cta: int, ctas: int, lines: int | None = None):
    """What ``out`` must hold (float64, ctas x 128): consumer thread ``t`` of a CTA in cluster
    ``c`` sums, over chunks ``(c * per_cta + i) mod n_chunks``, the 16-byte pieces ``t, t + 128, ...``
    of the first ``lines`` lines (default: all) of each chunk."""
    _cluster_mode(R)
    _counts(chunk_bytes, per_cta, ctas, R)
    _lines(lines, chunk_bytes)
    import cupy as cp
    n_chunks = src.nbytes // chunk_bytes
    lines = chunk_bytes // LINE if lines is None else lines
    per_thread = src.astype(cp.float64).reshape(n_chunks, chunk_bytes // LINE, CONSUMERS, 8)[:, :lines].sum(axis=(1, 3))
    clusters = ctas // R
    idx = (cp.arange(clusters)[:, None] * per_cta + cp.arange(per_cta)[None, :]) % n_chunks
    return cp.repeat(per_thread[idx].sum(axis=1), R, axis=0)


def delivered_bytes(chunk_bytes: int, per_cta: int, ctas: int) -> int:
    """Bytes landing in shared memory in one launch (the same with and without multicast)."""
    _counts(chunk_bytes, per_cta, ctas)
    return ctas * per_cta * chunk_bytes


def l2_bytes(R: int, mode: str, chunk_bytes: int, per_cta: int, ctas: int) -> int:
    """Bytes the CTAs request from L2: each chunk once per CTA, or once per cluster with multicast."""
    _cluster_mode(R, mode)
    _counts(chunk_bytes, per_cta, ctas, R)
    return delivered_bytes(chunk_bytes, per_cta, ctas) // (R if mode == "multicast" else 1)


REMOTE_ARRIVE_SASS = "SYNCS.ARRIVE.TRANS64.RED"    # an mbarrier arrive through a cluster address
FENCES_SASS = ("MEMBAR", "ERRBAR", "CGAERRBAR")


def release_sass(instructions: list) -> list:
    """The consumers' release of a stage in a feed kernel's SASS (``sass.instructions`` of one
    kernel): from the first remote arrive, with the fences just before it, to the last one. Both
    sides of the kernel's branch on ``mode == 3`` are there, each under its own predicate."""
    hits = [i for i, ins in enumerate(instructions) if REMOTE_ARRIVE_SASS in ins]
    if not hits:
        raise ValueError(f"no {REMOTE_ARRIVE_SASS} in these {len(instructions)} instructions: "
                         "feed_c1 has no remote arrive; pass feed_c2's or feed_c4's")
    start = hits[0]
    while start > 0 and any(f in instructions[start - 1] for f in FENCES_SASS):
        start -= 1
    return instructions[start:hits[-1] + 1]


def check_out(out, want, what: str = "feed") -> None:
    """Every thread's sum matches the float64 reference (fp32 accumulation tolerance); NaN = never written."""
    import cupy as cp
    o = out.astype(cp.float64)
    if bool(cp.isnan(o).any()):
        raise AssertionError(f"{what}: {int(cp.isnan(o).sum())} sums were never written (NaN)")
    bad = cp.abs(o - want) > 0.05 + 1e-4 * cp.abs(want)
    if bool(bad.any()):
        i = int(cp.argmax(bad.ravel()))
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} sums differ; first at CTA {i // CONSUMERS} "
                             f"thread {i % CONSUMERS}: {float(o.ravel()[i])} vs {float(want.ravel()[i])}")
