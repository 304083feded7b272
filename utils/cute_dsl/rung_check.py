"""Exercise 2 of ``day05_tma/05_gemm_ladder``: the warp-specialized rung's role split,
``warp_roles``, which the kernel of rungs 3-7 (``WsGemm.kernel``) calls with every thread.

The check compiles rung 6 (persistent, cluster 2 x 1) with the learner's function for sm_90a (any
machine), follows the function warp by warp (:mod:`utils.cute_dsl.rung_sim`: which warps change
their registers, load, wait for the ring's tail, consume) and reads the PTX (``setmaxnreg.dec``
and ``.inc`` with the values the warps used, the TMA loads and wgmmas of the course's kernel). On
Hopper it then runs the GEMM on a grid small enough that every CTA walks several tiles, C
poisoned with NaN, at a shape not a multiple of the tile, against torch.
"""
from __future__ import annotations

from ..core import ptx as ptx_count
from ..core.checks import fail, not_attempted, passed, verified
from . import rung_sim as sim
from .producer_check import _ANSI, matches_torch

LAUNCH_REGS = 168            # 65536 registers / 384 threads, rounded down to a multiple of 8
POOL = 384 * LAUNCH_REGS     # the CTA's register pool: what its 384 threads were launched with (PTX ISA)
RUN_MNK = (1000, 776, 1000)  # on Hopper: no extent a multiple of the 128 x 256 x 64 tile
RUN_SMS = 6                  # persistent grid of 6 SMs: each CTA walks 5 or 6 tiles
FAMS = {"dec": r"setmaxnreg\.dec\.sync\.aligned\.u32\s+(\d+)", "inc": r"setmaxnreg\.inc\.sync\.aligned\.u32\s+(\d+)",
        "tma load": r"cp\.async\.bulk\.tensor\.\dd\.shared::(cta|cluster)\.global", "wgmma": r"wgmma\.mma_async"}
LAUNCHED = "WsGemm(persistent=True, cluster=(2, 1)) compiled for sm_90a with your warp_roles"
_SYNC = ("setmaxnreg is .sync.aligned: every warp of a warpgroup runs it, the same value; put it "
         "where all four warps of the warpgroup pass")
_HANG = ("the consumers' setmaxnreg.inc waits until the CTA's pool (the 384 x 168 = 64512 registers it was "
         "launched with) has them; 128 x {p} + 256 x {c} = {total} > 64512: it waits forever")


def _warps(ws):
    """'warps 0-3' for a list of warp numbers."""
    ws = sorted(ws)
    return f"warp {ws[0]}" if len(ws) == 1 else ("warps " + (f"{ws[0]}-{ws[-1]}" if ws == list(
        range(ws[0], ws[-1] + 1)) else ", ".join(map(str, ws))))


_FIRST_DEC = ("lower the count first: until the producer gives registers back, the consumers' .inc blocks, "
              "they release no stage, and the producer waits for a free one (a deadlock)")
_FIRST_INC = "raise the count first: the consumer loop's accumulators are what needs the registers"


def _said(event) -> str:
    """An event of the model in the words of the code that made it."""
    if event[0] == "pipe":
        return f"pipe.{event[1]}"
    return {"new state": "make_pipeline_state", "load": "load(prod)", "consume": "consume()",
            "dec": "setmaxnreg.dec", "inc": "setmaxnreg.inc"}[event[0]]


def _values(logs, kind, warps):
    return [e[1] for w in warps for e in logs[w] if e[0] == kind]


