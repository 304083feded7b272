"""The GEMM ladder of ``day05_tma/03_triton_tma_gemm``: configurations, tile order, descriptor
rules, references and the output check. The kernels themselves live in the notebook.

``C = A @ B`` with ``A`` (M, K) and ``B`` (K, N) row-major fp16/bf16, fp32 accumulation.
Import after ``utils.setup()`` (nothing here imports Triton at import time).
"""
from __future__ import annotations

import math

from ..core.checks import CheckFailed, check_array

STEPS = {"v0": "Triton v0 plain loads", "v1": "Triton v1 TMA loads",
         "v2": "Triton v2 persistent", "v3": "Triton v3 TMA store", "v4": "Triton v4 flattened"}
CUBLAS = "cuBLAS (torch.matmul)"
V4_PER_SM = "Triton v4, one program per SM"   # v4 without its balanced grid (one change)
DTYPES = ("float16", "bfloat16")
MAX_NUMEL = 2**20          # Triton's TRITON_MAX_TENSOR_NUMEL
SMEM_LIMIT = 232448        # bytes of shared memory one Hopper block may use (227 KiB)
CPU_SMS = 4                # persistent programs under the interpreter: several tiles each


def _cfg(BM, BN, BK, warps, stages, **extra) -> dict:
    return dict(BM=BM, BN=BN, BK=BK, num_warps=warps, num_stages=stages, **extra)


# Per step and dtype, on Hopper. Tuned with .gpu/issue4/gpu_check.py (paste its lines here).
GPU_CONFIGS = {
    ("v0", "float16"): _cfg(128, 256, 64, 8, 3), ("v0", "bfloat16"): _cfg(128, 256, 64, 8, 3),
    ("v1", "float16"): _cfg(128, 256, 64, 8, 3), ("v1", "bfloat16"): _cfg(128, 256, 64, 8, 3),
    ("v2", "float16"): _cfg(128, 256, 64, 8, 3, GROUP_M=8),
    ("v2", "bfloat16"): _cfg(128, 256, 64, 8, 3, GROUP_M=8),
    ("v3", "float16"): _cfg(128, 256, 64, 8, 3, GROUP_M=8),
    ("v3", "bfloat16"): _cfg(128, 256, 64, 8, 3, GROUP_M=8),
    ("v4", "float16"): _cfg(128, 256, 64, 8, 4, GROUP_M=8, FLATTEN=True, SUBTILE=True, WARP_SPEC=False),
    ("v4", "bfloat16"): _cfg(128, 256, 64, 8, 4, GROUP_M=8, FLATTEN=True, SUBTILE=True, WARP_SPEC=False),
}
# On a GPU with TMA but 99 KB of shared memory per block (compute capability 12.x, where Triton
# 3.9 gives v3 160 KiB and v4 176 KiB with the configs above): 128 x 128 tiles, 3 stages, at most
# 96 KiB (compiled for sm_120a without a GPU). Elsewhere the configs above fit: sm_100a needs at most
# 224 KiB of B200's 227 KB, and without TMA (sm_80, sm_86) Triton needs at most 96 KiB.
SMALL_SMEM_CONFIGS = {key: dict(cfg, BN=128, num_stages=3) for key, cfg in GPU_CONFIGS.items()}
# Under the interpreter: small blocks, so that 100 x 72 x 80 leaves partial tiles everywhere.
CPU_CONFIGS = {"v0": _cfg(32, 64, 32, 4, 2), "v1": _cfg(32, 64, 32, 4, 2),
               "v2": _cfg(32, 64, 32, 4, 2, GROUP_M=2), "v3": _cfg(32, 64, 32, 4, 2, GROUP_M=2),
               "v4": _cfg(32, 64, 32, 4, 2, GROUP_M=2, FLATTEN=True, SUBTILE=True, WARP_SPEC=False)}


def dtype_name(dtype) -> str:
    """``torch.float16`` or ``"float16"`` -> ``"float16"`` (only fp16 and bf16 are laddered)."""
    name = str(dtype).replace("torch.", "")
    if name not in DTYPES:
        raise ValueError(f"the ladder runs fp16 and bf16, got dtype {dtype!r}")
    return name


def config(step: str, dtype, tier) -> dict:
    """The launch configuration (a fresh dict) for ``step`` and ``dtype`` on ``tier``."""
    if step not in STEPS:
        raise ValueError(f"step must be one of {list(STEPS)}, got {step!r}")
    name = dtype_name(dtype)
    if not tier.has_gpu:
        return dict(CPU_CONFIGS[step])
    small = tier.has("tma") and not tier.has("big_smem")
    return dict((SMALL_SMEM_CONFIGS if small else GPU_CONFIGS)[(step, name)])


def num_sms(tier) -> int:
    """Programs a persistent kernel launches: one per SM on a GPU, a few under the interpreter."""
    if not tier.has_gpu:
        return CPU_SMS
    import torch
    return torch.cuda.get_device_properties(0).multi_processor_count


