"""Day 2 models: Little's law at four scales, stages, ring slots, the timeline, the mbarrier."""
import math

import matplotlib
import pytest

matplotlib.use("Agg")

from utils.day02 import chase, plots as day02_plots  # noqa: E402
from utils.day02 import pipeline_model as pm  # noqa: E402


def test_in_flight_capacity_scales():
    c = pm.in_flight_capacity(4, 16, threads_per_block=128, blocks_per_sm=2, n_sm=132)
    assert c == {"warp": 32 * 64, "block": 128 * 64, "SM": 256 * 64, "GPU": 132 * 256 * 64}
    with pytest.raises(ValueError, match="multiple of 32"):
        pm.in_flight_capacity(1, threads_per_block=100)
    with pytest.raises(ValueError, match="loads_per_thread must be a positive int"):
        pm.in_flight_capacity(0)


def test_loads_per_thread_needed():
    per_sm = 600 * 4000 / 132
    assert pm.loads_per_thread_needed(600, 4000, 132, 128) == math.ceil(per_sm / (128 * 16))
    assert pm.loads_per_thread_needed(600, 4000, 132, 2048) == 1
    with pytest.raises(ValueError, match="latency_ns must be a positive number"):
        pm.loads_per_thread_needed(-1, 4000, 132, 128)
    with pytest.raises(ValueError, match="n_sm must be a positive int"):
        pm.loads_per_thread_needed(600, 4000, 1.5, 128)


def test_stages_needed_matches_timeline():
    assert pm.stages_needed(600, 4096, 30) == 6
    assert pm.stages_needed(100, 1000, 10) == 2           # exactly one tile in flight + one used
    for lat, tile, bw in [(600, 4096, 30.0), (350, 8192, 25.0), (900, 2048, 60.0)]:
        s, per_tile = pm.stages_needed(lat, tile, bw), tile / bw
        assert pm.timeline(30, s, lat, per_tile)["per_tile_ns"] == pytest.approx(per_tile)
        assert pm.timeline(30, s - 1, lat, per_tile)["per_tile_ns"] > per_tile
    with pytest.raises(ValueError, match="tile_bytes must be a positive int"):
        pm.stages_needed(600, 4096.5, 30)


def test_slot_and_phase():
    assert [pm.slot_and_phase(k, 3) for k in range(7)] == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 0)]
    with pytest.raises(ValueError, match="non-negative int"):
        pm.slot_and_phase(-1, 3)
    with pytest.raises(ValueError, match="stages must be a positive int"):
        pm.slot_and_phase(1, 0)


def test_timeline_one_stage_is_serial_and_more_stages_overlap():
    one = pm.timeline(5, 1, 600, 100)
    assert one["total_ns"] == 5 * 700 and one["per_tile_ns"] == 700
    many = pm.timeline(50, 8, 600, 100)
    assert many["per_tile_ns"] == 100 and many["total_ns"] < 50 * 120 + 600
    kinds = {e[1] for e in many["events"]}
    assert kinds == {"load", "compute"} and len(many["events"]) == 100
    for k, kind, slot, t0, t1 in many["events"]:             # a load never reuses a busy stage
        assert slot == k % 8 and t1 > t0
    with pytest.raises(ValueError, match="compute_ns must be a positive number"):
        pm.timeline(5, 1, 600, 0)


def test_mbarrier_model():
    bar = pm.MBarrier(2)
    assert (bar.test_wait(0), bar.test_wait(1)) == (False, True)
    bar.arrive()
    assert not bar.test_wait(0)
    bar.arrive()
    assert bar.test_wait(0) and not bar.test_wait(1) and bar.phase == 1
    tx = pm.MBarrier(1)
    tx.expect_tx(100)
    assert not tx.test_wait(0)
    tx.complete_tx(100)
    assert tx.test_wait(0)
    with pytest.raises(ValueError, match="1 .. 2\\^20 - 1"):
        pm.MBarrier(0)
    with pytest.raises(ValueError, match="pending"):
        pm.MBarrier(1).arrive(2)
    with pytest.raises(ValueError, match="parity must be 0 or 1"):
        bar.test_wait(2)


def test_random_cycle_and_walk():
    nxt = chase.random_cycle(37, stride=4, seed=3)
    assert nxt.numel() == 148
    seen, i = [], 0
    for _ in range(37):
        seen.append(i)
        i = int(nxt[i])
    assert i == 0 and sorted(seen) == list(range(0, 148, 4))
    assert chase.walk_ref(nxt, 37) == 0 and chase.walk_ref(nxt, 1) == int(nxt[0])
    with pytest.raises(ValueError, match="n_slots must be a positive int"):
        chase.random_cycle(0)
    with pytest.raises(ValueError, match="does not fit int32"):
        chase.random_cycle(2**26, stride=64)
    with pytest.raises(ValueError, match="steps must be"):
        chase.walk_ref(nxt, -1)


def test_figures_draw():
    import matplotlib.pyplot as plt
    figs = [day02_plots.show_timeline(pm.timeline(6, 2, 600, 150)),
            day02_plots.show_latency([2**14, 2**20], [20.0, 150.0], "x", marks={"L1": 2**18}),
            day02_plots.show_inflight({"u=1": [(2048, 500.0), (8192, 2000.0)]}, (600, 4000, 132), "x"),
            day02_plots.show_stages({"a": {1: 1.0, 2: 2.0}}, "GB/s", "t")]
    assert all(f is not None for f in figs)
    plt.close("all")
    with pytest.raises(TypeError, match="pipeline_model.timeline"):
        day02_plots.show_timeline([])
    with pytest.raises(ValueError, match="one latency per size"):
        day02_plots.show_latency([1, 2], [1.0], "x")
    with pytest.raises(ValueError, match="no points"):
        day02_plots.show_inflight({}, (1, 1, 1), "x")
    with pytest.raises(ValueError, match="no series"):
        day02_plots.show_stages({}, "y", "t")


def test_ctas_per_sm_names_the_limit():
    from utils.day02.pipeline_model import ctas_per_sm
    # a Triton GEMM tile (256 threads, ~113 registers): registers allow 2, 96 KiB of stages allow 2
    assert ctas_per_sm(113, 98304, 256) == {"ctas": 2, "by_regs": 2, "by_smem": 2, "limit": "registers"}
    # 128 KiB of stages: only one fits, and shared memory is what decides
    assert ctas_per_sm(113, 131072, 256)["ctas"] == 1 and ctas_per_sm(113, 131072, 256)["limit"] == "shared memory"
    # a tiny kernel hits the CTA limit
    assert ctas_per_sm(16, 0, 64)["limit"] == "max CTAs"


@pytest.mark.parametrize("kwargs, rule", [
    (dict(regs_per_thread=0, smem_per_cta=0, threads_per_cta=128), "regs_per_thread must be a positive int"),
    (dict(regs_per_thread=300, smem_per_cta=0, threads_per_cta=128), "over the 255"),
    (dict(regs_per_thread=32, smem_per_cta=-1, threads_per_cta=128), "smem_per_cta must be an int >= 0"),
    (dict(regs_per_thread=32, smem_per_cta=1.5, threads_per_cta=128), "smem_per_cta must be an int >= 0"),
    (dict(regs_per_thread=True, smem_per_cta=0, threads_per_cta=128), "regs_per_thread must be a positive int"),
])
def test_ctas_per_sm_rejects_bad_input(kwargs, rule):
    from utils.day02.pipeline_model import ctas_per_sm
    with pytest.raises(ValueError, match=rule):
        ctas_per_sm(**kwargs)
