"""What Nsight Compute counts while the course's CuteDSL GEMMs and cuBLAS run (Hopper only).

``measure_gemm_counters`` runs one launch of each kernel in ``STEPS`` and of cuBLAS in a fresh
process under ``ncu`` (``utils.core.ncu``) and returns one row per kernel: its duration under
the profiler, how busy the tensor pipe was, the warps resident, the registers per thread at
launch, bytes read from DRAM, and why warps waited (``STALLS``: the average number of warps
stalled for each reason per issued instruction, Nsight Compute's "warp state" statistics).

Bytes between L2 and the SMs pass Hopper's L2 request coalescer (LRC), which ncu counts too
(``LRC``): sectors delivered to the SMs' GPCs, sectors it had to read from L2, and request sectors
it served without a second L2 read, either because identical requests from several SMs met
("hardware" coalescing) or because one TMA multicast served several CTAs ("programmatic").
Delivered = read from L2 + merged by hardware + served by multicast (``lrc_split`` checks it).
``measure_broadcast_lrc`` counts the same for notebook 04's broadcast kernel.
"""
from __future__ import annotations

from ..core import ncu
from ..tma import rules
from .gemm import TILE_MNK, check_tile
from .measure import TRAFFIC, profile_broadcast

STEPS = {"CuteDSL TMA+WGMMA, 4 stages": dict(stages=4),
         "CuteDSL TMA+WGMMA, warp-specialized persistent": dict(variant="ws", persistent=True),
         "CuteDSL cp.async+WGMMA, 4 stages": dict(variant="cpasync", stages=4)}
CUBLAS = "cuBLAS (torch.matmul)"
STALLS = ("gmma", "long_scoreboard", "barrier", "wait", "math_pipe_throttle", "mio_throttle",
          "short_scoreboard", "lg_throttle", "sleeping", "membar", "no_instruction", "dispatch_stall",
          "branch_resolving", "not_selected", "selected", "misc", "drain", "imc_miss", "tex_throttle")
STALL_METRIC = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
LRC = {"delivered": "lrc__xbar2gpc_sectors_op_read.sum", "read_from_l2": "lrc__lts2lrc_sectors_op_read.sum",
       "merged_by_hardware": "lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum",
       "served_by_multicast": "lrc__request_sectors_op_read_coalescing_achieved_type_programmatic.sum"}
METRICS = ("gpu__time_duration.sum", "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
           "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
           "smsp__inst_executed.sum", "dram__bytes_read.sum", *LRC.values(),
           *(STALL_METRIC.format(s) for s in STALLS))


def tiled_l2_bytes(n: int, itemsize: int = 2, tile=TILE_MNK) -> int:
    """Bytes the SMs must read from L2 for an n x n x n GEMM tiled ``tile`` (BM, BN, BK): every
    output tile streams a BM x K slice of A and a BN x K slice of B, nothing shared."""
    n, itemsize, tile = rules.positive("n", n), rules.elem_size(itemsize, "itemsize"), check_tile(tile)
    if n % tile[0] or n % tile[1] or n % tile[2]:
        raise ValueError(f"n = {n} must be a multiple of the tile {tile}")
    return (n // tile[0]) * (n // tile[1]) * n * (tile[0] + tile[1]) * itemsize


def lrc_bytes(k: dict) -> dict:
    return {f"{key}_bytes": k[m] * ncu.SECTOR_BYTES for key, m in LRC.items()}


def lrc_split(row: dict, tol: float = 0.01) -> float:
    """How far delivered differs from read + merged + multicast, as a fraction of delivered;
    raises if beyond ``tol`` (the counters would then not mean what this module says)."""
    try:
        parts = [row[f"{key}_bytes"] for key in LRC]
    except (KeyError, TypeError):
        raise ValueError("expected a row with the LRC byte counts (from this module's measure_*)") from None
    gap = abs(parts[0] - sum(parts[1:])) / parts[0]
    if gap > tol:
        raise AssertionError(f"{row.get('name')}: delivered {parts[0]:.0f} B but read + merged + multicast "
                             f"= {sum(parts[1:]):.0f} B ({gap:.1%} apart)")
    return gap


BROADCAST = {name.replace("counters", "LRC"): v for name, v in TRAFFIC.items()}   # row name -> (R, multicast)


def measure_broadcast_lrc(M: int = 4096, N: int = 4096) -> list:
    """Notebook 04's broadcast (each CTA of a cluster gets the whole tile) under ncu with the LRC
    counters: one row per ``measure.TRAFFIC`` launch, ``value`` = bytes read from L2."""
    from .tma import l2_bytes_read
    kernels = profile_broadcast((*LRC.values(), "dram__bytes_read.sum"), M, N)
    rows = []
    for (name, (R, mc)), k in zip(BROADCAST.items(), kernels):
        b = lrc_bytes(k)
        rows.append(dict(name=name, metric="bytes", value=b["read_from_l2_bytes"], **b,
                         unit="bytes read from L2 (ncu, LRC)", cluster=R, multicast=mc, tool="ncu",
                         requested_bytes=l2_bytes_read((M, N), 2, R, mc), dram_read_bytes=k["dram__bytes_read.sum"],
                         reference=None, reference_value=None, ratio=None, shape=[M, N], dtype="float16"))
    return rows


def launch_once(n: int = 4096) -> None:
    """The profiled process: cuBLAS, then each step of ``STEPS``, once each on the same fresh
    randn fp16 inputs (made on the host, so no other kernel runs before them), then each output
    checked against cuBLAS's."""
    import numpy as np
    import torch
    from .measure import run_step
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32).astype(np.float16)).cuda()
    b = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32).astype(np.float16)).cuda()
    outs = [torch.matmul(a, b.T)]
    for kw in STEPS.values():
        c = torch.from_numpy(np.full((n, n), np.nan, dtype=np.float16)).cuda()   # poisoned, no kernel
        run_step(a, b, c, **kw)
        outs.append(c)
    torch.cuda.synchronize()
    for name, c in zip(STEPS, outs[1:]):
        err = (c.float() - outs[0].float()).abs().max().item()
        assert err <= 0.02 * outs[0].float().abs().max().item(), f"{name}: max error {err}"


