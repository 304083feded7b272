"""Planted answers for the exercise checks of 05_gemm_ladder (utils.day05.ladder_checks) and
07_flash_attention (utils.day05.attention_checks), issue 35: no check accepts a wrong answer, none
rejects a right one.

For each of the 8 checks: a table of wrong answers a learner would really write, each with the hint
(regex) it must get, and, where a named hint would be wrong for it, a regex the message must NOT
contain; a table of right answers written differently (NumPy ints, tuple/list/array, loop or
formula), which must print the pass line; malformed answers (None, str, bool, wrong length, NaN),
which must be explained, never a traceback. Then the tables of known slips themselves: each slip,
handed in as an answer, gets its own hint, and no two slips give the same answers on the cases."""
import functools
import math

import numpy as np
import pytest

from utils.core.checks import NOT_ATTEMPTED, CheckFailed
from utils.cute_dsl.exercises import mcast_mask_ref
from utils.day05 import attention as A, attention_checks as ac, ladder_checks as lc

try:
    import torch
except ImportError:                       # the torch rows are skipped
    torch = None

PP = ["wait", "mainloop", "arrive", "wait", "epilogue", "arrive"]
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # from the planted answers (exp overflow)


def stub(*args):
    raise NotImplementedError("exercise not attempted yet")


def returns_not_attempted(*args):
    return NOT_ATTEMPTED


def assert_rejects(check, fn, must, must_not=None):
    """``check(fn)`` raises CheckFailed whose message matches ``must`` and not ``must_not``."""
    with pytest.raises(CheckFailed) as e:
        check(fn)
    msg = str(e.value)
    assert msg.startswith("[") and " wrong: " in msg, msg
    assert __import__("re").search(must, msg), msg
    if must_not:
        assert not __import__("re").search(must_not, msg), msg
    return msg


def assert_passes(check, fn, capsys):
    assert check(fn) is None
    out = capsys.readouterr().out
    assert "] correct." in out, out


