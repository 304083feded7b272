"""Exercise 6 of ``day02_pipelining/03_async_barriers``: the learner writes the producer/consumer
mbarrier ring, ``ring_kernel(x, y, n_vec, stages, work, status, timeout_ns)`` (warp 0 fills stage
``k % stages`` with ``cp.async`` and arrives on ``full``; warp 1 waits on ``full``, computes, stores and
releases the stage on ``empty``), and :func:`check_ring_kernel` runs it.

The run: stages = 1, 2, 3, 4 on the emulator, fresh random inputs, y poisoned with NaN, a length that
is not a whole number of 2 KiB tiles, copies landing as late as the rules allow and then in seeded
orders; every element compared with ``compute_ref``. The kernel's waits are bounded (the helper
``mbar_wait_bounded``): a hang fires them on the emulator's virtual clock, and the tiles the consumer
finished say which wait hung. A race is explained by a second run in which every copy lands at once:
right values then mean the ``full`` phase completed before the copies landed; a value from a later
tile means a stage was refilled before its release; an older value or none means the consumer did not
wait for the producer. On a GPU with cp.async and mbarrier (8.0+) the kernel also runs for real.
"""
from __future__ import annotations

import re

import numpy as np

from ..cuda_cpp import kernel_runs as kr
from ..core.checks import fail, not_attempted, passed, verified

NAME = "ring_kernel"
TILE = 128                                    # float4 per tile: 32 lanes x 4 (2 KiB)
CHECK_STAGES = (1, 2, 3, 4)
WORK, BLOCKS, TIMEOUT_NS = 3, 2, 10**9
STUB = r"""
extern "C" __global__ void ring_kernel(const float4* x, float4* y, long long n_vec, int stages, int work,
                                       int* status, unsigned long long timeout_ns) {
  extern __shared__ float4 ring[];                   // stages x 128 float4: stage s at ring + s * 128
  __shared__ __align__(8) unsigned long long full[8], empty[8];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;   // warp 0 produces, warp 1 consumes
  long long n_tiles = (n_vec + 127) / 128;
  long long mine = blockIdx.x < n_tiles ? (n_tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  // Tile k (k < mine): x[(blockIdx.x + k * gridDim.x) * 128 + j * 32 + lane], j < 4. Timeout: status = 1, return.
}"""
"""The kernel as handed out, up to comments and spacing: "not attempted"."""

HINTS = {
    "first_pass": "nothing was ever consumed: the producer's first wait on empty[s] must pass at once "
                  "(no consumer has released anything yet). Wait for the parity of the PREVIOUS use: "
                  "((k / stages) & 1) ^ 1, Exercise 5",
    "release": "the ring ran one pass and stopped: the producer's second use of a stage waits for the "
               "consumer's release. After reading stage s, every consumer lane arrives on empty[s] "
               "(mbar_arrive), 32 arrivals as its init says",
    "hang": "a wait never completed (neither the first pass nor the second): the parities are "
            "(k / stages) & 1 for the consumer on full[s] and that ^ 1 for the producer on empty[s], "
            "with s = k % stages; each barrier's init count is the arrivals one use receives (32)",
    "arrive": "full[s]'s phase completed before the copies landed: arrive with "
              "cp_async_arrive_noinc(full[s]) in every producer lane, which fires when that lane's "
              "copies have landed (an mbar_arrive right after the copies does not wait for them)",
    "reuse": "a stage was refilled while the consumer still read it: the producer waits on empty[s] "
             "before its copies, and the consumer arrives on empty[s] only after its last read of s",
    "consumer": "the consumer read a stage before the producer filled it: its wait on full[s] must "
                "block until data lands: parity (k / stages) & 1 (the first use waits for phase 0)",
    "count": "a barrier completed more phases than there are tiles: its init count must be the arrivals "
             "one use receives: 32 for full[s] (cp_async_arrive_noinc in each producer lane) and 32 for "
             "empty[s] (mbar_arrive in each consumer lane)",
    "init_count": "a barrier waits for more arrivals than one use makes (a whole warp arrived and the "
                  "phase is still short): init each of full[s] and empty[s] with the arrivals one use "
                  "receives, 32 (one per lane of the warp that arrives)",
    "init": "every full[s] and empty[s] is initialised (mbar_init, by one thread each, count 32) and "
            "then a __syncthreads() comes before any thread uses them",
    "modulo": "tile k uses stage s = k % stages (its data at ring + s * 128, its barriers full[s] and "
              "empty[s]), never k itself",
    "edge": "the last tile is partial: copy with valid = (v < n_vec), from an address inside x, and "
            "store y[v] only if v < n_vec",
}


