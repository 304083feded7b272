"""utils.day05.attention (references, counts), attention_triton (the plain Triton contender, run
under the interpreter and compiled for sm_90a) and attention_checks (the three exercises: right
answers pass, stubs are "not attempted", planted mistakes fail with their hint, malformed answers
are explained)."""
import math
import random

import numpy as np
import pytest

import utils

T = utils.setup(quiet=True)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from utils.core import ptx  # noqa: E402
from utils.core.checks import CheckFailed, check_array  # noqa: E402
from utils.day05 import attention as A, attention_checks as C, attention_triton as AT  # noqa: E402


def randn(*shape, dtype=torch.float64):
    """Fresh normal data every run (the seed is in the tensor's repr if a test fails)."""
    gen = torch.Generator().manual_seed(random.randrange(2**31))
    return torch.randn(*shape, generator=gen, dtype=dtype)


# --- references -------------------------------------------------------------------------------------
@pytest.mark.parametrize("S,D,block_n", [(100, 64, 32), (72, 16, 32), (72, 16, 128), (100, 64, 1)])
@pytest.mark.parametrize("causal", [False, True])
def test_references_agree_with_torch_sdpa(S, D, block_n, causal):
    q, k, v = (randn(2, 3, S, D) for _ in range(3))
    want = F.scaled_dot_product_attention(q, k, v, is_causal=causal).numpy()
    np.testing.assert_allclose(A.attention_ref(q, k, v, causal), want, rtol=0, atol=1e-10)
    np.testing.assert_allclose(A.online_softmax_ref(q, k, v, block_n, causal), want, rtol=0, atol=1e-10)
    # numpy input works too, and causal really differs from non-causal
    assert not np.allclose(A.attention_ref(q.numpy(), k.numpy(), v.numpy(), not causal), want)


def test_online_step_first_block_and_rescale():
    s = np.array([[1.0, 3.0], [-2.0, -1.0]])
    m, alpha, l = A.online_softmax_step(np.full(2, -np.inf), np.zeros(2), s)
    assert m.tolist() == [3.0, -1.0] and alpha.tolist() == [0.0, 0.0]       # nothing to rescale
    np.testing.assert_allclose(l, [math.exp(-2) + 1, math.exp(-1) + 1])
    m2, alpha2, l2 = A.online_softmax_step(m, l, np.array([[5.0], [-3.0]]))  # max grows in row 0
    np.testing.assert_allclose(alpha2, [math.exp(3 - 5), 1.0])
    np.testing.assert_allclose(l2, [alpha2[0] * l[0] + 1, l[1] + math.exp(-2)])


# --- counts -------------------------------------------------------------------------------------------
def test_flops_standard_count():
    assert A.flops(1, 1, 4096, 128) == 4 * 4096**2 * 128
    assert A.flops(4, 16, 8192, 64, causal=True) == 2 * 4 * 16 * 8192**2 * 64
    assert A.flops(2, 3, 5, 7) == 2 * A.flops(2, 3, 5, 7, causal=True)


def test_kv_stage_bytes():
    assert A.kv_stage_bytes(128, 128, 2) == 65536          # 2 tiles x 128 x 128 x 2 bytes
    assert A.kv_stage_bytes(176, 64, 2) == 2 * 176 * 64 * 2
    assert A.kv_stage_bytes(128, 256, 1) == 65536          # fp8


