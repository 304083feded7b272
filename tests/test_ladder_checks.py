"""Notebook 05's exercise checks (register split, ping-pong ordering barrier, release mask): the
references give the numbers worked out by hand, right answers pass, stubs are "not attempted" and
planted wrong answers are rejected with a hint about what they got wrong."""
import re

import numpy as np
import pytest

from utils.core.checks import NOT_ATTEMPTED, CheckFailed
from utils.cute_dsl.exercises import mcast_mask_ref
from utils.day05 import ladder_checks as lc

PP = ["wait", "mainloop", "arrive", "wait", "epilogue", "arrive"]


def stub(*args):
    raise NotImplementedError


def returns_not_attempted(*args):
    return NOT_ATTEMPTED


# --- references -----------------------------------------------------------------------------------
@pytest.mark.parametrize("wgs,allot,consumer,producers", [
    ((1, 2), 168, 240, {24}), ((1, 1), 256, 256, set(range(24, 257, 8))),
    ((1, 3), 128, 160, {24, 32}), ((2, 2), 128, 232, {24})])
def test_register_split_by_hand(wgs, allot, consumer, producers):
    assert lc.launch_regs(*wgs) == allot
    p, c = lc.register_split_ref(*wgs)
    assert c == consumer and p == max(producers)
    valid = {q for q in range(0, 300, 4) if not lc.register_split_problems((q, consumer), *wgs)}
    assert valid == producers
    assert lc.register_split_problems((min(producers), consumer + 8), *wgs)   # one step more never fits


def test_register_split_problems_names_every_rule():
    assert lc.register_split_problems((40, 232), 1, 2) == []
    assert lc.register_split_problems((np.int64(24), np.int64(240)), 1, 2) == []
    problems = lc.register_split_problems((20, 296), 1, 2)
    assert len(problems) == 4 and any("multiple of 8" in p for p in problems)
    assert any("[24, 256]" in p for p in problems) and any("the CTA's pool" in p for p in problems)
    assert any("setmaxnreg.dec" in p for p in lc.register_split_problems((176, 168), 1, 2))
    assert any("setmaxnreg.inc" in p for p in lc.register_split_problems((24, 160), 1, 2))


@pytest.mark.parametrize("call,match", [
    (lambda: lc.register_split_problems((24, 240), 0, 2), "producer_wgs must be an int >= 1"),
    (lambda: lc.register_split_ref(1, 0), "consumer_wgs must be an int >= 1"),
    (lambda: lc.register_split_ref(True, 2), "producer_wgs must be an int"),
    (lambda: lc.register_split_ref(1.0, 2), "producer_wgs must be an int"),
    (lambda: lc.launch_regs(4, 5), "at most 1024 threads"),
    (lambda: lc.register_split_problems((24.0, 240), 1, 2), "pair of ints"),
    (lambda: lc.register_split_problems((24, 240, 0), 1, 2), "pair of ints"),
    (lambda: lc.simulate_pingpong("wait", PP), "events0 must be a list"),
    (lambda: lc.simulate_pingpong(PP, None), "events1 must be a list"),
    (lambda: lc.simulate_pingpong(PP, PP, mainloop=0), "positive durations"),
    (lambda: lc.simulate_pingpong(PP, PP, epilogue=-1), "positive durations")])
def test_bad_input_raises_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_release_mask_by_hand():
    assert lc.release_mask_ref((2, 2), (1, 0)) == 0b1011
    assert lc.release_mask_ref((2, 2), (0, 1)) == 0b1101
    assert lc.release_mask_ref((4, 1), (2, 0)) == 0b1111
    assert lc.release_mask_ref((1, 4), (0, 3)) == 0b1111
    assert lc.release_mask_ref((1, 1), (0, 0)) == 0b1
    for cl in lc.RELEASE_CLUSTERS:
        for m in range(cl[0]):
            for n in range(cl[1]):
                mask = lc.release_mask_ref(cl, (m, n))
                assert mask == mcast_mask_ref(cl, (m, n), 0) | mcast_mask_ref(cl, (m, n), 1)
                assert bin(mask).count("1") == cl[0] + cl[1] - 1


def test_release_arrivals_by_hand():
    assert lc.release_arrivals_ref((2, 2), 4) == 12
    assert lc.release_arrivals_ref((4, 1), 4) == 16
    assert lc.release_arrivals_ref((1, 1), 8) == 8


