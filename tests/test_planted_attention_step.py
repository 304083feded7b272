"""Planted steps for day05/07's Exercise 4 (the overlapped loop's turn and wait_groups,
utils/day05/attention_step_check.py): wrong steps a learner would write, each rejected with
its own hint, and right steps written differently, accepted (compiled for sm_90a on the CPU)."""
import re

import pytest

from utils.core.checks import CheckFailed
from utils.cute_dsl import attention as fa
from utils.day05 import attention_step_check as sc
from utils.cute_dsl.compat import cute, pipeline, warpgroup

B = fa.ORDER_BARRIER


def _step(sync_id=lambda cw: B + cw, arrive_id=lambda cw: B + 1 - cw, threads=256, order="w s p a 1 m 0 f"):
    """A step from a plan: w wait (sync), s issue_s, p issue_pv, a arrive, 1/0 wait_group, m softmax, f finish."""
    def step(self, cw, issue_s, issue_pv, softmax, finish):
        for t in order.split():
            if t == "w":
                cute.arch.barrier(barrier_id=sync_id(cw), number_of_threads=threads)
            elif t == "a":
                cute.arch.barrier_arrive(barrier_id=arrive_id(cw), number_of_threads=threads)
            elif t in "0123":
                warpgroup.wait_group(int(t))
            else:
                {"s": issue_s, "p": issue_pv, "m": softmax, "f": finish}[t]()
    return step


WRONG = [  # (the mistake, the step, a piece of the message or hint)
    ("wait before the PV issue", _step(order="w s 0 p a 1 m 0 f"), "PV GEMM no longer overlaps"),
    ("wait_group(0) where 1 is needed", _step(order="w s p a 0 m 0 f"), "the overlap is gone"),
    ("wait_group(1) where 0 is needed", _step(order="w s p a 1 m 1 f"), "still adding into"),
    ("no wait before the softmax", _step(order="w s p a m 0 f"), "reads S_j's registers"),
    ("wait_group(2) before the softmax", _step(order="w s p a 2 m 0 f"), "waits for neither"),
    ("PV issued before S", _step(order="w p s a 1 m 0 f"), "S_j must be the older"),
    ("both warpgroups wait on the same barrier", _step(sync_id=lambda cw: B, arrive_id=lambda cw: B),
     "one barrier per warpgroup"),
    ("arrive before the GEMMs", _step(order="w a s p 1 m 0 f"), "puts its wgmmas between yours"),
    ("arrive between the issues", _step(order="w s a p 1 m 0 f"), "arrive after issue_pv()"),
    ("arrive after the softmax", _step(order="w s p 1 m a 0 f"), "while you run the softmax"),
    ("arrive after wait_group(1)", _step(order="w s p 1 a m 0 f"), "before wait_group(1)"),
    ("missing arrive (deadlock on Hopper)", _step(order="w s p 1 m 0 f"), "hangs"),
    ("wait after issuing", _step(order="s w p a 1 m 0 f"), "wait before issuing"),
    ("barrier thread count 128", _step(threads=128), "completes with your own sync"),
    ("barrier thread count 384", _step(threads=384), "more than 256 never completes"),
    ("arrive on its own barrier", _step(arrive_id=lambda cw: B + cw), "the other warpgroup's barrier"),
    ("barrier 0", _step(sync_id=lambda cw: cw, arrive_id=lambda cw: 1 - cw), "barrier 0"),
    ("warpgroup 1 goes first", _step(sync_id=lambda cw: B + 1 - cw, arrive_id=lambda cw: B + cw),
     "warpgroup 0's barrier"),
]


@cute.jit
def reference(self, cw, issue_s, issue_pv, softmax, finish):
    cute.arch.barrier(barrier_id=fa.ORDER_BARRIER + cw, number_of_threads=256)
    issue_s()
    issue_pv()
    cute.arch.barrier_arrive(barrier_id=fa.ORDER_BARRIER + 1 - cw, number_of_threads=256)
    warpgroup.wait_group(1)
    softmax()
    warpgroup.wait_group(0)
    finish()