def _tiles_brute_force(m, bm, bn, S):
    """From the mask itself: which K/V tiles hold an unmasked score of query tile m, and which
    hold a masked one (causal, or a key past S)."""
    rows = np.arange(m * bm, min((m + 1) * bm, S))
    visit, masked = [], []
    for n in range(-(-S // bn)):
        cols = np.arange(n * bn, (n + 1) * bn)
        keep = (cols[None, :] <= rows[:, None]) & (cols[None, :] < S)
        if keep.any():
            visit.append(n)
            if not keep.all():
                masked.append(n)
    return visit, masked


@pytest.mark.parametrize("bm,bn", [(64, 64), (128, 64), (64, 128), (192, 128), (128, 80), (1, 16), (16, 1)])
def test_causal_tiles_match_the_mask(bm, bn):
    for S in (100, 384, 1000):
        for m in range(-(-S // bm)):
            visit, masked = _tiles_brute_force(m, bm, bn, S)
            got = A.causal_tiles(m, bm, bn, seq_len=S)
            assert visit == list(range(got.visit)) and list(got.masked) == masked, (m, bm, bn, S)
    assert A.causal_tiles(3, 128, 64) == (8, (6, 7))        # no seq_len: the diagonal only
    assert A.causal_tiles(0, 64, 128) == (1, (0,))


def test_kv_bytes_per_output_tile():
    stage = A.kv_stage_bytes(128, 128, 2)
    assert A.kv_bytes_per_output_tile(4096, 128, 128, 2) == 32 * stage
    assert A.kv_bytes_per_output_tile(4000, 128, 128, 2) == 32 * stage     # whole boxes, as TMA
    per_tile = [A.kv_bytes_per_output_tile(4096, 128, 128, 2, True, m, 128) for m in range(32)]
    assert per_tile[0] == stage and per_tile[-1] == 32 * stage
    assert sum(per_tile) == 32 * 33 // 2 * stage                            # about half


@pytest.mark.parametrize("call,match", [
    (lambda: A.kv_stage_bytes(0, 64, 2), "block_n"), (lambda: A.kv_stage_bytes(64, 64, 3), "itemsize"),
    (lambda: A.causal_tiles(-1, 64, 64), "m_block"), (lambda: A.causal_tiles(0, 64, 0), "block_n"),
    (lambda: A.causal_tiles(4, 32, 32, seq_len=100), "past seq_len"),
    (lambda: A.kv_bytes_per_output_tile(100, 64, 32, 2, False, 4, 32), "m_block"),
    (lambda: A.kv_bytes_per_output_tile(100, 64, 32, 2, True, 4, 32), "past seq_len"),
    (lambda: A.attention_ref(np.zeros((2, 8, 4)), np.zeros((2, 8, 4)), np.zeros((2, 8, 4))), "B, H, S, D"),
    (lambda: A.attention_ref(np.zeros((1, 1, 8, 4)), np.zeros((1, 1, 9, 4)), np.zeros((1, 1, 8, 4))), "one shape"),
    (lambda: A.online_softmax_ref(*[np.zeros((1, 1, 8, 4))] * 3, block_n=0), "block_n")])
def test_bad_input_is_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("call,match", [        # the wrong kind: a TypeError stating the same rule
    (lambda: A.kv_stage_bytes(64, 64, True), r"itemsize must be one of \(1, 2, 4\).*got True \(bool"),
    (lambda: A.flops(1, 1, 64.0, 64), r"S must be a positive int, got 64\.0 \(float"),
    (lambda: A.kv_stage_bytes(None, 64, 2), r"block_n must be a positive int, got None \(NoneType")])
def test_wrong_kind_is_a_type_error(call, match):
    with pytest.raises(TypeError, match=match):
        call()


# --- the Triton kernel ----------------------------------------------------------------------------
# Tolerance: under the interpreter the inputs are fp32 and tl.dot is an fp32 NumPy matmul, the
# softmax runs in fp32 with exp2, and the accumulator is fp32. Each output is a convex combination
# of V's rows (|v| < ~5), so the error is a few fp32 roundings (2^-24 ~ 6e-8) per step over S <= 100
# keys: ~1e-6 in practice. 2e-5 leaves margin; a wrong mask or a missing rescale is off by >1e-2.
TOL = dict(atol=2e-5, rtol=2e-5)


@pytest.mark.parametrize("B,H,S,D,bm,bn", [(1, 2, 100, 64, 32, 16), (1, 2, 72, 16, 16, 32),
                                           (2, 1, 72, 16, 32, 32), (1, 2, 100, 16, 64, 16)])
@pytest.mark.parametrize("causal", [False, True])
def test_triton_kernel_runs(B, H, S, D, bm, bn, causal):
    """Under the interpreter (cpu tier) in fp32; on a GPU in fp16 on the GPU (fp32 inputs would run
    tl.dot in TF32), against the float64 reference of the same fp16-rounded inputs: P is rounded
    to fp16 before PV and O is stored in fp16 (2^-11 relative each), so 1e-2 leaves margin while
    a wrong mask or a missing rescale is off by more than 1e-1 at these sizes."""
    dtype, tol = (torch.float16, dict(atol=1e-2, rtol=1e-2)) if T.has_gpu else (torch.float32, TOL)
    q, k, v = (randn(B, H, S, D, dtype=torch.float32).to(T.device, dtype) for _ in range(3))
    out = torch.full_like(q, float("nan"))
    assert AT.attention(q, k, v, causal, out=out, block_m=bm, block_n=bn) is out
    assert not torch.isnan(out).any(), "elements never written"
    ref = A.attention_ref(*(x.cpu().double() for x in (q, k, v)), causal)
    check_array("triton attention", out.cpu().double(), ref, **tol,
                launched=f"B={B} H={H} S={S} D={D} BLOCK_M={bm} BLOCK_N={bn} causal={causal} {dtype} on {T.device}")


def test_triton_wrapper_rejects_bad_input():
    q = torch.zeros(1, 1, 8, 24)
    with pytest.raises(ValueError, match="power of 2"):
        AT.attention(q, q, q)
    with pytest.raises(ValueError, match="one"):
        AT.attention(torch.zeros(1, 1, 8, 16), torch.zeros(1, 1, 9, 16), torch.zeros(1, 1, 8, 16))
    with pytest.raises(ValueError, match="block_n"):
        AT.attention(*[torch.zeros(1, 1, 8, 16)] * 3, block_n=24)


@pytest.mark.parametrize("D,causal,dtype", [(64, False, "fp16"), (128, True, "fp16"), (128, False, "bf16")])
def test_triton_kernel_compiles_for_sm90a_with_wgmma(D, causal, dtype, tmp_path, monkeypatch):
    """What Triton 3.9 emits for sm_90a: both GEMMs on wgmma (QK^T is m64 x BLOCK_N, PV is
    m64 x D), K/V through Ampere-style cp.async (this kernel uses no TMA), within shared memory.
    An empty cache forces a real compile after the interpreted launches above (which leak
    interpreter patches into triton.language that the compile must undo)."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    compiled = AT.compile_hopper(D, causal, dtype)
    text = compiled.asm["ptx"]
    assert ptx.target(text) == "sm_90a"
    found = ptx.count(text)
    assert found["wgmma"] > 0 and found["cp.async (Ampere)"] > 0
    assert found["cp.async.bulk.tensor"] == 0 and found["mbarrier"] == 0
    bn, ty = AT.GPU_BLOCKS["block_n"], {"fp16": "f16", "bf16": "bf16"}[dtype]
    for n in (bn, D):
        assert f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty}" in text
    assert compiled.metadata.shared <= 232448


# --- exercise checks ------------------------------------------------------------------------------
def stub(*args):
    raise NotImplementedError


def rejects(check, fn, *needles):
    with pytest.raises(CheckFailed) as e:
        check(fn)
    for needle in needles:
        assert needle in str(e.value), str(e.value)
    return str(e.value)


def test_check_kv_stage_bytes(capsys):
    C.check_kv_stage_bytes(lambda n, d, s: 2 * n * d * s)
    assert "correct" in capsys.readouterr().out
    rejects(C.check_kv_stage_bytes, lambda n, d, s: n * d * s, "ONE tile")             # forgot V
    rejects(C.check_kv_stage_bytes, lambda n, d, s: 2 * n * d, "counts elements")      # elements
    rejects(C.check_kv_stage_bytes, lambda n, d, s: 2 * n * d * s * 8, "bits")
    rejects(C.check_kv_stage_bytes, lambda n, d, s: 3 * n * d * s, "K tile + V tile")  # unlisted
    rejects(C.check_kv_stage_bytes, lambda n, d, s: 2.0 * n * d * s, "expected an int")
    rejects(C.check_kv_stage_bytes, lambda n, d, s: None, "NoneType")


def test_checks_print_verdicts(capsys):
    C.check_kv_stage_bytes(lambda n, d, s: 2 * n * d * s)
    C.check_causal_skip(lambda m, bm, bn: math.ceil((m + 1) * bm / bn))
    C.check_online_rescale(lambda m, l, s: A.online_softmax_step(m, l, s))
    out = capsys.readouterr().out
    assert out.count("correct.") == 3
    for check in (C.check_kv_stage_bytes, C.check_causal_skip, C.check_online_rescale):
        assert check(stub) is None
    assert capsys.readouterr().out.count("not attempted") == 3


def test_check_causal_skip():
    C.check_causal_skip(lambda m, bm, bn: -(-(m + 1) * bm // bn))
    rejects(C.check_causal_skip, lambda m, bm, bn: (m + 1) * bm // bn, "round UP")      # floor
    rejects(C.check_causal_skip, lambda m, bm, bn: (m + 1) * bm // bn + 1, "one too many")
    rejects(C.check_causal_skip, lambda m, bm, bn: m * bm // bn, "forgets the diagonal")
    rejects(C.check_causal_skip, lambda m, bm, bn: math.ceil(m * bm / bn), "forgets the diagonal")
    rejects(C.check_causal_skip, lambda m, bm, bn: m * bm // bn + 1, "SEVERAL")
    rejects(C.check_causal_skip, lambda m, bm, bn: m + 1, "query tiles")
    rejects(C.check_causal_skip, lambda m, bm, bn: math.ceil((m + 1) * bm / bn) - 1, "index of the last")
    rejects(C.check_causal_skip, lambda m, bm, bn: m + 2, "query tile m=0", "last row")  # unlisted
    rejects(C.check_causal_skip, lambda m, bm, bn: (m + 1) * bm / bn, "expected an int", "math.ceil")


def _rescale(m, l, s, *, sign=1, block_max_only=False, rescale_old=True, alpha_on_new=False,
             shift="new"):
    """The learner's update, with one planted slip switched on by a keyword."""
    m_new = s.max(axis=1) if block_max_only else np.maximum(m, s.max(axis=1))
    with np.errstate(all="ignore"):
        alpha = np.exp(sign * (m - m_new))
        shifted = {"new": s - m_new[:, None], "old": s - m[:, None], "none": s}[shift]
        new = np.exp(shifted).sum(axis=1)
        l_new = alpha * (l + new) if alpha_on_new else (alpha * l if rescale_old else l) + new
    return m_new, alpha, l_new


def _rescale_exp2(m, l, s):
    """The kernel's form: exp(x) = exp2(x * log2(e)) (equal to the reference within 1e-9)."""
    log2e = 1 / math.log(2)
    m_new = np.maximum(m, s.max(axis=-1))
    alpha = np.exp2((m - m_new) * log2e)
    return m_new, alpha, alpha * l + np.exp2((s - m_new[:, None]) * log2e).sum(axis=-1)


def test_check_online_rescale():
    C.check_online_rescale(_rescale)
    C.check_online_rescale(_rescale_exp2)                        # an equivalent formula passes
    C.check_online_rescale(lambda m, l, s: tuple(torch.from_numpy(x) for x in _rescale(m, l, s)))
    rejects(C.check_online_rescale, lambda *a: _rescale(*a, sign=-1), "not exp(m_new - m_old)")
    rejects(C.check_online_rescale, lambda *a: _rescale(*a, block_max_only=True), "every block so far")
    rejects(C.check_online_rescale, lambda *a: _rescale(*a, rescale_old=False), "multiply it by alpha")
    rejects(C.check_online_rescale, lambda *a: _rescale(*a, alpha_on_new=True), "only the OLD sum")
    rejects(C.check_online_rescale, lambda *a: _rescale(*a, shift="old"), "NEW max")
    rejects(C.check_online_rescale, lambda *a: _rescale(*a, shift="none"), "subtract the running max")
    msg = rejects(C.check_online_rescale, lambda *a: (lambda r: (r[0], r[1], r[2] + 1))(_rescale(*a)),
                  "l_new[0]", "alpha * l_old")                 # an unlisted slip: the general hint
    assert "first block" in msg


def test_check_online_rescale_explains_malformed_answers():
    rejects(C.check_online_rescale, lambda m, l, s: _rescale(m, l, s)[:2], "expected a tuple (m_new, alpha, l_new)")
    rejects(C.check_online_rescale, lambda m, l, s: None, "got NoneType")
    rejects(C.check_online_rescale, lambda m, l, s: tuple(x[:, None] for x in _rescale(m, l, s)),
            "shape (5, 1), expected (5,)", "keepdims")
    rejects(C.check_online_rescale, lambda m, l, s: (np.maximum(m.max(), s.max(0)), m, l),
            "m_new has shape (7,)", "LAST axis")
    rejects(C.check_online_rescale, lambda m, l, s: ("max", "alpha", "sum"), "expected an array")
