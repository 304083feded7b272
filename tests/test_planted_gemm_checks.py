"""Issue 35, planted answers for seven exercise checks of day 5 (notebooks 03, 04 and 06): for each
check, wrong answers a learner really writes (each must be rejected with the hint for ITS
mistake, and never with another mistake's hint) and right answers written differently (NumPy
ints, tuples or lists, loops or formulas, other Triton idioms: each must print the pass line).
Kernels run under the Triton interpreter on the CPU; the producer step compiles for sm_90a."""
import linecache
import math
import re

import numpy as np
import pytest

import utils

T = utils.setup(quiet=True)
import triton  # noqa: E402,F401
import triton.language as tl  # noqa: E402,F401

from jit_source import load_function  # noqa: E402  (tests/jit_source.py)
from utils.core.checks import CheckFailed  # noqa: E402
from utils.cute_dsl import exercises as ex  # noqa: E402
from utils.day05 import gemm, gemm_checks, skinny, skinny_checks  # noqa: E402


def stub(*args):
    raise NotImplementedError


def rejects(check, answer, hint, not_hint=None, others=()):
    """``check(answer)`` raises with ``hint``; never with ``not_hint`` nor with any hint of
    ``others`` (the other slips' hints) that is not the expected one."""
    with pytest.raises(CheckFailed, match=hint) as e:
        check(answer)
    msg = str(e.value)
    assert "Traceback" not in msg
    if not_hint:
        assert not re.search(not_hint, msg), msg
    matched = re.search(hint, msg).group(0)
    for other in others:
        assert other not in msg or other in matched or re.search(hint, other), \
            f"another slip's hint ({other!r}) in: {msg}"


def accepts(check, answer, capsys, line=r"\] correct\."):
    check(answer)
    out = capsys.readouterr().out
    assert re.search(line, out), out
    assert "wrong" not in out


# ---- check_stage_tx -----------------------------------------------------------------------------

