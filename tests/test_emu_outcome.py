"""utils.emu.outcome: one word for what a changed kernel did on the emulator."""
import numpy as np
import pytest

from utils.core import predict
from utils.emu.errors import Deadlock, MemoryFault, RaceError
from utils.emu.outcome import OUTCOMES, from_report, outcome

WANT = np.arange(4.0)


def _raise(err):
    def run():
        raise err
    return run


@pytest.mark.parametrize("run, word", [
    (lambda: WANT.copy(), "works"),
    (lambda: (WANT + 1e-7, "report"), "works"),              # (array, report) as course launchers return
    (lambda: WANT + 1, "wrong values"),
    (lambda: np.full(4, np.nan), "wrong values"),              # never written
    (_raise(RaceError("read before the copy landed")), "race"),
    (_raise(Deadlock("every warp waits")), "hang"),
    (_raise(RuntimeError("emulator: an mbarrier wait timed out")), "hang"),
    (_raise(MemoryFault("outside every buffer")), "fault"),
])
def test_outcome_names_what_happened(run, word):
    got, detail = outcome(run, WANT)
    assert got == word and detail.startswith("emulator:")
    assert predict.match_choice(got, OUTCOMES) == got


def test_outcome_lets_a_bug_in_the_question_through():
    with pytest.raises(ZeroDivisionError):
        outcome(lambda: 1 / 0, WANT)
    with pytest.raises(ValueError, match="shape"):
        outcome(lambda: np.zeros(3), WANT)
    with pytest.raises(TypeError, match="function"):
        outcome(WANT, WANT)


def _rep(**kw):
    return {"emulator": True, "error": None, "message": None, "deadlocks": [], "wait_timed_out": False,
            "wrong": 0, "elements": 10, **kw}


@pytest.mark.parametrize("rep, word", [
    (_rep(), "works"),
    (_rep(wrong=3), "wrong values"),
    (_rep(error="RaceError", message="emulator: no fence.proxy.async\n at line 3"), "race"),
    (_rep(wait_timed_out=True, wrong=10), "hang"),
    (_rep(error="MisalignedAddress", message="emulator: 16 B"), "fault"),
])
def test_from_report(rep, word):
    assert from_report(rep)[0] == word


def test_from_report_refuses_other_dicts():
    with pytest.raises(TypeError, match="lab_report"):
        from_report({"wrong": 0})


def test_aliases_learners_write():
    for said, word in (("deadlock", "hang"), ("Wrong", "wrong values"), ("crash", "fault"), ("ok", "works")):
        assert predict.match_choice(said, OUTCOMES) == word
