"""Day 5 · 05, the GEMM ablation ladder (utils.cute_dsl.ladder): the rung tables, one change per rung
read from the compile-only PTX for sm_90a (fake tensors, any machine, no GPU), the kernel objects
each rung builds, the argument rules, the tile orders (``gemm.ordered_tile`` run on the host by
CuteDSL's JIT against ``ladder.order_ref``), and the CPU-side helpers of what notebook 05 measures
(utils.day05.ladder_measure: names, the element-by-element output check, the fp32 reference)."""
import re
import types

import numpy as np
import pytest

import utils

utils.setup(quiet=True)
import torch  # noqa: E402

from utils.cute_dsl import gemm, gemm_pingpong, gemm_ws, ladder  # noqa: E402
from utils.cute_dsl.compat import cute, cutlass, from_dlpack  # noqa: E402
from utils.day05 import ladder_measure as LM  # noqa: E402

RUNGS = list(ladder.STEPS)                      # "1 · ..." .. "7 · ..."
R1, R2, R3, R4, R5, R6, R7 = RUNGS
ROW, GROUPED, SERPENTINE = (n for o in ("row", "grouped", "serpentine") for n, v in ladder.ORDERS.items() if v == o)
WGMMA_RE = re.compile(r"wgmma\.mma_async\.sync\.aligned\.(m64n\d+k16)\.f32")
REGS_DOWN = "setmaxnreg.dec.sync.aligned.u32 \t40;"     # the exact PTX text (a tab before the count)
REGS_UP = "setmaxnreg.inc.sync.aligned.u32 \t232;"
MULTICAST = "multicast::cluster"
WAIT = "mbarrier.try_wait"


@pytest.fixture(scope="module")
def ptx():
    """``ptx(name)``: the PTX of rung (or order variant) ``name``, compiled once (~1 s each)."""
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = ladder.ptx_of(name)
        return cache[name]
    return get


def wgmma_shapes(p):
    return set(WGMMA_RE.findall(p))


def reqntid(p):
    return int(re.search(r"\.reqntid (\d+), 1, 1", p).group(1))


def expect_tx_bytes(p):
    """The byte counts the producer arms each stage's mbarrier with (one TMA stage: A box + B box)."""
    regs = re.findall(r"mbarrier\.arrive\.expect_tx\.shared\.b64 \S+, \[\S+\], (%r\d+);", p)
    return {int(re.search(rf"mov\.b32\s+{re.escape(r)}, (\d+);", p).group(1)) for r in regs}


# --- the tables ---------------------------------------------------------------------------------------
def test_tables_agree():
    assert list(ladder.STEPS) == list(ladder.CHANGES)
    assert all(ladder.CHANGES[n].strip() for n in ladder.STEPS)
    assert sorted(ladder.ORDERS.values()) == sorted(gemm.ORDERS)
    assert len(set(ladder.ORDERS.values())) == len(ladder.ORDERS) == 3
    assert ladder.ORDER_BASE in ladder.STEPS and ladder.ORDER_BASE == R6
    assert not set(ladder.ORDERS) & set(ladder.STEPS)


def test_rungs_are_numbered_in_order():
    assert [n.split(" ")[0] for n in RUNGS] == [str(i) for i in range(1, 8)]


def test_rung_names_are_steps_then_other_orders():
    assert LM.rung_names() == RUNGS + [ROW, SERPENTINE]
    assert GROUPED not in LM.rung_names()             # the same kernel as rung 6: not timed twice


# --- one change per rung, read from the PTX -------------------------------------------------------------
def test_rung2_doubles_the_tile_along_n(ptx):
    p1, p2 = ptx(R1), ptx(R2)
    assert wgmma_shapes(p1) == {"m64n128k16"} and wgmma_shapes(p2) == {"m64n256k16"}
    # one TMA stage: A (128 x 64) + B (128 x 64, then 256 x 64) fp16
    assert expect_tx_bytes(p1) == {(128 + 128) * 64 * 2} and expect_tx_bytes(p2) == {(128 + 256) * 64 * 2}
    assert reqntid(p1) == reqntid(p2) == 256


def test_rung3_adds_a_producer_warpgroup(ptx):
    p2, p3 = ptx(R2), ptx(R3)
    assert ladder.make(R2).threads == 256 and reqntid(p2) == 256
    assert ladder.make(R3).threads == 384 and reqntid(p3) == 384
    assert "setmaxnreg" not in p2 and "setmaxnreg" not in p3
    assert wgmma_shapes(p3) == {"m64n256k16"}