# --- the ping-pong model --------------------------------------------------------------------------
@pytest.mark.parametrize("t0,t1", [(1, 1), (2, 2), (3, 3), (3, 2), (5, 4)])
def test_simulated_reference_ping_pongs(t0, t1):
    sim = lc.simulate_pingpong(lc.pingpong_ref(0, t0), lc.pingpong_ref(1, t1), tiles=(t0, t1))
    assert sim["problems"] == []
    runs = sorted((s, e, w) for w in (0, 1) for s, e in sim["mainloop"][w])
    assert [w for _, _, w in runs] == [i % 2 for i in range(t0 + t1)]            # WG0, WG1, WG0, ...
    assert all(a[1] <= b[0] for a, b in zip(runs, runs[1:]))                         # one at a time
    assert runs[-1][1] == 10 * (t0 + t1)                                           # back to back
    epis = sorted((s, e, w) for w in (0, 1) for s, e in sim["epilogue"][w])
    for s, e, w in epis[:-1]:                                 # all but the last hide under a mainloop
        assert any(s < me and ms < e for ms, me in sim["mainloop"][1 - w])
    assert sim["finish"] == 10 * (t0 + t1) + 3


def test_simulate_names_the_blocked_wait():
    sim = lc.simulate_pingpong(PP * 2, ["wait", "mainloop", "arrive", "wait", "epilogue"])
    assert sim["finish"] is None
    assert sim["problems"][0][0] == ("deadlock: warpgroup 0 waits forever at its wait #4 (event 9, section 1): "
                                     "it needs warpgroup 1's arrive #1 on that section, which never comes")
    sim = lc.simulate_pingpong(PP, ["wait", "mainloop", "arrive", "wait", "epilogue"] + PP)
    assert "deadlock: warpgroup 1 waits forever at its wait #3 (event 5, section 0)" in sim["problems"][0][0]
    sim = lc.simulate_pingpong(["wait", "mainloop", "arrive", "wait", "epilogue"], PP)
    assert "deadlock: warpgroup 1 waits forever at its wait #2 (event 3, section 1)" in sim["problems"][0][0]


def test_simulate_without_barrier_overlaps_and_reports_unknown_events():
    sim = lc.simulate_pingpong(["mainloop", "epilogue"], ["mainloop", "epilogue"], tiles=1)
    assert sim["mainloop"] == ([(0, 10)], [(0, 10)]) and sim["finish"] == 13
    assert [p[0] for p in sim["problems"]][:2] == [
        "the mainloops overlap: warpgroup 0's tile 0 (0-10) and warpgroup 1's tile 0 (0-10)",
        "the epilogues overlap: warpgroup 0's tile 0 (10-13) and warpgroup 1's tile 0 (10-13)"]
    sim = lc.simulate_pingpong(PP, ["wait", 3])
    assert sim["problems"][0][0] == "warpgroup 1's event 1 is 3"


# --- the checks -----------------------------------------------------------------------------------
def _pp_loop(cw, tiles):
    events = []
    for _ in range(tiles):
        for section in ("mainloop", "epilogue"):
            events += ["wait", section, "arrive"]
    return events


def _null_by_ratios(copy_ms, memcpy_ms, again_ms):
    """The same rule through per-round speed ratios: against the faster call of memcpy to win,
    against the slower one to lose."""
    r = np.minimum(np.asarray(memcpy_ms), np.asarray(again_ms)) / np.asarray(copy_ms)
    q = np.maximum(np.asarray(memcpy_ms), np.asarray(again_ms)) / np.asarray(copy_ms)
    return "faster" if (r > 1).all() else "slower" if (q < 1).all() else "no difference"


