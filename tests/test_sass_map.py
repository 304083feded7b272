"""day05/02's SASS exercise: graded against the real SASS of tma_copy_tile (cpu tier: Triton's
ptxas). Planted wrong answers are rejected with a true hint; right answers in every reasonable
spelling are accepted."""
import pytest

from utils.core.checks import CheckFailed
from utils.tma import sass_map

LOAD, STORE = "cp.async.bulk.tensor (load: global -> shared)", "cp.async.bulk.tensor (store: shared -> global)"
INIT, ARRIVE, WAIT = "mbarrier.init", "mbarrier.arrive.expect_tx", "mbarrier.try_wait.parity"
RIGHT = {INIT: "SYNCS.EXCH.64", ARRIVE: "SYNCS.ARRIVE.TRANS64", LOAD: "UTMALDG.2D",
         WAIT: "SYNCS.PHASECHK.TRANS64.TRYWAIT", STORE: "UTMASTG.2D"}


def test_the_answer_is_read_off_the_real_sass():
    assert sass_map.opcodes() == RIGHT


@pytest.mark.parametrize("change", [{}, {LOAD: "UTMALDG", STORE: "utmastg"}, {INIT: "SYNCS.EXCH"},
                                    {WAIT: "SYNCS.PHASECHK", ARRIVE: " syncs.arrive "}])
def test_right_answers_pass(change, capsys):
    sass_map.check_sass_map({**RIGHT, **change})
    assert "correct" in capsys.readouterr().out


@pytest.mark.parametrize("change, hint", [
    ({LOAD: "UTMASTG.2D"}, "is what cp.async.bulk.tensor (store"),
    ({STORE: "UTMALDG"}, "is what cp.async.bulk.tensor (load"),
    ({LOAD: "LDG.E.128"}, "thread loads and stores"),
    ({ARRIVE: "SYNCS"}, "name the operation too"),
    ({WAIT: "SYNCS.ARRIVE.TRANS64"}, "is what mbarrier.arrive.expect_tx becomes"),
    ({INIT: "SYNCS.PHASECHK"}, "is what mbarrier.try_wait.parity becomes"),
    ({WAIT: "SYNCS.PHASECHK.TRANS64.WAIT"}, "read the SASS listing"),
    ({LOAD: "UTMALDG.3D"}, "read the SASS listing"),
    ({INIT: "BAR.SYNC"}, "read the SASS listing"),
])
def test_planted_wrong_answers_fail_with_a_true_hint(change, hint):
    with pytest.raises(CheckFailed, match="wrong") as e:
        sass_map.check_sass_map({**RIGHT, **change})
    assert hint in str(e.value)


def test_stub_missing_and_malformed(capsys):
    sass_map.check_sass_map({k: "?" for k in RIGHT})
    assert "not attempted" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="no answer for"):
        sass_map.check_sass_map({LOAD: "UTMALDG"})
    with pytest.raises(CheckFailed, match="as a string"):
        sass_map.check_sass_map({**RIGHT, LOAD: 42})
    with pytest.raises(CheckFailed, match="expected a dict"):
        sass_map.check_sass_map(["UTMALDG"])
