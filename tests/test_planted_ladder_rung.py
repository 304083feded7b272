"""The role-split check of day 5 · 05, Exercise 2 (utils.cute_dsl.rung_check): right ``warp_roles``
written differently pass (compiled for sm_90a, followed warp by warp, PTX read; no GPU) and, on
Hopper, run rung 6 against torch; planted wrong ones a learner would write are rejected each with
its own hint; the stub is "not attempted". A compile of rung 6 takes about half a second here, so
every row compiles its own."""
import linecache

import pytest

import utils

T = utils.setup(quiet=True)
from utils.core.checks import CheckFailed  # noqa: E402
from utils.cute_dsl import gemm_ws, rung_check, rung_sim  # noqa: E402
from utils.cute_dsl.compat import cute, cutlass, pipeline  # noqa: E402
from tests.jit_source import replace_each  # noqa: E402

HEAD = "@cute.jit\ndef warp_roles(self, wg, warp, pipe, tiles, k_tiles, tile_loads, consume):\n"
OURS = HEAD + """\
    if wg == 0:
        cute.arch.setmaxregister_decrease(40)
        if warp == 0:
            prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
            tile = self.first_tile()
            while tile < tiles:
                load = tile_loads(tile)
                prod.reset_count()
                for _ in cutlass.range(k_tiles, unroll=1):
                    load(prod)
                    prod.advance()
                tile += self.tile_step()
            pipe.producer_tail(prod)
    if wg > 0:
        cute.arch.setmaxregister_increase(232)
        consume()
"""


def roles(src):
    """The @cute.jit ``warp_roles`` of source ``src``, as a notebook cell defines it."""
    ns = {"cute": cute, "cutlass": cutlass, "pipeline": pipeline, "gemm_ws": gemm_ws}
    fname = f"<warp roles {abs(hash(src))}>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)   # CuteDSL reads the source
    exec(compile(src, fname, "exec"), ns)
    return ns["warp_roles"]


def but(*pairs):
    return replace_each(OURS, *pairs)


RIGHT = {
    "ours": OURS,
    "else branch, 56 / 224 (the pool exactly), wg != 0 first": HEAD + """\
    if wg != 0:
        cute.arch.setmaxregister_increase(224)
        consume()
    else:
        cute.arch.setmaxregister_decrease(56)
        if warp % 4 == 0:
            prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
            t = self.first_tile()
            while t < tiles:
                prod.reset_count()
                load = tile_loads(t)
                for k in range(k_tiles):
                    load(prod)
                    prod.advance()
                t = t + self.tile_step()
            pipe.producer_tail(prod)
""",
    "constants named, flag kept": but(
        ("    if wg == 0:\n        cute.arch.setmaxregister_decrease(40)",
         "    producer = wg == 0\n    if producer:\n        if cutlass.const_expr(self.realloc):\n"
         "            cute.arch.setmaxregister_decrease(gemm_ws.LOAD_REGS)"),
        ("cute.arch.setmaxregister_increase(232)", "cute.arch.setmaxregister_increase(gemm_ws.MMA_REGS)")),
    "warp 3 loads, consumers first by their own test": but(
        ("        if warp == 0:\n", "        if warp == 3:\n"), ("    if wg > 0:\n", "    if wg == 1 or wg == 2:\n")),
    "state made by every thread, for-loop over tiles, tile_loads per k-tile": HEAD + """\
    prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
    if wg == 0:
        cute.arch.setmaxregister_decrease(40)
    else:
        cute.arch.setmaxregister_increase(232)
    if wg == 0 and warp == 0:
        for tile in cutlass.range(self.first_tile(), tiles, self.tile_step(), unroll=1):
            prod.reset_count()
            for _ in cutlass.range(k_tiles, unroll=1):
                tile_loads(tile)(prod)
                prod.advance()
        pipe.producer_tail(prod)
    if wg >= 1:
        consume()
""",
}