def _pool_split(P, C):
    """The pool worked out by hand: the launch allotment, times the thread positions, less the producer's 24."""
    a = min(256, 65536 // (128 * (P + C)) // 8 * 8)
    return 24, min(256, ((P + C) * a - 24 * P) // C // 8 * 8)


RIGHT = [
    (lc.check_register_split, lc.register_split_ref),
    (lc.check_register_split, lambda P, C: (24, lc.register_split_ref(P, C)[1])),     # the least producer
    (lc.check_register_split, lambda P, C: [np.int64(v) for v in lc.register_split_ref(P, C)]),
    (lc.check_register_split, _pool_split),                                          # the pool, by hand
    (lc.check_pingpong, lc.pingpong_ref),
    (lc.check_pingpong, _pp_loop),
    (lc.check_pingpong, lambda cw, t: [e for _ in range(t) for e in tuple(PP)]),
    (lc.check_pingpong, lambda cw, t: tuple(PP * t)),                       # a tuple is a sequence too
    (lc.check_release_mask, lc.release_mask_ref),
    (lc.check_release_mask, lambda cl, xy: sum(1 << (i + j * cl[0]) for i in range(cl[0]) for j in range(cl[1])
                                               if i == xy[0] or j == xy[1])),
    (lc.check_release_mask, lambda cl, xy: np.int64(lc.release_mask_ref(cl, xy))),
    (lc.check_null_verdict, lc.null_verdict_ref),
    (lc.check_null_verdict, _null_by_ratios),
    (lc.check_l2_reads, lc.l2_reads_ref),
    (lc.check_l2_reads, lambda d, R, mode, f: d // R if mode == "multicast" else round(d - d * f)),   # ints, rounded
    (lc.check_l2_reads, lambda d, R, mode, f: np.float32(d / R if mode == "multicast" else d * (1 - f))),
]


@pytest.mark.parametrize("check,good", RIGHT)
def test_right_answers_pass_and_stubs_are_not_attempted(check, good, capsys):
    check(good)
    assert "correct" in capsys.readouterr().out
    check(stub)
    assert "not attempted" in capsys.readouterr().out
    check(returns_not_attempted)
    assert "not attempted" in capsys.readouterr().out


def test_passed_lines(capsys):
    lc.check_register_split(lc.register_split_ref)
    lc.check_pingpong(lc.pingpong_ref)
    lc.check_release_mask(lc.release_mask_ref)
    lc.check_l2_reads(lc.l2_reads_ref)
    out = capsys.readouterr().out
    assert "240 per consumer thread" in out and "40/232" in out
    assert "63 time units, not 78" in out and "0b1011" in out and "less than 1 - 1/R" in out


@pytest.mark.parametrize("wrong,hint", [
    (lambda P, C: (40, 232), "consumers could have 240"),
    (lambda P, C: (24, 244), "not a multiple of 8"),
    (lambda P, C: (24, 512 // C // 8 * 8), "the CTA's pool"),          # forgot the producer's share
    (lambda P, C: (24, min(256, (512 - 24 * P) // C // 8 * 8)), "the CTA's pool"),   # the SM's 65536, not the pool
    (lambda P, C: (32, 240), "the CTA's pool"),                         # 128 x (32 + 2 x 240) = 65536 > 64512
    (lambda P, C: (16, 240), r"outside setmaxnreg's range \[24, 256\]"),
    (lambda P, C: (176, 168), "setmaxnreg.dec can only lower"),
    (lambda P, C: (24, 160), "setmaxnreg.inc can only raise"),
    (lambda P, C: (24, 240), "below the launch allotment 256"),        # right for 1 + 2 only
    (lambda P, C: (24, 248), "more than the CTA's pool"),
    (lambda P, C: (24.0, 240.0), "pair of ints"),
    (lambda P, C: (True, 240), "pair of ints"),
    (lambda P, C: (24, 240, 0), "pair of ints"),
    (lambda P, C: 240, "pair of ints"),
    (lambda P, C: "24, 240", "pair of ints"),
    (lambda P, C: None, "pair of ints")])
def test_register_split_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        lc.check_register_split(wrong)


@pytest.mark.parametrize("wrong,hint", [
    (lambda cw, t: ["mainloop", "epilogue"] * t, "the mainloops overlap"),                    # no barrier
    (lambda cw, t: ["wait", "mainloop", "epilogue", "arrive", "wait", "arrive"] * t, "never hides"),
    (lambda cw, t: ["wait", "arrive", "mainloop", "wait", "epilogue", "arrive"] * t, "the mainloops overlap"),
    (lambda cw, t: ["wait", "mainloop", "arrive", "wait", "epilogue"] * t, "deadlock: warpgroup 1 waits forever"),
    (lambda cw, t: ["wait", "mainloop", "arrive", "epilogue", "arrive"] * t, r"1 wait\(s\) and 2 arrive\(s\)"),
    (lambda cw, t: ["wait", "mainloop", "epilogue", "arrive"] * t, "never hides"),            # one section
    (lambda cw, t: ["wait", "epilogue", "arrive", "wait", "mainloop", "arrive"] * t, "epilogue before"),
    (lambda cw, t: PP * (t + 1), r"runs 2 mainloop\(s\) and 2 epilogue\(s\) for 1 tile"),
    (lambda cw, t: PP * t + ["wait", "mainloop", "arrive"], r"2 mainloop\(s\) and 1 epilogue"),
    (lambda cw, t: ["sync" if e == "wait" else e for e in PP] * t, "event 0 is 'sync'"),
    (lambda cw, t: ["Wait" if e == "wait" else e for e in PP] * t, "event 0 is 'Wait'"),
    (lambda cw, t: PP * t if cw == 0 else ["mainloop", "epilogue"] * t, "the mainloops overlap"),
    (lambda cw, t: PP * max(t, 3), "warpgroup 0 runs 3 mainloop"),                          # ignores tiles
    (lambda cw, t: " ".join(PP * t), "returned str"),
    (lambda cw, t: None, "returned NoneType")])
def test_pingpong_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        lc.check_pingpong(wrong)


def _row_major(cl, xy):
    cm, cn = cl
    return sum(1 << (i * cn + j) for i in range(cm) for j in range(cn) if i == xy[0] or j == xy[1])


@pytest.mark.parametrize("wrong,hint", [
    (_row_major, "column-major"),
    (lambda cl, xy: mcast_mask_ref(cl, xy, 1), "only A's peers"),
    (lambda cl, xy: mcast_mask_ref(cl, xy, 0), "only B's peers"),
    (lambda cl, xy: mcast_mask_ref(cl, xy, 0) ^ mcast_mask_ref(cl, xy, 1), "set its own bit"),
    (lambda cl, xy: lc.release_mask_ref(cl, xy) << 1, r"m' \+ n' \* cm"),
    (lambda cl, xy: (1 << cl[0] * cl[1]) - 1, r"m' \+ n' \* cm"),                            # every CTA
    (lambda cl, xy: float(lc.release_mask_ref(cl, xy)), "int bit mask"),
    (lambda cl, xy: True, "int bit mask"),
    (lambda cl, xy: bin(lc.release_mask_ref(cl, xy)), "int bit mask")])
def test_release_mask_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        lc.check_release_mask(wrong)


@pytest.mark.parametrize("wrong,hint", [
    (lambda d, R, mode, f: d / R if mode == "multicast" else d, "L2 reads only the rest"),
    (lambda d, R, mode, f: d / R if mode == "multicast" else d * f, "WITHOUT reading L2"),
    (lambda d, R, mode, f: d if mode == "multicast" else d * (1 - f), "once per cluster"),
    (lambda d, R, mode, f: d * (1 - f) / R if mode == "multicast" else d * (1 - f), "nothing left to merge"),
    (lambda d, R, mode, f: d / R, "not delivered / R"),
    (lambda d, R, mode, f: d * (1 - f) / R, r"delivered \* \(1 - merged\); multicast: delivered / R"),
    (lambda d, R, mode, f: (d / R if mode == "multicast" else d * (1 - f)) * 1.01, "expected"),    # 1% off
    (lambda d, R, mode, f: str(d / R), "expected a number of bytes"),
    (lambda d, R, mode, f: True, "expected a number of bytes"),
    (lambda d, R, mode, f: None, "expected a number of bytes")])
def test_l2_reads_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        lc.check_l2_reads(wrong)


@pytest.mark.parametrize("args,match", [
    ((0, 2, "multicast", 0.5), "delivered must be a positive number"),
    ((1e9, 0, "multicast", 0.5), "R .* must be an int >= 1"),
    ((1e9, 2.0, "multicast", 0.5), "R .* must be an int >= 1"),
    ((1e9, 2, "each", 0.5), "mode must be one of"),
    ((1e9, 2, "each loads", 1.0), r"merged .* must be in \[0, 1\)"),
    ((1e9, 2, "each loads", -0.1), r"merged .* must be in \[0, 1\)"),
    ((1e9, 2, "each loads", True), r"merged .* must be in \[0, 1\)")])
def test_l2_reads_ref_names_the_rule_broken(args, match):
    with pytest.raises(ValueError, match=match):
        lc.l2_reads_ref(*args)


@pytest.mark.parametrize("check", [lc.check_register_split, lc.check_pingpong, lc.check_release_mask,
                                   lc.check_l2_reads])
def test_checks_want_the_function_itself(check):
    with pytest.raises(CheckFailed, match="without calling it"):
        check(42)


@pytest.mark.parametrize("wrong,hint", [
    *[(slip, hint[:40]) for slip, hint in lc.NULL_MISTAKES],
    (lambda c, m, a: "faster" if all(x < z for x, z in zip(c, a)) else
     "slower" if all(x > z for x, z in zip(c, a)) else "no difference", "expected"),           # the second call only
    (lambda c, m, a: "faster" if all(x <= min(y, z) * 1.002 for x, y, z in zip(c, m, a)) else
     "slower" if all(x > max(y, z) for x, y, z in zip(c, m, a)) else "no difference", "expected"),  # a 0.2% tolerance
    (lambda c, m, a: "no difference", "expected"),
    (lambda c, m, a: "Faster", "expected one of"),
    (lambda c, m, a: True, "expected one of"),
    (lambda c, m, a: None, "expected one of")])
def test_null_verdict_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=re.escape(hint) if hint != "expected" else hint):
        lc.check_null_verdict(wrong)


@pytest.mark.parametrize("args,match", [
    (([], [1.0], [1.0]), "copy_ms must be a non-empty list"),
    (("93", [1.0], [1.0]), "copy_ms must be a non-empty list"),
    (([1.0], [0.0], [1.0]), "memcpy_ms must hold positive times"),
    (([1.0], [1.0], [True]), "again_ms must hold positive times"),
    (([1.0, 2.0], [1.0], [1.0]), "one time per round each")])
def test_null_verdict_ref_names_the_rule_broken(args, match):
    with pytest.raises(ValueError, match=match):
        lc.null_verdict_ref(*args)
