"""Exercise checks of the attention notebook (issue 16): the ``expect_tx`` bytes of a K+V stage,
the online-softmax rescale, the causal tile-skip bound. Each compares a learner's function with
the reference in :mod:`utils.day05.attention` over a table of cases, and when the answers match a
known slip (a table of mistakes below) on EVERY case the hint names it; otherwise the hint states the
rule. Stubs are "not attempted"; a malformed answer is explained, never a traceback."""
from __future__ import annotations

import numpy as np

from . import attention as ref
from ..core.checks import NOT_ATTEMPTED, attempt, fail, int_answer, not_attempted, passed


def _int_answers(name: str, fn, cases: list, what) -> list | str:
    """``fn(*case)`` for every case as ints, or NOT_ATTEMPTED; a non-int fails with an explanation."""
    out = []
    for case in cases:
        got = attempt(fn, *case)
        if isinstance(got, str) and got == NOT_ATTEMPTED:
            return NOT_ATTEMPTED
        out.append(int_answer(name, got, f"the answer for {what(*case)}"))
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
# block_n and D each larger and smaller than the other (not only the notebook's 128 x 128), and every
# itemsize (fp8, fp16/bf16, fp32), so a hard-coded dimension or itemsize shows
KV_CASES = [(128, 128, 2), (64, 64, 2), (176, 64, 2), (80, 128, 2), (128, 256, 1), (64, 128, 4),
            (192, 96, 4), (96, 192, 1)]
KV_MISTAKES = [  # (a slip, its hint): the hint is chosen only if the slip gives every answer
    (lambda n, d, s: n * d * s, "that is ONE tile: a stage holds a K tile and a V tile"),
    (lambda n, d, s: 2 * n * d, "that counts elements: expect_tx counts BYTES (times itemsize)"),
    (lambda n, d, s: n * d, "that is the elements of one tile: a stage holds K and V, and "
     "expect_tx counts bytes"),
    (lambda n, d, s: 16 * n * d * s, "that counts bits: expect_tx counts bytes"),
    (lambda n, d, s: 8 * n * d * s, "that counts the bits of one tile: expect_tx counts bytes, of K "
     "and of V"),
    (lambda n, d, s: 4 * n * d, "itemsize is not always 2: the check also tries fp8 (1 byte) and "
     "fp32 (4): multiply by itemsize"),
    (lambda n, d, s: 3 * n * d * s, "Q is loaded once per CTA, not in every stage: a stage's "
     "expect_tx is K tile + V tile"),
    (lambda n, d, s: 4 * n * d * s, "that is two stages' worth: expect_tx arms ONE stage, its "
     "K tile + V tile"),
    (lambda n, d, s: 2 * n * d * s // 1024, "that is KiB: expect_tx counts bytes"),
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
# block_m equal to, taller than and shorter than block_n, multiples of each other or not, both ways;
# query tiles 0..7 and one far down a long sequence (S = 8192 at block_m = 128)
SKIP_BLOCKS = [(128, 128), (128, 64), (64, 128), (192, 128), (128, 80), (16, 16), (64, 176), (176, 64)]
SKIP_CASES = [(m, bm, bn) for bm, bn in SKIP_BLOCKS for m in (*range(8), 63)]
SKIP_MISTAKES = [  # (a slip, its hint): the hint is chosen only if the slip gives every answer
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
    (lambda m, bm, bn: (m + 1) * bm // bn + (bm % bn != 0), "whether to round up depends on "
     "(m+1)*block_m, not on block_m alone: ceil((m+1)*block_m / block_n)"),
    (lambda m, bm, bn: (m + 1) * (bm // bn), "block_m // block_n is 0 when the query tile is "
     "shorter than block_n (and rounds down otherwise): divide (m+1)*block_m as a whole, rounding up"),
    (lambda m, bm, bn: (m + 1) * -(-bm // bn), "rounding block_m / block_n up before multiplying "
     "counts a partial tile for every query tile: round (m+1)*block_m / block_n up once"),
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
    cases, answers, low = _rescale_cases(), [], False
    for m, l, s, what in cases:
        got = attempt(fn, m.copy(), l.copy(), s.copy())
        if isinstance(got, str) and got == NOT_ATTEMPTED:
            return not_attempted(name)
        parts, lo = _triple(name, got, s.shape, what)
        answers.append(parts)
        low |= lo
    same = lambda a, b, m: not any(_wrong_rows(i, x, y, m).any() for i, (x, y) in enumerate(zip(a, b)))  # noqa: E731
    for (m, l, s, what), got in zip(cases, answers):
        want = ref.online_softmax_step(m, l, s)
        if same(got, want, m):
            continue
        slip = next((h for wrong, h in RESCALE_MISTAKES
                     if all(same(g, wrong(*c[:3]), c[0]) for g, c in zip(answers, cases))), None)
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
