"""Day 5 · 07, the FlashAttention-3-style forward pass in CuteDSL (utils.cute_dsl.attention):
compile-only PTX checks of every step for sm_90a with fake tensors (any machine, no GPU), the
argument rules (FlashFwd, operands, views, the register index of the accumulator), and the CPU-side
helpers of what notebook 07 measures (utils.day05.attention_measure: shapes, the element-by-element
output check against utils.day05.attention.output_bound)."""
import math
import random
import re

import numpy as np
import pytest

import utils

T = utils.setup(quiet=True)
import torch  # noqa: E402

from utils.cute_dsl import attention as fa  # noqa: E402
from utils.day05 import attention as A, attention_measure as M  # noqa: E402

TMA_LOAD = "cp.async.bulk.tensor"
WGMMA = "wgmma.mma_async"
REGS_DOWN = "setmaxnreg.dec.sync.aligned.u32 \t24;"     # the exact PTX text (a tab before the count)
REGS_UP = "setmaxnreg.inc.sync.aligned.u32 \t240;"
WAIT = "mbarrier.try_wait"
NEG_INF = "0fFF800000"                                  # -inf as a PTX f32 literal (the causal mask)
# one wgmma instruction: its shape, and whether A comes from registers ("{") or a smem descriptor ("%rd")
WGMMA_RE = re.compile(r"wgmma\.mma_async\.sync\.aligned\.(m64n\d+k16)\.f32\.f16\.f16 \{[^}]*\}, (\{|%rd)")

# --- compiled PTX, cached: 7 compiles in all ------------------------------------------------------
_PTX: dict = {}


def ptx(D=128, step="overlap", causal=False, skip=True):
    key = (D, step, causal, skip)
    if key not in _PTX:
        _PTX[key] = fa.ptx_of(D, step, causal, skip)
    return _PTX[key]


def wgmmas(p):
    """Counter of (shape, A source) over the wgmma instructions of p: A source 'reg' or 'smem'."""
    out = {}
    for shape, a in WGMMA_RE.findall(p):
        k = (shape, "reg" if a == "{" else "smem")
        out[k] = out.get(k, 0) + 1
    return out


@pytest.mark.parametrize("step", fa.STEPS)
def test_every_step_compiles_with_tma_and_wgmma(step):
    p = ptx(step=step)
    assert ".target sm_90a" in p
    assert TMA_LOAD in p and WGMMA in p
    assert p.count(WGMMA) == len(WGMMA_RE.findall(p))       # the pattern sees every wgmma
    # D=128: S = Q K^T is 8 k-blocks of m64n128k16 with Q from shared memory; O += P V is 8
    # k-blocks (BLOCK_N=128 keys) of m64n128k16 with P from registers
    per_site = 8 if step not in fa.STEPS[3:] else 16         # overlap and after: see the test below
    assert wgmmas(p) == {("m64n128k16", "smem"): per_site, ("m64n128k16", "reg"): per_site}


def test_register_split_only_with_a_producer_warpgroup():
    assert "setmaxnreg" not in ptx(step="pipeline")
    assert (fa.LOAD_REGS, fa.MMA_REGS) == (24, 240)
    for step in fa.STEPS[1:]:
        p = ptx(step=step)
        assert p.count(REGS_DOWN) == 1 and p.count(REGS_UP) == 1, step
        assert p.index(REGS_DOWN) < p.index(REGS_UP)             # producer branch first in the code


def test_pingpong_adds_the_order_barrier_waits():
    """The ping-pong ring (PipelineOrder) makes each consumer warpgroup wait for its turn before
    the QK GEMM and before the PV GEMM: more mbarrier waits than with a producer alone (9 vs 7
    when written), and more arrives (the turn handed over)."""
    pro, pp = ptx(step="producer"), ptx(step="pingpong")
    assert pp.count(WAIT) > pro.count(WAIT)
    assert pp.count("mbarrier.arrive.shared") > pro.count("mbarrier.arrive.shared")


