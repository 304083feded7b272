"""Exercise checks of the attention notebook (issue 16): the ``expect_tx`` bytes of a K+V stage,
the online-softmax rescale, the causal tile-skip bound. Each compares a learner's function with
the reference in :mod:`utils.day05.attention` over a table of cases, and when the answers match a
known slip (a table of mistakes below) on EVERY case the hint names it; otherwise the hint states the
rule (:mod:`utils.core.answers`). Stubs are "not attempted"; a malformed answer is explained,
never a traceback. The online-softmax rescale is checked in :mod:`utils.day05.rescale_check`
(re-exported here)."""
from __future__ import annotations

from . import attention as ref
from ..core.answers import answers, named_mistake, wrong_cases
from ..core.checks import INT_ADVICE, NOT_ATTEMPTED, ROUND_UP, fail, int_answer, not_attempted, passed
# the online-softmax rescale (arrays, tolerances, planted mistakes) lives in its own module
from .rescale_check import (ATOL, PARTS, RESCALE_MISTAKES, RTOL, _rescale_cases,  # noqa: F401
                            check_online_rescale)


def _int_answers(name: str, fn, cases: list, what, advice: str = INT_ADVICE) -> list | str:
    """``fn(*case)`` for every case as ints, or NOT_ATTEMPTED; a non-int fails with an explanation
    (a float is told ``advice``)."""
    return answers(name, fn, cases, lambda got, case: int_answer(name, got, f"the answer for {what(*case)}",
                                                                 advice=advice), raised=False)


def _verdict(name: str, got: list, cases: list, want_fn, mistakes: list, what, hint: str) -> None:
    """Pass if ``got`` equals ``want_fn`` on every case; else fail on the first wrong case, with
    the hint of the mistake that gives exactly ``got`` (or the general ``hint``)."""
    want = [want_fn(*c) for c in cases]
    bad = wrong_cases(got, want)
    if not bad:
        return None
    i = bad[0]
    slip = named_mistake(got, cases, mistakes, hint)
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
    got = _int_answers(name, fn, SKIP_CASES, what, ROUND_UP)
    if got is NOT_ATTEMPTED:
        return not_attempted(name)
    _verdict(name, got, SKIP_CASES, lambda *c: ref.causal_tiles(*c).visit, SKIP_MISTAKES, what,
             "the tile's last row is (m+1)*block_m - 1; it needs every key up to that row")
    return passed(name, "at long sequences causal attention loads about half the K/V tiles.")
