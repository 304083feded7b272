"""One benchmark harness for every comparison in the course.

Rules it enforces (see COURSE_DESIGN.md):

* every contender gets the *same* inputs, drawn from a normal distribution (``randn``);
* each contender's output is checked against the reference contender before it is timed;
* warm-up first, then CUDA-event timing of each repetition, the L2 cache flushed before each
  one (outside the timed region), and the **median** reported;
* throughput comes from a byte or flop count you state, and every row carries its ratio to
  the reference (cuBLAS through ``torch.matmul``, memcpy through ``torch`` copy, ...).

Rows are plain dicts in the ``results/*.json`` format, so they can be recorded as they are.
"""
from __future__ import annotations

import statistics
from typing import Callable

METRICS = {"GB/s": 1e9, "TFLOP/s": 1e12}


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
                           "recorded results instead (utils.results.load)")


def time_ms(fn: Callable[[], object], *, warmup: int = 5, reps: int = 30,
            flush_l2: bool = True, hide_host: bool = True) -> dict:
    """Time ``fn()`` with CUDA events: ``warmup`` untimed calls, then ``reps`` timed ones.

    Returns ``{"median", "min", "max", "reps"}`` in milliseconds. With ``flush_l2`` a 256 MiB
    buffer is overwritten before each repetition so no input is served from L2. With
    ``hide_host`` the GPU is kept busy (a ~1 ms spin) while Python prepares the launch, so the
    events measure the kernel, not the host's launch overhead (which would otherwise count
    whenever it exceeds the GPU work queued before it).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if not (isinstance(warmup, int) and warmup >= 0 and isinstance(reps, int) and reps >= 1):
        raise ValueError(f"need warmup >= 0 and reps >= 1, got warmup={warmup!r}, reps={reps!r}")
    _require_gpu()
    import torch
    scratch = torch.empty(256 * 2**20, dtype=torch.int8, device="cuda") if flush_l2 else None
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        if scratch is not None:
            scratch.zero_()
        if hide_host:
            torch.cuda._sleep(2_000_000)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return {"median": statistics.median(times), "min": min(times), "max": max(times), "reps": reps}


def throughput(amount: float, ms: float, metric: str) -> float:
    """``amount`` bytes (GB/s) or flops (TFLOP/s) done in ``ms`` milliseconds."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
    if amount <= 0 or ms <= 0:
        raise ValueError(f"amount and ms must be positive, got amount={amount}, ms={ms}")
    return amount / (ms * 1e-3) / METRICS[metric]


def compare(make_inputs: Callable[[], tuple], contenders: dict, *, reference: str, metric: str,
            amount: float, shape, dtype: str, check: Callable | None = None,
            reset: Callable | None = None, warmup: int = 5, reps: int = 30,
            flush_l2: bool = True) -> list[dict]:
    """Benchmark every contender on the same inputs and return result rows.

    ``make_inputs()`` builds the inputs once; each contender is called as ``fn(*inputs)``.
    ``reference`` names the contender the ratios are taken against. ``check(name, out, ref_out)``
    (optional) must raise if a contender's output is wrong: correctness before speed.
    When contenders write into a shared output buffer, ``ref_out`` IS that buffer: compare
    with values computed from the inputs instead, and pass ``reset()`` (e.g. fill the output
    with NaN), which runs before each contender's checked call, so one that writes nothing fails.
    """
    if not isinstance(contenders, dict) or not contenders:
        raise TypeError("contenders must be a non-empty dict {name: fn(*inputs)}")
    if reference not in contenders:
        raise ValueError(f"reference {reference!r} is not a contender; have {list(contenders)}")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {sorted(METRICS)}, got {metric!r}")
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
    rows = {}
    for name, fn in contenders.items():
        t = time_ms(lambda: fn(*inputs), warmup=warmup, reps=reps, flush_l2=flush_l2)
        rows[name] = {"name": name, "metric": metric, "ms": t["median"],
                      "value": throughput(amount, t["median"], metric)}
    ref_value = rows[reference]["value"]
    for row in rows.values():
        row.update(reference=reference, reference_value=ref_value, ratio=row["value"] / ref_value,
                   shape=list(shape), dtype=str(dtype))
    return list(rows.values())


def sweep(configs: list, run: Callable[[object], list], desc: str = "sweep") -> list[dict]:
    """Run ``run(config)`` for each config with a progress bar; concatenate the rows."""
    from tqdm.auto import tqdm
    out = []
    for cfg in tqdm(configs, desc=desc, leave=False):
        out.extend(run(cfg))
    return out