def test_rung4_adds_setmaxnreg(ptx):
    p3, p4 = ptx(R3), ptx(R4)
    assert (gemm_ws.LOAD_REGS, gemm_ws.MMA_REGS) == (40, 232)
    assert p4.count(REGS_DOWN) == 1 and p4.count(REGS_UP) == 1
    assert p4.index(REGS_DOWN) < p4.index(REGS_UP)       # the producer branch comes first
    assert "setmaxnreg" not in p3
    assert not ladder.make(R3).realloc and ladder.make(R4).realloc


def test_rung5_is_persistent_in_the_launch_only(ptx):
    """Persistence is the grid (one cluster per SM, each walking tiles a grid apart), not the code:
    non-persistent launches one cluster per tile of the very same kernel (one trip of its loop)."""
    k4, k5 = ladder.make(R4), ladder.make(R5)
    assert not k4.persistent and k5.persistent
    assert k5.max_clusters == gemm_ws.H100_SMS == 132 and k4.max_clusters == 1 << 24
    assert ptx(R5) == ptx(R4)


def test_rung6_multicasts_b(ptx):
    p5, p6 = ptx(R5), ptx(R6)
    assert MULTICAST not in p5 and MULTICAST in p6
    # only B is multicast (cluster 2 x 1 along M): one plain and one multicast TMA load site
    loads = [l for l in p6.splitlines() if "cp.async.bulk.tensor.2d.shared::" in l]
    assert len(loads) == 2 and sum(MULTICAST in l for l in loads) == 1
    assert "barrier.cluster.wait" in p6 and "barrier.cluster.wait" not in p5
    assert ladder.make(R6).cluster == (2, 1) and ladder.make(R6).max_clusters == 66


def test_rung7_pingpong_named_barriers_and_order_waits(ptx):
    p6, p7 = ptx(R6), ptx(R7)
    # rung 6: both consumer warpgroups (256 threads) meet on named barrier 1; rung 7: each
    # warpgroup (128 threads) on its own, barrier 2 + cw with cw = 0, 1 computed at run time
    assert set(re.findall(r"bar\.sync\s+([^;]+);", p6)) == {"1, 256"}
    regs = set(re.findall(r"bar\.sync\s+(%r\d+), 128;", p7))
    assert len(regs) == 1 and not re.search(r"bar\.sync\s+1, 256;", p7)
    assert re.search(rf"add\.s32\s+{re.escape(regs.pop())}, %r\d+, 2;", p7)
    # the ordering barrier: a wait for the turn before the mainloop and before the epilogue
    assert p7.count(WAIT) == p6.count(WAIT) + 2
    assert MULTICAST in p7 and p7.count(REGS_DOWN) == p7.count(REGS_UP) == 1


def test_rung7_loads_64_row_a_boxes(ptx):
    k7 = ladder.make(R7)
    assert k7.tile == gemm_pingpong.WG_TILE == (64, 256, 64) and ladder.make(R6).tile == (128, 256, 64)
    assert expect_tx_bytes(ptx(R7)) == {(64 + 256) * 64 * 2}
    assert expect_tx_bytes(ptx(R6)) == {(128 + 256) * 64 * 2}
    assert wgmma_shapes(ptx(R7)) == {"m64n256k16"}       # the same wgmma, one warpgroup per tile


@pytest.mark.parametrize("name", [ROW, SERPENTINE])
def test_order_variants_change_only_the_order(name, ptx):
    p = ptx(name)
    assert p != ptx(R6)
    assert MULTICAST in p and p.count(REGS_DOWN) == 1
    assert wgmma_shapes(p) == {"m64n256k16"} and p.count(WAIT) == ptx(R6).count(WAIT)


def test_grouped_variant_is_rung6(ptx):
    assert ptx(GROUPED) == ptx(R6)


# --- the kernel objects ---------------------------------------------------------------------------------
def test_make_builds_the_documented_kernels():
    got = {n: ladder.make(n) for n in RUNGS + list(ladder.ORDERS)}
    want_cls = [gemm.TmaGemm] * 2 + [gemm_ws.WsGemm] * 4 + [gemm_pingpong.PingpongGemm]
    assert [type(got[n]) for n in RUNGS] == want_cls
    assert all(type(got[n]) is gemm_ws.WsGemm for n in ladder.ORDERS)
    want_stages = [gemm.max_stages((128, 128, 64)), 4] + [gemm_ws.ws_stages()] * 4 + \
        [gemm_ws.ws_stages(2, gemm_pingpong.WG_TILE, 2)]
    assert [got[n].stages for n in RUNGS] == want_stages == [7, 4, 4, 4, 4, 4, 4]
    assert all(got[n].stages == gemm_ws.ws_stages() for n in ladder.ORDERS)
    assert [got[n].tile for n in RUNGS] == [(128, 128, 64)] + [gemm.TILE_MNK] * 5 + [gemm_pingpong.WG_TILE]
    assert [got[n].cluster for n in RUNGS] == [(1, 1)] * 5 + [(2, 1)] * 2
    assert [got[n].order for n in RUNGS] == ["grouped"] * 7
    assert {n: got[n].order for n in ladder.ORDERS} == ladder.ORDERS
    assert all(got[n].cluster == (2, 1) and got[n].persistent for n in ladder.ORDERS)


