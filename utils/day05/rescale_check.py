"""The online-softmax rescale exercise of the attention notebook (issue 16): the learner's
``(m_new, alpha, l_new)`` for one block of scores, compared with
:func:`utils.day05.attention.online_softmax_step` within a relative 1e-4 on blocks of several
shapes (masked rows, large scores, one key) and on six blocks of one sequence whose max drifts; a
hint names a planted mistake (:data:`RESCALE_MISTAKES`) only when it gives every answer. Split from
:mod:`utils.day05.attention_checks`, which re-exports it."""
from __future__ import annotations

import numpy as np

from . import attention as ref
from ..core.answers import answers
from ..core.checks import NOT_ATTEMPTED, fail, not_attempted, passed

# --- online-softmax rescale ------------------------------------------------------------------------
RTOL, ATOL = 1e-4, 1e-12    # float32 arithmetic passes (the kernel's); float16/bfloat16 do not


def _rescale_cases() -> list:
    """(m_old, l_old, s, what): blocks of several shapes (rows != keys in each, so a wrong axis
    shows as a wrong shape), then six blocks of one sequence whose scale drifts up and down; the
    states fed in are the reference's own, so each block is judged on its own."""
    rng = np.random.default_rng(35)
    s0 = rng.standard_normal((5, 7))
    m1 = np.array([0.5, 9.0, -1.0, 9.0, 0.0, 9.0])
    s1 = np.clip(2 * rng.standard_normal((6, 3)), -8, 8)    # below m_old in rows 1, 3, 5,
    s1[[0, 2, 4], 1] = m1[[0, 2, 4]] + 1.5                  # above it in rows 0, 2, 4
    s2 = rng.standard_normal((4, 9))
    s2[np.triu_indices(4, 3, 9)] = -np.inf                  # a causal diagonal block
    s2[3] = -np.inf                                         # a row entirely masked in this block
    s3 = 750 + 30 * rng.standard_normal((8, 4))             # np.exp(s) alone overflows; float16
    cases = [(np.full(5, -np.inf), np.zeros(5), s0, "the first block (m_old = -inf, l_old = 0), 5 x 7"),
             (m1, np.array([1.0, 3.0, 2.5, 1.0, 4.0, 2.0]), s1, "a block where the max grows in some rows, 6 x 3"),
             (np.zeros(4), np.full(4, 2.0), s2, "a masked (causal diagonal) block, 4 x 9"),
             (np.full(8, 760.0), np.full(8, 5.0), s3, "a block of large scores (about 750), 8 x 4"),
             (np.array([2.0, -3.0, 0.5]), np.array([1.5, 4.0, 1.0]), np.array([[2.5], [-4.0], [0.5]]),
              "a block of one key, 3 x 1")]
    m, l = np.full(3, -np.inf), np.zeros(3)
    for i, shift in enumerate((0.0, 3.0, -2.0, 6.0, 6.5, 1.0)):   # the max drifts up, down, up
        s = shift + np.array([1.0, 2.0, 0.5])[:, None] * rng.standard_normal((3, 16))
        cases.append((m, l, s, f"block {i + 1} of 6 of one sequence, 3 x 16 (this block's scores "
                      f"around {shift:g})"))
        m, _, l = ref.online_softmax_step(m, l, s)
    return cases


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
RESCALE_MISTAKES = [  # (a slip, its hint): the hint is chosen only if the slip gives every answer
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
    (_step(lambda m, s: np.maximum(m, s.max()), _alpha, lambda l, a, s, mn, m: a * l + _sum(s, mn)),
     "that is the max of the whole block: each row (query) keeps its own max, s.max(axis=-1)"),
    (_step(_max_all, _alpha, lambda l, a, s, mn, m: a * l + np.exp(s - mn[:, None]).sum()),
     "that adds the whole block's sum to every row: each row (query) sums its own keys, .sum(axis=-1)"),
    (_step(_max_all, _alpha, lambda l, a, s, mn, m: a * l + _sum(s, s.max(axis=-1))),
     "this block's terms are added to a sum shifted by the running max: shift them by m_new, not "
     "by this block's own max"),
]
PARTS = ("m_new", "alpha", "l_new")


def _shape_hint(shape, rows: int, keys: int) -> str:
    """What a part of the wrong shape most likely did."""
    if shape == (rows, 1):
        return "keepdims=True leaves a column: reduce over the last axis without keepdims"
    if shape == (keys,):
        return "that is one value per key: reduce the scores over their LAST axis (axis=-1)"
    if shape == (rows, keys):
        return "that is one value per score: reduce (max, sum) over the LAST axis (axis=-1)"
    if shape == ():
        return "that is one number for the whole block: one value per row, reduce over axis=-1 only"
    return "one value per query row: reduce the scores over their LAST axis (axis=-1), without keepdims"


