"""One benchmark harness for every comparison in the course.

Rules it enforces (see COURSE_DESIGN.md):

* every contender gets the *same* inputs, drawn from a normal distribution (``randn``);
* each contender's output is checked against the reference contender before it is timed;
* **sustained** timing, the figure the course reports: after a warm-up (at least ``warmup``
  calls and ``warmup_ms`` of work, as ``triton.testing.do_bench``), repetitions are queued
  back to back, each between two CUDA events, the L2 cache flushed before each one (by
  writing a 256 MiB buffer, outside the events; ``flush_by="read"`` reads it instead, which
  made 128 MiB copies 4-8% faster in the lab report 05b §1.3, where ncu counts the written lines
  going to DRAM inside the next timed call); the GPU never idles between them, so clocks are
  what a user's steady workload gets. (``timing="burst"``, the course's old figure, spins the
  GPU ~1 ms before each repetition and waits after it: a cold-start figure that hides host
  launch overhead; use it only where that is the lesson, and say so.) Each sustained row also says whether the host kept up (``host_bound``, see
  :func:`host_pace`): a kernel shorter than its own launch overhead is timed with that overhead.
* contenders are timed in **blocks** (``pacing="blocks"``, the default since 2026-11-27): each
  round times every contender in turn, ``reps_per_round`` calls of one back to back, each block
  after ``settle_ms`` of that contender's own untimed calls, so its clock is the one its own power
  draw leaves (as ``triton.testing.do_bench`` times it) and clock or thermal drift still hits all
  contenders alike, round by round. The older ``pacing="turns"`` (A, B, C, A, B, C, ...) times a
  contender at the clock its *neighbours'* power leaves: on an H100 at the 700 W limit cuDNN's
  attention read about 10% faster with turns than alone, beside an idle spin or a copy, and not
  beside a kernel drawing as much power (``utils.day05.harness_study``, issue 40), so ratios
  between kernels of different power draw depend on the pacing. Recordings made before the
  change carry no ``pacing`` key: they were taken with turns;
* each row's ``ratio`` to the reference is the median of the per-round ratios, reported with
  their spread (``ratio_lo``, ``ratio_hi``: the lowest and highest round). A claim such as
  "A >= cuBLAS" holds only if it holds beyond that spread: ``verdict`` / ``holds``
  (``utils.core.spread``, importable from here too).

Rows are plain dicts in the results file format (see ``utils.core.results``), so they can be
recorded as they are.
"""
from __future__ import annotations

import math
import statistics
from typing import Callable

from .spread import describe, holds, ratio_between, verdict  # noqa: F401  (claims beyond the spread)

METRICS = {"GB/s": 1e9, "TFLOP/s": 1e12}
TIMINGS = ("sustained", "burst")


def randn(shape, dtype, device, seed: int | None = None):
    """A tensor of standard-normal values (never zeros or small integers: they run faster)."""
    import torch
    if not isinstance(shape, (tuple, list)) or not all(isinstance(s, int) and s > 0 for s in shape):
        raise ValueError(f"shape must be a tuple of positive ints, got {shape!r}")
    gen = None
    if seed is not None:
        gen = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(*shape, dtype=torch.float32, device=device, generator=gen).to(dtype)


def _require_gpu():
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("timing needs a CUDA GPU (CUDA events); on the cpu tier show the "
                           "recorded results instead (utils.core.results.load)")


FLUSH_BY = ("write", "read")   # how the 256 MiB scratch evicts L2: overwrite it, or read it


def _check_flush_by(flush_by) -> None:
    if flush_by not in FLUSH_BY:
        raise ValueError(f"flush_by must be one of {FLUSH_BY}, got {flush_by!r}")