def _run(unit, stages, n_vec, completion, seed, x=None):
    """(x, y, expected, status, report, error or None): one emulated launch of ring_kernel."""
    from ..cuda_cpp.day02 import compute_ref
    from ..emu import EmulatorError, device_empty, launch, to_device
    if x is None:
        x = to_device(np.random.default_rng().standard_normal(4 * n_vec).astype(np.float32))
    y, st = device_empty(x.shape, np.float32, np.nan), device_empty(1, np.int32, 0)
    rep = err = None
    try:
        rep = launch(unit, NAME, BLOCKS, 64, [x, y, n_vec, stages, WORK, st, TIMEOUT_NS],
                     shared_bytes=stages * TILE * 16, seed=seed, completion=completion, max_instructions=600_000)
    except EmulatorError as e:
        err = e
    return x, y, compute_ref(x, WORK), int(st[0]), rep, err


def _bad(y, want):
    return not np.allclose(y, want, atol=1e-5)


def _tiles_done(y, want, n_vec):
    """Per block, how many of its tiles (in its order k = 0, 1, ...) the consumer finished first."""
    ok = np.isclose(y, want, atol=1e-5).reshape(-1, 4).all(1)
    done = []
    for b in range(BLOCKS):
        k = 0
        while (b + k * BLOCKS) * TILE < n_vec and ok[(b + k * BLOCKS) * TILE:min((b + k * BLOCKS + 1) * TILE, n_vec)].all():
            k += 1
        done.append(k)
    return done