# === 1. register split ===========================================================================
def _split_loop(P, C):
    """The solution notebook's search: the largest c whose leftover of the CTA's pool fits a producer."""
    launch = min(256, 65536 // (128 * (P + C)) // 8 * 8)
    total = launch * (P + C)
    for c in range(256, 23, -8):
        p = min(256, (total - C * c) // P // 8 * 8)
        if 24 <= p <= launch <= c:
            return p, c


SPLIT_WRONG = [
    (lambda P, C: (40, 232), r"consumers could have 240", None),                        # CUTLASS's default
    (lambda P, C: (24, min(256, round((512 - 24 * P) / C / 8) * 8)), r"more than the CTA's pool", None),
    (lambda P, C: (24, min(256, math.ceil((512 - 24 * P) / C / 8) * 8)), r"more than the CTA's pool", None),
    (lambda P, C: (24, min(256, (512 - 24) // C // 8 * 8)),                               # one producer hard-coded
     r"\(24, 240\): 128 x \(2 x 24 \+ 2 x 240\)(.|\n)*launched: 2 producer", None),
    (lambda P, C: (24, (512 - 24 * P) // C // 8 * 8), r"outside setmaxnreg's range \[24, 256\]", None),  # no cap
    (lambda P, C: (24, min(256, (512 - 24 * P) // C // 8 * 8)), r"more than the CTA's pool", None),  # the SM's file
    (lambda P, C: (32, 240), r"more than the CTA's pool(.|\n)*128 x 3 x 168 = 64512", None),  # the old reference
    (lambda P, C: (24, min(256, 512 // C // 8 * 8)), r"the CTA's pool", None),             # forgot the producer
    (lambda P, C: (24, min(256, (512 - 24 * P) // C)), r"not a multiple of 8", None),     # not rounded to 8
    (lambda P, C: (24, min(256, (512 - 40 * P) // C // 8 * 8)),                          # sized for a producer of 40
     r"could have 240.*\n.*\n.*the producer is at the minimum already", r"give the producer the minimum"),
    (lambda P, C: (lc.launch_regs(P, C), min(256, (512 - P * lc.launch_regs(P, C)) // C // 8 * 8)),
     r"could have 240.*\n.*\n.*hint: give the producer the minimum, 24", r"at the minimum already"),
    (lambda P, C: (24, min(256, (512 - 24 * C) // P // 8 * 8)), r"the CTA's pool", None),  # P and C swapped
    (lambda P, C: (24, 240) if C == 2 else (24, 256 if C == 1 else 160), r"2 producer \+ 2 consumer", None),
]
SPLIT_RIGHT = [
    lc.register_split_ref,
    _split_loop,
    lambda P, C: (24, lc.register_split_ref(P, C)[1]),                                  # the least producer
    lambda P, C: [np.int64(24), np.int64(lc.register_split_ref(P, C)[1])],              # a list of NumPy ints
    lambda P, C: np.array(lc.register_split_ref(P, C)),                                 # an int array
    lambda P, C: (np.int32(24), int(min(256.0, math.floor(((P + C) * min(256, math.floor(512 / (P + C) / 8) * 8)
                                                          - 24 * P) / C / 8) * 8))),        # floats, floor
]
SPLIT_MALFORMED = [
    (lambda P, C: None, r"pair of ints.*NoneType"),
    (lambda P, C: "24, 240", r"pair of ints.*str"),
    (lambda P, C: (True, 240), r"pair of ints"),
    (lambda P, C: (24, 240, 0), r"pair of ints"),
    (lambda P, C: (24.0, 240.0), r"pair of ints(.|\n)*int\(\.\.\.\) converts a float"),
    (lambda P, C: (24, float("nan")), r"pair of ints"),
    (lambda P, C: np.array([24.0, 240.0]), r"pair of ints.*ndarray"),
    (lambda P, C: 240, r"pair of ints.*int 240"),
]


@pytest.mark.parametrize("wrong,must,must_not", SPLIT_WRONG)
def test_register_split_wrong(wrong, must, must_not):
    assert_rejects(lc.check_register_split, wrong, must, must_not)


@pytest.mark.parametrize("right", SPLIT_RIGHT)
def test_register_split_right(right, capsys):
    assert_passes(lc.check_register_split, right, capsys)


@pytest.mark.parametrize("bad,must", SPLIT_MALFORMED)
def test_register_split_malformed(bad, must):
    assert_rejects(lc.check_register_split, bad, must)


def test_register_split_cases_vary_both_counts():
    ps, cs = {p for p, _ in lc.SPLIT_CASES}, {c for _, c in lc.SPLIT_CASES}
    assert len(ps) >= 4 and len(cs) >= 4 and lc.SPLIT_CASES[0] == (1, 2)
    assert any(p > c for p, c in lc.SPLIT_CASES) and any(p < c for p, c in lc.SPLIT_CASES)


# === 2. ping-pong ================================================================================
def _pp_loop(cw, tiles):
    events = []
    for _ in range(tiles):
        for section in ("mainloop", "epilogue"):
            events += ["wait", section, "arrive"]
    return events


PINGPONG_WRONG = [
    (lambda cw, t: ["mainloop", "epilogue"] * t, r"the mainloops overlap", None),              # no barrier
    (lambda cw, t: ["wait", "mainloop", "arrive", "wait", "arrive", "epilogue"] * t,            # epilogue unordered
     r"the epilogues overlap.*\n.*epilogue 12", None),
    (lambda cw, t: ["wait", "mainloop", "arrive", "epilogue", "wait", "arrive"] * t,
     r"the epilogues overlap", None),
    (lambda cw, t: ["wait", "mainloop", "epilogue", "arrive"] * t, r"never hides", None),       # one section
    (lambda cw, t: ["wait", "mainloop", "arrive", "epilogue"] * t, r"the mainloops overlap", None),  # one wait a tile
    (lambda cw, t: ["wait", "arrive", "mainloop", "wait", "epilogue", "arrive"] * t, r"the mainloops overlap", None),
    (lambda cw, t: ["wait", "mainloop", "arrive", "wait", "epilogue"] * t, r"deadlock: warpgroup 1 waits forever", None),
    (lambda cw, t: ["wait", "epilogue", "arrive", "wait", "mainloop", "arrive"] * t, r"epilogue before", None),
    (lambda cw, t: PP * t if cw == 0 else ["mainloop", "epilogue"] * t, r"the mainloops overlap", None),
    (lambda cw, t: PP * 3, r"warpgroup 0 runs 3 mainloop", None),                               # ignores tiles
    (lambda cw, t: PP * (t + 1), r"runs 2 mainloop\(s\) and 2 epilogue\(s\) for 1 tile", None),
]
PINGPONG_RIGHT = [
    lc.pingpong_ref,
    _pp_loop,
    lambda cw, t: tuple(PP * t),                               # a tuple of the names
    lambda cw, t: np.array(PP * t),                            # a NumPy array of the names
    lambda cw, t: [e for _ in range(t) for e in ("wait", "mainloop", "arrive", "wait", "epilogue", "arrive")],
]
PINGPONG_MALFORMED = [
    (lambda cw, t: None, r"returned NoneType"),
    (lambda cw, t: " ".join(PP * t), r"returned str.*\n.*split it into a list"),
    (lambda cw, t: (e for e in PP * t), r"returned generator"),
    (lambda cw, t: ["Wait" if e == "wait" else e for e in PP] * t, r"event 0 is 'Wait'"),
    (lambda cw, t: [1, 2, 3], r"event 0 is 1"),
    (lambda cw, t: True, r"returned bool"),
]


@pytest.mark.parametrize("wrong,must,must_not", PINGPONG_WRONG)
def test_pingpong_wrong(wrong, must, must_not):
    assert_rejects(lc.check_pingpong, wrong, must, must_not)


@pytest.mark.parametrize("right", PINGPONG_RIGHT)
def test_pingpong_right(right, capsys):
    assert_passes(lc.check_pingpong, right, capsys)


@pytest.mark.parametrize("bad,must", PINGPONG_MALFORMED)
def test_pingpong_malformed(bad, must):
    assert_rejects(lc.check_pingpong, bad, must)


def test_pingpong_cases_drift_and_durations_both_ways():
    assert max(max(c) for c in lc.PINGPONG_CASES) >= 8 and any(a > b for a, b in lc.PINGPONG_CASES)
    assert any(e > m for m, e in lc.PINGPONG_TIMES) and any(e < m for m, e in lc.PINGPONG_TIMES)
    for times in lc.PINGPONG_TIMES:                          # the reference works at every one
        for t0, t1 in lc.PINGPONG_CASES:
            sim = lc.simulate_pingpong(lc.pingpong_ref(0, t0), lc.pingpong_ref(1, t1), *times, tiles=(t0, t1))
            assert sim["problems"] == [] and sim["finish"] is not None


# === 3. release mask =============================================================================
def _row_major(cl, xy):
    cm, cn = cl
    return sum(1 << (i * cn + j) for i in range(cm) for j in range(cn) if i == xy[0] or j == xy[1])


def _only_2x2(cl, xy):
    """Right on 2 x 2 only: the peers as rank ^ 1 and rank ^ 2."""
    r = xy[0] + xy[1] * cl[0]
    return (1 << r) | (1 << (r ^ 1)) | (1 << (r ^ 2))


GENERAL_MASK = r"set bit m' \+ n' \* cm for every CTA"
RELEASE_WRONG = [
    (_row_major, r"ranks are column-major", None),
    (lambda cl, xy: mcast_mask_ref(cl, xy, 1), r"only A's peers", None),
    (lambda cl, xy: mcast_mask_ref(cl, xy, 0), r"only B's peers", None),
    (lambda cl, xy: mcast_mask_ref(cl, xy, 0) ^ mcast_mask_ref(cl, xy, 1), r"set its own bit", None),
    (lambda cl, xy: 1 << (xy[0] + xy[1] * cl[0]), r"only the CTA itself", None),
    (lambda cl, xy: (1 << cl[0] * cl[1]) - 1, r"every CTA of the cluster", None),
    (lambda cl, xy: sum(1 << (i + j * cl[1]) for i in range(cl[0]) for j in range(cl[1]) if i == xy[0] or j == xy[1]),
     r"not n \* cn", r"column-major"),
    (lambda cl, xy: lc.release_mask_ref(cl, xy) << 1, GENERAL_MASK, r"column-major|own bit"),   # ranks from 1
    (_only_2x2, r"launched: cluster=\(2, 1\)(.|\n)*" + GENERAL_MASK, r"column-major"),
    (lambda cl, xy: _row_major(cl, xy) if cl == (2, 2) else lc.release_mask_ref(cl, xy),         # a partial slip:
     GENERAL_MASK, r"column-major"),                                                                 # no named cause
    (lambda cl, xy: sum(1 << (i + j * min(cl)) for i in range(cl[0]) for j in range(cl[1]) if i == xy[0] or j == xy[1]),
     r"cluster=\(4, 2\)(.|\n)*" + GENERAL_MASK, r"column-major"),
]
RELEASE_RIGHT = [
    lc.release_mask_ref,
    lambda cl, xy: sum(1 << (i + j * cl[0]) for i in range(cl[0]) for j in range(cl[1]) if i == xy[0] or j == xy[1]),
    lambda cl, xy: np.int64(lc.release_mask_ref(cl, xy)),
    lambda cl, xy: np.uint16(functools.reduce(lambda a, b: a | b, [1 << (xy[0] + j * cl[0]) for j in range(cl[1])]
                                              + [1 << (i + xy[1] * cl[0]) for i in range(cl[0])])),
    lambda cl, xy: sum(1 << (xy[0] + j * cl[0]) for j in range(cl[1])) | (((1 << cl[0]) - 1) << (xy[1] * cl[0])),
]
RELEASE_MALFORMED = [
    (lambda cl, xy: None, r"int bit mask, got NoneType"),
    (lambda cl, xy: True, r"int bit mask, got bool"),
    (lambda cl, xy: float(lc.release_mask_ref(cl, xy)), r"int bit mask, got float"),
    (lambda cl, xy: bin(lc.release_mask_ref(cl, xy)), r"int bit mask, got str(.|\n)*written as a string"),
    (lambda cl, xy: [r for r in range(cl[0] * cl[1]) if lc.release_mask_ref(cl, xy) >> r & 1],
     r"int bit mask, got list(.|\n)*list of ranks"),
    (lambda cl, xy: float("nan"), r"int bit mask, got float nan"),
]


@pytest.mark.parametrize("wrong,must,must_not", RELEASE_WRONG)
def test_release_mask_wrong(wrong, must, must_not):
    assert_rejects(lc.check_release_mask, wrong, must, must_not)


@pytest.mark.parametrize("right", RELEASE_RIGHT)
def test_release_mask_right(right, capsys):
    assert_passes(lc.check_release_mask, right, capsys)


@pytest.mark.parametrize("bad,must", RELEASE_MALFORMED)
def test_release_mask_malformed(bad, must):
    assert_rejects(lc.check_release_mask, bad, must)


def test_release_mask_shows_every_bit_of_the_cluster():
    msg = assert_rejects(lc.check_release_mask, lambda cl, xy: 3 if cl == (2, 4) else lc.release_mask_ref(cl, xy),
                         r"got 0b00000011, expected 0b\d{8} \(2 x 4 cluster")
    assert "0b0011," not in msg


def test_release_clusters_vary_both_ways():
    two_d = [c for c in lc.RELEASE_CLUSTERS if min(c) > 1]
    assert any(a > b for a, b in two_d) and any(a < b for a, b in two_d)


# === 4. faster than memcpy? ======================================================================
def _null_by_ratios(c, m, a):
    r = np.minimum(np.asarray(m), np.asarray(a)) / np.asarray(c)
    q = np.maximum(np.asarray(m), np.asarray(a)) / np.asarray(c)
    return "faster" if (r > 1).all() else "slower" if (q < 1).all() else "no difference"


def _null_loop(c, m, a):
    faster = slower = True
    for i in range(len(c)):
        faster = faster and c[i] < m[i] and c[i] < a[i]
        slower = slower and c[i] > m[i] and c[i] > a[i]
    return np.str_("faster") if faster else np.str_("slower") if slower else np.str_("no difference")


GENERAL_NULL = r"faster: less time than both calls of memcpy in every round"
NULL_WRONG = [
    (lc.NULL_MISTAKES[0][0], r"compare with memcpy's second call too", None),
    (lambda c, m, a: "faster" if np.median(c) < min(np.median(m), np.median(a)) else
     "slower" if np.median(c) > max(np.median(m), np.median(a)) else "no difference", r"not at the median", None),
    (lambda c, m, a: "faster" if np.mean(c) < min(np.mean(m), np.mean(a)) else
     "slower" if np.mean(c) > max(np.mean(m), np.mean(a)) else "no difference", r"not on average", None),
    (lambda c, m, a: "slower" if all(x < min(y, z) for x, y, z in zip(c, m, a)) else
     "faster" if all(x > max(y, z) for x, y, z in zip(c, m, a)) else "no difference", r"less time is faster", None),
    (lambda c, m, a: "faster" if all(x < min(y, z) for x, y, z in zip(c, m, a)) else "slower",
     r"the answer is \"no difference\"", None),
    (lambda c, m, a: "faster" if max(c) < min(min(m), min(a)) else
     "slower" if min(c) > max(max(m), max(a)) else "no difference", r"compare round by round", None),   # drift
    (lambda c, m, a: "faster" if all(x <= min(y, z) for x, y, z in zip(c, m, a)) else
     "slower" if all(x >= max(y, z) for x, y, z in zip(c, m, a)) else "no difference", r"a tie is no difference", None),
    (lambda c, m, a: "faster" if all(x < z for x, z in zip(c, a)) else                                 # again only
     "slower" if all(x > z for x, z in zip(c, a)) else "no difference", GENERAL_NULL, r"second call too"),
    (lambda c, m, a: "faster" if c[0] < min(m[0], a[0]) else "slower" if c[0] > max(m[0], a[0]) else "no difference",
     GENERAL_NULL, r"median"),                                                                            # round 0 only
    (lambda c, m, a: "faster" if c[-1] < min(m[-1], a[-1]) else "slower" if c[-1] > max(m[-1], a[-1]) else "no difference",
     GENERAL_NULL, r"median"),                                                                            # last round only
    (lambda c, m, a: "faster" if all(x <= min(y, z) * 1.002 for x, y, z in zip(c, m, a)) else
     "slower" if all(x > max(y, z) for x, y, z in zip(c, m, a)) else "no difference", GENERAL_NULL, None),
    (lambda c, m, a: "no difference", GENERAL_NULL, None),
]
NULL_RIGHT = [lc.null_verdict_ref, _null_by_ratios, _null_loop,
              lambda c, m, a: ("no difference", "faster", "slower")[
                  int(np.all(np.asarray(c) < np.minimum(m, a))) + 2 * int(np.all(np.asarray(c) > np.maximum(m, a)))]]
NULL_MALFORMED = [
    (lambda c, m, a: "Faster", r"expected one of.*got str 'Faster'(.|\n)*almost: return exactly one"),
    (lambda c, m, a: "no_difference", r"almost: return exactly one"),
    (lambda c, m, a: True, r"got bool True(.|\n)*a bool cannot say which"),
    (lambda c, m, a: None, r"expected one of.*got NoneType"),
    (lambda c, m, a: np.array(["faster"]), r"expected one of.*got ndarray"),
    (lambda c, m, a: 1, r"expected one of.*got int 1"),
]


@pytest.mark.parametrize("wrong,must,must_not", NULL_WRONG)
def test_null_verdict_wrong(wrong, must, must_not):
    assert_rejects(lc.check_null_verdict, wrong, must, must_not)


@pytest.mark.parametrize("right", NULL_RIGHT)
def test_null_verdict_right(right, capsys):
    assert_passes(lc.check_null_verdict, right, capsys)


@pytest.mark.parametrize("bad,must", NULL_MALFORMED)
def test_null_verdict_malformed(bad, must):
    assert_rejects(lc.check_null_verdict, bad, must)


def test_null_cases_cover_drift_ties_and_round_counts():
    verdicts = [lc.null_verdict_ref(*c) for c in lc.NULL_CASES]
    assert set(verdicts) == set(lc.VERDICTS)
    assert {len(c[0]) for c in lc.NULL_CASES} >= {1, 2, 4, 5, 8}
    # a drifting case: the copy's slowest round is slower than memcpy's fastest, and still "faster"
    assert any(v == "faster" and max(c) > min(m) for (c, m, a), v in zip(lc.NULL_CASES, verdicts))
    assert any(any(x == max(y, z) or x == min(y, z) for x, y, z in zip(*case)) for case in lc.NULL_CASES)


# === 5. L2 reads =================================================================================
GENERAL_L2 = r"each loads: delivered \* \(1 - merged\); multicast: delivered / R"
L2_WRONG = [
    (lambda d, R, mode, f: d / R if mode == "multicast" else d, r"L2 reads only the rest", None),
    (lambda d, R, mode, f: d / R if mode == "multicast" else d * f, r"WITHOUT reading L2", None),
    (lambda d, R, mode, f: d if mode == "multicast" else d * (1 - f), r"once per cluster", None),
    (lambda d, R, mode, f: d * (1 - f) / R if mode == "multicast" else d * (1 - f), r"nothing left to merge", None),
    (lambda d, R, mode, f: d / R, r"not delivered / R", None),
    (lambda d, R, mode, f: d / R if mode == "multicast" else d * R * (1 - f), r"do not multiply it by R", None),
    (lambda d, R, mode, f: d * (1 - 1 / R) if mode == "multicast" else d * (1 - f), r"share multicast saves", None),
    (lambda d, R, mode, f: d / 2 if mode == "multicast" else d * (1 - f),                     # R = 2 hard-coded
     r"expected(.|\n)*" + GENERAL_L2, r"once per cluster"),
    (lambda d, R, mode, f: (d >> (R // 2)) if mode == "multicast" else d * (1 - f), GENERAL_L2, None),  # log2 R ~ R//2
    (lambda d, R, mode, f: (d / R if mode == "multicast" else d * (1 - f)) * 1.01, GENERAL_L2, None),   # 1% off
    (lambda d, R, mode, f: (d / R if R == 2 else d) if mode == "multicast" else d * (1 - f),            # partial slip
     GENERAL_L2, r"once per cluster"),
    (lambda d, R, mode, f: float("nan"), r"got nan B(.|\n)*not a number of bytes", None),
]
L2_RIGHT = [
    lc.l2_reads_ref,
    lambda d, R, mode, f: d // R if mode == "multicast" else round(d - d * f),
    lambda d, R, mode, f: np.float32(d / R if mode == "multicast" else d * (1 - f)),
    lambda d, R, mode, f: np.int64(d) // np.int64(R) if mode != "each loads" else np.float64(d) * (1 - f),
]
L2_MALFORMED = [
    (lambda d, R, mode, f: None, r"expected a number of bytes, got NoneType"),
    (lambda d, R, mode, f: str(d / R), r"expected a number of bytes, got str"),
    (lambda d, R, mode, f: True, r"expected a number of bytes, got bool"),
    (lambda d, R, mode, f: np.array([d / R]), r"expected a number of bytes, got ndarray"),
    (lambda d, R, mode, f: (d / R, d * (1 - f)), r"expected a number of bytes, got tuple"),
    (lambda d, R, mode, f: complex(d / R), r"expected a number of bytes, got complex"),
]


@pytest.mark.parametrize("wrong,must,must_not", L2_WRONG)
def test_l2_reads_wrong(wrong, must, must_not):
    assert_rejects(lc.check_l2_reads, wrong, must, must_not)


@pytest.mark.parametrize("right", L2_RIGHT)
def test_l2_reads_right(right, capsys):
    assert_passes(lc.check_l2_reads, right, capsys)


@pytest.mark.parametrize("bad,must", L2_MALFORMED)
def test_l2_reads_malformed(bad, must):
    assert_rejects(lc.check_l2_reads, bad, must)


def test_l2_cases_vary_R_and_straddle_the_threshold():
    Rs = {R for _, R, _, _ in lc.L2_CASES}
    assert {2, 4} < Rs and any(R & (R - 1) for R in Rs)              # a cluster size not a power of 2
    for R in Rs:
        fs = {f for _, r, _, f in lc.L2_CASES if r == R}
        assert min(fs) < 1 - 1 / R < max(fs)


# === 6. kv_stage_bytes ===========================================================================
GENERAL_KV = r"K tile \+ V tile, each block_n \* D elements of itemsize bytes"
KV_WRONG = [
    (lambda n, d, s: n * d * s, r"ONE tile", None),                            # forgot V
    (lambda n, d, s: 2 * n * d, r"counts elements", None),                     # elements
    (lambda n, d, s: n * d, r"elements of one tile", None),
    (lambda n, d, s: 2 * n * d * s * 8, r"counts bits", None),
    (lambda n, d, s: n * d * s * 8, r"bits of one tile", None),
    (lambda n, d, s: 2 * n * d * 2, r"itemsize is not always 2", None),       # fp16 hard-coded
    (lambda n, d, s: 3 * n * d * s, r"Q is loaded once per CTA", None),
    (lambda n, d, s: 2 * 2 * n * d * s, r"two stages", None),
    (lambda n, d, s: 2 * n * d * s // 1024, r"that is KiB", None),
    (lambda n, d, s: 2 * 128 * d * s, r"block_n=64, D=64(.|\n)*" + GENERAL_KV, None),   # block_n hard-coded
    (lambda n, d, s: 2 * n * n * s, r"block_n=176, D=64(.|\n)*" + GENERAL_KV, None),    # D taken as block_n
    (lambda n, d, s: 2 * n * d * s if s == 2 else n * d * s, GENERAL_KV, r"ONE tile"),  # partial slip
]
KV_RIGHT = [
    A.kv_stage_bytes,
    lambda n, d, s: n * d * s * 2,
    lambda n, d, s: np.int64(2) * n * d * s,
    lambda n, d, s: int(np.prod([2, n, d, s])),
    lambda n, d, s: np.prod([n, d, s]) + np.prod([n, d, s]),                   # NumPy int: K + V
]
KV_MALFORMED = [
    (lambda n, d, s: 2.0 * n * d * s, r"answer for block_n=128, D=128, itemsize=2 is float 65536\.0; expected an int"),
    (lambda n, d, s: None, r"is NoneType None; expected an int"),
    (lambda n, d, s: str(2 * n * d * s), r"is str '65536'; expected an int"),
    (lambda n, d, s: True, r"is bool True; expected an int"),
    (lambda n, d, s: float("nan"), r"is float nan; expected an int"),
    (lambda n, d, s: (n * d * s, n * d * s), r"is tuple .*; expected an int"),
]


@pytest.mark.parametrize("wrong,must,must_not", KV_WRONG)
def test_kv_stage_bytes_wrong(wrong, must, must_not):
    assert_rejects(ac.check_kv_stage_bytes, wrong, must, must_not)


@pytest.mark.parametrize("right", KV_RIGHT)
def test_kv_stage_bytes_right(right, capsys):
    assert_passes(ac.check_kv_stage_bytes, right, capsys)


@pytest.mark.parametrize("bad,must", KV_MALFORMED)
def test_kv_stage_bytes_malformed(bad, must):
    assert_rejects(ac.check_kv_stage_bytes, bad, must)


def test_kv_cases_vary_every_input():
    ns, ds, ss = (set(x) for x in zip(*ac.KV_CASES))
    assert ss == {1, 2, 4} and len(ns) >= 4 and len(ds) >= 4
    assert any(n > d for n, d, _ in ac.KV_CASES) and any(n < d for n, d, _ in ac.KV_CASES)


# === 7. causal skip ==============================================================================
GENERAL_SKIP = r"the tile's last row is \(m\+1\)\*block_m - 1"
SKIP_WRONG = [
    (lambda m, bm, bn: (m + 1) * bm // bn, r"round UP", None),
    (lambda m, bm, bn: (m + 1) * bm // bn + 1, r"one too many", None),
    (lambda m, bm, bn: m * bm // bn, r"forgets the diagonal", None),
    (lambda m, bm, bn: math.ceil(m * bm / bn), r"forgets the diagonal", None),
    (lambda m, bm, bn: m * bm // bn + 1, r"SEVERAL", None),
    (lambda m, bm, bn: m + 1, r"counts in query tiles", None),
    (lambda m, bm, bn: math.ceil((m + 1) * bm / bn) - 1, r"index of the last", None),
    (lambda m, bm, bn: (m + 1) * bm // bn + (bm % bn != 0), r"depends on\s+\(m\+1\)\*block_m", None),
    (lambda m, bm, bn: (m + 1) * (bm // bn), r"block_m // block_n is 0", None),
    (lambda m, bm, bn: (m + 1) * math.ceil(bm / bn), r"rounding block_m / block_n up before", None),
    (lambda m, bm, bn: m + 2, r"query tile m=0(.|\n)*" + GENERAL_SKIP, None),
    (lambda m, bm, bn: math.ceil((m + 1) * bm / bn) if bm >= bn else m + 1, GENERAL_SKIP, r"query tiles"),
]
SKIP_RIGHT = [
    lambda m, bm, bn: A.causal_tiles(m, bm, bn).visit,
    lambda m, bm, bn: -(-(m + 1) * bm // bn),
    lambda m, bm, bn: math.ceil((m + 1) * bm / bn),
    lambda m, bm, bn: ((m + 1) * bm + bn - 1) // bn,
    lambda m, bm, bn: len(range(0, (m + 1) * bm, bn)),                     # the start of every tile visited
    lambda m, bm, bn: np.int64(sum(1 for j in range((m + 1) * bm) if j % bn == 0)),   # a loop over keys, NumPy int
]
SKIP_MALFORMED = [
    (lambda m, bm, bn: (m + 1) * bm / bn, r"is float 1\.0; expected an int: return an int, e\.g\. with math\.ceil"),
    (lambda m, bm, bn: np.ceil((m + 1) * bm / bn), r"is float64 (np\.float64\()?1\.0\)?; expected an int"),
    (lambda m, bm, bn: None, r"is NoneType None; expected an int"),
    (lambda m, bm, bn: "1", r"is str '1'; expected an int"),
    (lambda m, bm, bn: True, r"is bool True; expected an int"),
    (lambda m, bm, bn: float("nan"), r"is float nan; expected an int"),
]


@pytest.mark.parametrize("wrong,must,must_not", SKIP_WRONG)
def test_causal_skip_wrong(wrong, must, must_not):
    assert_rejects(ac.check_causal_skip, wrong, must, must_not)


@pytest.mark.parametrize("right", SKIP_RIGHT)
def test_causal_skip_right(right, capsys):
    assert_passes(ac.check_causal_skip, right, capsys)


@pytest.mark.parametrize("bad,must", SKIP_MALFORMED)
def test_causal_skip_malformed(bad, must):
    assert_rejects(ac.check_causal_skip, bad, must)


def test_skip_blocks_both_ways_and_not_multiples():
    blocks = ac.SKIP_BLOCKS
    assert any(bm > bn and bm % bn for bm, bn in blocks) and any(bm < bn and bn % bm for bm, bn in blocks)
    assert max(m for m, _, _ in ac.SKIP_CASES) >= 32


# === 8. online rescale ===========================================================================
def _step(m, l, s):
    m_new = np.maximum(m, s.max(axis=1))
    alpha = np.exp(m - m_new)
    return m_new, alpha, alpha * l + np.exp(s - m_new[:, None]).sum(axis=1)


def _step_rows(m, l, s):
    """A loop over rows with math.exp (exp(-inf) = 0.0)."""
    R = len(m)
    out = np.zeros((3, R))
    for i in range(R):
        mn = max(m[i], max(s[i]))
        a = math.exp(m[i] - mn)
        out[:, i] = mn, a, a * l[i] + sum(math.exp(x - mn) for x in s[i])
    return out[0], out[1], out[2]


def _step_f32(m, l, s):
    m, l, s = (x.astype(np.float32) for x in (m, l, s))
    return _step(m, l, s)


def _step_exp2(m, l, s):
    log2e = 1 / math.log(2)
    m_new = np.maximum(m, s.max(axis=-1))
    alpha = np.exp2((m - m_new) * log2e)
    return m_new, alpha, alpha * l + np.exp2((s - m_new[:, None]) * log2e).sum(axis=-1)


def _step_f16(m, l, s):
    with np.errstate(all="ignore"):
        return _step(*(x.astype(np.float16) for x in (m, l, s)))


def _step_torch(dtype):
    def step(m, l, s):
        m, l, s = (torch.tensor(x, dtype=dtype) for x in (m, l, s))
        m_new = torch.maximum(m, s.amax(dim=-1))
        alpha = torch.exp(m - m_new)
        return m_new, alpha, alpha * l + torch.exp(s - m_new[:, None]).sum(dim=-1)
    return step


def _step_global_max(m, l, s):
    """np.max(s) without an axis: one max for the whole block."""
    m_new = np.maximum(m, np.max(s))
    alpha = np.exp(m - m_new)
    return m_new, alpha, alpha * l + np.exp(s - m_new[:, None]).sum(axis=1)


def _with(fix):
    """The right step with one part changed: fix(m, l, s, (m_new, alpha, l_new)) -> answer."""
    return lambda m, l, s: fix(m, l, s, _step(m, l, s))


GENERAL_RESCALE = r"m_new = max\(m_old, row max of s\); alpha = exp\(m_old - m_new\)"
needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
RESCALE_WRONG = [
    (lambda m, l, s: ac.RESCALE_MISTAKES[0][0](m, l, s), r"not exp\(m_new - m_old\)", None),
    (lambda m, l, s: (s.max(1), np.exp(m - s.max(1)), np.exp(m - s.max(1)) * l + np.exp(s - s.max(1)[:, None]).sum(1)),
     r"every block so far", None),                                            # the block's max only
    (_with(lambda m, l, s, r: (r[0], r[1], l + np.exp(s - r[0][:, None]).sum(1))), r"multiply it by alpha", None),
    (_with(lambda m, l, s, r: (r[0], r[1], r[1] * (l + np.exp(s - r[0][:, None]).sum(1)))), r"only the OLD sum", None),
    (_with(lambda m, l, s, r: (r[0], r[1], r[1] * l + np.exp(s - m[:, None]).sum(1))), r"by the NEW max", None),
    (_with(lambda m, l, s, r: (r[0], r[1], r[1] * l + np.exp(s).sum(1))), r"subtract the running max", None),
    (_step_global_max, r"max of the whole block", None),
    (_with(lambda m, l, s, r: (r[0], r[1], r[1] * l + np.exp(s - r[0][:, None]).sum())), r"whole block's sum", None),
    (_with(lambda m, l, s, r: (r[0], r[1], r[1] * l + np.exp(s - s.max(1)[:, None]).sum(1))),
     r"not\s+by this block's own max", None),
    (_with(lambda m, l, s, r: (r[0], r[1], r[2] + 1)), r"on the first block(.|\n)*l_new\[0\](.|\n)*" + GENERAL_RESCALE,
     None),
    (_step_f16, r"float16/bfloat16", None),
    (_with(lambda m, l, s, r: (r[0], r[1], r[2] if len(m) == 5 else r[1] * l + np.exp(s).sum(1))),   # partial slip
     GENERAL_RESCALE, r"subtract the running max"),
]
RESCALE_RIGHT = [
    A.online_softmax_step,
    _step,
    _step_rows,
    _step_exp2,
    _step_f32,
    lambda m, l, s: list(_step(m, l, s)),
    lambda m, l, s: np.stack(_step(m, l, s)),
    _with(lambda m, l, s, r: (r[0], np.where(np.isneginf(m), 1.0, r[1]), r[2])),   # a guard on the first block
    pytest.param(_step_torch(torch.float32 if torch else None), marks=needs_torch),
    pytest.param(_step_torch(torch.float64 if torch else None), marks=needs_torch),
]
RESCALE_MALFORMED = [
    (lambda m, l, s: None, r"expected a tuple \(m_new, alpha, l_new\), got NoneType"),
    (lambda m, l, s: _step(m, l, s)[:2], r"expected a tuple \(m_new, alpha, l_new\), got tuple"),
    (lambda m, l, s: {"m_new": 0}, r"expected a tuple \(m_new, alpha, l_new\), got dict"),
    (lambda m, l, s: ("max", "alpha", "sum"), r"m_new is a str; expected an array of numbers"),
    (lambda m, l, s: tuple(x[:, None] for x in _step(m, l, s)), r"shape \(5, 1\), expected \(5,\)(.|\n)*keepdims"),
    (lambda m, l, s: (np.maximum(m.max(), s.max(0)), m, l), r"m_new has shape \(7,\)(.|\n)*one value per key"),
    (lambda m, l, s: (float(s.max()), 1.0, 1.0), r"m_new has shape \(\), expected \(5,\)(.|\n)*one number for the whole block"),
    (_with(lambda m, l, s, r: (r[0], r[1], np.exp(s - r[0][:, None]))), r"l_new has shape \(5, 7\)(.|\n)*one value per score"),
    (lambda m, l, s: tuple(np.full(len(m), np.nan) for _ in range(3)), r"m_new\[0\] is nan"),
    (lambda m, l, s: ([1, [2]], m, l), r"m_new is a list; expected an array of numbers"),
]


@pytest.mark.parametrize("wrong,must,must_not", RESCALE_WRONG)
def test_online_rescale_wrong(wrong, must, must_not):
    assert_rejects(ac.check_online_rescale, wrong, must, must_not)


@pytest.mark.parametrize("right", RESCALE_RIGHT)
def test_online_rescale_right(right, capsys):
    assert_passes(ac.check_online_rescale, right, capsys)


@pytest.mark.parametrize("bad,must", RESCALE_MALFORMED)
def test_online_rescale_malformed(bad, must):
    assert_rejects(ac.check_online_rescale, bad, must)


@needs_torch
def test_online_rescale_bf16_tensors_get_the_precision_hint():
    assert_rejects(ac.check_online_rescale, _step_torch(torch.bfloat16), r"float16/bfloat16")


def test_rescale_cases_vary_shape_and_drift():
    cases = ac._rescale_cases()
    shapes = {c[2].shape for c in cases}
    assert len(shapes) >= 5 and all(r != n for r, n in shapes) and {r for r, _ in shapes} != {5}
    chain = [c for c in cases if "of one sequence" in c[3]]
    maxima = [c[2].max() for c in chain]
    assert len(chain) >= 6 and any(b < a for a, b in zip(maxima, maxima[1:])) and max(maxima) > maxima[0] + 4


# === every check: stubs, the function itself, the tables of slips ================================
CHECKS = [lc.check_register_split, lc.check_pingpong, lc.check_release_mask, lc.check_null_verdict,
          lc.check_l2_reads, ac.check_kv_stage_bytes, ac.check_causal_skip, ac.check_online_rescale]


@pytest.mark.parametrize("check", CHECKS)
def test_stubs_are_not_attempted(check, capsys):
    for fn in (stub, returns_not_attempted):
        assert check(fn) is None
        assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("check", CHECKS)
def test_checks_want_the_function_itself(check):
    with pytest.raises(CheckFailed, match="without calling it"):
        check(None)


def _cases_and_ref():
    rel = [(lc.check_release_mask, lc.RELEASE_MISTAKES,
            [(cl, (m, n)) for cl in lc.RELEASE_CLUSTERS for n in range(cl[1]) for m in range(cl[0])], lc.release_mask_ref),
           (lc.check_null_verdict, lc.NULL_MISTAKES, lc.NULL_CASES, lc.null_verdict_ref),
           (ac.check_kv_stage_bytes, ac.KV_MISTAKES, ac.KV_CASES, A.kv_stage_bytes),
           (ac.check_causal_skip, ac.SKIP_MISTAKES, ac.SKIP_CASES, lambda *c: A.causal_tiles(*c).visit)]
    out = []
    for check, mistakes, cases, ref in rel:
        for i, (slip, hint) in enumerate(mistakes):
            out.append(pytest.param(check, mistakes, cases, ref, i, id=f"{check.__name__}-{i}"))
    return out


@pytest.mark.parametrize("check,mistakes,cases,ref,i", _cases_and_ref())
def test_each_slip_gets_its_own_hint(check, mistakes, cases, ref, i):
    slip, hint = mistakes[i]
    table = [slip(*c) for c in cases]
    assert table != [ref(*c) for c in cases]
    assert all(table != [other(*c) for c in cases] for j, (other, _) in enumerate(mistakes) if j != i)
    msg = assert_rejects(check, slip, "wrong")
    assert hint in msg


@pytest.mark.parametrize("i", range(len(lc.L2_MISTAKES)))
def test_each_l2_slip_gets_its_own_hint(i):
    slip, hint = lc.L2_MISTAKES[i]
    for j, (other, _) in enumerate(lc.L2_MISTAKES):
        if j != i:
            assert not all(abs(slip(*c) - other(*c)) <= 1e-3 * max(abs(other(*c)), 1) for c in lc.L2_CASES)
    assert hint in assert_rejects(lc.check_l2_reads, slip, "wrong")


@pytest.mark.parametrize("i", range(len(ac.RESCALE_MISTAKES)))
def test_each_rescale_slip_gets_its_own_hint(i):
    slip, hint = ac.RESCALE_MISTAKES[i]
    assert hint in assert_rejects(ac.check_online_rescale, slip, "wrong")


# === the helpers name the rule a degenerate input breaks ==========================================
@pytest.mark.parametrize("call,match", [
    (lambda: lc.l2_reads_ref(1e9, 0, "multicast", 0.5), r"R \(CTAs per cluster\) must be an int >= 1"),
    (lambda: lc.l2_reads_ref(0, 2, "multicast", 0.5), r"delivered must be a positive number"),
    (lambda: lc.l2_reads_ref(math.inf, 2, "multicast", 0.5), r"delivered must be a positive number"),
    (lambda: lc.l2_reads_ref(1e9, 2, "each loads", float("nan")), r"merged .* must be in \[0, 1\)"),
    (lambda: lc.launch_regs(0, 2), r"producer_wgs must be an int >= 1"),
    (lambda: lc.register_split_ref(1, 0), r"consumer_wgs must be an int >= 1"),
    (lambda: lc.release_mask_ref((0, 2), (0, 0)), r"cluster_shape must be a pair of ints >= 1"),
    (lambda: lc.release_mask_ref((2, 2), (2, 0)), r"coord must be a pair of ints \(m, n\) with 0 <= m < 2"),
    (lambda: lc.release_mask_ref((2, 2), (0, -1)), r"coord must be a pair"),
    (lambda: lc.release_arrivals_ref((2, 2), 0), r"warps_per_cta must be an int >= 1"),
    (lambda: lc.release_arrivals_ref((2,), 4), r"cluster_shape must be a pair"),
    (lambda: lc.simulate_pingpong(PP, PP, mainloop=math.inf), r"positive durations"),
    (lambda: lc.simulate_pingpong(PP, PP, tiles=-1), r"tiles must be None, an int >= 0 or a pair"),
    (lambda: lc.simulate_pingpong(PP, PP, tiles="1"), r"tiles must be None"),
    (lambda: lc.null_verdict_ref([float("nan")], [1.0], [1.0]), r"copy_ms must hold positive times"),
    (lambda: lc.null_verdict_ref([1.0], [math.inf], [1.0]), r"memcpy_ms must hold positive times"),
])
def test_degenerate_inputs_name_the_rule(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_release_mask_ref_accepts_numpy_ints():
    assert lc.release_mask_ref((np.int64(2), np.int64(2)), (np.int64(1), np.int64(0))) == 0b1011
    assert lc.release_arrivals_ref([2, 2], np.int64(4)) == 12