def test_make_passes_sms_to_the_persistent_grid():
    assert ladder.make(R5, sms=114).max_clusters == 114
    assert ladder.make(R6, sms=114).max_clusters == ladder.make(R7, sms=114).max_clusters == 57
    assert ladder.make(ROW, sms=78).max_clusters == 39
    with pytest.raises(ValueError, match="sms must be a positive int"):
        ladder.make(R7, sms=0)


# --- bad inputs -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,match", [
    (lambda: ladder.make("nope"), "unknown rung 'nope'"),
    (lambda: ladder.ptx_of("nope"), "unknown rung 'nope'"),
    (lambda: ladder.order_ref("hilbert", 4, 4), "order must be 'row', 'grouped' or 'serpentine', got 'hilbert'"),
    (lambda: gemm.TmaGemm(tile=(64, 64, 64)), r"tile must be one of .* got \(64, 64, 64\)"),
    (lambda: gemm.TmaGemm(order="zigzag"), "order must be one of .* got 'zigzag'"),
    (lambda: gemm_ws.WsGemm(order="zigzag"), "order must be one of"),
    (lambda: gemm_ws.WsGemm(tile=gemm_pingpong.WG_TILE), "tile must be one of"),
    (lambda: gemm_pingpong.PingpongGemm(cluster=(3, 1)), r"cluster must be .* got \(3, 1\)"),
    (lambda: gemm_pingpong.PingpongGemm(sms=-1), "sms must be a positive int"),
])
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_unknown_rung_error_lists_every_name():
    with pytest.raises(ValueError) as e:
        ladder.make("nope")
    assert all(repr(n) in str(e.value) for n in RUNGS + list(ladder.ORDERS))


def test_run_rejects_an_unknown_rung_before_cuda():
    before = dict(gemm._COMPILED)
    with pytest.raises(ValueError, match="unknown rung 'nope'"):
        ladder.run(object(), object(), object(), "nope")   # no tensors, no GPU: fails on the name
    assert gemm._COMPILED == before


# --- tile orders -------------------------------------------------------------------------------------------
@cute.jit
def ordered_probe(out: cute.Tensor, clusters_m: cutlass.Int32, clusters_n: cutlass.Int32,
                  order: cutlass.Constexpr):
    for i in cutlass.range(clusters_m * clusters_n, unroll=1):
        m, n = gemm.ordered_tile(i, clusters_m, clusters_n, order)
        out[i, 0] = m
        out[i, 1] = n


@pytest.mark.parametrize("order", gemm.ORDERS)
@pytest.mark.parametrize("clusters", [(8, 1), (10, 3), (13, 5), (16, 4), (17, 9), (33, 2), (64, 32)])
def test_ordered_tile_matches_order_ref(order, clusters):
    """The kernels' helper with runtime cluster counts, run on the host; grids not divisible by
    the group of 8 included (grids of fewer than 8 clusters along M divide by zero on the host)."""
    got = np.full((64 * 32, 2), -1, dtype=np.int32)
    ordered_probe(from_dlpack(got), cutlass.Int32(clusters[0]), cutlass.Int32(clusters[1]), order)
    want = ladder.order_ref(order, *clusters)
    np.testing.assert_array_equal(got[:len(want)], np.array(want, dtype=np.int32))
    assert (got[len(want):] == -1).all()
    # every tile exactly once
    assert sorted(want) == [(m, n) for m in range(clusters[0]) for n in range(clusters[1])]


def test_order_ref_by_hand():
    assert ladder.order_ref("row", 2, 3) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    # group of 2 rows walks N (M fastest), then the 1-row tail group
    assert ladder.order_ref("grouped", 3, 2, group_m=2) == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]
    assert ladder.order_ref("serpentine", 3, 2, group_m=2) == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 1), (2, 0)]
    # serpentine: groups 0 and 2 walk N forwards, group 1 backwards (the tail is group 2)
    assert ladder.order_ref("serpentine", 5, 3, group_m=2) == [
        (0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2),
        (2, 2), (3, 2), (2, 1), (3, 1), (2, 0), (3, 0),
        (4, 0), (4, 1), (4, 2)]
    # fewer rows than a group: one tail group (row-major over M fastest)
    assert ladder.order_ref("grouped", 2, 2) == [(0, 0), (1, 0), (0, 1), (1, 1)]