def register_problems(logs) -> list:
    """(what is wrong, hint) about ``setmaxnreg`` in the per-warp logs of :func:`rung_sim.follow`."""
    prod, cons = range(4), range(4, 12)
    decs, incs = _values(logs, "dec", prod), _values(logs, "inc", cons)
    if _values(logs, "dec", cons) or _values(logs, "inc", prod):
        return [("the consumer warpgroups run setmaxnreg.dec (or the producer .inc)", "the producer gives "
                 "registers back (setmaxregister_decrease), the consumers take them (setmaxregister_"
                 "increase): their accumulators need them; the loads need almost none")]
    if not decs and not incs:
        return [("no warp runs setmaxnreg (that is rung 3)", "rung 4's change: the producer warpgroup lowers "
                 "its count (cute.arch.setmaxregister_decrease), the consumers raise theirs (..._increase)")]
    for kind, vals, warps, who in (("dec", decs, prod, "producer"), ("inc", incs, cons, "consumer")):
        doing = [w for w in warps if any(e[0] == kind for e in logs[w])]
        if not doing and kind == "inc":
            return [("the consumers run no setmaxnreg.inc", "raise the consumers' count (setmaxregister_"
                     "increase) so their accumulators fit; without it the registers the producer gave back "
                     "stay unused")]
        if not doing:
            total = 128 * LAUNCH_REGS + 256 * incs[0]
            return [("the producer warpgroup runs no setmaxnreg.dec", "the registers the consumers "
                     "ask for come from the producer: " + (_HANG.format(p=LAUNCH_REGS, c=incs[0], total=total)
                                                            if total > POOL else "lower its count first"))]
        if len(doing) < len(warps):
            return [(f"only {_warps(doing)} of the {who} warpgroup {'runs' if len(doing) == 1 else 'run'} "
                     f"setmaxnreg.{kind}", _SYNC)]
        per = [_values(logs, kind, [w]) for w in warps]
        if any(len(v) > 1 for v in per):
            return [(f"a {who} warp runs setmaxnreg.{kind} {max(map(len, per))} times", f"once, as the "
                     f"{who} branch starts")]
        if len(set(vals)) > 1:
            return [(f"the {who} warps ask for different counts {sorted(set(vals))}", _SYNC)]
    p, c = decs[0], incs[0]
    for n, kind in ((p, "dec"), (c, "inc")):
        if not isinstance(n, int) or n % 8 or not 24 <= n <= 256:
            return [(f"setmaxnreg.{kind} {n}", "a count is a multiple of 8 from 24 to 256 (the PTX ISA)")]
    if p > LAUNCH_REGS:
        return [(f"setmaxnreg.dec {p} in the producer", f".dec may only lower the count: every warp starts at "
                 f"{LAUNCH_REGS} (65536 / 384); the producer goes down (the rung's 40), the consumers up "
                 "(232)" + (" (the two values are swapped)" if c < LAUNCH_REGS else ""))]
    if c < LAUNCH_REGS:
        return [(f"setmaxnreg.inc {c} in the consumers", f".inc may only raise the count, from the launch's "
                 f"{LAUNCH_REGS}: the consumers go up (the rung's 232)")]
    if 128 * p + 256 * c > POOL:
        return [(f"setmaxnreg.dec {p} / .inc {c}", _HANG.format(p=p, c=c, total=128 * p + 256 * c) + (
            " (the SM has 65536, but the pool is only what this CTA was launched with)"
            if 128 * p + 256 * c <= 65536 else ""))]
    for w, kind, why in [(w, "dec", _FIRST_DEC) for w in prod] + [(w, "inc", _FIRST_INC) for w in cons]:
        first = next(e for e in logs[w] if e[0] != "new state")     # making a state costs no registers
        if first[0] != kind:
            return [(f"warp {w} runs {_said(first)} before its setmaxnreg.{kind}", why)]
    return []


