"""Exercise checks of the attention notebook (issue 16): the ``expect_tx`` bytes of a K+V stage,
the online-softmax rescale, the causal tile-skip bound. Each compares a learner's function with
the reference in :mod:`utils.day05.attention` over a table of cases, and when the answers match a
known slip (a table of mistakes below) the hint names it. Stubs are "not attempted"."""
from __future__ import annotations

import numpy as np

from . import attention as ref
from ..core.checks import NOT_ATTEMPTED, attempt, fail, int_answer, not_attempted, passed


def _int_answers(name: str, fn, cases: list, what) -> list | str:
    """``fn(*case)`` for every case as ints, or NOT_ATTEMPTED; a non-int fails with an explanation."""
    out = []
    for case in cases:
        got = attempt(fn, *case)
        if got is NOT_ATTEMPTED:
            return NOT_ATTEMPTED
        out.append(int_answer(name, got, what(*case)))
    return out


def _verdict(name: str, got: list, cases: list, want_fn, mistakes: list, what, hint: str) -> None:
    """Pass if ``got`` equals ``want_fn`` on every case; else fail on the first wrong case, with
    the hint of the mistake that gives exactly ``got`` (or the general ``hint``)."""
    want = [want_fn(*c) for c in cases]
    if got == want:
        return None
    i = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w)
    slip = next((h for wrong, h in mistakes if [wrong(*c) for c in cases] == got), hint)
    fail(name, f"{what(*cases[i])}: got {got[i]}, expected {want[i]}", slip)


# --- expect_tx bytes of one K+V pipeline stage ---------------------------------------------------
KV_CASES = [(128, 128, 2), (64, 64, 2), (176, 64, 2), (80, 128, 2), (128, 256, 1), (64, 128, 4)]
KV_MISTAKES = [
    (lambda n, d, s: n * d * s, "that is ONE tile: a stage holds a K tile and a V tile"),
    (lambda n, d, s: 2 * n * d, "that counts elements: expect_tx counts BYTES (times itemsize)"),
    (lambda n, d, s: n * d, "that is the elements of one tile: a stage holds K and V, and "
     "expect_tx counts bytes"),
    (lambda n, d, s: 16 * n * d * s, "that counts bits: expect_tx counts bytes"),
]


def check_kv_stage_bytes(fn) -> None:
    """``fn(block_n, D, itemsize)`` must return the ``expect_tx`` bytes of one stage that holds
    a K tile and a V tile (``block_n x D`` elements of ``itemsize`` bytes each)."""
    name = "kv_stage_bytes"
    what = lambda n, d, s: f"block_n={n}, D={d}, itemsize={s}"   # noqa: E731
    got = _int_answers(name, fn, KV_CASES, what)
    if got is NOT_ATTEMPTED:
        return not_attempted(name)
    _verdict(name, got, KV_CASES, ref.kv_stage_bytes, KV_MISTAKES, what,
             "K tile + V tile, each block_n * D elements of itemsize bytes")
    return passed(name, "that is the count the stage's mbarrier waits for.")