# --- ladder_measure: the output check and the reference ---------------------------------------------------
def operands(K=64, dtype=torch.float16, seed=0):
    gen = torch.Generator().manual_seed(seed)
    a, b = (torch.randn(32, K, generator=gen).to(dtype) for _ in range(2))
    return a, b


def test_reference_is_fp32_a_times_b_transposed(monkeypatch):
    a, b = operands(K=96)
    for tf32 in (True, False):
        monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", tf32)
        want = LM.reference(a, b)
        assert torch.backends.cuda.matmul.allow_tf32 is tf32        # restored
    assert want.dtype == torch.float32 and want.shape == (32, 32)
    exact = a.double() @ b.double().T
    assert torch.allclose(want.double(), exact, rtol=1e-6, atol=1e-5)


def test_check_close_accepts_a_right_fp16_result():
    a, b = operands()
    want = LM.reference(a, b)
    LM.check_close("right", (a.double() @ b.double().T).half(), want, 64)
    LM.check_close("right", (a.double() @ b.double().T).bfloat16(), want, 64)


def test_check_close_names_count_and_position():
    a, b = operands()
    want = LM.reference(a, b)
    out = want.half()
    out[5, 17] += 1.0
    with pytest.raises(AssertionError, match=r"^off: 1 of 1024 elements wrong, first at \(5, 17\)"):
        LM.check_close("off", out, want, 64)


def test_check_close_rejects_nan():
    want = LM.reference(*operands())
    with pytest.raises(AssertionError, match=r"nan: 1024 of 1024 elements wrong, first at \(0, 0\): nan"):
        LM.check_close("nan", torch.full((32, 32), float("nan"), dtype=torch.float16), want, 64)
    one = want.half()
    one[31, 0] = float("nan")
    with pytest.raises(AssertionError, match=r"1 of 1024 elements wrong, first at \(31, 0\)"):
        LM.check_close("one nan", one, want, 64)


def test_check_close_bf16_is_looser_than_fp16():
    # outputs of 1.0 (exact in both dtypes) against a reference 0.5 % lower; K = 1: atol 1e-3
    want = torch.full((4, 4), 1 / 1.005)
    LM.check_close("bf16", torch.ones(4, 4, dtype=torch.bfloat16), want, 1)
    with pytest.raises(AssertionError, match="16 of 16 elements wrong"):
        LM.check_close("fp16", torch.ones(4, 4, dtype=torch.float16), want, 1)


def test_non_persistent_grid_past_cuda_limit_is_refused():
    """grid.z holds one cluster per tile when not persistent: past 65535 a clear error, not a failed launch."""
    assert gemm_ws.check_grid(8192, 8192, False) == 2048
    assert gemm_ws.check_grid(65536, 65536, True) == 131072          # persistent: grid.z is the SM count
    assert gemm_ws.check_grid(1000, 776, False, (2, 1)) == 4 * 4
    with pytest.raises(ValueError, match="65535: use the persistent kernel"):
        gemm_ws.check_grid(65536, 65536, False)
    big = types.SimpleNamespace(shape=(65536, 8)), types.SimpleNamespace(shape=(65536, 8))
    with pytest.raises(ValueError, match="grid.z"):
        ladder.run(big[0], big[1], None, "3 · + producer warpgroup")


def test_problem_gives_every_contender_the_same_inputs_and_output(monkeypatch):
    """ladder_measure.problem on the CPU, with each rung stood in for by a plain product into c."""
    calls = []

    def fake_run(a, b, c, name):
        calls.append(name)
        c.copy_(a @ b.T)
        return c
    monkeypatch.setattr(ladder, "run", fake_run)
    c, want, fns = LM.problem(64, torch.float16, ["1 · 128x128 tile", "7 · ping-pong consumers"], device="cpu")
    assert list(fns) == [LM.CUBLAS, "1 · 128x128 tile", "7 · ping-pong consumers"]
    c.fill_(float("nan"))
    out = fns["7 · ping-pong consumers"]()
    assert out is c and calls == ["7 · ping-pong consumers"]
    LM.check_close("fake", out, want, 64)
    LM.check_close("cuBLAS stand-in", fns[LM.CUBLAS](), want, 64)