WRONG = {
    "values swapped": (but(("decrease(40)", "decrease(232)"), ("increase(232)", "increase(40)")),
                       r"(?s)setmaxnreg.dec 232.*may only lower.*values are swapped"),
    "dec in the consumers, inc in the producer": (
        but(("decrease(40)", "increase(40)"), ("increase(232)", "decrease(232)")),
        "consumer warpgroups run setmaxnreg.dec"),
    "no register decrease in the producer": (but(("        cute.arch.setmaxregister_decrease(40)\n", "")),
                                             r"(?s)runs no setmaxnreg.dec.*waits forever"),
    "no setmaxnreg (rung 3)": (but(("        cute.arch.setmaxregister_decrease(40)\n", ""),
                                   ("        cute.arch.setmaxregister_increase(232)\n", "")), "that is rung 3"),
    "no register increase in the consumers": (but(("        cute.arch.setmaxregister_increase(232)\n", "")),
                                              "the consumers run no setmaxnreg.inc"),
    "decrease in warp 0 only": (but(("        cute.arch.setmaxregister_decrease(40)\n        if warp == 0:\n",
                                     "        if warp == 0:\n            cute.arch.setmaxregister_decrease(40)\n")),
                                r"(?s)only warp 0 of the producer warpgroup runs.*\.sync\.aligned"),
    "too many registers asked": (but(("increase(232)", "increase(240)")),
                                 r"(?s)dec 40 / .inc 240.*66560 > 64512"),
    "the SM's 65536 as the pool (32 / 240)": (but(("decrease(40)", "decrease(32)"), ("increase(232)", "increase(240)")),
                                              r"(?s)65536 > 64512: it waits forever \(the SM has 65536, but the pool"),
    "count not a multiple of 8": (but(("decrease(40)", "decrease(36)")), "multiple of 8 from 24 to 256"),
    "producer branch on warpgroup 1": (but(("if wg == 0:", "if wg == 1:"), ("if wg > 0:", "if wg != 1:")),
                                       r"(?s)no warp load\(s\), warps 0, 1, 2, 3, 8, 9, 10, 11 consume.*warpgroup 0 \(wg == 0"),
    "one consumer warpgroup only": (but(("if wg > 0:", "if wg == 1:")), "only warps 4-7 call consume"),
    "every producer warp loads": (but(("        if warp == 0:\n", "        if True:\n")),
                                  r"(?s)warps 0-3 issue loads.*one warp \(warp 0, say\)"),
    "dec after the loads": (but(("        cute.arch.setmaxregister_decrease(40)\n        if warp == 0:\n",
                                 "        if warp == 0:\n"),
                                ("            pipe.producer_tail(prod)\n",
                                 "            pipe.producer_tail(prod)\n        cute.arch.setmaxregister_decrease(40)\n")),
                            r"(?s)warp 0 runs load\(prod\) before its setmaxnreg.dec.*deadlock"),
    "no advance": (but(("                    prod.advance()\n", "")), "every load goes to the same stage"),
    "count never reset": (but(("                prod.reset_count()\n", "")), "counts run on across tiles"),
    "new state per tile": (but(("            prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, "
                                "self.stages)\n            tile = self.first_tile()\n            while tile < tiles:\n",
                                "            tile = self.first_tile()\n            while tile < tiles:\n"
                                "                prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, "
                                "self.stages)\n")),
                           "makes 3 producer states"),
    "tiles from 0, one apart": (but(("tile = self.first_tile()", "tile = 0"), ("tile += self.tile_step()", "tile += 1")),
                                r"loads tiles \[0, 1, 2, 3, 4, 5, 6, 7, 8, 9\]"),
    "tile <= tiles": (but(("while tile < tiles:", "while tile <= tiles:")),
                      r"(?s)loads tiles \[1, 4, 7, 10\], the cluster's are \[1, 4, 7\].*past the last tile"),
    "count set by hand (read-only)": (but(("prod.reset_count()", "prod.count = 0")),
                                      r"(?s)does not compile: property 'count'.*read-only: prod.reset_count\(\)"),
    "reset inside the k-tile loop": (but(("                prod.reset_count()\n"
                                          "                for _ in cutlass.range(k_tiles, unroll=1):\n",
                                          "                for _ in cutlass.range(k_tiles, unroll=1):\n"
                                          "                    prod.reset_count()\n")),
                                     r"(?s)copies k-tile 0.*once per tile, before its k-tile loop"),
    "a consumer state for the producer": (but(("PipelineUserType.Producer", "PipelineUserType.Consumer")),
                                          r"(?s)first load waits on phase 0.*Producer\) starts at phase 1"),
    "four stages typed in": (but(("PipelineUserType.Producer, self.stages)", "PipelineUserType.Producer, 4)")),
                             r"(?s)loads into stage 2 of a ring of 2.*self.stages"),
    "self. forgotten": (but(("tile = self.first_tile()", "tile = first_tile()")),
                        r"(?s)name 'first_tile' is not defined.*is the kernel's: self.first_tile\(\)"),
    "tile_step without its call": (but(("tile += self.tile_step()", "tile += self.tile_step")),
                                   r"(?s)'Int32' and 'method'.*without calling it"),
    "consumers loop over the tiles": (but(("        consume()\n", "        tile = self.first_tile()\n"
                                           "        while tile < tiles:\n            consume()\n"
                                           "            tile += self.tile_step()\n")),
                                      r"(?s)warps 4-11 call consume\(\) more than once.*call it once"),
    "no producer_tail": (but(("            pipe.producer_tail(prod)\n", "")), "never calls pipe.producer_tail"),
    "tail inside the tile loop": (but(("                tile += self.tile_step()\n            pipe.producer_tail(prod)\n",
                                       "                tile += self.tile_step()\n                pipe.producer_tail(prod)\n")),
                                  "producer_tail runs 3 time"),
    "tail in every producer warp": (but(("            pipe.producer_tail(prod)\n", ""),
                                        ("    if wg > 0:\n", "        pipe.producer_tail(pipeline.make_pipeline_state("
                                         "pipeline.PipelineUserType.Producer, self.stages))\n    if wg > 0:\n")),
                                    "warps 1-3 call the pipe too"),
    "acquires again": (but(("                    load(prod)\n", "                    pipe.producer_acquire(prod)\n"
                            "                    load(prod)\n")), "load\\(prod\\) already acquires"),
    "tile loop that never ends": (but(("                tile += self.tile_step()\n", "")),
                                  r"(?s)RunawayError|ran 20000 lines.*never ends"),
    "does not compile": (but(("load(prod)", "load(prod, tile)")), "does not compile"),
}


