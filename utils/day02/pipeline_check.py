"""Exercise 4 of ``day02_pipelining/02_software_pipelining``: the learner writes the ``cp.async`` ring,
``template <int S> pipeline(x, y, n_vec, work)`` (the contract of ``day02.cu``'s ``pipeline<S>``), and
:func:`check_pipeline_kernel` runs it.

The run: the kernel compiled for S = 2, 4, 3, 5 (a power of two first, then two that are not), each on
the emulator with fresh random inputs, y poisoned with NaN, a length that is not a whole number of
tiles, copies landing as late as the rules allow (a read before its copy landed is a race) and then in
seeded adversarial orders; every element compared with ``compute_ref``. A failure is explained by a
second experiment, not guessed: the same kernel with ONE warp (each thread then reads only its own
copies, so block barriers cannot matter), and with every copy landing at once (only an overwritten
stage can then be wrong). Then its PTX: a ring of S stages keeps S-2 or more copy groups pending at its
wait. On a GPU with cp.async (8.0+) the kernel also runs for real, at a larger size.
"""
from __future__ import annotations

import numpy as np

from ..cuda_cpp import kernel_runs as kr
from ..core.checks import fail, not_attempted, passed, verified

NAME = "pipeline_kernel"
CHECK_STAGES = (2, 4, 3, 5)
WORK, THREADS, BLOCKS = 3, 64, 2
STUB = r"""
template <int S>
__device__ __forceinline__ void pipeline(const float4* x, float4* y, long long n_vec, int work) {
  extern __shared__ float4 ring[];            // S stages of T float4: stage s is ring[s * T .. s * T + T - 1]
  const int T = blockDim.x, tid = threadIdx.x, peer = (tid + 32) % T;   // use a NEIGHBOUR's element
  long long n_tiles = (n_vec + T - 1) / T;
  long long mine = blockIdx.x < n_tiles ? (n_tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  // This block's tile k (k = 0 .. mine - 1) holds x[(blockIdx.x + k * gridDim.x) * T + 0 .. T - 1].
}"""
"""The kernel as handed out, up to comments and spacing: "not attempted"."""
FOOTER = "".join(f'extern "C" __global__ void learner_pipeline_s{s}(const float4* x, float4* y, long long n, '
                 f'int w) {{ pipeline<{s}>(x, y, n, w); }}\n' for s in CHECK_STAGES)

HINTS = {
    "modulo": "tile k lives in stage k % S: index the ring with (k % S) * T, never k * T (the ring "
              "has S stages, the loop runs over every tile)",
    "pow2": "right for S = 2 and 4, wrong for 3 or 5: k & (S - 1) is k % S only when S is a power "
            "of two; use k % S",
    "wait": "in ONE warp, a thread read tile k while its own copy group could still be in flight: "
            "count the groups committed before the wait (the prologue's S - 1, then one per "
            "iteration, empty ones included) and wait with the N that leaves tile k's group done "
            "(cp_async_wait<S - 2> before issuing the next tile, <S - 1> after it); is the "
            "prologue one stage short?",
    "values": "in ONE warp, with every copy landed, tiles come out wrong: check which tile each "
              "iteration issues (k + S - 1), into which stage ((k + S - 1) % S), that the prologue "
              "issues tiles 0 .. S - 2, and that tile k's values go to y[(blockIdx.x + k * gridDim.x) "
              "* T + peer]",
    "read": "each thread reads a NEIGHBOUR's element: its own cp_async_wait says nothing about the "
            "neighbour's copies. __syncthreads() after the wait, before the read",
    "overwrite": "a stage was refilled while another warp still read it: every thread must be past "
                 "its last read of stage s (a __syncthreads()) before a copy into s is issued",
    "edge": "the last tile is partial (n_vec is not a whole number of tiles): copy with valid = (v < "
            "n_vec), which zero-fills, from an address inside x, and store y[o] only if o < n_vec",
    "both": "threads read their neighbours' elements: after the wait, a __syncthreads() before the "
            "read (the neighbour's copies landed), and every thread past its last read of a stage "
            "(a __syncthreads()) before a copy into that stage is issued",
    "barrier": "a __syncthreads() that not every thread of the block reaches (inside an if, or a "
               "loop whose trip count differs between threads) hangs the block",
}


def _run(unit, S, n_vec, threads, completion, seed, x=None):
    """(y, expected, error or None): one emulated launch of learner_pipeline_s{S}."""
    from ..cuda_cpp.day02 import compute_ref
    from ..emu import EmulatorError, device_empty, launch, to_device
    if x is None:                               # fresh data for the check itself
        x = to_device(np.random.default_rng().standard_normal(4 * n_vec).astype(np.float32))
    y = device_empty(x.shape, np.float32, np.nan)
    try:
        launch(unit, f"learner_pipeline_s{S}", BLOCKS, threads, [x, y, n_vec, WORK], shared_bytes=S * threads * 16,
               seed=seed, completion=completion, max_instructions=400_000)
        err = None
    except EmulatorError as e:
        err = e
    return y, compute_ref(x, WORK), err


def _bad(y, want):
    return not np.allclose(y, want, atol=1e-5)