class CudaClock:
    """Times one call of ``fn`` between CUDA events, the L2 flushed first (outside the events).

    ``sustained``: nothing waits; ``read`` synchronizes once. ``burst``: a ~1 ms GPU spin before
    and a wait after each call (the GPU idles between repetitions).
    """

    def __init__(self, flush_l2: bool = True, timing: str = "sustained", flush_by: str = "write"):
        import torch
        _check_flush_by(flush_by)
        self.torch, self.timing, self.flush_by = torch, timing, flush_by
        self.scratch = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda") if flush_l2 else None

    def flush(self) -> None:
        """Evict L2 by writing the scratch (L2 left holding its dirty lines) or reading it (clean
        lines); nothing when built with ``flush_l2=False``."""
        if self.scratch is not None and self.flush_by == "write":
            self.scratch.zero_()
        elif self.scratch is not None:
            self.scratch.view(self.torch.int32).max()

    def time(self, fn):
        import time
        cuda = self.torch.cuda
        t0 = time.perf_counter()
        rep = cuda.Event(enable_timing=True)          # the repetition, flush included (for pace)
        rep.record()
        self.flush()
        if self.timing == "burst":
            cuda._sleep(2_000_000)
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        host = time.perf_counter() - t0
        if self.timing == "burst":
            end.synchronize()
        return start, end, rep, host

    def read(self, handles) -> list:
        self.torch.cuda.synchronize()
        return [h[0].elapsed_time(h[1]) for h in handles]

    def pace(self, handles) -> list:
        """``[(GPU ms of the whole repetition, flush included; host ms spent issuing it)]``. When the
        host needs as long as the GPU, the GPU waited for it inside the timed interval."""
        self.torch.cuda.synchronize()
        return [(h[2].elapsed_time(h[1]), h[3] * 1e3) for h in handles]


ORDERS = ("fixed", "alternate")
PACINGS = ("blocks", "turns")


def _check_order(order) -> None:
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")


def _check_pacing(pacing) -> None:
    if pacing not in PACINGS:
        raise ValueError(f"pacing must be one of {PACINGS}, got {pacing!r}")


def schedule(names, rounds: int, reps_per_round: int, order: str = "fixed", pacing: str = "turns") -> list:
    """The order of timed calls, ``[(round, name), ...]``. ``pacing="turns"``: contenders take
    turns (A, B, C, A, B, C, ...), ``reps_per_round`` turns make one round; ``"blocks"``: each
    round is A's ``reps_per_round`` calls, then B's, then C's. With ``order="alternate"`` the odd
    rounds go through the contenders in reverse (C, B, A, ...), so each contender runs after a
    different one than in the even rounds: a test of whether what runs just before a call shifts
    its time (where rounds meet, one contender runs twice in a row). Rotating the start of each
    round would not do: A would still always follow C."""
    _check_order(order)
    _check_pacing(pacing)
    names = list(names)
    seq = lambda r: names[::-1] if order == "alternate" and r % 2 else names       # noqa: E731
    if pacing == "blocks":
        return [(r, n) for r in range(rounds) for n in seq(r) for _ in range(reps_per_round)]
    return [(r, n) for r in range(rounds) for _ in range(reps_per_round) for n in seq(r)]


