"""Exercise 1 of ``day05_tma/05b_ladder_lab_report`` (Exercise 4 of 05 before the lab report split): is a copy faster than memcpy, slower, or no
different? Judged round by round against memcpy AND memcpy timed a second time (the null result:
with nothing changed it reads about 1% faster). Re-exported by :mod:`utils.day05.ladder_checks`."""
from __future__ import annotations

import math

import numpy as np

from ..core.answers import answers, named_mistake
from ..core.checks import NOT_ATTEMPTED, fail, is_number, not_attempted, passed

# --- 05b, Exercise 1: faster than memcpy, against the null result ------------------------------------------------
VERDICTS = ("faster", "slower", "no difference")


def _rounds(name: str, ms) -> list:
    if isinstance(ms, (str, bytes)) or not hasattr(ms, "__len__") or len(ms) < 1:
        raise ValueError(f"{name} must be a non-empty list of per-round times in ms, got {ms!r}")
    if not all(is_number(t) and 0 < t < math.inf for t in ms):
        raise ValueError(f"{name} must hold positive times in ms, got {list(ms)!r}")
    return [float(t) for t in ms]


def null_verdict_ref(copy_ms, memcpy_ms, again_ms) -> str:
    """"faster" if the copy took less time than BOTH calls of memcpy (the first, and the same call
    timed again, the null result) in every round; "slower" if it took more than both in every
    round; otherwise "no difference". Each argument is a list of per-round times in ms, one per
    round, the rounds interleaved (round i of each list ran together)."""
    copy_ms, memcpy_ms, again_ms = (_rounds(n, v) for n, v in
                                    (("copy_ms", copy_ms), ("memcpy_ms", memcpy_ms), ("again_ms", again_ms)))
    if not len(copy_ms) == len(memcpy_ms) == len(again_ms):
        raise ValueError(f"the three lists must have one time per round each, got {len(copy_ms)}, "
                         f"{len(memcpy_ms)} and {len(again_ms)}")
    rounds = list(zip(copy_ms, memcpy_ms, again_ms))
    if all(c < min(m, a) for c, m, a in rounds):
        return "faster"
    if all(c > max(m, a) for c, m, a in rounds):
        return "slower"
    return "no difference"


