"""Day 5 · 04, the GEMM variants: warp-specialized (+ persistent) TMA and thread-driven cp.async.
Compile-only PTX checks for sm_90a with fake tensors (any machine), and the tile order all variants
share, run on the host by CuteDSL's JIT (no GPU needed)."""
import numpy as np
import pytest

import utils

utils.setup(quiet=True)
from utils.cute_dsl import gemm as cute_gemm, gemm_cpasync as cute_gemm_cpasync, gemm_ws as cute_gemm_ws, measure as cute_measure  # noqa: E402
from utils.core import ptx  # noqa: E402
from utils.cute_dsl.compat import cute, cutlass, from_dlpack  # noqa: E402

TMA_LOAD = "cp.async.bulk.tensor.2d.shared::cta.global"
TMA_STORE = "cp.async.bulk.tensor.2d.global.shared::cta"
WGMMA = "wgmma.mma_async.sync.aligned.m64n256k16.f32"


def lines(p, word):
    return [l for l in p.splitlines() if word in l]


def grouped_order_ref(clusters_m, clusters_n, group=8):
    """NumPy reference of the grouped order (Triton's GROUP_SIZE_M formula): (m, n) per cluster number."""
    pid = np.arange(clusters_m * clusters_n)
    first_m = pid // (group * clusters_n) * group
    size_m = np.minimum(clusters_m - first_m, group)
    return np.stack([first_m + pid % (group * clusters_n) % size_m, pid % (group * clusters_n) // size_m], 1)


@cute.jit
def order_probe(out: cute.Tensor, clusters_m: cutlass.Int32, clusters_n: cutlass.Int32):
    for i in cutlass.range(clusters_m * clusters_n, unroll=1):
        m, n = cute_gemm.grouped_tile(i, clusters_m, clusters_n)
        out[i, 0] = m
        out[i, 1] = n


def test_grouped_order_ref_by_hand():
    # 10 x 3 clusters: a full group of 8 rows walks N, then the 2-row tail group does
    want = [(m, n) for n in range(3) for m in range(8)] + [(m, n) for n in range(3) for m in (8, 9)]
    assert grouped_order_ref(10, 3).tolist() == [list(x) for x in want]


@pytest.mark.parametrize("clusters", [(8, 1), (8, 8), (10, 3), (13, 5), (16, 4), (17, 9), (33, 2), (64, 32)])
def test_grouped_tile_matches_reference(clusters):
    """The helper every variant calls, with runtime (dynamic) cluster counts as in the kernels,
    run on the host; grids not divisible by the group of 8 included."""
    got = np.full((64 * 32, 2), -1, dtype=np.int32)
    order_probe(from_dlpack(got), cutlass.Int32(clusters[0]), cutlass.Int32(clusters[1]))
    want = grouped_order_ref(*clusters)
    assert cute_gemm.GROUP_M == 8
    np.testing.assert_array_equal(got[:len(want)], want)
    assert (got[len(want):] == -1).all()
    assert len({tuple(x) for x in want}) == len(want) == clusters[0] * clusters[1]   # each tile once


@pytest.fixture
def order_calls(monkeypatch):
    """Counts the grouped_tile calls traced while a kernel compiles (TmaGemm and WsGemm reach it through ordered_tile)."""
    calls = []

    def spy(*args):
        calls.append(len(args))
        return helper(*args)
    helper = cute_gemm.grouped_tile
    monkeypatch.setattr(cute_gemm, "grouped_tile", spy)
    return calls


@pytest.fixture(scope="module")
def base_ptx():
    return cute_gemm.ptx_of(4)


def test_base_uses_grouped_order(order_calls):
    cute_gemm.ptx_of(1)
    assert order_calls                                           # TmaGemm.tile_of_cluster


@pytest.mark.parametrize("persistent,cluster", [(True, (1, 1)), (False, (1, 1)), (True, (2, 1))])
def test_ws_ptx(persistent, cluster, base_ptx, order_calls):
    p = cute_gemm.ptx_of(gemm=cute_gemm_ws.WsGemm(persistent, cluster))
    assert len(order_calls) == 2                                 # producer and consumer loops
    assert ptx.target(p) == "sm_90a"
    assert lines(p, ".reqntid 384, 1, 1")                        # 1 producer + 2 consumer warpgroups
    assert [l.split()[0] for l in lines(p, "setmaxnreg")] == ["setmaxnreg.dec.sync.aligned.u32",
                                                               "setmaxnreg.inc.sync.aligned.u32"]
    assert lines(p, "setmaxnreg.dec")[0].rstrip(";").split()[-1] == str(cute_gemm_ws.LOAD_REGS)
    assert lines(p, "setmaxnreg.inc")[0].rstrip(";").split()[-1] == str(cute_gemm_ws.MMA_REGS)
    # one producer loop: one load site for A and one for B (TmaGemm has a prologue site too)
    assert len(lines(p, "cp.async.bulk.tensor.2d.shared::")) == 2
    assert len(lines(base_ptx, "cp.async.bulk.tensor.2d.shared::")) == 4
    assert len(lines(p, TMA_STORE)) == len(lines(base_ptx, TMA_STORE)) == 8
    assert lines(p, WGMMA) and ptx.count(p)["mbarrier"] >= 10
    assert bool(lines(p, "multicast::cluster")) == (cluster != (1, 1))
    assert not lines(base_ptx, "setmaxnreg")


@pytest.mark.parametrize("stages", [2, 4])
def test_cpasync_ptx(stages, order_calls):
    p = cute_gemm.ptx_of(gemm=cute_gemm_cpasync.CpAsyncGemm(stages))
    assert order_calls                                           # the grouped order of TmaGemm
    cp = lines(p, "cp.async.cg.shared.global")
    # 16-byte copies; per stage A (128 x 64) + B (256 x 64) fp16 over 256 threads = 4 + 8 per
    # thread, issued at stages - 1 unrolled prologue sites and one refill site in the loop
    assert cp and all(l.rstrip(";").split(",")[-2:] == [" 16", " 16"] for l in cp)
    assert len(cp) == 12 * stages
    assert not lines(p, TMA_LOAD) and len(lines(p, TMA_STORE)) == 8
    assert lines(p, "cp.async.wait_group") and lines(p, "cp.async.commit_group")
    assert lines(p, WGMMA) and ptx.count(p)["mbarrier"] == 0 and not lines(p, "setmaxnreg")


def test_variants_bad_inputs_and_steps():
    assert cute_gemm_ws.ws_stages() == 4
    assert cute_gemm_ws.WsGemm(True, sms=132).max_clusters == 132
    assert cute_gemm_ws.WsGemm(True, (2, 1), sms=132).max_clusters == 66
    assert cute_gemm_ws.WsGemm(False).max_clusters > 10 ** 6
    with pytest.raises(ValueError, match="sms"):
        cute_gemm_ws.WsGemm(sms=0)
    with pytest.raises(ValueError, match="cluster"):
        cute_gemm_ws.WsGemm(cluster=(4, 1))
    with pytest.raises(ValueError, match="stages"):
        cute_gemm_cpasync.CpAsyncGemm(1)
    with pytest.raises(ValueError, match="variant"):
        cute_measure.run_step(None, None, None, variant="nope")
    assert {kw.get("variant", "tma") for kw in cute_measure.GEMM_STEPS.values()} == {"tma", "ws", "cpasync"}


def test_ws_cluster_without_multicast_ptx(base_ptx):
    """WsGemm(multicast=False) keeps the 2 x 1 cluster and the producer warpgroup but loads like the
    (1, 1) kernel: no multicast copy, and each consumer frees its stage in its own CTA only."""
    g = cute_gemm_ws.WsGemm(True, (2, 1), multicast=False)
    assert g.cluster == (2, 1) and g.share == (1, 1) and g.release_mode() == (1, 0)
    p = cute_gemm.ptx_of(gemm=g)
    with_mc = cute_gemm.ptx_of(gemm=cute_gemm_ws.WsGemm(True, (2, 1)))
    assert lines(p, "barrier.cluster") and lines(with_mc, "barrier.cluster")   # the cluster syncs in both
    assert not lines(p, "multicast::cluster") and lines(with_mc, "multicast::cluster")
    assert len(lines(p, "cp.async.bulk.tensor.2d.shared::")) == 2 and lines(p, "setmaxnreg.inc")
    with pytest.raises(ValueError, match="multicast=False"):
        cute_gemm_ws.WsGemm(True, (2, 2), multicast=False)


def test_ladder_cluster_only_variant():
    from utils.cute_dsl import ladder
    family, kw = ladder._step(ladder.CLUSTER_ONLY)
    assert family == "ws" and kw == {**ladder.STEPS[ladder.ORDER_BASE][1], "multicast": False}
    k = ladder.make(ladder.CLUSTER_ONLY)
    assert k.persistent and k.cluster == (2, 1) and k.share == (1, 1)
    with pytest.raises(ValueError, match="unknown rung"):
        ladder.make("8 · nothing")