def _issued(t, s, c):                      # the slices this CTA issues under multicast
    return (t[0] // c[1] + t[1] // c[0]) * t[2] * s


STAGE_WRONG = {
    "elements, no itemsize": (lambda t, s, c: (t[0] + t[1]) * t[2], "those are elements"),
    "A's tile only": (lambda t, s, c: t[0] * t[2] * s, "A's tile alone"),
    "B as M x K": (lambda t, s, c: 2 * t[0] * t[2] * s, "N x K, not M x K"),
    "C's tile": (lambda t, s, c: t[0] * t[1] * s, "M x N is C's tile"),
    "divided by cluster": (lambda t, s, c: ex.stage_tx_ref(t, s) // (c[0] * c[1]), "do not divide by the cluster"),
    "issued slices": (_issued, "ISSUES under multicast"),
    "whole cluster": (lambda t, s, c: ex.stage_tx_ref(t, s) * c[0] * c[1], "its own shared memory"),
    "bits": (lambda t, s, c: ex.stage_tx_ref(t, s) * 8, "bytes, not bits"),
    "float, right value": (lambda t, s, c: (t[0] + t[1]) * t[2] * s / 1, "right but it is float"),
    "two numbers": (lambda t, s, c: (t[0] * t[2] * s, t[1] * t[2] * s), "return one int"),
    "no return": (lambda t, s, c: None, "forget to return"),
    "raises": (lambda t, s, c: t[3], "raised IndexError"),
    "unrelated": (lambda t, s, c: ex.stage_tx_ref(t, s) + 16, "A's tile is M x K elements and B's N x K"),
}


@pytest.mark.parametrize("answer,hint", STAGE_WRONG.values(), ids=STAGE_WRONG.keys())
def test_stage_tx_rejects(answer, hint):
    rejects(ex.check_stage_tx, answer, hint, others=[h for _, h in ex.TX_SLIPS])


STAGE_RIGHT = {
    "reference": ex.stage_tx_ref,
    "numpy int": lambda t, s, c: np.int64(t[2]) * (t[0] + t[1]) * s,
    "loop": lambda t, s, c: sum(d * t[2] * s for d in t[:2]),
    "prod": lambda t, s, c: math.prod((t[0] + t[1], t[2], s)),
    "numpy prod": lambda t, s, c: np.prod([t[0] + t[1], t[2], s]),
}


@pytest.mark.parametrize("answer", STAGE_RIGHT.values(), ids=STAGE_RIGHT.keys())
def test_stage_tx_accepts(answer, capsys):
    accepts(ex.check_stage_tx, answer, capsys)


def test_stage_tx_stub(capsys):
    ex.check_stage_tx(stub)
    assert "not attempted" in capsys.readouterr().out


def test_stage_tx_every_slip_has_its_own_hint():
    for rule, hint in ex.TX_SLIPS:
        rejects(ex.check_stage_tx, rule, hint[:30].replace("(", r"\(").replace(")", r"\)").replace("*", r"\*"))


def test_stage_tx_cases_vary_every_input():
    tiles = [t for t, _, _ in ex.STAGE_CASES]
    assert any(m > n for m, n, _ in tiles) and any(m < n for m, n, _ in tiles)
    assert len({k for *_, k in tiles}) > 1 and len({s for _, s, _ in ex.STAGE_CASES}) > 2
    clusters = {c for *_, c in ex.STAGE_CASES}
    assert any(a > b for a, b in clusters) and any(a < b for a, b in clusters)


# ---- check_mcast_mask ---------------------------------------------------------------------------

def _row_major(cl, x, md):
    cm, cn = cl
    return sum(1 << (x[0] * cn + j) for j in range(cn)) if md == 1 else sum(1 << (i * cn + x[1]) for i in range(cm))


def _ranks(cl, x, md):
    return [x[0] + j * cl[0] for j in range(cl[1])] if md == 1 else [i + x[1] * cl[0] for i in range(cl[0])]


MASK_WRONG = {
    "modes swapped": (lambda cl, x, md: ex.mcast_mask_ref(cl, x, 1 - md), "modes are swapped", "column-major"),
    "row-major ranks": (_row_major, "ranks are column-major: r = m \\+ n \\* cm \\(yours are row-major", "swapped"),
    "row-major, modes swapped": (lambda cl, x, md: _row_major(cl, x, 1 - md), "row-major\\), and the modes are swapped", None),
    "stride cn": (lambda cl, x, md: sum(1 << (r % cl[0] + r // cl[0] * cl[1]) for r in _ranks(cl, x, md)), "not cn", "swapped"),
    "own bit left out": (lambda cl, x, md: ex.mcast_mask_ref(cl, x, md) - (1 << (x[0] + x[1] * cl[0])), "own bit", None),
    "own bit only": (lambda cl, x, md: 1 << (x[0] + x[1] * cl[0]), "EVERY CTA", None),
    "whole cluster": (lambda cl, x, md: 2 ** (cl[0] * cl[1]) - 1, "not the whole cluster", None),
    "sum of ranks": (lambda cl, x, md: sum(_ranks(cl, x, md)), "sum of the ranks is not a mask", None),
    "bits from 1": (lambda cl, x, md: sum(2 ** (r + 1) for r in _ranks(cl, x, md)), "counting from 0", None),
    "loop bounds swapped": (lambda cl, x, md: sum(1 << (x[0] + j * cl[0]) for j in range(cl[0])) if md == 1 else
                            sum(1 << (i + x[1] * cl[0]) for i in range(cl[1])), "range\\(cn\\)", "column-major"),
    "as a binary string": (lambda cl, x, md: bin(ex.mcast_mask_ref(cl, x, md)), "right mask, written as text", None),
    "the ranks, not a mask": (lambda cl, x, md: _ranks(cl, x, md), "right ranks, but not a mask", None),
    "float": (lambda cl, x, md: float(ex.mcast_mask_ref(cl, x, md)), "a float or a bool is not one", None),
    "no return": (lambda cl, x, md: None, "forget to return", None),
    "unrelated": (lambda cl, x, md: ex.mcast_mask_ref(cl, x, md) | (1 << 15), "bit r is set for every rank",
                  "column-major|swapped"),
}


@pytest.mark.parametrize("answer,hint,not_hint", MASK_WRONG.values(), ids=MASK_WRONG.keys())
def test_mcast_mask_rejects(answer, hint, not_hint):
    rejects(ex.check_mcast_mask, answer, hint, not_hint, others=[h for _, h in ex.MASK_SLIPS])


def _mask_or(cl, x, md):
    mask = 0
    for r in _ranks(cl, x, md):
        mask |= 2 ** r
    return mask


MASK_RIGHT = {
    "reference": ex.mcast_mask_ref,
    "numpy int64": lambda cl, x, md: np.int64(ex.mcast_mask_ref(cl, x, md)),
    "numpy uint16": lambda cl, x, md: np.uint16(ex.mcast_mask_ref(cl, x, md)),
    "loop with |= and 2**r": _mask_or,
    "numpy sum of powers": lambda cl, x, md: np.sum(2 ** np.array(_ranks(cl, x, md))),
    "from a bit string": lambda cl, x, md: int("".join("1" if r in _ranks(cl, x, md) else "0"
                                                       for r in reversed(range(cl[0] * cl[1]))), 2),
}


@pytest.mark.parametrize("answer", MASK_RIGHT.values(), ids=MASK_RIGHT.keys())
def test_mcast_mask_accepts(answer, capsys):
    accepts(ex.check_mcast_mask, answer, capsys)


def test_mcast_mask_stub(capsys):
    ex.check_mcast_mask(stub)
    assert "not attempted" in capsys.readouterr().out


def test_mcast_mask_every_slip_has_its_own_hint():
    for rule, hint in ex.MASK_SLIPS:
        rejects(ex.check_mcast_mask, rule, re.escape(hint[:40]))


def test_mcast_mask_clusters_go_both_ways():
    clusters = set(ex.MASK_CLUSTERS)
    assert any(a > b > 1 for a, b in clusters) and any(1 < a < b for a, b in clusters)


# ---- check_producer (structure, compiled for sm_90a on any machine) ---------------------------

def step(body):
    """A @cute.jit producer step whose learner part is ``body``; the template's commit follows."""
    from utils.cute_dsl.compat import cute
    src = ("@cute.jit\ndef load(self, pipe, state, atom_a, tAg, tAs, mask_a, atom_b, tBg, tBs, mask_b):\n"
           + "".join(f"    {line}\n" for line in body) + "    pipe.producer_commit(state)\n")
    ns, fname = {"cute": cute}, f"<planted producer step {abs(hash(src))}>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    exec(compile(src, fname, "exec"), ns)
    return ns["load"]


ACQ, BAR = "pipe.producer_acquire(state)", "bar = pipe.producer_get_barrier(state)"
A = "cute.copy(atom_a, tAg[(None, state.count)], tAs[(None, state.index)], tma_bar_ptr=bar, mcast_mask=mask_a)"
B = "cute.copy(atom_b, tBg[(None, state.count)], tBs[(None, state.index)], tma_bar_ptr=bar, mcast_mask=mask_b)"

PRODUCER_WRONG = {
    "acquire per copy": ([ACQ, BAR, A, ACQ, B], "called 2 times"),
    "slice without None": ([ACQ, BAR, A.replace("(None, state.count)", "state.count"), B], "None first"),
    "None last": ([ACQ, BAR, A.replace("(None, state.count)", "(state.count, None)"), B], "None first"),
    "barrier of state.index": ([ACQ, "bar = pipe.producer_get_barrier(state.index)", A, B], "pipeline state itself"),
    "mask as a number": ([ACQ, BAR, A.replace("mcast_mask=mask_a", "mcast_mask=3"), B], "mcast_mask=mask_a for A's"),
    "count/index swapped": ([ACQ, BAR, A.replace("state.count", "X").replace("state.index", "state.count")
                             .replace("X", "state.index"), B], "count and index are swapped"),
    "buffer by phase": ([ACQ, BAR, A.replace("state.index", "state.phase"), B], "tAs\\[state.phase\\]"),
    "masks swapped": ([ACQ, BAR, A.replace("mask_a", "mask_b"), B.replace("mask_b", "mask_a")], "masks are swapped"),
    "no acquire": ([BAR, A, B], "expect_tx"),
    "no barrier": ([ACQ, A.replace(", tma_bar_ptr=bar", ""), B.replace(", tma_bar_ptr=bar", "")],
                   "tma_bar_ptr=pipe.producer_get_barrier"),
    "only B": ([ACQ, BAR, B], "0 tma load\\(s\\) with atom_a and 1"),
}


@pytest.mark.parametrize("body,hint", PRODUCER_WRONG.values(), ids=PRODUCER_WRONG.keys())
def test_producer_rejects(body, hint):
    rejects(ex.check_producer, step(body), hint)


PRODUCER_RIGHT = {
    "solution": [ACQ, BAR, A, B],
    "try_acquire token": ["token = pipe.producer_try_acquire(state)", "pipe.producer_acquire(state, token)", BAR, A, B],
    "a loop over A and B": [ACQ, BAR, "for atom, g, s, m in ((atom_a, tAg, tAs, mask_a), (atom_b, tBg, tBs, mask_b)):",
                            "    cute.copy(atom, g[None, state.count], s[None, state.index], tma_bar_ptr=bar, mcast_mask=m)"],
    "src= dst= keywords": [ACQ, BAR, "cute.copy(atom_a, src=tAg[None, state.count], dst=tAs[None, state.index], "
                           "tma_bar_ptr=bar, mcast_mask=mask_a)", B],
    "barrier fetched first": [BAR, ACQ, B, A],
}


@pytest.mark.parametrize("body", PRODUCER_RIGHT.values(), ids=PRODUCER_RIGHT.keys())
def test_producer_accepts(body, capsys):
    accepts(ex.check_producer, step(body), capsys, line=r"\[producer step\] structure OK")


def test_producer_stub_and_malformed(capsys):
    ex.check_producer(step(["pass"]))
    assert "not attempted" in capsys.readouterr().out
    rejects(ex.check_producer, None, "expected the @cute.jit function")


# ---- check_k_loop (Triton interpreter) ------------------------------------------------------



def k_loop(*body):
    """The exercise's kernel with ``body`` as the K loop's body (a real file: Triton reads it)."""
    src = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
           "def k_loop_kernel(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):\n"
           "    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN\n"
           "    acc = tl.zeros((BM, BN), dtype=tl.float32)\n"
           "    for k in range(0, K, BK):\n" + "".join(f"        {line}\n" for line in body) +
           "    rm, rn = off_m + tl.arange(0, BM), off_n + tl.arange(0, BN)\n"
           "    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),\n"
           "             mask=(rm[:, None] < M) & (rn[None, :] < N))\n")
    return load_function(src, "k_loop_kernel")


LA, LB = "a_desc.load([off_m, k])", "b_desc.load([k, off_n])"
K_WRONG = {
    "last step only": ([f"acc = tl.dot({LA}, {LB})"], "LAST K step"),
    "acc added twice": ([f"acc += tl.dot({LA}, {LB}, acc)"], "already adds acc"),
    "always k = 0": (["acc = tl.dot(a_desc.load([off_m, 0]), b_desc.load([0, off_n]), acc)"], "k = 0 tiles"),
    "k * BK": (["acc = tl.dot(a_desc.load([off_m, k * BK]), b_desc.load([k * BK, off_n]), acc)"], "not k \\* BK"),
    "B read as N x K": ([f"acc = tl.dot({LA}, b_desc.load([off_n, k]), acc)"], "B is K x N"),
    "A read as K x M": ([f"acc = tl.dot(a_desc.load([k, off_m]), {LB}, acc)"], "A is M x K"),
    "B at off_m": ([f"acc = tl.dot({LA}, b_desc.load([k, off_m]), acc)"], "not off_m"),
    "A at off_n": ([f"acc = tl.dot(a_desc.load([off_n, k]), {LB}, acc)"], "not off_n"),
    "fp16 after each step": ([f"acc += tl.dot({LA}, {LB}).to(tl.float16)"], "rounded to fp16"),
    "fp16 dot output": ([f"acc += tl.dot({LA}, {LB}, out_dtype=tl.float16)"], "rounded to fp16"),
    "fp16 elementwise products": ([f"acc += tl.sum({LA}[:, :, None] * {LB}[None, :, :], axis=1)"], "rounded to fp16"),
    "dot(b, a)": ([f"acc = tl.dot({LB}, {LA}, acc)"], "in that order"),
    "offsets not a list": (["acc = tl.dot(a_desc.load(off_m, k), b_desc.load(k, off_n), acc)"], "ONE argument"),
    "tl.load on a descriptor": (["acc = tl.dot(tl.load(a_desc), tl.load(b_desc), acc)"], "own method"),
    "a * b": ([f"acc += {LA} * {LB}"], "not a \\* b"),
    "stub line kept": ([f"acc = tl.dot({LA}, {LB}, acc)", 'acc += float("nan")'], "delete the stub"),
}


@pytest.mark.parametrize("body,hint", K_WRONG.values(), ids=K_WRONG.keys())
def test_k_loop_rejects(body, hint):
    if T.has_gpu and "[:, :, None]" in body[0]:              # Triton 3.6's combine pass crashes on it
        hint = "rounded to fp16|PassManager::run failed"
    rejects(gemm_checks.check_k_loop, k_loop(*body), hint, others=[s[-1] for s in gemm_checks.K_SLIPS])


K_RIGHT = {
    "solution": ["a = a_desc.load([off_m, k])", "b = b_desc.load([k, off_n])", "acc = tl.dot(a, b, acc)"],
    "+=": [f"acc += tl.dot({LA}, {LB})"],
    "tuple offsets": ["acc = tl.dot(a_desc.load((off_m, k)), b_desc.load((k, off_n)), acc)"],
    "acc = acc + dot": [f"acc = acc + tl.dot({LA}, {LB})"],
    "dot of fp32 tiles": [f"acc += tl.dot({LA}.to(tl.float32), {LB}.to(tl.float32))"],
    "fp32 broadcast sum": [f"acc += tl.sum({LA}.to(tl.float32)[:, :, None] * {LB}.to(tl.float32)[None, :, :], axis=1)"],
}


@pytest.mark.parametrize("body", K_RIGHT.values(), ids=K_RIGHT.keys())
def test_k_loop_accepts(body, capsys):
    accepts(gemm_checks.check_k_loop, k_loop(*body), capsys)


def test_k_loop_stub_and_malformed(capsys):
    gemm_checks.check_k_loop(k_loop('acc += float("nan")   # replace: load A\'s and B\'s tiles, then acc = tl.dot(a, b, acc)'))
    assert "not attempted" in capsys.readouterr().out
    rejects(gemm_checks.check_k_loop, lambda *a: None, "@triton.jit")


def test_k_loop_emulation_reproduces_the_reference():
    import torch
    a, b = torch.randn(50, 40).half(), torch.randn(40, 70).half()
    right = gemm_checks.k_loop_emulated(a, b, 32, 64, 16, lambda om, on, k, bk: (om, k),
                                        lambda om, on, k, bk: (k, on), lambda acc, p: acc + p)
    assert torch.allclose(right, gemm.matmul_ref(a, b), atol=1e-9)


# ---- check_tile_order ---------------------------------------------------------------------

def _order_table(pid, pm, pn, g):
    """Right, by enumeration: walk the groups, their columns, then down the rows."""
    order = [(m, n) for first in range(0, pm, g) for n in range(pn) for m in range(first, min(first + g, pm))]
    return order[pid]


def _divmod_order(pid, pm, pn, g):
    group, inner = divmod(pid, g * pn)
    first = group * g
    rows = min(pm - first, g)
    n, m = divmod(inner, rows)
    return [first + m, n]


def _grouped(p, pm, pn, g, per=None, first=None, rows=None, n_by=None):
    per = per if per is not None else g * pn
    first = first if first is not None else p // per * g
    rows = rows if rows is not None else min(pm - first, g)
    return first + p % per % rows, p % per // (n_by or rows)


TILE_WRONG = {
    "row-major": (lambda p, pm, pn, g: (p // pn, p % pn), "plain row-major"),
    "swapped": (lambda p, pm, pn, g: gemm.tile_order_ref(p, pm, pn, g)[::-1], "are swapped"),
    "last group full": (lambda p, pm, pn, g: _grouped(p, pm, pn, g, rows=g), "fewer than group_m rows"),
    "column-major": (lambda p, pm, pn, g: (p % pm, p // pm), "plain column-major"),
    "first_m left out": (lambda p, pm, pn, g: _grouped(p, pm, pn, g, first=0, rows=min(pm - p // (g * pn) * g, g)),
                         "add the group's first tile-row"),
    "first_m = group index": (lambda p, pm, pn, g: _grouped(p, pm, pn, g, first=p // (g * pn)), "index times group_m"),
    "pid_n // group_m": (lambda p, pm, pn, g: _grouped(p, pm, pn, g, n_by=g), "divides by rows too"),
    "rows without min": (lambda p, pm, pn, g: _grouped(p, pm, pn, g, rows=pm - p // (g * pn) * g), "every group but the last"),
    "rows = pm % g": (lambda p, pm, pn, g: _grouped(p, pm, pn, g, rows=pm % g), "ZeroDivisionError"),
    "floats": (lambda p, pm, pn, g: tuple(float(v) for v in gemm.tile_order_ref(p, pm, pn, g)), "pair .* of ints"),
    "no return": (lambda p, pm, pn, g: None, "forget to return"),
    "unrelated": (lambda p, pm, pn, g: (gemm.tile_order_ref(p, pm, pn, g)[0], 0), "per_group = group_m"),
}


@pytest.mark.parametrize("answer,hint", TILE_WRONG.values(), ids=TILE_WRONG.keys())
def test_tile_order_rejects(answer, hint):
    rejects(gemm_checks.check_tile_order, answer, hint, others=[h for _, h in gemm_checks.TILE_SLIPS])


TILE_RIGHT = {
    "reference": gemm.tile_order_ref,
    "numpy ints in a list": lambda *a: [np.int64(v) for v in gemm.tile_order_ref(*a)],
    "numpy array": lambda *a: np.array(gemm.tile_order_ref(*a)),
    "enumerated table": _order_table,
    "divmod, as a list": _divmod_order,
}


@pytest.mark.parametrize("answer", TILE_RIGHT.values(), ids=TILE_RIGHT.keys())
def test_tile_order_accepts(answer, capsys):
    accepts(gemm_checks.check_tile_order, answer, capsys)


def test_tile_order_every_slip_has_its_own_hint():
    for rule, hint in gemm_checks.TILE_SLIPS:
        rejects(gemm_checks.check_tile_order, rule, re.escape(hint[:40]))


def test_tile_order_cases_cover_the_group_shapes():
    cases = gemm_checks.TILE_CASES
    assert any(pm % g == 0 and pm > g for pm, pn, g in cases)                     # full groups only
    assert any(pm % g and pm > g and (pm // g * g * pn) % (pm % g) for pm, pn, g in cases)
    assert any(g > pm for pm, _, g in cases) and any(g == 1 for _, _, g in cases)
    assert any(pn == 1 for _, pn, _ in cases) and any(pm == 1 for pm, _, _ in cases)


# ---- check_block_rules -------------------------------------------------------------------------

def _pow2(b):
    return all(x & (x - 1) == 0 for x in b)


BLOCK_WRONG = {
    "bytes limit": (lambda b, s: _pow2(b) and b[-1] * s >= 16 and math.prod(b) * s <= 2**20, "elements, not bytes"),
    "2-D numel": (lambda b, s: _pow2(b) and b[-1] * s >= 16 and b[0] * b[min(1, len(b) - 1)] <= 2**20,
                  "every dimension: math.prod"),
    "even for power of 2": (lambda b, s: all(x % 2 == 0 for x in b) and b[-1] * s >= 16 and math.prod(b) <= 2**20,
                            "even is not a power of 2"),
    "first dimension as last": (lambda b, s: _pow2(b) and b[0] * s >= 16 and math.prod(b) <= 2**20, "block_shape\\[-1\\] \\(the contiguous"),
    "block_shape[1] as last": (lambda b, s: _pow2(b) and b[min(1, len(b) - 1)] * s >= 16 and math.prod(b) <= 2**20,
                               "only for 2-D blocks"),
    "more than 16 bytes": (lambda b, s: _pow2(b) and b[-1] * s > 16 and math.prod(b) <= 2**20, "exactly 16 bytes is enough"),
    "128-byte rows": (lambda b, s: _pow2(b) and 16 <= b[-1] * s <= 128 and math.prod(b) <= 2**20, "swizzle's limit"),
    "2-D unpacking": (lambda b, s: (lambda r, c: _pow2(b) and c * s >= 16 and r * c <= 2**20)(*b), "1 to 5 dimensions"),
    "falls off the end": (lambda b, s: True if _pow2(b) and b[-1] * s >= 16 and math.prod(b) <= 2**20 else None,
                          "every path return"),
    "an int": (lambda b, s: int(not gemm.block_violations(b, s)), "True or False"),
}


@pytest.mark.parametrize("answer,hint", BLOCK_WRONG.values(), ids=BLOCK_WRONG.keys())
def test_block_rules_rejects(answer, hint):
    rejects(gemm_checks.check_block_rules, answer, hint, others=[h for _, h in gemm_checks.BLOCK_MISTAKES])


BLOCK_RIGHT = {
    "reference": lambda b, s: not gemm.block_violations(b, s),
    "bit count": lambda b, s: all(bin(x).count("1") == 1 for x in b) and b[-1] * s >= 16 and math.prod(b) <= 1 << 20,
    "numpy": lambda b, s: bool(np.all(np.log2(b) % 1 == 0)) and np.asarray(b)[-1] * s >= 16 and np.prod(b) <= 2**20,
    "a loop, as in the solution": lambda b, s: (lambda n: all(x > 0 and x & (x - 1) == 0 for x in b) and
                                                b[-1] * s >= 16 and n <= 2**20)(math.prod(list(b))),
}


@pytest.mark.parametrize("answer", BLOCK_RIGHT.values(), ids=BLOCK_RIGHT.keys())
def test_block_rules_accepts(answer, capsys):
    accepts(gemm_checks.check_block_rules, answer, capsys)


def test_block_rules_every_slip_has_its_own_hint():
    for rule, hint in gemm_checks.BLOCK_MISTAKES:
        rejects(gemm_checks.check_block_rules, rule, re.escape(hint[:40]))


# ---- check_split_count ----------------------------------------------------------------------

def _tiles(M, N, BM, BN):
    return math.ceil(M / BM) * math.ceil(N / BN)


def _split_loop(M, N, K, BM, BN, BK, sms, mk):
    """Right, as a search: grow s while one more split stays in one wave and long enough."""
    t, kt, s = -(-M // BM) * -(-N // BN), -(-K // BK), 1
    while t * (s + 1) <= sms and kt // (s + 1) >= mk:
        s += 1
    return s


SPLIT_PHRASES = ["at least 1 split", "second, partial wave", "(cap: k_tiles // min_k_tiles", "the cap counts K TILES",
                 "a partial K tile is still", "the cap rounds DOWN", "a partial tile at the edge",
                 "round DOWN, sms // tiles", "SMs get work", "M < BM makes M // BM = 0"]


def _split_zero_s(M, N, K, BM, BN, BK, sms, mk):
    """Wrong: s = sms // tiles is 0 when the tiles outnumber the SMs, and then divides."""
    s = sms // _tiles(M, N, BM, BN)
    return s if math.ceil(K / BK) // s >= mk else max(1, math.ceil(K / BK) // mk)
SPLIT_WRONG = {
    "no max(1, ...)": (lambda M, N, K, BM, BN, BK, sms, mk: min(sms // _tiles(M, N, BM, BN), math.ceil(K / BK) // mk),
                       "at least 1 split"),
    "smallest s filling the SMs": (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(math.ceil(sms / _tiles(M, N, BM, BN)),
                                                                              math.ceil(K / BK) // mk)),
                                   "second, partial wave"),
    "no cap": (lambda M, N, K, BM, BN, BK, sms, mk: max(1, sms // _tiles(M, N, BM, BN)),
               r"at least 4 of the \d+ K tiles \(cap: k_tiles // min_k_tiles"),
    "cap on K": (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // _tiles(M, N, BM, BN), K // mk)), "K TILES"),
    "K // BK": (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // _tiles(M, N, BM, BN), K // BK // mk)),
                "partial K tile"),
    "cap rounded up": (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // _tiles(M, N, BM, BN),
                                                                     math.ceil(math.ceil(K / BK) / mk))), "rounds DOWN"),
    "N // BN": (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // (math.ceil(M / BM) * (N // BN)),
                                                              math.ceil(K / BK) // mk)), "partial tile at the edge"),
    "M // BM": (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // ((M // BM) * (N // BN)), math.ceil(K / BK) // mk)),
                "M < BM makes M // BM = 0; count the partial tile too, ceil\\(M / BM\\)"),
    "divides by s = 0": (_split_zero_s, "ZeroDivisionError.*\n.*tiles, k_tiles and s are all at least 1"),
    "always 1": (lambda *a: 1, "SMs get work"),
    "BK fixed at 64": (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // _tiles(M, N, BM, BN), math.ceil(K / 64) // mk)),
                       "s = max\\(1, min"),
    "132 SMs fixed": (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(132 // _tiles(M, N, BM, BN), math.ceil(K / BK) // mk)),
                      "s = max\\(1, min"),
    "float": (lambda M, N, K, BM, BN, BK, sms, mk: float(skinny.split_k(M, N, K, BM, BN, BK, sms, mk)), "expected an int"),
}


@pytest.mark.parametrize("answer,hint", SPLIT_WRONG.values(), ids=SPLIT_WRONG.keys())
def test_split_count_rejects(answer, hint):
    rejects(skinny_checks.check_split_count, answer, hint, others=SPLIT_PHRASES)


SPLIT_RIGHT = {
    "reference": skinny.split_k,
    "negative floor division for ceil": lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // (-(-M // BM) * -(-N // BN)),
                                                                                      -(-K // BK) // mk)),
    "search loop": _split_loop,
    "numpy ints": lambda M, N, K, BM, BN, BK, sms, mk: np.maximum(1, np.minimum(
        sms // (np.ceil(M / BM).astype(np.int64) * np.ceil(N / BN).astype(np.int64)), np.ceil(K / BK).astype(np.int64) // mk)),
}


@pytest.mark.parametrize("answer", SPLIT_RIGHT.values(), ids=SPLIT_RIGHT.keys())
def test_split_count_accepts(answer, capsys):
    accepts(skinny_checks.check_split_count, answer, capsys)


def test_split_count_every_slip_has_its_own_hint():
    for rule, why in skinny_checks.SPLIT_SLIPS:
        got = [rule(*c) for c in skinny_checks.SPLIT_CASES]
        bad = next(i for i, (g, c) in enumerate(zip(got, skinny_checks.SPLIT_CASES)) if g != skinny.split_k(*c))
        rejects(skinny_checks.check_split_count, rule,
                re.escape(why(got[bad], *skinny_checks.SPLIT_CASES[bad])[:40]))


def test_split_cases_vary_every_input():
    cases = skinny_checks.SPLIT_CASES
    assert any(N % BN for _, N, _, _, BN, *_ in cases) and any(M % BM and M > BM for M, _, _, BM, *_ in cases)
    assert any(K % BK and skinny.split_k(*c) != skinny.split_k(c[0], c[1], K // BK * BK, *c[3:])
               for c in cases for K, BK in [(c[2], c[5])])
    assert len({c[5] for c in cases}) > 1 and len({c[6] for c in cases}) > 2 and len({c[7] for c in cases}) > 2
    assert any(math.ceil(c[2] / c[5]) < c[7] for c in cases)          # too short to split