def _diagnose(unit, S, n_vec, err):
    """The slip, from the first failure and two more experiments (see module docstring)."""
    from ..emu import Deadlock, MemoryFault, RaceError, to_device
    first = str(err).splitlines()[0] if err is not None else ""
    if isinstance(err, MemoryFault):
        return "modulo" if "shared bytes" in first else "edge"
    if isinstance(err, Deadlock) and "bar.sync" in str(err):
        return "barrier"
    for seed in range(3):                     # one warp: peer == tid, barriers cannot matter
        y, want, e = _run(unit, S, n_vec, 32, "lazy" if seed == 0 else "adversarial", seed)
        if isinstance(e, RaceError):
            return "wait"
        if e is None and _bad(y, want):
            return "values"
    seen = set()
    for seed in range(8):                     # every copy lands at once: whose value was read?
        x = to_device(np.random.default_rng(seed).standard_normal(4 * n_vec).astype(np.float32))   # seeded: the same
        # diagnosis every run (unseeded, one CI run in many got another hint for a dropped __syncthreads)
        y, want, e = _run(unit, S, n_vec, THREADS, "eager", seed, x)
        if e is None and _bad(y, want):
            seen.add(kr.source_of(y, want, x, WORK) or "earlier")
    return {frozenset({"later"}): "overwrite", frozenset({"earlier"}): "read"}.get(frozenset(seen), "both")


def _fail_run(S, n_vec, err, y, want, slip, passed_stages):
    launched = (f"learner_pipeline_s{S} on the emulator: {BLOCKS} blocks x {THREADS} threads, n_vec = {n_vec} "
                f"float4 ({n_vec // THREADS} whole tiles + {n_vec % THREADS}), work = {WORK}")
    if S in (3, 5) and {2, 4} <= set(passed_stages):
        slip = "pow2"
    if err is not None:
        fail(NAME, f"with S = {S}: {str(err).splitlines()[0][len('emulator: '):]}", HINTS[slip], launched)
    nan = np.isnan(y)
    wrong = np.flatnonzero(~np.isclose(y, want, atol=1e-5) | nan)
    i = int(wrong[0])
    what = f"{int(nan.sum())} elements never written, " if nan.any() else ""
    fail(NAME, f"with S = {S}: {what}{wrong.size} of {y.size} elements wrong; first at index {i}: yours "
         f"{y[i]!r}, expected {float(want[i])!r}", HINTS[slip], launched)


def check_pipeline_kernel(source, tier=None) -> None:
    """Compile and run the learner's ``pipeline<S>`` (see module docstring); on a GPU with cp.async
    (``tier``), also run it there."""
    from ..cuda_cpp import day02
    from ..core.ptx_paths import kernel_body
    source = kr.need_source(NAME, source)
    if kr.same_as_stub(source, STUB):
        return not_attempted(NAME)
    unit = day02.learner_unit(source, FOOTER)
    ptx = kr.compile_ptx(NAME, unit)
    bodies = {s: kernel_body(ptx, f"learner_pipeline_s{s}") for s in CHECK_STAGES}
    if not all("cp.async.cg.shared.global" in b or "cp.async.ca.shared.global" in b for b in bodies.values()):
        fail(NAME, "your kernel issues no cp.async copy", "fill each stage with cp_async16(&stage[tid], "
             "source, valid): the copy goes to shared memory without passing through registers")
    ok = []
    for i, S in enumerate(CHECK_STAGES):
        n_vec = THREADS * (3 * S + 3 + i) + 13 + 6 * i        # never a whole number of tiles
        for completion, seed in (("lazy", 0), ("adversarial", 1), ("adversarial", 2)):
            y, want, err = _run(unit, S, n_vec, THREADS, completion, seed)
            if err is not None or _bad(y, want):
                _fail_run(S, n_vec, err, y, want, _diagnose(unit, S, n_vec, err), ok)
        ok.append(S)
    shallow = [(s, max(kr.wait_constants(b), default=0)) for s, b in bodies.items()
               if max(kr.wait_constants(b), default=0) < s - 2]
    if shallow:
        s, n = shallow[0]
        fail(NAME, f"right values, but with S = {s} your wait leaves at most {n} copy group(s) in flight "
             f"(cp.async.wait_group {n}): a ring of {s} stages should keep {s - 1} tiles loading",
             "wait only for the tile you are about to use: cp_async_wait<S - 2> before issuing the next "
             "tile (or <S - 1> after issuing and committing it)")
    where = "on the emulator"
    if kr.gpu_can_run(tier):
        _check_on_gpu(unit)
        where += " and on this GPU"
    elif tier is not None and tier.has_gpu:
        verified(NAME, "(not run on this GPU: cp.async needs compute capability 8.0)")
    return passed(NAME, f"S = {', '.join(map(str, CHECK_STAGES))}: every element right {where}, no race. "
                  f"({kr.LABEL}.)")


def _check_on_gpu(unit) -> None:
    """Run learner_pipeline_s{S} on the GPU at a size that is not a whole number of 256-thread tiles."""
    import cupy as cp
    from ..cuda_cpp import day02
    mod = cp.RawModule(code=unit, options=("-std=c++17",))
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    for S in CHECK_STAGES:
        n_vec = 256 * (3 * sms * S + 1) + 37
        x = cp.random.standard_normal(4 * n_vec, dtype=cp.float32)
        y = cp.full_like(x, cp.nan)
        mod.get_function(f"learner_pipeline_s{S}")((sms,), (256,), (x, y, np.int64(n_vec), np.int32(WORK)),
                                                   shared_mem=S * 256 * 16)
        bad = ~cp.isclose(y, day02.compute_ref(x, WORK), atol=1e-5)
        if bool(bad.any()):
            i = int(cp.flatnonzero(bad)[0])
            fail(NAME, f"on the GPU with S = {S}: {int(bad.sum())} of {y.size} elements wrong, first at {i}",
                 "the emulator passed it: a race its orders missed? Compare your barriers with the hints "
                 "of this check", f"learner_pipeline_s{S}, {sms} blocks x 256 threads, n_vec = {n_vec}")
