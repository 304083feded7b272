"""Day 5 · 04, the GEMM variants: warp-specialized (+ persistent) TMA and thread-driven cp.async.
Compile-only PTX checks for sm_90a with fake tensors (any machine)."""
import pytest

import utils

utils.setup(quiet=True)
from utils import cute_gemm, cute_gemm_cpasync, cute_gemm_ws, cute_measure, ptx  # noqa: E402

TMA_LOAD = "cp.async.bulk.tensor.2d.shared::cta.global"
TMA_STORE = "cp.async.bulk.tensor.2d.global.shared::cta"
WGMMA = "wgmma.mma_async.sync.aligned.m64n256k16.f32"


def lines(p, word):
    return [l for l in p.splitlines() if word in l]


@pytest.fixture(scope="module")
def base_ptx():
    return cute_gemm.ptx_of(4)


@pytest.mark.parametrize("persistent,cluster", [(True, (1, 1)), (False, (1, 1)), (True, (2, 1))])
def test_ws_ptx(persistent, cluster, base_ptx):
    p = cute_gemm.ptx_of(gemm=cute_gemm_ws.WsGemm(persistent, cluster))
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
def test_cpasync_ptx(stages):
    p = cute_gemm.ptx_of(gemm=cute_gemm_cpasync.CpAsyncGemm(stages))
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