# --- causal tile-skip bound ----------------------------------------------------------------------
SKIP_BLOCKS = [(128, 128), (128, 64), (64, 128), (192, 128), (128, 80), (16, 16)]
SKIP_CASES = [(m, bm, bn) for bm, bn in SKIP_BLOCKS for m in range(6)]
SKIP_MISTAKES = [
    (lambda m, bm, bn: (m + 1) * bm // bn, "off by one: round UP, the last row (m+1)*block_m - 1 "
     "needs the whole tile that holds it: ceil((m+1)*block_m / block_n)"),
    (lambda m, bm, bn: (m + 1) * bm // bn + 1, "one too many when block_n divides (m+1)*block_m: "
     "that extra tile starts after the last row: ceil((m+1)*block_m / block_n)"),
    (lambda m, bm, bn: m * bm // bn, "that forgets the diagonal tile(s): tiles that are only "
     "partly masked must be visited too (with the mask)"),
    (lambda m, bm, bn: -(-m * bm // bn), "that forgets the diagonal tile(s): tiles that are only "
     "partly masked must be visited too (with the mask)"),
    (lambda m, bm, bn: m * bm // bn + 1, "a query tile taller than block_n crosses SEVERAL K/V "
     "tiles on the diagonal: count up to its last row"),
    (lambda m, bm, bn: m + 1, "that counts in query tiles; K/V tiles are block_n keys wide"),
    (lambda m, bm, bn: -(-(m + 1) * bm // bn) - 1, "that is the index of the last tile; the "
     "count of tiles 0..last is one more"),
]


def check_causal_skip(fn) -> None:
    """``fn(m_block, block_m, block_n)`` must return how many K/V tiles (from tile 0) causal
    query tile ``m_block`` must visit: the rest are fully masked and skipped."""
    name = "causal_skip"
    what = lambda m, bm, bn: f"query tile m={m}, block_m={bm}, block_n={bn}"   # noqa: E731
    got = _int_answers(name, fn, SKIP_CASES, what)
    if got is NOT_ATTEMPTED:
        return not_attempted(name)
    _verdict(name, got, SKIP_CASES, lambda *c: ref.causal_tiles(*c).visit, SKIP_MISTAKES, what,
             "the tile's last row is (m+1)*block_m - 1; it needs every key up to that row")
    return passed(name, "at long sequences causal attention loads about half the K/V tiles.")


# --- online-softmax rescale ------------------------------------------------------------------------
def _rescale_cases() -> list:
    """(m_old, l_old, s, what) with 5 rows and 7 keys (R != N, so a wrong axis shows)."""
    rng = np.random.default_rng()
    s0 = rng.standard_normal((5, 7))
    m1 = np.array([0.5, 9.0, -1.0, 9.0, 0.0])
    s1 = np.clip(2 * rng.standard_normal((5, 7)), -8, 8)    # below m_old in rows 1 and 3,
    s1[[0, 2, 4], 3] = m1[[0, 2, 4]] + 1.5                  # above it in rows 0, 2, 4
    s2 = rng.standard_normal((5, 7))
    s2[np.triu_indices(5, 3)] = -np.inf                     # a causal diagonal block
    s2[4] = -np.inf                                         # a row entirely masked in this block
    s3 = 750 + 30 * rng.standard_normal((5, 7))             # np.exp(s) alone overflows
    return [(np.full(5, -np.inf), np.zeros(5), s0, "the first block (m_old = -inf, l_old = 0)"),
            (m1, np.array([1.0, 3.0, 2.5, 1.0, 4.0]), s1, "a block where the max grows in some rows"),
            (np.zeros(5), np.full(5, 2.0), s2, "a masked (causal diagonal) block"),
            (np.full(5, 760.0), np.full(5, 5.0), s3, "a block of large scores (about 750)")]


def _step(m_new_of, alpha_of, l_of):
    """An update built from three (possibly wrong) parts: a planted mistake."""
    def step(m, l, s):
        with np.errstate(all="ignore"):
            mn = m_new_of(m, s)
            a = alpha_of(m, mn)
            return mn, a, l_of(l, a, s, mn, m)
    return step


_max_all = lambda m, s: np.maximum(m, s.max(axis=-1))          # noqa: E731
_alpha = lambda m, mn: np.exp(m - mn)                           # noqa: E731
_sum = lambda s, mx: np.exp(s - mx[:, None]).sum(axis=-1)       # noqa: E731
RESCALE_MISTAKES = [
    (_step(_max_all, lambda m, mn: np.exp(mn - m), lambda l, a, s, mn, m: a * l + _sum(s, mn)),
     "alpha = exp(m_old - m_new), not exp(m_new - m_old): the old terms were shifted by m_old, "
     "and re-shifting them to m_new makes them SMALLER (alpha <= 1)"),
    (_step(lambda m, s: s.max(axis=-1), _alpha, lambda l, a, s, mn, m: a * l + _sum(s, mn)),
     "the running max is over every block so far: m_new = np.maximum(m_old, s.max(axis=-1))"),
    (_step(_max_all, _alpha, lambda l, a, s, mn, m: l + _sum(s, mn)),
     "the old sum was shifted by the old max: multiply it by alpha before adding this block"),
    (_step(_max_all, _alpha, lambda l, a, s, mn, m: a * (l + _sum(s, mn))),
     "alpha rescales only the OLD sum: this block's terms are already shifted by m_new"),
    (_step(_max_all, _alpha, lambda l, a, s, mn, m: a * l + _sum(s, m)),
     "this block's terms must be shifted by the NEW max: np.exp(s - m_new[:, None])"),
    (_step(_max_all, _alpha, lambda l, a, s, mn, m: a * l + np.exp(s).sum(axis=-1)),
     "subtract the running max before np.exp: exp(s - m_new[:, None])"),
]
PARTS = ("m_new", "alpha", "l_new")


def _triple(name: str, got, rows: int, what: str) -> list:
    """The learner's (m_new, alpha, l_new) as three float64 arrays of shape (rows,), or fail."""
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        fail(name, f"on {what}: expected a tuple (m_new, alpha, l_new), got {type(got).__name__} "
             f"{got!r:.80}")
    out = []
    for part, x in zip(PARTS, got):
        if hasattr(x, "detach"):
            x = x.detach().cpu().numpy()
        try:
            x = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            fail(name, f"on {what}: {part} is a {type(x).__name__}; expected an array of numbers")
        if x.shape != (rows,):
            fail(name, f"on {what}: {part} has shape {x.shape}, expected ({rows},): one value per "
                 "query row", "reduce the scores over their LAST axis (axis=-1), without keepdims")
        out.append(x)
    return out


def check_online_rescale(fn) -> None:
    """``fn(m_old, l_old, s)`` (NumPy float64: running max and sum per row, shape ``(R,)``; this
    block's scores ``(R, N)``) must return ``(m_new, alpha, l_new)``: the new running max, the
    factor that rescales the old accumulator and sum, the new running sum."""
    name = "online_rescale"
    cases, answers = _rescale_cases(), []
    for m, l, s, what in cases:
        got = attempt(fn, m.copy(), l.copy(), s.copy())
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        answers.append(_triple(name, got, len(m), what))
    same = lambda a, b: all(np.allclose(x, y, rtol=1e-9, atol=1e-12, equal_nan=True)   # noqa: E731
                            for x, y in zip(a, b))
    for (m, l, s, what), got in zip(cases, answers):
        want = ref.online_softmax_step(m, l, s)
        if same(got, want):
            continue
        slip = next((h for wrong, h in RESCALE_MISTAKES
                     if all(same(g, wrong(*c[:3])) for g, c in zip(answers, cases))),
                    "m_new = max(m_old, row max of s); alpha = exp(m_old - m_new); "
                    "l_new = alpha * l_old + row sum of exp(s - m_new)")
        part = next(i for i in range(3) if not same([got[i]], [want[i]]))
        row = int(np.flatnonzero(~np.isclose(got[part], want[part], rtol=1e-9, atol=1e-12,
                                             equal_nan=True))[0])
        fail(name, f"on {what}: {PARTS[part]}[{row}] is {got[part][row]!r}, expected "
             f"{want[part][row]!r}", slip)
    return passed(name, "the output accumulator takes the same alpha: acc = alpha * acc + P @ V.")
