"""What notebook ``day05_tma/07`` measures on a Hopper GPU, as result rows (``utils.core.results``).

* :func:`measure_ladder`: the steps of ``utils.cute_dsl.attention`` one after another (and the
  causal skip taken away), against torch's attention backends, at the ladder shapes;
* :func:`measure_backends`: the last step against every ``scaled_dot_product_attention`` backend
  the installed torch offers and against the plain Triton kernel, over sequence lengths, head
  dims, dtypes, causal or not;
* :func:`measure_counters`: each step once under Nsight Compute (tensor-pipe and MUFU busy
  fractions, bytes read from L2), where the time goes;
* :func:`measure_clocks`: the clock (as ``nvidia-smi`` reports it) and the board power of steps 4
  and 5 and cuDNN, each alone at S = 4096, with the throughput of that window.

By default (a learner's run) each measurement is the short one, about 30 s a cell on an H100: one
sequence length for the ladder, two configurations for the sweep, the counters without the mask.
:func:`full_run` (``COURSE_FULL=1``, or ``COURSE_RECORD=1``: every recording) measures all of it.

Every contender's output is poisoned (NaN) first, then every element is checked against torch's
attention computed in float32 on the same fresh randn inputs, within :func:`utils.day05.attention.
output_bound`. Timing: the course harness (``utils.core.bench.compare``: sustained, in rounds,
L2 flushed, each contender timed in blocks) and, on the ladder, ``triton.testing.do_bench``'s median as
the second opinion (``bench.compare(do_bench=True)``).
"""
from __future__ import annotations

import statistics

from ..core import bench
from ..core.results import full_run  # noqa: F401  (notebook 07 and its tests call am.full_run)
from . import attention

STEP_NAMES = {"pipeline": "1 Q resident, K/V by TMA through a ring (2 warpgroups compute)",
              "producer": "2 + producer warpgroup (setmaxnreg 24/240)",
              "pingpong": "3 + ping-pong between the consumer warpgroups",
              "overlap": "4 + softmax overlapped with the PV GEMM",
              "named": "5 + the turn passed by named barriers (Exercise 4)"}
LAST = STEP_NAMES["named"]                  # the course's kernel: the sweep of §10 times this step
NO_SKIP = "4 without the causal skip (every K/V tile visited, masked)"
TRITON = "plain Triton (FA2-style, no TMA)"
BACKENDS = {"FLASH_ATTENTION": "torch SDPA flash", "CUDNN_ATTENTION": "torch SDPA cuDNN",
            "EFFICIENT_ATTENTION": "torch SDPA efficient"}
TOKENS, HEADS = 16384, 16                   # B = TOKENS // S: B*H*S/128 = 2048 CTAs at every S
LADDER = [(4096, 128, "float16"), (8192, 128, "float16")]
SWEEP = [(S, D, dt) for S in (1024, 4096, 16384) for D, dt in ((64, "float16"), (128, "float16"), (128, "bfloat16"))]
LADDER_SHORT = LADDER[:1]                   # the default run: S = 4096 only
SWEEP_SHORT = [(4096, 128, "float16"), (4096, 128, "bfloat16")]
CHECKS = [(64, "float16", False), (128, "float16", True), (128, "bfloat16", False)]   # (D, dtype, causal), S = 512
CHECKS_SHORT = [(64, "float16", False), (128, "bfloat16", False)]
# FlashAttention-3's own ablation (Shah et al. 2024, arXiv:2407.08608, Table 2: H100, non-causal fp16,
# batch 4, seqlen 8448, 16 heads, head dim 128), TFLOP/s. From the paper, not measured here.
FA3_ABLATION = {"FlashAttention-3": 661, "without the GEMM-softmax overlap (warp-specialized)": 582,
                "without warp specialization (with the overlap)": 570}


def check_configs(full=None) -> list:
    """The (D, dtype, causal) configurations the correctness cell runs every step at: all of
    :data:`CHECKS` in the full run, :data:`CHECKS_SHORT` by default (the ladder checks D = 128 fp16,
    causal and not, before it times)."""
    return CHECKS if (full_run() if full is None else full) else CHECKS_SHORT