def run_interleaved(fns: dict, *, rounds: int, reps_per_round: int, warmup: int = 5, warmup_ms: float = 25.0,
                    clock=None, pace: dict | None = None, order: str = "fixed", pacing: str = "blocks",
                    settle_ms: float = 50.0) -> dict:
    """Warm up, then time ``fns`` (``{name: fn()}``) in rounds (``order`` and ``pacing``: see
    :func:`schedule`). With ``pacing="blocks"`` each block of one contender's calls starts after
    ``settle_ms`` of its own untimed calls (the same flush and call as a timed one), so the GPU's
    clock has settled to that contender's power draw (``settle_ms=0``: no settling).

    Returns ``{name: [[ms, ...] per round]}``. ``clock`` (default ``CudaClock()``) has
    ``time(fn) -> handle`` and ``read([handle]) -> [ms]``; if it also has ``pace`` and a dict
    ``pace`` is given, it is filled with ``{name: [(GPU ms per repetition, host ms), ...]}`` from
    :data:`PACE_REPS` more repetitions of each contender, issued after the timed ones onto a drained
    queue. Not from the timed repetitions: once a host that is *faster* than the GPU has filled the
    launch queue, each launch waits for a free slot, and its host time then equals the GPU's (every
    contender would read host-bound, cuBLAS included: issue 40).
    """
    _check_order(order)
    _check_pacing(pacing)
    if not (isinstance(settle_ms, (int, float)) and settle_ms >= 0):
        raise ValueError(f"settle_ms must be a number >= 0, got {settle_ms!r}")
    clock = clock or CudaClock()
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    settle = pacing == "blocks" and settle_ms > 0
    if warmup_ms > 0 or settle:  # one timed call each: how long a call takes
        each = dict(zip(fns, clock.read([clock.time(fn) for fn in fns.values()])))
    if warmup_ms > 0:  # keep going until the GPU has worked ~warmup_ms: sustained clocks
        one_round = sum(each.values())
        for _ in range(min(10_000, math.ceil(warmup_ms / max(one_round, 1e-3)))):
            for fn in fns.values():
                fn()
    handles = {n: [[] for _ in range(rounds)] for n in fns}
    previous = None
    for r, name in schedule(list(fns), rounds, reps_per_round, order, pacing):
        if settle and name != previous:          # a new block: this contender alone, untimed, first
            for _ in range(min(10_000, math.ceil(settle_ms / max(each[name], 1e-3)))):
                clock.time(fns[name])
        previous = name
        handles[name][r].append(clock.time(fns[name]))
    times = {n: [clock.read(block) for block in blocks] for n, blocks in handles.items()}
    if pace is not None and hasattr(clock, "pace"):
        for name, fn in fns.items():             # issued onto an idle GPU: the host's own time
            clock.read([])                       # drain the queue (CudaClock.read synchronizes)
            pace[name] = clock.pace([clock.time(fn) for _ in range(PACE_REPS)])
    return times


PACE_FROM = "drained queue"   # rows' ``host_pace``: how host_bound was read (rows without it: from the timed
                              # repetitions, before 2026-11-27 evening, when a full queue made it read True)
PACE_REPS = 8        # repetitions issued onto a drained queue to read the host's pace (few: the queue never fills)
HOST_BOUND = 0.9     # host time per repetition at least this share of the GPU's: the GPU waited for it


def host_pace(pace: list) -> dict:
    """Row keys from one contender's ``pace`` samples: the medians ``gpu_ms_per_rep`` (flush
    included) and ``host_ms_per_rep``, and ``host_bound``: True when issuing a repetition took the
    host at least :data:`HOST_BOUND` of the GPU's time for it. In sustained timing the GPU then
    ran out of queued work, and the wait for the host falls inside the timed interval, so the
    row's time includes host overhead (time such a kernel with fewer host calls, e.g. a CUDA graph)."""
    if not pace or not all(len(p) == 2 and p[0] >= 0 and p[1] >= 0 for p in pace):
        raise ValueError("pace must be a non-empty list of (GPU ms >= 0, host ms >= 0) pairs")
    gpu, host = statistics.median(p[0] for p in pace), statistics.median(p[1] for p in pace)
    return {"gpu_ms_per_rep": gpu, "host_ms_per_rep": host, "host_bound": bool(host >= HOST_BOUND * gpu),
            "host_pace": PACE_FROM}


def as_graph(fn):
    """Capture ``fn()`` (every kernel it launches, allocations included) in a CUDA graph; return
    ``(replay, out)``: ``replay()`` re-runs the kernels and returns ``out``, the tensor the
    captured call returned. The host's launch work is paid once, at capture, and a replay costs
    the host a few microseconds whatever ``fn`` does in Python (decode-time inference runs its
    layers this way). ``fn`` runs once before the capture (compile, warm up), on the capture's stream.
    ``replay`` holds ``fn``: a graph keeps the addresses it captured, not the tensors, so inputs that
    only ``fn`` referenced would otherwise be freed and their memory handed to the next allocation."""
    import torch
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    _require_gpu()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()                                     # compile and warm up outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            out = fn()
    torch.cuda.current_stream().wait_stream(stream)

    def replay():
        graph.replay()
        return out
    replay.fn = fn       # the graph reads the memory of what fn closes over (its inputs): keep it alive
    return replay, out


