"""Day 5 · 09, the Blackwell bridge (no GPU needed): the PTX readers, the assembler probes, the
references held against the compilers (CuteDSL's TMEM allocation and multicast masks, ptxas's
verdict per target, ``utils.core.features``), the course's sm_100a CuteDSL GEMM, and a planted
table for each exercise check: wrong answers a learner really writes, each rejected with the hint
for ITS mistake (and no other mistake's), and right answers written differently."""
import math
import re

import numpy as np
import pytest

import utils

T = utils.setup(quiet=True)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from utils.core.checks import CheckFailed  # noqa: E402
from utils.day05 import blackwell as bw, blackwell_checks as ex, pair_checks  # noqa: E402
from utils.triton_lang.compile import compile_options, triton_compile  # noqa: E402


def rejects(check, answer, hint, others=()):
    """``check(answer)`` fails with ``hint`` in its message and with no other mistake's hint."""
    with pytest.raises(CheckFailed, match=hint) as e:
        check(answer)
    msg = str(e.value)
    assert "Traceback" not in msg
    for other in others:
        assert other not in msg or re.search(hint, other), f"another mistake's hint ({other!r}) in: {msg}"


def accepts(check, answer, capsys):
    check(answer)
    out = capsys.readouterr().out
    assert "] correct." in out and "wrong" not in out, out


# ---- the PTX readers, on a real compile -----------------------------------------------------------

@triton.jit
def small_dot_kernel(a_desc, b_desc, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    acc = tl.dot(a_desc.load([0, 0]), b_desc.load([0, 0]), tl.zeros((BM, BN), dtype=tl.float32))
    rm, rn = tl.arange(0, BM), tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc.to(tl.float16))