def _diagnose(unit, stages, n_vec, x, y, want, status, err, rep):
    from ..emu import Deadlock, MbarrierError, MemoryFault
    first = str(err).splitlines()[0] if err is not None else ""
    if isinstance(err, MemoryFault):
        return "modulo" if "shared" in first else "edge"
    if isinstance(err, MbarrierError):       # fine while no block wraps around the ring: the modulo
        short = TILE * BLOCKS * stages - 5
        runs = [_run(unit, stages, short, "adversarial", seed) for seed in range(4)]
        clean = all(e is None and not st and not _bad(y2, w2) for _, y2, w2, st, _, e in runs)
        return "modulo" if clean else "init"
    if status or isinstance(err, Deadlock):
        texts = " ".join(rep.deadlocks) if rep is not None else str(err)
        phases = [int(p) for p in re.findall(r"phase (\d+) \(parity", texts)]
        if phases and max(phases) > -(-n_vec // TILE // BLOCKS) + 1:
            return "count"
        short = [(int(p), int(c)) for p, c in re.findall(r"(\d+) of (\d+) arrivals pending", texts)]
        if any(c > 32 and c - p >= 32 for p, c in short):      # a warp arrived; the init asked for more
            return "init_count"
        done = _tiles_done(y, want, n_vec)
        if max(done) == 0:
            return "first_pass"
        return "release" if min(done) >= min(stages, n_vec // TILE // BLOCKS) and max(done) <= stages else "hang"
    seen = set()
    for seed in range(8):                   # every copy lands at once: whose value was read?
        x2, y2, want2, st2, _, e2 = _run(unit, stages, n_vec, "eager", seed)
        if e2 is None:
            seen.add((kr.source_of(y2, want2, x2, WORK) or "hang") if _bad(y2, want2) else "right")
    if "earlier" in seen:                   # older data or none: only a consumer that did not wait
        return "consumer"
    if "later" in seen:
        return "reuse"
    return "arrive" if err is not None else "reuse"


def check_ring_kernel(source, tier=None) -> None:
    """Compile and run the learner's ``ring_kernel`` (see module docstring); on a GPU with cp.async
    and mbarrier (``tier``), also run it there."""
    from ..cuda_cpp import day02
    source = kr.need_source(NAME, source)
    if kr.same_as_stub(source, STUB):
        return not_attempted(NAME)
    unit = day02.learner_unit(source)
    ptx = kr.compile_ptx(NAME, unit)
    if f".entry {NAME}(" not in ptx:
        fail(NAME, f"your source has no kernel named {NAME}", 'keep the line extern "C" __global__ void '
             f"{NAME}(...) as handed out")
    for i, stages in enumerate(CHECK_STAGES):
        n_vec = TILE * (BLOCKS * (2 * stages + 1) + i) + 29 + 2 * i      # never a whole number of tiles
        for completion, seed in (("lazy", 0), ("adversarial", 1), ("adversarial", 2)):
            x, y, want, status, rep, err = _run(unit, stages, n_vec, completion, seed)
            if err is not None or status or _bad(y, want):
                slip = _diagnose(unit, stages, n_vec, x, y, want, status, err, rep)
                _fail(stages, n_vec, x, y, want, status, rep, err, slip)
    where = "on the emulator"
    if kr.gpu_can_run(tier):
        _check_on_gpu(unit)
        where += " and on this GPU"
    elif tier is not None and tier.has_gpu:
        verified(NAME, "(not run on this GPU: cp.async and mbarrier need compute capability 8.0)")
    return passed(NAME, f"stages = {', '.join(map(str, CHECK_STAGES))}: every element right {where}, no hang, "
                  f"no race. ({kr.LABEL}.)")


def _fail(stages, n_vec, x, y, want, status, rep, err, slip):
    launched = (f"ring_kernel on the emulator: {BLOCKS} blocks x 64 threads, stages = {stages}, n_vec = {n_vec} "
                f"float4 ({n_vec // TILE} whole tiles + {n_vec % TILE}), work = {WORK}")
    if err is not None:
        fail(NAME, f"with stages = {stages}: {str(err).splitlines()[0][len('emulator: '):]}", HINTS[slip], launched)
    if status:
        hung = rep.deadlocks[0].splitlines()[1].strip() if rep and rep.deadlocks else "a wait"
        done = _tiles_done(y, want, n_vec)
        fail(NAME, f"with stages = {stages}: a bounded wait timed out on the emulator's virtual clock after "
             f"the consumer finished {done} tiles per block; {hung}", HINTS[slip], launched)
    wrong = np.flatnonzero(~np.isclose(y, want, atol=1e-5))
    i = int(wrong[0])
    fail(NAME, f"with stages = {stages}: {wrong.size} of {y.size} elements wrong, first at index {i}: yours "
         f"{y[i]!r}, expected {float(want[i])!r}", HINTS[slip], launched)


def _check_on_gpu(unit) -> None:
    """Run ring_kernel on the GPU (one block per SM, bounded waits of 0.2 s) at a ragged length."""
    import cupy as cp
    from ..cuda_cpp import day02
    mod = cp.RawModule(code=unit, options=("-std=c++17",))
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    for stages in CHECK_STAGES:
        n_vec = TILE * (sms * (2 * stages + 3) + 1) + 29
        x = cp.random.standard_normal(4 * n_vec, dtype=cp.float32)
        y, status = cp.full_like(x, cp.nan), cp.zeros(1, cp.int32)
        mod.get_function(NAME)((sms,), (64,), (x, y, np.int64(n_vec), np.int32(stages), np.int32(WORK), status,
                                               np.uint64(200_000_000)), shared_mem=stages * TILE * 16)
        launched = f"ring_kernel on the GPU, {sms} blocks x 64 threads, stages = {stages}, n_vec = {n_vec}"
        if int(status.get()[0]):
            fail(NAME, "a bounded wait timed out on the GPU (0.2 s)", HINTS["hang"], launched)
        bad = ~cp.isclose(y, day02.compute_ref(x, WORK), atol=1e-5)
        if bool(bad.any()):
            fail(NAME, f"on the GPU: {int(bad.sum())} of {y.size} elements wrong, first at "
                 f"{int(cp.flatnonzero(bad)[0])}", HINTS["reuse"], launched)