def graphed(fns: dict) -> dict:
    """``{name: replay}``: each of ``fns`` captured in a CUDA graph (:func:`as_graph`), so every
    contender costs the host the same few microseconds per call, whatever its Python launcher does
    (rows timed so should say ``launch=LAUNCH_GRAPH``)."""
    return {name: as_graph(fn)[0] for name, fn in fns.items()}


LAUNCH_GRAPH = "CUDA graph replay"
# The day this harness began timing each contender in a block of its own calls (graph replays for the
# GEMMs, do_bench beside): a notebook whose claims describe that method shows recordings made since
# (``results.record_or_load(..., since=bench.BLOCKS_SINCE)``); older ones read cuDNN and others differently.
BLOCKS_SINCE = "2026-11-27"


def host_us_per_call(fn, calls: int = 200) -> float:
    """Host (CPU) microseconds one call of ``fn`` takes to return: the launch's Python and driver
    work, not the kernel (synchronized before and after; ``calls`` launches are too few to fill
    the GPU's launch queue, so no call waits for room in it)."""
    import time
    import torch
    if not (type(calls) is int and 1 <= calls <= 500):          # bools refused
        raise ValueError(f"calls must be an int in 1..500 (more could fill the launch queue), got {calls!r}")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6


def host_us(fns: dict, calls: int = 50) -> dict:
    """``{name: host µs per direct call}`` (:func:`host_us_per_call`) of each of ``fns``, each
    called once first: a first call pays one-time work (compiling, cuBLAS's heuristics)."""
    for fn in fns.values():
        fn()
    return {name: host_us_per_call(fn, calls) for name, fn in fns.items()}


def _check_counts(warmup, reps, rounds=1):
    if not (isinstance(warmup, int) and warmup >= 0 and isinstance(reps, int) and reps >= 1):
        raise ValueError(f"need warmup >= 0 and reps >= 1, got warmup={warmup!r}, reps={reps!r}")
    if not (isinstance(rounds, int) and 1 <= rounds <= reps):
        raise ValueError(f"need 1 <= rounds <= reps, got rounds={rounds!r}, reps={reps!r}")


def _check_timing(timing):
    if timing not in TIMINGS:
        raise ValueError(f"timing must be one of {TIMINGS}, got {timing!r}")


def time_ms(fn: Callable[[], object], *, warmup: int = 5, reps: int = 30, flush_l2: bool = True,
            timing: str = "sustained", warmup_ms: float = 25.0) -> dict:
    """Time ``fn()`` alone: ``{"median", "min", "max", "reps", "timing"}`` in milliseconds.

    ``timing="sustained"`` (default) queues the ``reps`` repetitions back to back, as
    ``triton.testing.do_bench``; ``"burst"`` idles the GPU around each (see the module doc).
    With ``flush_l2`` a 256 MiB buffer is overwritten before each repetition.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    _check_counts(warmup, reps)
    _check_timing(timing)
    _require_gpu()
    clock, pace = CudaClock(flush_l2, timing), {}
    times = run_interleaved({"fn": fn}, rounds=1, reps_per_round=reps, warmup=warmup,
                            warmup_ms=warmup_ms, clock=clock, pace=pace)["fn"][0]
    out = {"median": statistics.median(times), "min": min(times), "max": max(times),
           "reps": reps, "timing": timing}
    if timing == "sustained" and pace.get("fn"):
        out.update(host_pace(pace["fn"]))
    return out


def throughput(amount: float, ms: float, metric: str) -> float:
    """``amount`` bytes (GB/s) or flops (TFLOP/s) done in ``ms`` milliseconds."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    if amount <= 0 or ms <= 0:
        raise ValueError(f"amount and ms must be positive, got amount={amount}, ms={ms}")
    return amount / (ms * 1e-3) / METRICS[metric]