def shape_of(S: int, D: int) -> tuple:
    """(B, H, S, D) with B*S = :data:`TOKENS` tokens and :data:`HEADS` heads."""
    return (max(1, TOKENS // S), HEADS, S, D)


def sdpa_backends(q, k, v, causal: bool) -> dict:
    """``{name: fn}`` for every SDPA backend that accepts these inputs here (tried once)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    out = {}
    for be, name in BACKENDS.items():
        backend = getattr(SDPBackend, be, None)
        if backend is None:
            continue

        def fn(q=q, k=k, v=v, backend=backend):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        try:
            fn()
        except RuntimeError:                 # not offered for this dtype / shape / GPU / build
            continue
        out[name] = fn
    return out


def contenders(q, k, v, o, causal: bool, ladder: bool = True) -> dict:
    """``{name: fn() -> output}``: the CuteDSL steps (all of them with ``ladder``, else the last),
    the causal ablation (``ladder`` and causal), the plain Triton kernel and the SDPA backends.
    The CuteDSL and Triton contenders write into ``o``."""
    from ..cute_dsl import attention as fa
    from . import attention_triton
    steps = fa.STEPS if ladder else fa.STEPS[-1:]
    out = {STEP_NAMES[s]: (lambda s=s: fa.run(q, k, v, o, causal=causal, step=s)) for s in steps}
    if ladder and causal:
        out[NO_SKIP] = lambda: fa.run(q, k, v, o, causal=True, step="overlap", skip=False)
    out[TRITON] = lambda: attention_triton.attention(q, k, v, causal, out=o)
    out.update(sdpa_backends(q, k, v, causal))
    return out


def check_output(name, out, ref, v, dtype) -> float:
    """Raise if any element of ``out`` is NaN or off the float32 reference by more than
    :func:`utils.day05.attention.output_bound`; return the worst error over its bound."""
    import torch
    bound = attention.output_bound(str(dtype).replace("torch.", ""), v.abs().amax().item(), ref)
    bad = torch.isnan(out).sum().item()
    if bad:
        raise AssertionError(f"{name}: {bad} output elements never written (still NaN)")
    err = (out.float() - ref).abs()
    worst = (err / bound).max().item()
    if worst > 1:
        raise AssertionError(f"{name}: error {err.max().item():.3g} exceeds the bound (worst {worst:.2f}x)")
    return worst


def _measure(S, D, dt, causal, ladder, reps, seed) -> list:
    import torch
    B, H = shape_of(S, D)[:2]
    dtype = getattr(torch, dt)
    q, k, v = (bench.randn((B, H, S, D), dtype, "cuda", seed=seed + i) for i in range(3))
    o = torch.empty_like(q)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    cons = contenders(q, k, v, o, causal, ladder=ladder)
    worst = {}
    for name, fn in cons.items():
        o.fill_(float("nan"))
        worst[name] = check_output(name, fn(), ref, v, dtype)
    del ref
    reference = BACKENDS["CUDNN_ATTENTION"] if BACKENDS["CUDNN_ATTENTION"] in cons else TRITON
    rows = bench.compare(lambda: (), cons, reference=reference, metric="TFLOP/s",    # the ladder: do_bench too
                         amount=attention.flops(B, H, S, D, causal), shape=(B, H, S, D), dtype=dt, reps=reps,
                         do_bench=ladder)
    for r in rows:
        r.update(causal=bool(causal), err_over_bound=worst[r["name"]], part="ladder" if ladder else "sweep")
        if ladder:                           # the second opinion's TFLOP/s (triton.testing.do_bench's median)
            r["do_bench_value"] = attention.flops(B, H, S, D, causal) / (r["do_bench_ms"] * 1e-3) / 1e12
    return rows


def measure_ladder(shapes=None, reps=None, seed=0, full=None) -> list:
    """Rows for every step (and the skip ablation), the plain Triton kernel and the SDPA backends
    at the ladder shapes, causal and not: :data:`LADDER` and 40 timed calls each in the full run
    (:func:`full_run`), :data:`LADDER_SHORT` and 20 by default."""
    full = full_run() if full is None else full
    return [r for i, (S, D, dt) in enumerate(shapes or (LADDER if full else LADDER_SHORT)) for causal in (False, True)
            for r in _measure(S, D, dt, causal, True, reps or (40 if full else 20), seed + 10 * i)]


def measure_backends(configs=None, reps=30, seed=100, full=None) -> list:
    """Rows for the last step, the plain Triton kernel and the SDPA backends over :data:`SWEEP`
    (the full run, :func:`full_run`) or :data:`SWEEP_SHORT` (by default)."""
    full = full_run() if full is None else full
    return [r for i, (S, D, dt) in enumerate(configs or (SWEEP if full else SWEEP_SHORT)) for causal in (False, True)
            for r in _measure(S, D, dt, causal, False, reps, seed + 10 * i)]


def step_gains(rows) -> dict:
    """``{(S, causal): [(step name, gain, lo, hi), ...]}`` for steps 2 onwards of the ladder rows: the
    previous step's time over this step's (above 1: the step gained), the median over the harness's
    interleaved rounds, with the lowest and highest round. Steps a recording lacks are left out."""
    out = {}
    for S, causal in sorted({(r["shape"][2], r["causal"]) for r in rows}):
        by = {r["name"]: r for r in rows if r["shape"][2] == S and r["causal"] == causal}
        names = [n for n in STEP_NAMES.values() if n in by]     # a recording may predate later steps
        out[(S, causal)] = []
        for a, b in zip(names, names[1:]):
            per = [x / y for x, y in zip(by[a].get("ms_rounds") or [by[a]["ms"]], by[b].get("ms_rounds") or [by[b]["ms"]])]
            out[(S, causal)].append((b, statistics.median(per), min(per), max(per)))
    return out


COUNTERS = {"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor_pipe_pct",
            "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active": "xu_pipe_pct",
            "lts__t_bytes.sum": "l2_bytes", "dram__bytes_read.sum": "dram_read_bytes",
            "gpu__time_duration.sum": "ns",
            "sm__cycles_active.avg": "sm_active_cycles", "sm__cycles_elapsed.avg": "sm_elapsed_cycles"}


INSTRUCTIONS = "smsp__inst_executed.sum"


def launch_once(S: int = 4096, D: int = 128, causal: bool = False) -> None:
    """Launch every step once (what :func:`measure_counters` profiles: ncu replays each launch)."""
    import torch
    from ..cute_dsl import attention as fa
    q, k, v = (torch.randn(shape_of(S, D), device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    for s in fa.STEPS:
        fa.run(q, k, v, o, causal=causal, step=s)
    torch.cuda.synchronize()


def launch_cudnn_once(S: int = 4096, D: int = 128, causal: bool = False) -> None:
    """One call of torch's cuDNN attention (what :func:`measure_counters` profiles beside the steps);
    the inputs are made on the host and copied, so no other kernel runs before it."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = (torch.randn(shape_of(S, D), dtype=torch.float16).cuda() for _ in range(3))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.cuda.synchronize()


def _counter_row(name, k, causal, S, D, reference, first) -> dict:
    """A counters row from one profiled kernel ``k`` (:func:`utils.core.ncu.profile`)."""
    from ..cute_dsl.counters import STALL_METRIC, STALLS
    row = {COUNTERS[m]: float(k[m]) for m in COUNTERS}
    ms = row["ns"] / 1e6
    return dict(name=name, metric="ms", value=ms, causal=causal, tool="ncu", kernel=k["kernel"][:120],
                reference=reference, reference_value=first, ratio=first / ms, shape=list(shape_of(S, D)),
                dtype="float16", part="counters", instructions=float(k[INSTRUCTIONS]),
                stalls={r: float(k[STALL_METRIC.format(r)]) for r in STALLS}, **row)


def measure_counters(S: int = 4096, D: int = 128, full=None) -> list:
    """One row per (step, causal): the kernel under ncu (one launch): tensor pipe and XU (MUFU:
    ``ex2``) busy, in % of peak over the cycles the SM was active (an idle SM's cycles are not in
    it), L2 traffic, DRAM bytes read, duration, and an average SM's active and elapsed cycles (their
    ratio: the share of the kernel's time an SM had work, which a tail of short CTAs lowers),
    instructions issued and the warp stall reasons per issued instruction (``stalls``). The same
    counters for torch's cuDNN attention (its longest kernel in one call). Causal and not in the full
    run (:func:`full_run`), non-causal only by default."""
    import sys
    from ..core import ncu
    from ..cute_dsl import attention as fa
    from ..cute_dsl.counters import STALL_METRIC, STALLS
    metrics = (*COUNTERS, INSTRUCTIONS, *(STALL_METRIC.format(r) for r in STALLS))
    rows = []
    for causal in ((False, True) if (full_run() if full is None else full) else (False,)):
        code = f"from utils.day05 import attention_measure as m; m.launch_once({S}, {D}, {causal})"
        got = ncu.profile([sys.executable, "-c", code], "kernel_cutlass", metrics=metrics)
        if len(got) != len(fa.STEPS):
            raise RuntimeError(f"expected {len(fa.STEPS)} attention launches, ncu saw {len(got)}")
        first = float(got[0]["gpu__time_duration.sum"]) / 1e6
        ref = STEP_NAMES[fa.STEPS[0]]
        rows += [_counter_row(STEP_NAMES[s], k, causal, S, D, ref, first) for s, k in zip(fa.STEPS, got)]
        code = f"from utils.day05 import attention_measure as m; m.launch_cudnn_once({S}, {D}, {causal})"
        got = ncu.profile([sys.executable, "-c", code], ".", metrics=metrics)
        longest = max(got, key=lambda k: float(k["gpu__time_duration.sum"]))
        rows.append(_counter_row(BACKENDS["CUDNN_ATTENTION"], longest, causal, S, D, ref, first))
    return rows


CLOCK_STEM = "07_flash_attention_clocks"
CLOCK_NAMES = (STEP_NAMES["overlap"], LAST, BACKENDS["CUDNN_ATTENTION"])


def measure_clocks(S: int = 4096, D: int = 128, dtype: str = "float16", seconds: float | None = None, seed=0,
                   names=CLOCK_NAMES, full=None) -> list:
    """Rows (``part="clocks"``, metric MHz), causal and not: the SM clock and board power each of
    ``names`` (default steps 4 and 5 and torch's cuDNN backend; any step or SDPA backend) runs at alone, back to back,
    for ``seconds`` (default 2 in the full run, :func:`full_run`, else 1) while ``nvidia-smi`` samples every 50 ms (notebook 05's method:
    :func:`utils.day05.ladder_measure.sample_passes`, two passes, the second in reverse order,
    averaged). Each contender is a CUDA-graph replay, so no launcher's host time holds the GPU back,
    and its output is poisoned and checked first. No L2 flush between calls, unlike the harness.
    Fields: ``watts``, ``power_limit``, ``tflops`` over the window and ``tflops_per_ghz`` (the
    work done per clock cycle); ``ratio``: the clock over cuDNN's, same mask."""
    import torch
    from . import ladder_measure as lm
    from .skinny_measure import power_limit_w
    if seconds is None:
        seconds = 2.0 if (full_run() if full is None else full) else 1.0
    lm.check_seconds(seconds)
    if dtype not in ("float16", "bfloat16"):
        raise ValueError(f"dtype must be 'float16' or 'bfloat16' (the kernel's dtypes), got {dtype!r}")
    reference = BACKENDS["CUDNN_ATTENTION"]
    unknown = [n for n in names if n not in (*STEP_NAMES.values(), *BACKENDS.values())]
    if unknown or reference not in names:
        raise ValueError(f"names must include {reference!r} (the reference) and name only steps or SDPA "
                         f"backends; unknown: {unknown}")
    shape, tdt = shape_of(S, D), getattr(torch, dtype)
    limit, rows = power_limit_w(), []
    for causal in (False, True):
        q, k, v = (bench.randn(shape, tdt, "cuda", seed=seed + i) for i in range(3))
        o = torch.empty_like(q)
        ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
        cons = contenders(q, k, v, o, causal)
        missing = [n for n in names if n not in cons]
        if missing:
            raise RuntimeError(f"not offered here (torch {torch.__version__}): {missing}")
        cons = bench.graphed({n: cons[n] for n in names})
        for name, fn in cons.items():
            fn().fill_(float("nan"))
            check_output(name, fn(), ref, v, tdt)
        del ref
        got = lm.sample_passes(cons, seconds)
        flops = attention.flops(*shape, causal)
        rows += [dict(name=name, part="clocks", causal=causal, **lm.clock_fields(p, flops), power_limit=limit,
                      shape=list(shape), dtype=dtype, seconds=seconds, launch=bench.LAUNCH_GRAPH)
                 for name, p in got.items()]
    for r in rows:
        cudnn = next(q for q in rows if q["name"] == reference and q["causal"] == r["causal"])
        r.update(reference=reference, reference_value=cudnn["value"], ratio=r["value"] / cudnn["value"])
    return rows


# ---- pictures --------------------------------------------------------------------------------------
def plot_ladder(rows, label=""):
    """TFLOP/s of every ladder contender (course harness), one panel per (S, causal)."""
    import matplotlib.pyplot as plt
    panels = sorted({(r["shape"][2], r["causal"]) for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    for ax, (S, causal) in zip(axes[0], panels):
        sel = [r for r in rows if r["shape"][2] == S and r["causal"] == causal]
        ax.barh(range(len(sel)), [r["value"] for r in sel],
                color=["tab:blue" if r["name"][0].isdigit() else "tab:gray" for r in sel])
        ax.set_yticks(range(len(sel)), [r["name"][:44] for r in sel], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("TFLOP/s (4·B·H·S²·D, halved for causal)")
        ax.set_title(f"S = {S}, D = {sel[0]['shape'][3]}, {'causal' if causal else 'non-causal'}", fontsize=8)
    fig.suptitle(label, fontsize=8)                     # once for all panels: long labels overlapped
    fig.tight_layout()
    return fig


def plot_sweep(rows, label=""):
    """Ratio of our last step and of the plain Triton kernel to the fastest SDPA backend, per
    configuration (one line per contender, causal dotted)."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(11, 4))
    keys = sorted({(r["dtype"], r["shape"][3], r["shape"][2]) for r in rows})
    for name, color in ((LAST, "tab:blue"), (TRITON, "tab:orange")):
        for causal, style in ((False, "-"), (True, ":")):
            ys = []
            for dt, D, S in keys:
                sel = [r for r in rows if (r["dtype"], r["shape"][3], r["shape"][2], r["causal"]) == (dt, D, S, causal)]
                best = max(r["value"] for r in sel if r["name"] in BACKENDS.values())
                ys.append(next(r["value"] for r in sel if r["name"] == name) / best)
            ax.plot(range(len(keys)), ys, style, marker="o", color=color,
                    label=f"{name[:40]}{' (causal)' if causal else ''}")
    ax.axhline(1.0, color="gray", lw=1)
    ax.set_xticks(range(len(keys)), [f"{dt.replace('bfloat', 'bf').replace('float', 'fp')} D{D}\nS{S}" for dt, D, S in keys], fontsize=7)
    ax.set_ylabel("speed vs the fastest torch backend (x)")
    ax.set_title(f"against torch's fastest SDPA backend at each configuration\n{label}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_schedule(gemm: float = 2.0, softmax: float = 1.0, tiles: int = 4):
    """The schedule each step's code asks for (a drawing, not a trace): the producer's loads and,
    per consumer warpgroup, its QK and PV GEMMs (blue) and softmax (orange), with GEMM and
    softmax lengths in the ratio given. Tensor cores are shared: at most one GEMM at a time."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(3, 1, figsize=(11, 5.4), sharex=True)
    half = gemm / 2
    for ax, (title, mode) in zip(axes, (("steps 1-2: each warpgroup in turn whenever it is ready", "free"),
                                        ("step 3: ping-pong: warpgroups take turns on the tensor cores", "pingpong"),
                                        ("steps 4-5: + QK of tile j+1 issued before the softmax of tile j", "overlap"))):
        busy_until, t_wg = 0.0, [0.0, 0.3 if mode == "free" else 0.0]
        for j in range(tiles):
            for wg in (0, 1):
                y = 1 - wg
                start = max(busy_until, t_wg[wg])
                if mode == "overlap" and j > 0:      # QK_{j} and PV_{j-1} back to back, softmax over PV
                    ax.broken_barh([(start, gemm)], (y - 0.3, 0.6), color="tab:blue")
                    ax.broken_barh([(start + half, softmax)], (y - 0.1, 0.2), color="tab:orange")
                    busy_until = start + gemm
                    t_wg[wg] = max(start + half + softmax, busy_until)
                else:
                    ax.broken_barh([(start, half)], (y - 0.3, 0.6), color="tab:blue")
                    ax.broken_barh([(start + half, softmax)], (y - 0.3, 0.6), color="tab:orange")
                    pv = start + half + softmax
                    ax.broken_barh([(pv, half)], (y - 0.3, 0.6), color="tab:blue")
                    busy_until = max(busy_until, start + half) if mode == "free" else start + half
                    t_wg[wg] = pv + half
            ax.broken_barh([(j * (gemm + softmax) * 0.8, 0.15)], (1.7, 0.4), color="tab:green")
        ax.set_yticks([0, 1, 1.9], ["consumer WG 2", "consumer WG 1", "producer (TMA)"], fontsize=8)
        ax.set_title(title, fontsize=9)
    axes[-1].set_xlabel("time (GEMM : softmax lengths %g : %g; a drawing of the code's order, not a measurement)"
                        % (gemm, softmax))
    fig.tight_layout()
    return fig