def balanced_programs(tiles: int, sms: int) -> int:
    """Programs for a persistent grid over ``tiles`` output tiles on ``sms`` SMs such that every
    program gets the same number of tiles (up to one): as many waves as ``sms`` programs would
    need, with as few programs as those waves allow. 512 tiles on 132 SMs: 4 waves, 128 programs."""
    for name, v in (("tiles", tiles), ("sms", sms)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    waves = -(-tiles // sms)
    return -(-tiles // waves)


def tile_order_ref(pid: int, num_pid_m: int, num_pid_n: int, group_m: int) -> tuple:
    """Grouped ("super-grouping") tile order: program ``pid`` -> tile ``(pid_m, pid_n)``.

    Tiles are taken in groups of ``group_m`` tile-rows; inside a group, consecutive pids walk
    DOWN a column first, so the programs running at once share A's rows and B's columns in L2.
    The last group may have fewer rows.
    """
    for name, v in dict(pid=pid, num_pid_m=num_pid_m, num_pid_n=num_pid_n, group_m=group_m).items():
        if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "pid" else 1):
            raise ValueError(f"{name} must be a {'non-negative' if name == 'pid' else 'positive'} "
                             f"int, got {v!r}")
    if pid >= num_pid_m * num_pid_n:
        raise ValueError(f"pid {pid} is past the last tile ({num_pid_m} x {num_pid_n} tiles)")
    per_group = group_m * num_pid_n
    first_m = (pid // per_group) * group_m
    rows = min(num_pid_m - first_m, group_m)
    return first_m + (pid % per_group) % rows, (pid % per_group) // rows


def block_violations(block_shape, itemsize: int) -> list:
    """The Triton tensor-descriptor rules a ``block_shape`` breaks for ``itemsize``-byte
    elements (empty list: legal). Host-side descriptors also need a 16-byte-aligned base and
    strides whose bytes are multiples of 16: see :func:`stride_violations`."""
    if not isinstance(block_shape, (tuple, list)) or not 1 <= len(block_shape) <= 5:
        raise ValueError(f"block_shape must be a tuple of 1 to 5 ints, got {block_shape!r}")
    if any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in block_shape):
        raise ValueError(f"block dimensions must be positive ints, got {block_shape!r}")
    if itemsize not in (1, 2, 4, 8):
        raise ValueError(f"itemsize must be 1, 2, 4 or 8 bytes, got {itemsize!r}")
    out = [f"dimension {i} = {b} is not a power of 2" for i, b in enumerate(block_shape)
           if b & (b - 1)]
    if block_shape[-1] * itemsize < 16:
        out.append(f"last dimension holds {block_shape[-1]} x {itemsize} = "
                   f"{block_shape[-1] * itemsize} bytes < 16")
    if math.prod(block_shape) > MAX_NUMEL:
        out.append(f"{math.prod(block_shape)} elements > Triton's maximum {MAX_NUMEL}")
    return out


def stride_violations(shape, itemsize: int) -> list:
    """Rules a row-major tensor of ``shape`` breaks as a host descriptor's base tensor."""
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    return [f"stride {i} = {s} elements = {s * itemsize} bytes is not a multiple of 16"
            for i, s in enumerate(strides[:-1]) if (s * itemsize) % 16]


def smem_bytes(cfg: dict, itemsize: int = 2) -> int:
    """Shared memory the pipeline buffers of a config need (A and B tiles per stage), a
    lower bound on what the compiled kernel uses; TMA-store epilogues add their C tile."""
    return cfg["num_stages"] * (cfg["BM"] + cfg["BN"]) * cfg["BK"] * itemsize


def matmul_ref(a, b):
    """``A @ B`` in float64 on the CPU, float32 (no TF32) on a GPU: the correctness reference."""
    import torch
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"need A (M, K) and B (K, N), got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.is_cuda:
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            return a.float() @ b.float()
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev
    return a.double() @ b.double()


def tolerance(dtype, K: int) -> dict:
    """``atol``/``rtol`` for an fp16/bf16 output of a K-long fp32-accumulated dot product of
    randn inputs: the output rounding (2^-11 or 2^-8 relative) dominates."""
    rtol = {"float16": 2e-3, "bfloat16": 1.6e-2}[dtype_name(dtype)]
    return {"atol": 1e-3 * math.sqrt(K), "rtol": rtol}


def check_gemm(name: str, c, a, b, launched: str = "") -> None:
    """Raise ``CheckFailed`` unless ``c`` (pre-filled with NaN by the caller) equals ``A @ B``
    within :func:`tolerance`. An all-NaN ``c`` is an error here (the kernel wrote nothing)."""
    import torch
    if c is None or not torch.is_tensor(c):
        raise CheckFailed(f"[{name}] wrong: expected a tensor, got {type(c).__name__}")
    if c.numel() and torch.isnan(c).all():
        raise CheckFailed(f"[{name}] wrong: every element is still NaN: the kernel wrote nothing"
                          + (f"\n  launched: {launched}" if launched else ""))
    ref = matmul_ref(a, b).to(c.device)
    check_array(name, c, ref.cpu(), **tolerance(c.dtype, a.shape[1]), launched=launched)