def test_overlap_peels_the_loop():
    """The overlapped loop is peeled: S_0 = Q K_0 before the loop, then S_j and PV_{j-1} together
    inside it, and the last PV after it. So both GEMMs appear at two sites (each unrolled over its
    8 k-blocks) instead of one: twice the wgmma instructions of ping-pong (32 vs 16), and twice the
    commit groups."""
    pp, ov = ptx(step="pingpong"), ptx(step="overlap")
    assert ov.count(WGMMA) == 2 * pp.count(WGMMA) == 32
    assert ov.count("wgmma.commit_group") == 2 * pp.count("wgmma.commit_group")
    assert "wgmma.wait_group.sync.aligned \t1;" in ov             # S_j ready while PV_{j-1} still runs
    assert "wgmma.wait_group.sync.aligned \t1;" not in pp


def test_named_step_passes_the_turn_by_named_barriers():
    """Step 5: the loop of step 4 with bar.sync / bar.arrive on named barriers 1-2 (256 threads) in
    place of the mbarrier ring's waits: fewer mbarrier waits, the same GEMMs."""
    ov, nm = ptx(step="overlap"), ptx(step="named")
    assert wgmmas(nm) == wgmmas(ov)
    assert re.search(r"bar\.sync\s+%r\d+, 256;", nm) and not re.search(r"bar\.sync\s+%r\d+, 256;", ov)
    assert "bar.arrive" not in ov and nm.count("bar.arrive") >= 2      # the head start and the step's
    assert nm.count(WAIT) < ov.count(WAIT)


def test_head_dim_64_uses_n64_for_pv():
    """D=64: QK is 4 k-blocks of m64n128k16 (N = BLOCK_N keys), PV 8 k-blocks of m64n64k16
    (N = D) with P from registers; both at two sites (the overlapped loop)."""
    p = ptx(D=64)
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16" in p
    assert wgmmas(p) == {("m64n128k16", "smem"): 8, ("m64n64k16", "reg"): 16}


def test_causal_masks_and_skips():
    plain, causal, noskip = ptx(), ptx(causal=True), ptx(causal=True, skip=False)
    assert wgmmas(causal) == wgmmas(plain)
    # the mask writes -inf into scores: many more -inf literals than the running max's init
    assert causal.count(NEG_INF) > 10 * plain.count(NEG_INF)
    assert noskip.count(NEG_INF) == causal.count(NEG_INF)
    # the skip bounds the K/V tile count with a min (kv_tiles); without it, no min
    assert "min.s32" in causal
    assert "min.s32" not in plain and "min.s32" not in noskip


# --- argument rules ------------------------------------------------------------------------------------
def test_kv_stages():
    assert fa.kv_stages(128) == 3          # 32 KiB of Q + 3 x 64 KiB of K+V in 227 KiB
    assert fa.kv_stages(64) == 4           # 6 would fit: capped at 4


def test_flashfwd_defaults():
    f = fa.FlashFwd()
    assert (f.D, f.step, f.causal, f.skip, f.stages) == (128, "overlap", False, True, 3)
    assert f.threads == 384 and f.ws and f.pingpong and f.overlap
    p = fa.FlashFwd(64, "pipeline", stages=2)
    assert p.threads == 256 and not p.ws and not p.pingpong and p.stages == 2
    assert fa.FlashFwd(64).stages == 4
    assert fa.FlashFwd(128, "pingpong").pingpong and not fa.FlashFwd(128, "producer").pingpong


@pytest.mark.parametrize("kwargs,match", [
    (dict(D=96), "head dim D must be 64 or 128"),
    (dict(step="nope"), "step must be one of"),
    (dict(D=128, stages=1), r"stages must be 2\.\.3 for D=128"),
    (dict(D=128, stages=99), r"stages must be 2\.\.3"),
    (dict(D=128, stages=True), "stages must be"),
    (dict(D=128, stages=2.0), "stages must be"),
    (dict(D=64, stages=5), r"stages must be 2\.\.4 for D=64"),
])
def test_flashfwd_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        fa.FlashFwd(**kwargs)