def measure_gemm_counters(n: int = 4096) -> list:
    """One row per kernel (cuBLAS first): ``value`` = its duration in ms under ncu, ``ratio`` =
    cuBLAS's duration / this one's, and the counters as extra keys."""
    import pathlib
    import sys
    root = pathlib.Path(__file__).resolve().parents[2]
    names = [CUBLAS, *STEPS]
    kernels = ncu.profile([sys.executable, "-c", f"from utils.cute_dsl import counters; counters.launch_once({n})"],
                          ".", metrics=METRICS, cwd=root, launch_count=len(names))
    if len(kernels) != len(names):
        raise RuntimeError(f"expected {len(names)} GEMM launches, ncu saw {len(kernels)}")
    rows = [gemm_row(name, k, n, "float16", tiled_l2_bytes=None if name == CUBLAS else tiled_l2_bytes(n))
            for name, k in zip(names, kernels)]
    return with_reference(rows, CUBLAS)


def gemm_row(name: str, k: dict, n: int, dtype: str, **extra) -> dict:
    """One result row from one GEMM launch's ``METRICS`` (``value`` = its duration in ms under ncu)."""
    return dict(name=name, metric="ms", value=k["gpu__time_duration.sum"] / 1e6, kernel=k["kernel"][:120], tool="ncu",
                tensor_pipe_pct=k["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"],
                warps_active_pct=k["sm__warps_active.avg.pct_of_peak_sustained_active"],
                registers=int(k["launch__registers_per_thread"]), instructions=k["smsp__inst_executed.sum"],
                dram_read_bytes=k["dram__bytes_read.sum"], **lrc_bytes(k),
                stalls={s: k[STALL_METRIC.format(s)] for s in STALLS}, shape=[n, n, n], dtype=dtype, **extra)


def with_reference(rows: list, reference: str) -> list:
    """Give every row ``ratio`` = the ``reference`` row's duration / its own (rows in ms)."""
    ref = next(r["value"] for r in rows if r["name"] == reference)
    for r in rows:
        r.update(reference=reference, reference_value=ref, ratio=ref / r["value"])
    return rows


def top_stalls(row: dict, k: int = 4) -> list:
    """The ``k`` largest stall reasons of a row, ``[(reason, warps per issue), ...]``."""
    if not isinstance(row, dict) or not isinstance(row.get("stalls"), dict):
        raise ValueError("expected a row from measure_gemm_counters (it has a 'stalls' dict)")
    return sorted(row["stalls"].items(), key=lambda kv: -kv[1])[:k]


def stall_cycles(row: dict, reason: str) -> float:
    """Warp-cycles spent stalled for ``reason`` over the whole launch: the per-issue ratio times
    the instructions issued (the ratio alone shrinks when a kernel issues more instructions)."""
    top_stalls(row)
    if reason not in row["stalls"]:
        raise ValueError(f"reason must be one of {sorted(row['stalls'])}, got {reason!r}")
    return row["stalls"][reason] * row["instructions"]