def summarize(samples: dict, *, reference: str, metric: str, amount: float) -> list:
    """Rows from ``{name: [[ms, ...] per round]}`` (the output of ``run_interleaved``).

    ``ms`` is the median of all repetitions, ``value`` the throughput at ``ms``, ``ms_rounds``
    each round's median; ``ratio`` the median over rounds of (reference's round median / this
    contender's), ``ratio_lo`` / ``ratio_hi`` the lowest and highest of those per-round ratios.
    """
    if reference not in samples:
        raise ValueError(f"reference {reference!r} is not a contender; have {list(samples)}")
    per_round = {n: [statistics.median(b) for b in blocks] for n, blocks in samples.items()}
    ref = per_round[reference]
    rows = []
    for name, rounds in per_round.items():
        if len(rounds) != len(ref) or not all(t > 0 for t in rounds):
            raise ValueError(f"{name}: need positive times for each of the {len(ref)} rounds")
        ratios = [r / t for r, t in zip(ref, rounds)]
        ms = statistics.median([t for b in samples[name] for t in b])
        rows.append({"name": name, "metric": metric, "ms": ms, "value": throughput(amount, ms, metric),
                     "ratio": statistics.median(ratios), "ratio_lo": min(ratios), "ratio_hi": max(ratios),
                     "rounds": len(rounds), "ms_rounds": rounds})
    ref_value = next(r["value"] for r in rows if r["name"] == reference)
    for row in rows:
        row.update(reference=reference, reference_value=ref_value)
    return rows


def do_bench_rows(fns: dict, reference: str, timer: Callable) -> dict:
    """``{name: row keys}`` from a second timer (``timer(fn) -> ms``, e.g. one do_bench window per
    call): each contender's window sits between two of the reference's (reference, A, reference,
    B, reference, ...), and its ``do_bench_ratio`` is the geometric mean of the two reference
    windows over its own (``do_bench_ref_ms``: those two). One reference window for all would put
    its drift into every ratio at once: at 4096³ on an H100 at the power limit one such window
    read cuBLAS ~9% faster than the rounds around it, and every contender's ratio ~9% low (issue 40).
    The reference's own ``do_bench_ms`` is the median of its windows."""
    if reference not in fns:
        raise ValueError(f"reference {reference!r} is not a contender; have {list(fns)}")
    ref_ms = [timer(fns[reference])]
    out = {}
    for name, fn in fns.items():
        if name == reference:
            continue
        ms = timer(fn)
        ref_ms.append(timer(fns[reference]))
        around = ref_ms[-2:]
        out[name] = {"do_bench_ms": ms, "do_bench_ratio": math.sqrt(around[0] * around[1]) / ms,
                     "do_bench_ref_ms": around}
    out[reference] = {"do_bench_ms": statistics.median(ref_ms), "do_bench_ratio": 1.0}
    return out


def compare_replayed(contenders: dict, **kw) -> list:
    """:func:`compare` (no inputs: each contender closes over its own) with every contender timed as
    a CUDA-graph replay (:func:`graphed`). Each is first called directly (:func:`host_us`: that also
    compiles and warms it), and its rows carry ``launch=LAUNCH_GRAPH`` and ``host_us_per_call``, what
    one direct call costs the host (a CuteDSL launch from Python costs about a 4096³ GEMM)."""
    host = host_us(contenders)
    rows = compare(lambda: (), graphed(contenders), **kw)
    for row in rows:
        row.update(launch=LAUNCH_GRAPH, host_us_per_call=host[row["name"]])
    return rows