def test_flat_is_a_permutation_of_the_accumulator():
    per_row = fa.BLOCK_N // 4
    idx = [fa.FlashFwd.flat(r, c) for r in range(2) for c in range(per_row)]
    assert sorted(idx) == list(range(2 * per_row)) == list(range(64))
    assert (fa.FlashFwd.flat(0, 0), fa.FlashFwd.flat(0, 1), fa.FlashFwd.flat(1, 0),
            fa.FlashFwd.flat(0, 2)) == (0, 1, 2, 4)
    assert fa.FlashFwd.flat(1, 1) == 3 and fa.FlashFwd.flat(1, 2) == 6


def test_views_shapes_strides_and_memory():
    B, H, S, D = 2, 3, 5, 4
    t = torch.arange(B * H * S * D, dtype=torch.float32).reshape(B, H, S, D)
    qv, vv = fa.views(t), fa.views(t, v_operand=True)
    assert tuple(qv.shape) == (S, D, B * H) and qv.stride() == (D, 1, S * D)
    assert tuple(vv.shape) == (D, S, B * H) and vv.stride() == (1, D, S * D)
    assert qv.data_ptr() == vv.data_ptr() == t.data_ptr()
    b, h, s, d = 1, 2, 3, 1
    assert qv[s, d, b * H + h] == vv[d, s, b * H + h] == t[b, h, s, d]


def qkvo(shape=(1, 2, 128, 64), dtype=torch.float16):
    return [torch.zeros(shape, dtype=dtype) for _ in range(4)]


def test_operands_rules():
    q, k, v, o = qkvo()
    with pytest.raises(ValueError, match=r"q must be a \(B, H, S, D\) torch tensor"):
        fa.operands(q[0], k, v, o)
    with pytest.raises(ValueError, match=r"k must be a \(B, H, S, D\) torch tensor"):
        fa.operands(q, k.numpy(), v, o)
    with pytest.raises(ValueError, match="v must be contiguous"):
        fa.operands(q, k, torch.zeros(1, 2, 128, 128, dtype=torch.float16)[..., ::2], o)
    with pytest.raises(ValueError, match="must share one shape and dtype"):
        fa.operands(q, k, v, torch.zeros(1, 2, 256, 64, dtype=torch.float16))
    with pytest.raises(ValueError, match="must share one shape and dtype"):
        fa.operands(q, k, v.bfloat16(), o)
    with pytest.raises(ValueError, match="dtype must be float16 or bfloat16"):
        fa.operands(*qkvo(dtype=torch.float32))
    with pytest.raises(ValueError, match="head dim D must be 64 or 128, got 96"):
        fa.operands(*qkvo((1, 2, 128, 96)))
    with pytest.raises(ValueError, match="sequence length 200 is not a multiple of 128"):
        fa.operands(*qkvo((1, 2, 200, 64)))
    # valid on every rule but on the CPU: the CuteDSL view needs a CUDA tensor
    for dtype in (torch.float16, torch.bfloat16):
        with pytest.raises(ValueError, match="CUDA"):
            fa.operands(*qkvo((2, 1, 256, 128), dtype))


def test_run_checks_before_compiling():
    before = dict(fa._COMPILED)
    with pytest.raises(ValueError, match="CUDA"):
        fa.run(*qkvo()[:3])
    with pytest.raises(ValueError, match="not a multiple of 128"):
        fa.run(*qkvo((1, 1, 64, 64))[:3])
    assert fa._COMPILED == before


# --- output_bound ------------------------------------------------------------------------------------
def test_output_bound_values():
    assert A.output_bound("float16", 2.0, 0.5) == 2 * 2.0**-11 * 2.5
    assert A.output_bound("bfloat16", 2.0, -0.5) == 2 * 2.0**-8 * 2.5
    assert A.output_bound("float16", 0.0, 0.0) == 0.0
    ref = np.array([-1.0, 0.0, 3.0])
    np.testing.assert_array_equal(A.output_bound("bfloat16", 1.0, ref), 2 * 2.0**-8 * np.array([2.0, 1.0, 4.0]))
    got = A.output_bound("float16", 1.0, torch.tensor([[-3.0, 1.0]]))
    assert torch.is_tensor(got) and got.shape == (1, 2)
    assert got.tolist() == [[2 * 2.0**-11 * 4.0, 2 * 2.0**-11 * 2.0]]