@cute.jit
def with_named_barrier_objects(self, cw, issue_s, issue_pv, softmax, finish):
    mine = pipeline.NamedBarrier(barrier_id=fa.ORDER_BARRIER + cw, num_threads=2 * 128)
    theirs = pipeline.NamedBarrier(barrier_id=fa.ORDER_BARRIER + 1 - cw, num_threads=2 * 128)
    mine.arrive_and_wait()
    issue_s()
    issue_pv()
    theirs.arrive()
    warpgroup.wait_group(1)
    softmax()
    warpgroup.wait_group(0)
    finish()


@cute.jit
def with_barrier_three(self, cw, issue_s, issue_pv, softmax, finish):
    # warpgroup 1 waits on barrier 3 instead of 2: any free id works if the arrives match
    cute.arch.barrier(barrier_id=fa.ORDER_BARRIER + 2 * cw, number_of_threads=256)
    issue_s()
    issue_pv()
    cute.arch.barrier_arrive(barrier_id=fa.ORDER_BARRIER + 2 - 2 * cw, number_of_threads=256)
    warpgroup.wait_group(1)
    softmax()
    warpgroup.wait_group(0)
    finish()


RIGHT = [reference, with_named_barrier_objects, with_barrier_three]


@pytest.mark.parametrize("what,step,hint", WRONG, ids=[w[0] for w in WRONG])
def test_wrong_step_rejected_with_its_hint(what, step, hint):
    with pytest.raises(CheckFailed) as err:
        sc.check_attention_step(step)
    assert hint in str(err.value), f"{what}: {err.value}"


def test_wrong_hints_are_distinct():
    hints = [h for _, _, h in WRONG]
    assert len(WRONG) >= 6 and len(set(hints)) == len(hints)


@pytest.mark.parametrize("step", RIGHT, ids=[r.__name__ for r in RIGHT])
def test_right_steps_accepted(step, capsys):
    sc.check_attention_step(step)
    assert "order OK" in capsys.readouterr().out


def test_stub_is_not_attempted(capsys):
    sc.check_attention_step(_step(order="s p m f"))
    assert "not attempted" in capsys.readouterr().out


def test_model_finds_deadlock_and_shared_turn_on_its_own():
    """The barrier model is not a formality: it catches what the rules also catch."""
    right = {cw: sc.step_events(reference, cw) for cw in (0, 1)}
    assert sc.simulate(right, B) == []
    no_arrive = {cw: sc.step_events(_step(order="w s p 1 m 0 f"), cw) for cw in (0, 1)}
    assert "deadlock" in sc.simulate(no_arrive, B)[0][0]
    shared = {cw: sc.step_events(_step(sync_id=lambda cw: B, arrive_id=lambda cw: B, order="w a s p 1 m 0 f"), cw)
              for cw in (0, 1)}
    assert "same time" in sc.simulate(shared, B)[0][0]
    early = {cw: sc.step_events(_step(order="w a s p 1 m 0 f"), cw) for cw in (0, 1)}
    assert "same time" in sc.simulate(early, B)[0][0]


def test_ptx_problems_sees_a_missing_wait():
    ptx = fa.ptx_of(flash=sc.flash_with(reference))
    assert sc.ptx_problems(ptx) == []
    assert sc.ptx_problems(ptx.replace("wgmma.wait_group.sync.aligned \t1", "nop")) != []


def test_the_course_step_is_a_right_answer():
    """Step 5 of the ladder runs FlashFwd's own named_step: the PTX check accepts it, and it is
    what a learner's correct step compiles to (the same PTX as the check's reference)."""
    own = fa.ptx_of(128, "named")
    assert sc.ptx_problems(own) == []
    def body(ptx):           # the kernel's name holds the class's (Yours vs FlashFwd)
        return re.sub(r"kernel_cutlass_\w+", "K", ptx)
    assert body(own) == body(fa.ptx_of(flash=sc.flash_with(reference)))
    assert fa.ptx_of(128, "overlap").count("bar.arrive") == 0 < own.count("bar.arrive")


def test_only_the_known_steps():
    with pytest.raises(ValueError, match="step must be one of"):
        fa.FlashFwd(128, "ring")