@pytest.fixture(scope="module")
def compiled():
    sig = {"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": "tensordesc<fp16[64, 128]>", "c_ptr": "*fp16",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    return {arch: triton_compile(small_dot_kernel, sig, dict(BM=128, BN=128, BK=64), arch=arch, num_warps=4)
            for arch in (90, 100, 120)}


def test_three_targets_three_mma_paths(compiled):
    n = {a: bw.count(k.asm["ptx"]) for a, k in compiled.items()}
    assert n[90]["wgmma.mma_async"] and not n[90]["tcgen05.mma"] and not n[90]["mma.sync"]
    assert n[100]["tcgen05.mma"] and n[100]["tcgen05.alloc"] == 1 and not n[100]["wgmma.mma_async"]
    assert n[120]["mma.sync"] and not n[120]["tcgen05.mma"] and not n[120]["wgmma.mma_async"]
    assert all(n[a]["TMA load"] >= 1 for a in n)
    assert bw.accumulator_registers(compiled[90].asm["ptx"]) == 128 * 128 // 128     # 4 warps
    assert bw.accumulator_registers(compiled[100].asm["ptx"]) == 0
    assert bw.alloc_columns(compiled[100].asm["ptx"]) == [128] and bw.alloc_columns(compiled[90].asm["ptx"]) == []
    for k in compiled.values():
        assert all(op.startswith("cp.async.bulk.tensor.2d.") for op in bw.tma_spellings(k.asm["ptx"]))
        assert ex.count_mma_ref(k.asm["ptx"])["wgmma"] == bw.count(k.asm["ptx"])["wgmma.mma_async"]


def test_alloc_columns_reads_an_immediate_or_a_constant_register():
    head = ".version 8.8\n.target sm_100a\n"
    assert bw.alloc_columns(head + "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 64;") == [64]
    assert bw.alloc_columns(head + "mov.b32 \t%r9, 512;\ntcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 "
                            "[%r1], %r9;") == [512]
    with pytest.raises(ValueError, match="not set by a constant"):
        bw.alloc_columns(head + "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], %r9;")


def test_triton_compile_options_are_checked():
    assert {"num_warps", "num_ctas"} <= compile_options()
    with pytest.raises(ValueError, match="no compile option"):
        triton_compile(small_dot_kernel, {"a_desc": "tensordesc<fp16[128, 64]>"}, arch=100,
                       options={"no_such_option": True})


@pytest.mark.skipif("clc" not in compile_options(), reason="this Triton has no clc option (Triton 3.9 has)")
def test_triton_clc_emits_try_cancel(compiled):
    sig = {"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": "tensordesc<fp16[64, 128]>", "c_ptr": "*fp16",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    k = triton_compile(small_dot_kernel, sig, dict(BM=128, BN=128, BK=64), arch=100, options={"clc": True})
    assert bw.count(k.asm["ptx"])["CLC try_cancel"] >= 1 and not bw.count(compiled[100].asm["ptx"])["CLC try_cancel"]


# ---- the assembler's verdicts, and the references held against them -----------------------------

@pytest.fixture(scope="module")
def table():
    return bw.support_table(["sm_80", "sm_90a", "sm_100a", "sm_103a", "sm_110a", "sm_120a", "sm_121a"])


def test_ptxas_refuses_what_a_target_lacks(table):
    assert table["sm_90a"]["wgmma"] and not table["sm_100a"]["wgmma"] and not table["sm_120a"]["wgmma"]
    assert table["sm_100a"]["tcgen05 (TMEM)"] and not table["sm_120a"]["tcgen05 (TMEM)"]
    assert not table["sm_80"]["TMA load"] and table["sm_120a"]["TMA load"] and table["sm_121a"]["setmaxnreg"]
    assert not table["sm_90a"]["CLC try_cancel"] and table["sm_120a"]["CLC try_cancel"]
    ok, why = bw.accepts("tcgen05 (TMEM)", "sm_120a")
    assert ok is False and "tcgen05.alloc" in why and "sm_120a" in why


def test_mma_path_ref_agrees_with_ptxas(table):
    probe_of = {"wgmma": "wgmma", "tcgen05.mma": "tcgen05 (TMEM)", "mma.sync": "mma.sync"}
    for cc, target in bw.TARGETS.items():
        if target in table and table[target]["mma.sync"] is not None:
            mma, acc, tma = bw.mma_path_ref(cc)
            assert table[target][probe_of[mma]] and table[target]["TMA load"] == tma, target
            assert (acc == "tmem") == table[target]["tcgen05 (TMEM)"], target
            if mma != "wgmma":
                assert not table[target]["wgmma"], target


def test_mma_path_ref_agrees_with_the_course_feature_table():
    features = pytest.importorskip("utils.core.features")
    for cc in bw.TARGETS:
        mma, acc, tma = bw.mma_path_ref(cc)
        assert (mma == "wgmma") == features.row("wgmma", cc).ok, cc
        assert (mma == "tcgen05.mma") == (acc == "tmem") == features.row("tcgen05", cc).ok, cc
        assert tma == features.row("tma", cc).ok, cc


def test_readers_and_probes_reject_bad_input():
    with pytest.raises(ValueError, match="probe must be"):
        bw.accepts("wgmma.mma_async", "sm_90a")
    with pytest.raises(ValueError, match="target must look like"):
        bw.accepts("wgmma", "hopper")
    with pytest.raises(ValueError, match="capability must be one of"):
        bw.mma_path_ref((13, 0))
    with pytest.raises(ValueError, match="expected PTX text"):
        bw.count("not ptx")
    with pytest.raises(ValueError, match="no tcgen05 fp32 MMA"):
        ex.tmem_columns_ref(256, 128, False)


# ---- CuteDSL: the references against what it computes, and the course's sm_100a GEMM -------------

@pytest.fixture(scope="module")
def probes():
    return pytest.importorskip("utils.cute_dsl.sm100_probes")


def test_pair_masks_ref_is_what_cutedsl_computes(probes):
    for cluster in pair_checks.PAIR_CLUSTERS:
        got = probes.multicast_masks(cluster)
        assert got == {r: ex.pair_masks_ref(r, cluster)[:2] for r in range(cluster[0] * cluster[1])}, cluster


def test_tmem_columns_ref_is_what_cutedsl_allocates(probes):
    shapes = {(m, n, p) for m, n, p, s in ex.TMEM_CASES if s == 1}
    assert len(shapes) >= 8
    for m, n, p in sorted(shapes):
        assert probes.accumulator_columns(m, n, p) == ex.tmem_columns_ref(m, n, p), (m, n, p)


def test_the_sm100_gemm_alone_and_as_a_pair():
    g = pytest.importorskip("utils.cute_dsl.gemm_sm100")
    one, pair = g.ptx_of(), g.ptx_of(pair=True, cluster=(2, 2))
    n1, n2 = bw.count(one), bw.count(pair)
    assert n1["tcgen05.mma"] and not n1["cta_group::2"] and not n1["multicast"]
    assert n2["tcgen05.mma"] and n2["multicast"] and all(
        ".cta_group::2" in l for l in pair.splitlines() if re.search(r"tcgen05\.(mma|commit)|cp\.async\.bulk\.tensor", l))
    assert bw.alloc_columns(one) == bw.alloc_columns(pair) == [256]
    assert any(int(m) & 0xFFFFFFFF == 0xFEFFFFF8 for m in re.findall(r"and\.b32\s+%r\d+,\s*%r\d+,\s*(-?\d+);", pair))
    for bad, err in ((dict(pair=1), TypeError), (dict(cluster=(3, 1)), ValueError),
                     (dict(pair=True, cluster=(1, 1)), ValueError), (dict(stages=0), ValueError)):
        with pytest.raises(err):
            g.Sm100Gemm(**bad)


# ---- planted answers: exercise 1, count_mma ---------------------------------------------------------

def _code(line):
    return line.split("//")[0]


def _ref_with(t, **changed):
    return {**ex.count_mma_ref(t), **changed}


def _lines(t):
    return [l for l in t.splitlines() if l.strip() and not l.strip().startswith(".")]


COUNT_WRONG = {
    "every wgmma line": (lambda t: _ref_with(t, wgmma=sum("wgmma" in _code(l) for l in _lines(t))),
                         "not every wgmma.* line is an MMA"),
    "'mma' substring": (lambda t: _ref_with(t, **{"mma.sync": sum("mma" in _code(l) for l in _lines(t))}),
                        "'mma' is also in wgmma.mma_async"),
    "comments counted": (lambda t: {"wgmma": t.count("wgmma.mma_async"), "tcgen05.mma": t.count("tcgen05.mma"),
                                    "mma.sync": t.count("mma.sync")}, "a comment"),
    "predicate missed": (lambda t: _ref_with(t, **{"tcgen05.mma": sum(_code(l).strip().startswith("tcgen05.mma")
                                                                       for l in _lines(t))}), "may be predicated"),
    "every tcgen05": (lambda t: _ref_with(t, **{"tcgen05.mma": sum("tcgen05." in _code(l) for l in _lines(t))}),
                      "tcgen05.alloc, commit and ld are not MMAs"),
    "other keys": (lambda t: {"wgmma.mma_async": 0, "tcgen05.mma": 0, "mma.sync": 0}, "exactly the keys"),
    "a list": (lambda t: list(ex.count_mma_ref(t).values()), "return a dict"),
    "no return": (lambda t: None, "return a dict"),
    "first word of an empty line": (lambda t: {k: sum(l.split()[0] == k for l in t.splitlines()) for k in ex.MMA_KEYS},
                                    "raised IndexError"),
}
COUNT_HINTS = [h for _, h in ex.COUNT_SLIPS]


@pytest.mark.parametrize("answer,hint", COUNT_WRONG.values(), ids=COUNT_WRONG.keys())
def test_count_mma_rejects(answer, hint):
    rejects(ex.check_count_mma, answer, hint, COUNT_HINTS)


def _count_regex(t):
    out = {k: 0 for k in ex.MMA_KEYS}
    for line in t.splitlines():
        m = re.match(r"\s*(?:@!?%\w+\s+)?(wgmma\.mma_async|tcgen05\.mma|mma\.sync)\b", line)
        if m:
            out[{"wgmma.mma_async": "wgmma"}.get(m.group(1), m.group(1))] += 1
    return out


def _count_numpy(t):
    from utils.core import ptx
    c = ptx.count(t, {"wgmma": r"^(@\S+\s+)?wgmma\.mma_async", "tcgen05.mma": r"^(@\S+\s+)?tcgen05\.mma",
                      "mma.sync": r"^(@\S+\s+)?mma\.sync"})
    return {k: np.int64(v) for k, v in c.items()}


@pytest.mark.parametrize("answer", [_count_regex, _count_numpy, ex.count_mma_ref])
def test_count_mma_accepts(answer, capsys):
    accepts(ex.check_count_mma, answer, capsys)


# ---- planted answers: exercise 2, tmem_columns ----------------------------------------------------

def _p2(n):
    return max(32, 1 << (n - 1).bit_length())


def _fold(m, n, p):
    return n // 2 if (m, p) == (128, True) else n


TMEM_WRONG = {
    "no rounding": (lambda m, n, p, s: _fold(m, n, p) * s if _fold(m, n, p) * s <= 512 else None, "power of two"),
    "multiple of 32": (lambda m, n, p, s: (lambda c: c if c <= 512 else None)(math.ceil(_fold(m, n, p) * s / 32) * 32),
                       "a multiple of 32 is not enough"),
    "no minimum": (lambda m, n, p, s: (lambda c: c if c <= 512 else None)(2 ** math.ceil(math.log2(_fold(m, n, p) * s))),
                   "smallest allocation is 32"),
    "bytes": (lambda m, n, p, s: (lambda c: c if c <= 512 else None)(_p2(_fold(m, n, p) * s * 4)), "not 4 bytes"),
    "pair not folded": (lambda m, n, p, s: (lambda c: c if c <= 512 else None)(_p2(n * s)), "N/2 columns per CTA"),
    "elements over 128 lanes": (lambda m, n, p, s: (lambda c: c if c <= 512 else None)(_p2(m * n * s // 128)),
                                "divide by the rows THIS CTA holds"),
    "stages ignored": (lambda m, n, p, s: _p2(_fold(m, n, p)), "multiply the columns by stages"),
    "clamped": (lambda m, n, p, s: min(_p2(_fold(m, n, p) * s), 512), "do not clamp"),
    "never None": (lambda m, n, p, s: _p2(_fold(m, n, p) * s), "return None"),
    "rows as columns": (lambda m, n, p, s: (lambda c: c if c <= 512 else None)(_p2(m * s)), "use tile_n, not tile_m"),
    "a float": (lambda m, n, p, s: float(pair_checks.tmem_columns_ref(m, n, p, s) or 0), "a float is not a count"),
    "raises": (lambda m, n, p, s: [32, 64][s], "raised IndexError"),
    "rounded per stage": (lambda m, n, p, s: (lambda c: c if c <= 512 else None)(_p2(_fold(m, n, p)) * s),
                          "round the total"),
    "a pair always halves N": (lambda m, n, p, s: (lambda c: c if c <= 512 else None)(_p2((n // 2 if p else n) * s)),
                               "a pair does not always halve N"),
}
TMEM_HINTS = [h for _, h in pair_checks.TMEM_SLIPS]


@pytest.mark.parametrize("answer,hint", TMEM_WRONG.values(), ids=TMEM_WRONG.keys())
def test_tmem_columns_rejects(answer, hint):
    rejects(ex.check_tmem_columns, answer, hint, TMEM_HINTS)


def _tmem_loop(tile_m, tile_n, pair, stages=1):
    need = (tile_n // 2 if pair and tile_m == 128 else tile_n) * stages
    cols = 32
    while cols < need:
        cols *= 2
    return cols if cols <= 512 else None


def _tmem_log2(tile_m, tile_n, pair, stages=1):
    rows = tile_m // (2 if pair else 1)
    per_stage = tile_n * rows // 128 if rows == 64 and pair else tile_n
    cols = np.int64(2 ** max(5, math.ceil(math.log2(per_stage * stages))))
    return None if cols > 512 else cols


@pytest.mark.parametrize("answer", [_tmem_loop, _tmem_log2, ex.tmem_columns_ref])
def test_tmem_columns_accepts(answer, capsys):
    accepts(ex.check_tmem_columns, answer, capsys)


# ---- planted answers: exercise 3, pair_masks ------------------------------------------------------

ref = ex.pair_masks_ref
PAIR_WRONG = {
    "Hopper's rule (peer in B)": (pair_checks._hopper, "B's mask holds the peer"),
    "A and B swapped": (lambda r, c: (ref(r, c)[1], ref(r, c)[0], r - r % 2), "A and B are swapped"),
    "peer in A": (lambda r, c: (ref(r, c)[0] | ref(r ^ 1, c)[0], ref(r, c)[1], r - r % 2), "A's mask holds the peer"),
    "no multicast": (lambda r, c: (1 << r, 1 << r, r & ~1), "no multicast at all"),
    "own barrier": (lambda r, c: (*ref(r, c)[:2], r), "clear the low bit"),
    "the other CTA's barrier": (lambda r, c: (*ref(r, c)[:2], r ^ 1), "not to the other CTA"),
    "rank 0's barrier": (lambda r, c: (*ref(r, c)[:2], 0), "not the cluster's rank 0"),
    "row-major ranks": (pair_checks._row_major, "column-major"),
    "ranks, not masks": (lambda r, c: ([r], [r], r), "return three ints"),
    "two values": (lambda r, c: ref(r, c)[:2], "return three ints"),
}
PAIR_HINTS = [h for _, h in pair_checks.PAIR_SLIPS]


@pytest.mark.parametrize("answer,hint", PAIR_WRONG.values(), ids=PAIR_WRONG.keys())
def test_pair_masks_rejects(answer, hint):
    rejects(ex.check_pair_masks, answer, hint, PAIR_HINTS)


def _pair_loop(rank, cluster):
    cm, cn = cluster
    x, y = rank % cm, rank // cm
    a = b = np.int64(0)
    for r in range(cm * cn):
        rx, ry = r % cm, r // cm
        if rx == x:
            a |= 1 << r
        if ry == y and rx % 2 == x % 2:
            b |= 1 << r
    return [a, b, np.int64(rank & ~1)]


@pytest.mark.parametrize("answer", [_pair_loop, ex.pair_masks_ref])
def test_pair_masks_accepts(answer, capsys):
    accepts(ex.check_pair_masks, answer, capsys)


# ---- planted answers: exercise 4, mma_path --------------------------------------------------------

P = bw.mma_path_ref
PATH_WRONG = {
    "tcgen05 from 10 up": (lambda cc: ("tcgen05.mma", "tmem", True) if cc[0] >= 10 else P(cc), "12.x .* has no tcgen05"),
    "wgmma from 9 up": (lambda cc: ("wgmma", "registers", True) if cc[0] >= 9 else P(cc), "wgmma exists on sm_90a only"),
    "wgmma on 12.x": (lambda cc: ("wgmma", "registers", True) if cc[0] == 12 else P(cc), "12.x has no wgmma"),
    "Thor without tcgen05": (lambda cc: ("mma.sync", "registers", True) if cc == (11, 0) else P(cc), "11.0"),
    "TMA on Ampere": (lambda cc: P(cc)[:2] + (cc[0] >= 8,), "have cp.async, not TMA"),
    "TMA on Hopper only": (lambda cc: P(cc)[:2] + (cc == (9, 0),), "every Blackwell keeps TMA"),
    "TMEM on 12.x": (lambda cc: (P(cc)[0], "tmem" if cc[0] >= 10 else "registers", P(cc)[2]), "accumulates in registers"),
    "a number": (lambda cc: ("tcgen05", "tmem", 1), "return \\(mma, accumulator, tma\\)"),
    "upper case": (lambda cc: (P(cc)[0], P(cc)[1].upper(), P(cc)[2]), "return \\(mma, accumulator, tma\\)"),
}
PATH_HINTS = [h for _, h in ex.PATH_SLIPS]


@pytest.mark.parametrize("answer,hint", PATH_WRONG.values(), ids=PATH_WRONG.keys())
def test_mma_path_rejects(answer, hint):
    rejects(ex.check_mma_path, answer, hint, PATH_HINTS)


def _path_table(capability):
    table = {(9, 0): ["wgmma", "registers", np.bool_(True)]}
    for cc in ((10, 0), (10, 3), (11, 0)):
        table[cc] = ["tcgen05.mma", "tmem", np.bool_(True)]
    return table.get(tuple(capability), ["mma.sync", "registers", np.bool_(capability[0] >= 9)])


@pytest.mark.parametrize("answer", [_path_table, bw.mma_path_ref])
def test_mma_path_accepts(answer, capsys):
    accepts(ex.check_mma_path, answer, capsys)


def test_stubs_are_not_attempted(capsys):
    def stub(*args):
        raise NotImplementedError
    for check in (ex.check_count_mma, ex.check_tmem_columns, ex.check_pair_masks, ex.check_mma_path):
        check(stub)
    assert capsys.readouterr().out.count("not attempted") == 4