_M = [94.0, 93.8, 94.1, 93.9, 94.2]           # memcpy, ms per round
_A = [93.1, 92.9, 93.3, 93.0, 93.2]           # memcpy again: 1% "faster" with nothing changed
_UP = [92.0 + 0.4 * i for i in range(8)]      # 8 rounds whose clock drifts: each round 0.4 ms slower
NULL_CASES = [  # (copy_ms, memcpy_ms, again_ms): every verdict, and each slip below, appears
    ([92.6, 92.5, 92.8, 92.6, 92.7], _M, _A),     # faster than both, every round
    ([93.4, 93.3, 93.5, 93.4, 93.6], _M, _A),     # faster than memcpy every round, not than again
    ([95.0, 94.9, 95.2, 95.0, 95.3], _M, _A),     # slower than both, every round
    ([92.6, 92.5, 92.8, 94.5, 92.7], _M, _A),     # faster than both at the median, one round slower
    ([95.0, 94.9, 93.0, 95.0, 95.3], _M, _A),     # slower at the median, one round faster
    ([93.5, 93.5, 93.5, 93.5, 93.5], _M, _A),     # between the two calls of memcpy
    ([93.2, 93.0, 93.4, 93.1, 93.3], _M, _A),     # 0.1% slower than again, every round: no tolerance
    ([92.6, 92.5], [94.0, 93.8], [95.1, 95.0]),   # again "slower" this time: faster than both
    ([94.5, 94.4], [94.0, 93.8], [95.1, 95.0]),   # slower than memcpy, faster than again
    # drift: every round faster (slower) than both calls OF ITS ROUND, though the copy's late rounds
    # are slower (its early rounds faster) than memcpy's early (late) ones
    ([t - 0.2 for t in _UP], [t + 0.1 for t in _UP], _UP),
    ([t + 0.3 for t in _UP[::-1]], _UP[::-1], [t - 0.1 for t in _UP[::-1]]),
    ([92.6, 92.5, 92.8, 93.0, 92.7], _M, _A),     # a tie with memcpy again in one round: not faster
    ([95.0, 94.9, 95.2, 93.9, 95.3], _M, _A),     # a tie with memcpy in one round: not slower
    ([92.6, 92.5, 92.8, 99.0, 92.7], _M, _A),     # one round far slower: faster at the median, not on average
    ([94.5, 92.5, 92.8, 92.6, 92.7], _M, _A),     # slower in the first round only
    ([92.6, 92.5, 92.8, 94.5, 94.6], _M, _A),     # slower in the last two rounds
    ([93.0], [93.5], [93.4]),                     # one round
    ([91.5, 92.5, 93.5, 94.5], [95.0, 94.0, 93.0, 92.0], [94.9, 93.9, 92.9, 91.9]),  # faster, then not
]
_med = lambda x: sorted(x)[len(x) // 2]          # noqa: E731
_mean = lambda x: sum(x) / len(x)                # noqa: E731
NULL_MISTAKES = [  # (an answer with one slip, the hint); chosen only if it gives every answer
    (lambda c, m, a: "faster" if all(x < y for x, y in zip(c, m)) else
     "slower" if all(x > y for x, y in zip(c, m)) else "no difference",
     "compare with memcpy's second call too: with nothing changed it reads about 1% faster than the first"),
    (lambda c, m, a: "faster" if _med(c) < min(_med(m), _med(a)) else
     "slower" if _med(c) > max(_med(m), _med(a)) else "no difference",
     "a claim must hold in EVERY round, not at the median"),
    (lambda c, m, a: "slower" if all(x < min(y, z) for x, y, z in zip(c, m, a)) else
     "faster" if all(x > max(y, z) for x, y, z in zip(c, m, a)) else "no difference",
     "these are times in ms: less time is faster"),
    (lambda c, m, a: "faster" if all(x < min(y, z) for x, y, z in zip(c, m, a)) else "slower",
     "when the rounds disagree, or the copy falls between the two calls of memcpy, the answer is \"no difference\""),
    (lambda c, m, a: "faster" if max(c) < min(m + a) else "slower" if min(c) > max(m + a) else "no difference",
     "compare round by round: round i of the three lists ran together, and the clock drifts between "
     "rounds; the copy's round i must beat both calls of memcpy's round i, not every round of memcpy"),
    (lambda c, m, a: "faster" if all(x <= min(y, z) for x, y, z in zip(c, m, a)) else
     "slower" if all(x >= max(y, z) for x, y, z in zip(c, m, a)) else "no difference",
     "a tie is no difference: faster means LESS time than both calls (<, not <=) in every round"),
    (lambda c, m, a: "faster" if _mean(c) < min(_mean(m), _mean(a)) else
     "slower" if _mean(c) > max(_mean(m), _mean(a)) else "no difference",
     "a claim must hold in EVERY round, not on average"),
]


def _verdict_hint(got) -> str:
    """The hint for an answer that is not one of :data:`VERDICTS`."""
    if isinstance(got, str) and " ".join(got.strip().lower().replace("_", " ").split()) in VERDICTS:
        return f"almost: return exactly one of {VERDICTS}, lower-case, words separated by one space"
    if isinstance(got, (bool, np.bool_)):
        return "a bool cannot say which of the three: return the string \"faster\", \"slower\" or \"no difference\""
    return "return one of the three strings"


def check_null_verdict(fn) -> None:
    """``fn(copy_ms, memcpy_ms, again_ms)`` must return :func:`null_verdict_ref` on every case of
    ``NULL_CASES``: per-round times (1 to 8 rounds) where the copy beats both calls of memcpy, only
    the first, loses to both, ties one in a round, wins or loses at the median or on average but
    not in every round, or where the clock drifts from round to round."""
    name = "faster than memcpy?"

    def verdict(got, case):
        if not (isinstance(got, str) and got in VERDICTS):
            fail(name, f"expected one of {VERDICTS}, got {type(got).__name__} {got!r:.80}", _verdict_hint(got),
                 launched=f"copy_ms, memcpy_ms, again_ms = {case}")
        return str(got)
    got_all = answers(name, fn, NULL_CASES, verdict, raised=False, args=lambda *case: [list(x) for x in case])
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    for case, got in zip(NULL_CASES, got_all):
        want = null_verdict_ref(*case)
        if got != want:
            hint = named_mistake(got_all, NULL_CASES, NULL_MISTAKES, "faster: less time than both calls of "
                                 "memcpy in every round; slower: more than both in every round; otherwise "
                                 "no difference")
            fail(name, f"got {got!r}, expected {want!r}", hint, launched=f"copy_ms, memcpy_ms, again_ms = {case}")
    return passed(name, "A copy is faster than memcpy only if it beats memcpy's second call too, in every round.")