def _triple(name: str, got, shape: tuple, what: str) -> tuple:
    """The learner's (m_new, alpha, l_new) as three float64 arrays of shape (rows,), and whether
    any part came back in float16/bfloat16; or fail with an explanation."""
    if (isinstance(got, np.ndarray) and got.ndim == 2 and got.shape[0] == 3) or \
            (hasattr(got, "detach") and getattr(got, "ndim", 0) == 2 and got.shape[0] == 3):
        got = tuple(got)                                    # np.stack((m_new, alpha, l_new))
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        fail(name, f"on {what}: expected a tuple (m_new, alpha, l_new), got {type(got).__name__} "
             f"{got!r:.80}", "return the three arrays: return m_new, alpha, l_new")
    out, low = [], False
    for part, x in zip(PARTS, got):
        if hasattr(x, "detach"):
            low |= str(x.dtype) in ("torch.float16", "torch.bfloat16")
            x = x.detach().cpu().double().numpy() if x.is_floating_point() else x.detach().cpu().numpy()
        try:
            arr = np.asarray(x)
            low |= arr.dtype == np.float16
            x = arr.astype(np.float64)
        except (TypeError, ValueError):
            fail(name, f"on {what}: {part} is a {type(x).__name__}; expected an array of numbers")
        if x.shape != (shape[0],):
            fail(name, f"on {what}: {part} has shape {x.shape}, expected ({shape[0]},): one value per "
                 "query row", _shape_hint(x.shape, *shape))
        out.append(x)
    return out, low


def _wrong_rows(part: int, got, want, m_old):
    """Rows where ``got`` differs from ``want`` (within RTOL/ATOL). On a row whose m_old is -inf
    (the first block) there is nothing old to rescale, so alpha may be 0 (exp(-inf)) or 1 (a guard)."""
    bad = ~np.isclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
    if part == 1:
        bad &= ~(np.isneginf(m_old) & (got == 1.0))
    return bad


def check_online_rescale(fn) -> None:
    """``fn(m_old, l_old, s)`` (NumPy float64: running max and sum per row, shape ``(R,)``; this
    block's scores ``(R, N)``) must return ``(m_new, alpha, l_new)``: the new running max, the
    factor that rescales the old accumulator and sum, the new running sum. Within a relative 1e-4
    (float32 arithmetic passes, float16 does not), on blocks of 5 shapes and six blocks of one
    sequence whose max drifts. On a first block (m_old = -inf) alpha may be 0 or 1."""
    name = "online_rescale"
    cases = _rescale_cases()
    triples = answers(name, fn, cases, lambda got, c: _triple(name, got, c[2].shape, c[3]), raised=False,
                      args=lambda m, l, s, what: (m.copy(), l.copy(), s.copy()))
    if triples is NOT_ATTEMPTED:
        return not_attempted(name)
    got_all, low = [parts for parts, _ in triples], any(lo for _, lo in triples)
    same = lambda a, b, m: not any(_wrong_rows(i, x, y, m).any() for i, (x, y) in enumerate(zip(a, b)))  # noqa: E731
    for (m, l, s, what), got in zip(cases, got_all):
        want = ref.online_softmax_step(m, l, s)
        if same(got, want, m):
            continue
        slip = next((h for wrong, h in RESCALE_MISTAKES
                     if all(same(g, wrong(*c[:3]), c[0]) for g, c in zip(got_all, cases))), None)
        if slip is None and low:
            slip = ("your result is float16/bfloat16: 11 bits or fewer cannot hold a score of 750 to "
                    "better than 0.25, nor a running sum to 1e-4; keep m and l in float32 (or the float64 given)")
        elif slip is None:
            slip = ("m_new = max(m_old, row max of s); alpha = exp(m_old - m_new); "
                    "l_new = alpha * l_old + row sum of exp(s - m_new)")
        part = next(i for i in range(3) if _wrong_rows(i, got[i], want[i], m).any())
        row = int(np.flatnonzero(_wrong_rows(part, got[part], want[part], m))[0])
        fail(name, f"on {what}: {PARTS[part]}[{row}] is {float(got[part][row])!r}, expected "
             f"{float(want[part][row])!r}", slip)
    return passed(name, "the output accumulator takes the same alpha: acc = alpha * acc + P @ V.")
