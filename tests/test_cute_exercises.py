"""The CuteDSL producer check: right steps pass (structure on any machine), planted wrong
steps are rejected with a hint about what they got wrong, the stub is "not attempted"."""
import linecache

import pytest

import utils

utils.setup(quiet=True)
from utils.cute_dsl import exercises as ex  # noqa: E402
from utils.cute_dsl import gemm as cute_gemm  # noqa: E402
from utils.core.checks import CheckFailed  # noqa: E402
from utils.cute_dsl.compat import cute  # noqa: E402


def step(body):
    """A @cute.jit producer step whose learner part is ``body`` (a list of lines), as in the
    notebook: the template's pipe.producer_commit(state) follows it."""
    src = ("@cute.jit\ndef load(self, pipe, state, atom_a, tAg, tAs, mask_a, atom_b, tBg, tBs, mask_b):\n"
           + "".join(f"    {line}\n" for line in body) + "    pipe.producer_commit(state)\n")
    ns, fname = {"cute": cute}, f"<producer step {abs(hash(src))}>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)   # CuteDSL reads the source
    exec(compile(src, fname, "exec"), ns)
    return ns["load"]


ACQ, BAR = "pipe.producer_acquire(state)", "bar = pipe.producer_get_barrier(state)"
A = "cute.copy(atom_a, tAg[(None, state.count)], tAs[(None, state.index)], tma_bar_ptr=bar, mcast_mask=mask_a)"
B = "cute.copy(atom_b, tBg[(None, state.count)], tBs[(None, state.index)], tma_bar_ptr=bar, mcast_mask=mask_b)"

RIGHT = {
    "solution": [ACQ, BAR, A, B],
    "B first": [ACQ, BAR, B, A],
    "no parens, names": [ACQ, "k, buf = state.count, state.index", BAR,
                         "cute.copy(atom_a, tAg[None, k], tAs[None, buf], tma_bar_ptr=bar, mcast_mask=mask_a)",
                         "cute.copy(atom_b, tBg[None, k], tBs[None, buf], tma_bar_ptr=bar, mcast_mask=mask_b)"],
    "barrier twice": [ACQ, A.replace("=bar", "=pipe.producer_get_barrier(state)"),
                      B.replace("=bar", "=pipe.producer_get_barrier(state)")],
}

WRONG = {
    "swapped count/index": ([ACQ, BAR, A.replace("state.count", "X").replace("state.index", "state.count")
                             .replace("X", "state.index"), B], "count and index are swapped"),
    "k-tile fixed at 0": ([ACQ, BAR, A.replace("(None, state.count)", "(None, 0)"), B], "the constant 0"),
    "buffer fixed at 0": ([ACQ, BAR, A, B.replace("(None, state.index)", "(None, 0)")], "state.index"),
    "A twice, B never": ([ACQ, BAR, A, A], "2 tma load\\(s\\) with atom_a and 0 with atom_b"),
    "only A": ([ACQ, BAR, A], "1 tma load\\(s\\) with atom_a and 0"),
    "B's atom on A's tiles": ([ACQ, BAR, A, B.replace("tBg", "tAg").replace("tBs", "tAs")], "atom_b copy goes from tAg"),
    "masks swapped": ([ACQ, BAR, A.replace("mask_a", "mask_b"), B.replace("mask_b", "mask_a")], "masks are swapped"),
    "A's mask twice": ([ACQ, BAR, A, B.replace("mask_b", "mask_a")], "atom_b copy's mcast_mask is mask_a"),
    "no mask": ([ACQ, BAR, A.replace(", mcast_mask=mask_a", ""), B], "multicast mask"),
    "no acquire": ([BAR, A, B], "expect_tx"),
    "acquire after copies": ([BAR, A, B, ACQ], "before the copies"),
    "commit inside": ([ACQ, BAR, A, B, "pipe.producer_commit(state)"], "inside your part"),
    "does not compile": ([ACQ, BAR, A.replace("atom_a,", "atom_a, 3,"), B], "does not compile"),
}


@pytest.mark.parametrize("body", RIGHT.values(), ids=RIGHT.keys())
def test_right_steps_pass_structure(body, capsys):
    ex.check_producer(step(body))
    out = capsys.readouterr().out
    assert "structure OK" in out and "correctness is checked on Hopper" in out and "correct." not in out


def test_the_course_step_passes(capsys):
    ex.check_producer(cute_gemm.TmaGemm.load)
    assert "structure OK" in capsys.readouterr().out


@pytest.mark.parametrize("body", [["pass"], ["# TODO (4 lines): your code here", "pass"]])
def test_stub_not_attempted(body, capsys):
    ex.check_producer(step(body))
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("body,why", WRONG.values(), ids=WRONG.keys())
def test_wrong_steps_rejected(body, why):
    with pytest.raises(CheckFailed, match=why):
        ex.check_producer(step(body))


def test_raising_stub_not_attempted(capsys):
    ex.check_producer(step(["raise NotImplementedError"]))
    assert "not attempted" in capsys.readouterr().out


def test_matches_torch_names_the_first_element_that_differs():
    """The Hopper runs of the CuteDSL kernel checks share this comparison; here on CPU tensors."""
    import torch
    from utils.core.checks import CheckFailed
    from utils.cute_dsl.producer_check import matches_torch
    want = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    matches_torch("demo", want.half(), want, "hint", "a launch")            # equal: nothing raised
    c = want.clone().half()
    c[1, 2] = float("nan")
    with pytest.raises(CheckFailed, match=r"first at \(1, 2\): nan vs 6\.000(.|\n)*a launch(.|\n)*hint"):
        matches_torch("demo", c, want, "hint", "a launch")