@pytest.mark.parametrize("src", RIGHT.values(), ids=RIGHT.keys())
def test_right_roles_pass(src, capsys):
    rung_check.check_warp_roles(roles(src))
    out = capsys.readouterr().out
    assert "structure OK" in out and "runs on Hopper" in out


@pytest.mark.skipif(not (T.has("wgmma") and T.has("cutedsl") and T.has("setmaxnreg")),
                    reason="the GEMM with these roles runs on Hopper only")
@pytest.mark.parametrize("src", RIGHT.values(), ids=RIGHT.keys())
def test_right_roles_run_on_hopper(src, capsys):
    rung_check.check_warp_roles(roles(src), T)
    assert "matches torch" in capsys.readouterr().out


def test_the_course_roles_pass(capsys):
    rung_check.check_warp_roles(gemm_ws.WsGemm.warp_roles)
    assert "structure OK (setmaxnreg 40 / 232" in capsys.readouterr().out


@pytest.mark.parametrize("body", ["    pass\n", "    # TODO: your code here\n    pass\n",
                                  '    raise NotImplementedError("exercise not attempted yet")\n'])
def test_stub_not_attempted(body, capsys):
    rung_check.check_warp_roles(roles(HEAD + body))
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("src,why", WRONG.values(), ids=WRONG.keys())
def test_wrong_roles_rejected(src, why):
    with pytest.raises(CheckFailed, match=why):
        rung_check.check_warp_roles(roles(src))


def test_each_wrong_roles_has_its_own_hint():
    """No two planted mistakes are explained by the same hint."""
    seen = {}
    for name, (src, _) in WRONG.items():
        with pytest.raises(CheckFailed) as err:
            rung_check.check_warp_roles(roles(src))
        seen.setdefault(str(err.value).split("hint:")[-1], []).append(name)
    assert len(WRONG) >= 6 and len(RIGHT) >= 2
    shared = {k: v for k, v in seen.items() if len(v) > 1}
    assert not shared, shared


def test_the_model_matches_the_kernel_ring():
    """The model's producer state advances as CuteDSL's: stage wraps at ``stages``, phase flips."""
    loads, final = rung_sim.expected_loads(first=0, step=1, tiles=2, k_tiles=3, stages=2)
    assert [e[3:] for e in loads] == [(0, 1), (1, 1), (0, 0), (1, 0), (0, 1), (1, 1)]
    assert [e[2] for e in loads] == [0, 1, 2, 0, 1, 2] and final == (3, 0, 0)


def test_not_a_function():
    with pytest.raises(CheckFailed, match="expected the @cute.jit function"):
        rung_check.check_warp_roles(42)