def role_problems(logs) -> list:
    """(what is wrong, hint) about who loads and who consumes, in the per-warp logs."""
    loaders = [w for w in range(12) if any(e[0] == "load" for e in logs[w])]
    consumers = [w for w in range(12) if any(e[0] == "consume" for e in logs[w])]
    if any(w < 4 for w in consumers) or any(w >= 4 for w in loaders):
        return [(f"{_warps(loaders) if loaders else 'no warp'} load(s), {_warps(consumers) if consumers else 'none'}"
                 " consume", "warpgroup 0 (wg == 0, warps 0-3) is the producer; warpgroups 1 and 2 consume: "
                 "the MMA slices belong to wg 1 and 2 (wg - 1)")]
    if consumers != list(range(4, 12)):
        return [(f"only {_warps(consumers) if consumers else 'no warp'} call consume()", "both consumer "
                 "warpgroups (wg 1 and 2, warps 4-11) run consume(): each computes half of the C tile")]
    twice = [w for w in consumers if sum(e[0] == "consume" for e in logs[w]) > 1]
    if twice:
        return [(f"{_warps(twice)} call consume() more than once", "consume() is the consumers' whole loop "
                 "(every tile): call it once")]
    if not loaders:
        return [("no warp issues a load", "one warp of the producer warpgroup (warp 0, say) calls load(prod) "
                 "for every k-tile of every tile of this cluster")]
    if len(loaders) > 1:
        return [(f"{_warps(loaders)} issue loads", "one warp (warp 0, say) issues every load: each warp's "
                 "load(prod) acquires the stage and arms its barrier again, for bytes that are copied once")]
    tails = [w for w in range(12) if w != loaders[0] and any(e[0] == "pipe" for e in logs[w])]
    if tails:
        return [(f"{_warps(tails)} call the pipe too", f"only the loading warp (warp {loaders[0]}) calls "
                 "pipe.producer_tail(prod), with the state its loads advanced: the tail waits for the "
                 "release of those stages (another warp's fresh state would arm and wait on stages of its own)")]
    extra = {e[1] for w in range(12) for e in logs[w] if e[0] == "pipe" and e[1] != "producer_tail"}
    if extra:
        return [(f"your function calls pipe.{sorted(extra)[0]}", "load(prod) already acquires the stage, "
                 "copies A's and B's k-tile into it and commits; the pipe is yours only for "
                 "producer_tail(prod)")]
    return []


def loader(logs) -> int:
    """The warp that loads (the first producer warp with a load; warp 0 if none)."""
    return next((w for w in range(4) if any(e[0] == "load" for e in logs[w])), 0)


def load_problems(log, warp: int = 0) -> list:
    """(what is wrong, hint) about the loading warp's loads and tail, against
    :func:`rung_sim.expected_loads`."""
    want, final = sim.expected_loads()
    got = [e for e in log if e[0] == "load"]
    if any(len(e) != 5 for e in got):
        return [("load(...) got something that is not the producer state", "load(prod): the state made "
                 "by pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)")]
    tiles = list(dict.fromkeys(e[1] for e in got))
    right = list(range(sim.FIRST, sim.TILES, sim.STEP))
    if tiles[:len(right)] == right and min(tiles[len(right):], default=0) >= sim.TILES:
        return [(f"warp {warp} loads tiles {tiles}, the cluster's are {right} (below {sim.TILES})",
                 "while tile < tiles: tile number `tiles` is past the last tile; no consumer reads it, and the "
                 "producer waits forever for its stages to be released")]
    if tiles != right:
        return [(f"warp {warp} loads tiles {tiles} of a cluster whose tiles are {right} (first {sim.FIRST}, "
                 f"{sim.STEP} apart, below {sim.TILES})", "tile = self.first_tile(), then tile += "
                 "self.tile_step() while tile < tiles: each cluster walks its own tile numbers, a grid apart")]
    per = [sum(e[1] == t for e in got) for t in tiles]
    if any(n != sim.K_TILES for n in per):
        return [(f"warp {warp} loads {per} k-tiles per tile, with k_tiles = {sim.K_TILES}", "every k-tile of "
                 "each tile, once: for _ in cutlass.range(k_tiles, unroll=1)")]
    news = sum(e[0] == "new state" for e in log)
    if news > 1:
        return [(f"warp {warp} makes {news} producer states", "make the state once, before the tile loop: a new "
                 "state restarts at stage 0, phase 1, while the stages of the last tile may still be "
                 "full; stage and phase run on across tiles (reset only the count)")]
    if got != want:
        counts = [e[2] for e in got]
        if counts == list(range(len(got))):
            return [(f"warp {warp}'s k-tile counts run on across tiles: {counts}", "prod.reset_count() as "
                     "each tile starts: .count is the k-tile the load copies; .index and .phase run on")]
        if len({e[3:] for e in got}) == 1:
            return [("every load goes to the same stage " + str(got[0][3:]), "prod.advance() after each "
                     "load: the next k-tile goes to the next stage, with the phase flipped on each wrap")]
        if set(counts) == {0}:
            return [(f"every load of warp {warp} copies k-tile 0 (.count)", "prod.reset_count() once per tile, "
                     "before its k-tile loop: prod.advance() moves .count to the next k-tile")]
        if [g[:4] + (g[4] ^ 1,) for g in got] == want:
            return [(f"warp {warp}'s first load waits on phase {got[0][4]}, a producer's on phase 1",
                     "a producer state (pipeline.PipelineUserType.Producer) starts at phase 1, so the first "
                     "acquire of each stage, still empty, passes; at phase 0 it waits for a release that "
                     "never comes")]
        if max(e[3] for e in got) >= sim.STAGES:
            return [(f"warp {warp} loads into stage {next(e[3] for e in got if e[3] >= sim.STAGES)} of a ring "
                     f"of {sim.STAGES} (stages 0-{sim.STAGES - 1})",
                     "the ring has self.stages stages: make_pipeline_state(..., self.stages)")]
        bad = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w)
        return [(f"load {bad} is (tile, k-tile, stage, phase) = {got[bad][1:]}, expected {want[bad][1:]}",
                 "one state for the whole walk: reset its count at each tile, advance it after each load")]
    tails = [e for e in log if e[:2] == ("pipe", "producer_tail")]
    if not tails:
        return [(f"warp {warp} never calls pipe.producer_tail(prod)", "after the last tile: it waits until the "
                 "consumers released every stage, so the CTA does not exit while a peer's multicast may "
                 "still signal its barriers")]
    if len(tails) > 1 or log.index(tails[0]) < max(i for i, e in enumerate(log) if e[0] == "load"):
        return [(f"pipe.producer_tail runs {len(tails)} time(s), not once after the last load",
                 "once, after the tile loop: it waits for the release of every stage in flight")]
    if tails[0][2:] != (final,):
        return [(f"producer_tail gets the state at {tails[0][2:]}, expected {final} (after the last advance)",
                 "pipe.producer_tail(prod): the state the loads left behind")]
    return []