@pytest.mark.parametrize("dtype,v_max,match", [
    ("float32", 1.0, "dtype must be one of"), ("torch.float16", 1.0, "dtype must be one of"),
    ("float16", -1.0, "v_max must be a non-negative"), ("bfloat16", float("nan"), "v_max must be"),
])
def test_output_bound_rejects(dtype, v_max, match):
    with pytest.raises(ValueError, match=match):
        A.output_bound(dtype, v_max, 0.0)


# --- attention_measure: shapes, names, the output check -----------------------------------------
def test_shape_of_keeps_tokens_and_heads():
    for S in (1024, 4096, 16384):
        B, H, S2, D = M.shape_of(S, 128)
        assert B * S == M.TOKENS and H == M.HEADS and (S2, D) == (S, 128)
    assert M.shape_of(4096, 64) == (4, 16, 4096, 64)
    for S, D, dt in M.LADDER + M.SWEEP:
        assert S % fa.BLOCK_M == 0 and D in (64, 128) and dt in A.EPS


def test_step_names():
    assert set(M.STEP_NAMES) == set(fa.STEPS) and len(M.STEP_NAMES) == len(fa.STEPS)
    names = list(M.STEP_NAMES.values()) + [M.NO_SKIP, M.TRITON] + list(M.BACKENDS.values())
    assert len(set(names)) == len(names)
    assert list(M.STEP_NAMES) == list(fa.STEPS)          # the ladder in order


def realistic(causal=False, S=128, D=64):
    """Fresh (q, k, v) in float16 (held as float64 tensors), the float32 reference, and a
    function of the output computed in float64 from (q, k, v), rounded to float16 as a kernel
    stores it."""
    gen = torch.Generator().manual_seed(random.randrange(2**31))
    q, k, v = (torch.randn(1, 2, S, D, generator=gen).half().double() for _ in range(3))
    ref = torch.from_numpy(A.attention_ref(q, k, v, causal)).float()

    def output(q=q, k=k, v=v):
        return torch.from_numpy(A.attention_ref(q, k, v, causal)).half()
    return q, k, v, ref, output


@pytest.mark.parametrize("causal", [False, True])
def test_check_output_accepts_right_answers(causal):
    q, k, v, ref, output = realistic(causal)
    out = output()
    worst = M.check_output("right", out, ref, v, torch.float16)
    assert 0 <= worst <= 0.5 + 1e-6           # rounding to fp16 costs at most u |O|: half the bound
    # an error just under the bound everywhere, both signs
    bound = A.output_bound("float16", v.abs().amax().item(), ref)
    sign = torch.where(torch.rand(ref.shape) < 0.5, -1.0, 1.0)
    near = ref.double() + 0.99 * sign * bound.double()
    worst = M.check_output("near", near, ref, v, "float16")
    assert 0.98 < worst < 1
    assert M.check_output("bf16", ref.bfloat16(), ref, v, torch.bfloat16) < 1


def test_check_output_rejects_wrong_answers():
    q, k, v, ref, output = realistic()
    out = output()
    bound = A.output_bound("float16", v.abs().amax().item(), ref)
    nan = out.clone()
    nan[0, 1, 77, 5] = float("nan")
    with pytest.raises(AssertionError, match="1 output elements never written"):
        M.check_output("nan", nan, ref, v, torch.float16)
    off = ref.clone()
    off[0, 0, 3, 9] += 2 * bound[0, 0, 3, 9]
    with pytest.raises(AssertionError, match=r"off: .*exceeds the bound \(worst 2\.00x\)"):
        M.check_output("off", off, ref, v, torch.float16)
    # the scores without the 1/sqrt(D) scale: a sharper softmax, far off the reference
    unscaled = output(q=q * math.sqrt(q.shape[-1]))
    assert unscaled.isfinite().all()
    with pytest.raises(AssertionError, match="exceeds the bound"):
        M.check_output("unscaled", unscaled, ref, v, torch.float16)
