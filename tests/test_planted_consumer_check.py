"""The CuteDSL consumer check (day 5 · 04, Exercise 4): right steps pass (structure on any machine),
planted wrong steps a learner would write are rejected each with its own hint, the stub is "not
attempted"."""
import linecache

import pytest

import utils

utils.setup(quiet=True)
from utils.core.checks import CheckFailed  # noqa: E402
from utils.cute_dsl import exercises as ex  # noqa: E402
from utils.cute_dsl import gemm as cute_gemm  # noqa: E402
from utils.cute_dsl.compat import cute, cutlass, pipeline, warpgroup  # noqa: E402


def step(body):
    """A @cute.jit consumer step whose body is ``body`` (a list of lines), as in the notebook."""
    src = ("@cute.jit\ndef my_mma(self, pipe, read, release, k, tiled_mma, acc, tCrA, tCrB):\n"
           + "".join(f"    {line}\n" for line in body))
    ns = {"cute": cute, "cutlass": cutlass, "pipeline": pipeline, "warpgroup": warpgroup}
    fname = f"<consumer step {abs(hash(src))}>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)   # CuteDSL reads the source
    exec(compile(src, fname, "exec"), ns)
    return ns["my_mma"]


WAIT, FENCE, COMMIT = "pipe.consumer_wait(read)", "warpgroup.fence()", "warpgroup.commit_group()"
LOOP = "for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):"
GEMM = "    cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index], acc)"
WAITG = "warpgroup.wait_group(self.k_pipe_mmas)"
IF, REL = "if k >= self.k_pipe_mmas:", "    pipe.consumer_release(release)"
OURS = [WAIT, FENCE, LOOP, GEMM, COMMIT, WAITG, IF, REL]


def but(old, new):
    """Our step with line ``old`` replaced by ``new`` (a list of lines; [] deletes it)."""
    i = OURS.index(old)
    return OURS[:i] + new + OURS[i + 1:]


RIGHT = {
    "ours": OURS,
    "unrolled by hand, names": [WAIT, FENCE, "s = read.index"] + [
        f"cute.gemm(tiled_mma, acc, tCrA[None, None, {kb}, s], tCrB[None, None, {kb}, s], acc)" for kb in range(4)]
        + [COMMIT, WAITG, "if k > self.k_pipe_mmas - 1:", REL],
    "range_constexpr, 0 < k form": [WAIT, FENCE, "for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):",
                                    GEMM, COMMIT, WAITG, "if self.k_pipe_mmas <= k:", REL],
    "wait_group(0): no overlap, still safe": but(WAITG, ["warpgroup.wait_group(0)"]),
}

WRONG = {
    "release before wait_group": ([WAIT, FENCE, LOOP, GEMM, COMMIT, IF, REL, WAITG],
                                  "consumer_release comes before warpgroup.wait_group"),
    "no wait on full": (but(WAIT, []), "no pipe.consumer_wait before the wgmmas"),
    "wait on the wrong stage": (but(WAIT, ["pipe.consumer_wait(release)"]), "waits on release"),
    "phase passed as a token": (but(WAIT, ["pipe.consumer_wait(read, read.phase)"]), "second argument"),
    "wgmma without fence": (but(FENCE, []), "no warpgroup.fence"),
    "k-loop over one k-block": (but(LOOP, ["for kb in cutlass.range(1, unroll_full=True):"]),
                                "cover k-block\\(s\\) \\[0\\] of the stage's 4"),
    "k-block loop not unrolled": (but(LOOP, ["for kb in cutlass.range(cute.size(tCrA, mode=[2])):"]),
                                  "1 wgmma.mma_async, expected 4"),
    "k-block fixed at 0": (but(GEMM, [GEMM.replace(", kb,", ", 0,")]), "k-block\\(s\\) \\[0, 0, 0, 0\\]"),
    "release twice": (OURS + [REL], "consumer_release is called 2 times"),
    "release of the wrong stage": (but(REL, ["    pipe.consumer_release(read)"]),
                                   "(?s)releases read.*may still be reading stage read"),
    "release every k-tile": (OURS[:-2] + [REL.strip()], "not under a condition on k"),
    "condition hard-coded for 2 stages": (but(IF, ["if k >= 1:"]), "k >= 1, with k_pipe_mmas = 0"),
    "wait_group(1) hard-coded": (but(WAITG, ["warpgroup.wait_group(1)"]), "wait_group\\(1\\) with k_pipe_mmas = 0"),
    "no commit": (but(COMMIT, []), "no warpgroup.commit_group"),
    "no release": (OURS[:-2], "never calls pipe.consumer_release"),
    "stage fixed at 0": (but(GEMM, [GEMM.replace("read.index", "0")]), "read stage 0 of tCrA"),
    "wgmma on the release stage": (but(GEMM, [GEMM.replace("read.index", "release.index")]),
                                   "read stage release.index"),
    "does not compile": (but(GEMM, [GEMM.replace("tCrA[None, None, kb, read.index]", "tCrA[kb]")]),
                         "does not compile(?s:.*)tCrA\\[None, None, kb, read.index\\]"),
}


@pytest.mark.parametrize("body", RIGHT.values(), ids=RIGHT.keys())
def test_right_steps_pass_structure(body, capsys):
    ex.check_consumer(step(body))
    out = capsys.readouterr().out
    assert "structure OK" in out and "correctness is checked on Hopper" in out and "correct." not in out


def test_the_course_step_passes(capsys):
    ex.check_consumer(cute_gemm.TmaGemm.mma)
    assert "structure OK" in capsys.readouterr().out


@pytest.mark.parametrize("body", [["pass"], ["# TODO: your code here", "pass"], ["raise NotImplementedError"]])
def test_stub_not_attempted(body, capsys):
    ex.check_consumer(step(body))
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("body,why", WRONG.values(), ids=WRONG.keys())
def test_wrong_steps_rejected(body, why):
    with pytest.raises(CheckFailed, match=why):
        ex.check_consumer(step(body))


def test_each_wrong_step_has_its_own_hint():
    """No two planted mistakes are explained by the same hint."""
    seen = {}
    for name, (body, _) in WRONG.items():
        with pytest.raises(CheckFailed) as err:
            ex.check_consumer(step(body))
        seen.setdefault(str(err.value).split("hint:")[-1], []).append(name)
    assert len(WRONG) >= 6 and len(RIGHT) >= 2
    shared = {k: v for k, v in seen.items() if len(v) > 1}
    assert not shared, shared


def test_not_a_function():
    with pytest.raises(CheckFailed, match="expected the @cute.jit function"):
        ex.check_consumer(42)