def _compile(fn):
    from .gemm import ptx_of
    from .gemm_ws import WsGemm

    class Yours(WsGemm):
        warp_roles = fn
    return ptx_of(gemm=Yours(persistent=True, cluster=(2, 1)), mnk=(512, 512, 320))


_OURS: dict = {}


def _ours_counts() -> dict:
    if not _OURS:
        from .gemm_ws import WsGemm
        _OURS.update(ptx_count.count(_compile(WsGemm.warp_roles), FAMS))
    return _OURS


def ptx_problems(text: str, p: int, c: int) -> list:
    """What the PTX must show: one setmaxnreg.dec p, one .inc c, the course's TMA loads and wgmmas."""
    import re
    got, ours = ptx_count.count(text, FAMS), _ours_counts()
    for kind, n in (("dec", p), ("inc", c)):
        vals = [int(v) for v in re.findall(FAMS[kind], text)]
        if vals != [n]:
            return [(f"the PTX has setmaxnreg.{kind} {vals}, expected [{n}]", "one call on the path all the "
                     "warpgroup's warps take")]
    if not got["tma load"] or got["tma load"] % ours["tma load"]:
        return [(f"the PTX has {got['tma load']} TMA load instruction(s), the course's kernel {ours['tma load']} "
                 "(A's and B's, or a multiple where a loop is unrolled)", "load(prod) in the producer's k-tile loop")]
    if got["wgmma"] != ours["wgmma"]:
        return [(f"the PTX has {got['wgmma']} wgmma instruction(s), the course's kernel {ours['wgmma']}",
                 "consume() once, in the consumers' branch")]
    return []


def _compile_hint(error: str) -> str:
    """The hint for a compile error, from the error's text."""
    import re
    undefined = re.search(r"name '(\w+)' is not defined", error)
    if "has no setter" in error or "can't set attribute" in error:
        return ("a pipeline state's count, index and phase are read-only: prod.reset_count() sets .count "
                "to 0, prod.advance() moves to the next stage (the phase flips on each wrap)")
    if undefined and undefined.group(1) in ("first_tile", "tile_step", "stages"):
        return f"{undefined.group(1)} is the kernel's: self.first_tile(), self.tile_step(), self.stages"
    if "'method'" in error:
        return "a method used without calling it: self.first_tile(), self.tile_step()"
    return ("it receives (self, wg, warp, pipe, tiles, k_tiles, tile_loads, consume); load = tile_loads(tile), "
            "then load(prod); a name used after an if or a loop must exist before it")