def compare(make_inputs: Callable[[], tuple], contenders: dict, *, reference: str, metric: str,
            amount: float, shape, dtype: str, check: Callable | None = None,
            reset: Callable | None = None, warmup: int = 5, reps: int = 50, rounds: int | None = None,
            flush_l2: bool = True, timing: str = "sustained", warmup_ms: float = 25.0,
            flush_by: str = "write", order: str = "fixed", pacing: str = "blocks",
            settle_ms: float = 50.0, do_bench: bool = False) -> list[dict]:
    """Benchmark every contender on the same inputs, in rounds, and return result rows.

    ``make_inputs()`` builds the inputs once; each contender is called as ``fn(*inputs)``.
    ``reference`` names the contender the ratios are taken against. ``check(name, out, ref_out)``
    (optional) must raise if a contender's output is wrong: correctness before speed.
    When contenders write into a shared output buffer, ``ref_out`` IS that buffer: compare
    with values computed from the inputs instead, and pass ``reset()`` (e.g. fill the output
    with NaN), which runs before each contender's checked call, so one that writes nothing fails.
    ``reps`` timed calls per contender are split over ``rounds`` interleaved rounds (default
    ``min(10, reps)``; see ``summarize`` for the row keys); ``timing`` is "sustained" (the
    figure the course reports) or "burst" (say so where it is shown). ``flush_by`` says how the
    L2 is flushed before each call: "write" (overwrite a 256 MiB buffer, which leaves L2 holding
    dirty lines) or "read" (read it: clean lines); rows record a read flush as ``flush_by``.
    ``order`` is "fixed" (the same turn order every round) or "alternate" (odd rounds reversed,
    see :func:`schedule`); rows record an alternate order as ``order``. ``pacing`` ("blocks", the
    default, each block after ``settle_ms`` of the contender alone; or "turns") is recorded as
    ``pacing`` (see :func:`run_interleaved` and the module doc). ``do_bench=True`` adds a second
    opinion to every row: ``triton.testing.do_bench``'s median (``do_bench_ms``, warm-up 25 ms,
    100 ms of repetitions) and the ratio it gives (``do_bench_ratio``: the reference's do_bench
    windows just before and after this contender's over this contender's, :func:`do_bench_rows`),
    which the recordings' test holds inside the harness's spread, widened by 3%.
    """
    if not isinstance(contenders, dict) or not contenders:
        raise TypeError("contenders must be a non-empty dict {name: fn(*inputs)}")
    if reference not in contenders:
        raise ValueError(f"reference {reference!r} is not a contender; have {list(contenders)}")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    rounds = min(10, reps) if rounds is None and isinstance(reps, int) else rounds
    _check_counts(warmup, reps, rounds)
    _check_timing(timing)
    _check_flush_by(flush_by)
    _check_order(order)
    _check_pacing(pacing)
    _require_gpu()
    inputs = make_inputs()
    if not isinstance(inputs, tuple):
        raise TypeError("make_inputs() must return a tuple of arguments")
    if check is not None:
        ref_out = contenders[reference](*inputs)
        for name, fn in contenders.items():
            if reset is not None:
                reset()
            check(name, fn(*inputs), ref_out)
    fns = {name: (lambda fn=fn: fn(*inputs)) for name, fn in contenders.items()}
    pace = {}
    samples = run_interleaved(fns, rounds=rounds, reps_per_round=math.ceil(reps / rounds),
                              warmup=warmup, warmup_ms=warmup_ms, clock=CudaClock(flush_l2, timing, flush_by),
                              pace=pace, order=order, pacing=pacing, settle_ms=settle_ms)
    rows = summarize(samples, reference=reference, metric=metric, amount=amount)
    if do_bench:
        import triton.testing
        db = do_bench_rows(fns, reference,
                           lambda fn: triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))
        for row in rows:
            row.update(db[row["name"]])
    for row in rows:
        row.update(shape=list(shape), dtype=str(dtype), timing=timing, flush_l2=bool(flush_l2), pacing=pacing)
        if flush_l2 and flush_by != "write":
            row["flush_by"] = flush_by
        if order != "fixed":
            row["order"] = order
        if timing == "sustained" and pace.get(row["name"]):
            row.update(host_pace(pace[row["name"]]))
    return rows


def sweep(configs: list, run: Callable[[object], list], desc: str = "sweep") -> list[dict]:
    """Run ``run(config)`` for each config with a progress bar; concatenate the rows."""
    from tqdm.auto import tqdm
    out = []
    for cfg in tqdm(configs, desc=desc, leave=False):
        out.extend(run(cfg))
    return out