def _no_compile(name, error):
    fail(name, f"your function does not compile: {error[:300]}", _compile_hint(error), launched=LAUNCHED)


def check_warp_roles(fn, tier=None) -> None:
    """Check the learner's ``warp_roles(self, wg, warp, pipe, tiles, k_tiles, tile_loads, consume)``:
    compiled into rung 6 for sm_90a, followed warp by warp, its PTX read; on Hopper (``tier`` with
    wgmma and setmaxnreg) the GEMM also runs against torch."""
    name = "warp roles"
    if not callable(fn):
        fail(name, f"expected the @cute.jit function, got {type(fn).__name__}")
    try:
        text, error = _compile(fn), None
    except NotImplementedError:
        return not_attempted(name)
    except Exception as err:  # kept: what the warps do explains most mistakes better than the compiler
        text, error = "", " ".join(_ANSI.sub("", str(err)).split())
    try:
        logs = sim.follow(fn)
    except Exception as err:
        if error:
            _no_compile(name, error)
        fail(name, f"followed warp by warp, your function raised {type(err).__name__}: {err}",
             "a loop that never ends? (tile += self.tile_step()); otherwise use only the arguments, "
             "self.stages, self.first_tile(), self.tile_step(), cute, cutlass and pipeline", launched=LAUNCHED)
    if not any(logs) and not error and not ptx_count.count(text, FAMS)["tma load"]:
        return not_attempted(name)
    lw = loader(logs)
    problems = role_problems(logs) or register_problems(logs) or load_problems(logs[lw], lw)
    if not problems and error:
        _no_compile(name, error)
    p, c = (_values(logs, kind, [w])[0] for kind, w in (("dec", 0), ("inc", 4))) if not problems else (0, 0)
    if not problems:
        problems = ptx_problems(text, p, c)
    if problems:
        fail(name, problems[0][0], problems[0][1], launched=LAUNCHED + "; followed warp by warp with tiles "
             f"{sim.FIRST}, {sim.FIRST + sim.STEP}, ... below {sim.TILES}, {sim.K_TILES} k-tiles, {sim.STAGES} stages")
    has = getattr(tier, "has", None)
    if not (callable(has) and has("wgmma") and has("cutedsl") and has("setmaxnreg")):
        return verified(name, f"structure OK (setmaxnreg {p} / {c} in every warp of each branch, warp {lw}'s "
                        "loads walk the cluster's tiles on one ring state, then the tail; consumers once; "
                        "the PTX agrees); the GEMM itself runs on Hopper.")
    _run_on_hopper(name, fn)
    return passed(name, f"structure OK (setmaxnreg {p} / {c}), and rung 6 with your roles matches torch at "
                  f"{RUN_MNK[0]} x {RUN_MNK[1]} x {RUN_MNK[2]} (each CTA walking several tiles).")


def _run_on_hopper(name, fn) -> None:
    """Rung 6's kernel with ``fn`` as its role split, on a 6-SM persistent grid, C NaN-poisoned."""
    import torch

    from .gemm import run_gemm
    from .gemm_ws import WsGemm

    class Yours(WsGemm):
        warp_roles = fn
    M, N, K = RUN_MNK
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(M, K, device="cuda", generator=gen).half()
    b = torch.randn(N, K, device="cuda", generator=gen).half()
    want = a.float() @ b.float().T
    for cluster in ((1, 1), (2, 1)):
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
        run_gemm(a, b, c, gemm=Yours(persistent=True, cluster=cluster, sms=RUN_SMS))
        torch.cuda.synchronize()
        matches_torch(name, c, want, "the structure looked right: compare with the course's WsGemm.warp_roles",
                      f"WsGemm(persistent=True, cluster={cluster}, sms={RUN_SMS}), {M} x {N} x {K} fp16")
