"""The cpu-tier launchers of utils.emu.course: the GPU launchers' arguments, the emulator underneath."""
import numpy as np
import pytest

from utils.emu import RaceError, course
from utils.tma import model


def test_ring_and_pipeline_give_the_consumers_result_and_a_labelled_report():
    x = np.random.default_rng().standard_normal(4 * 333).astype(np.float32)
    for run in (lambda y: course.ring(x, y, 2, 1, bulk=True), lambda y: course.pipeline(x, y, 2, 1)):
        y = np.full_like(x, np.nan)
        out, rep = run(y)
        assert out is y and np.allclose(y, x * np.float32(0.999) + np.float32(0.001), rtol=1e-6)
        assert repr(rep).startswith("emulator:") and " ms" not in repr(rep) and " s " not in repr(rep)


def test_wrong_producer_parity_times_out_on_the_virtual_clock():
    x = np.ones(4 * 300, np.float32)
    with pytest.raises(RuntimeError, match="emulator: .*virtual clock"):
        course.ring(x, np.zeros_like(x), 2, producer_parity="(k / stages) & 1")


def test_load_dump_and_store_box_follow_the_model():
    a = np.random.default_rng().standard_normal((30, 40)).astype(np.float32)
    raw, _ = course.load_dump(a, (8, 16), (24, 32), swizzle="64B")
    spec_bytes = model.smem_bytes(a, (8, 16), (24, 32), swizzle="64B")
    pos = model.smem_positions((8, 16), 4, "64B")
    assert np.array_equal(raw[pos], spec_bytes[pos])
    ref = model.tma_store(a, np.ones((8, 16), np.float32), (24, 32))[0]
    course.store_box(a, np.ones((8, 16), np.float32), (24, 32))
    assert np.array_equal(a, ref)
    with pytest.raises(RaceError, match="fence.proxy.async"):
        course.store_box(a, np.ones((8, 16), np.float32), (0, 0), proxy_fence=False)


@pytest.mark.parametrize("pipelined", [False, True])
def test_copy_tiles(pipelined):
    a = np.random.default_rng().standard_normal((37, 92)).astype(np.float32)
    b = np.zeros_like(a)
    course.copy_tiles(a, b, (16, 32), pipelined=pipelined)
    assert np.array_equal(a, b)


def test_lab_report_names_each_kind_of_symptom():
    assert course.lab_report("lab_fixed")["wrong"] == 0
    hang = course.lab_report("lab_hang")
    assert hang["wait_timed_out"] and hang["deadlocks"] and hang["error"] is None
    assert course.lab_report("lab_negative")["error"] == "TmaRuleError"


def test_fidelity_table_agrees_with_every_recorded_gpu_symptom():
    from utils.emu import fidelity
    rows = fidelity.lab_table()
    recorded = [r for r in rows if r["gpus"]]
    assert len(recorded) >= 12 and all(r["agrees"] for r in recorded), fidelity.format_table(rows)
    assert fidelity.format_table(rows).startswith("emulator vs recorded GPU symptoms")
    assert fidelity.gpu_kind({"cuda_error": None, "wait_timed_out": False, "wrong": 3}) == "wrong"


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_grouped_load(mode):
    rng = np.random.default_rng()
    arrays = [rng.standard_normal((r, 12)).astype(np.float32) for r in (9, 30)]
    tiles, rep = course.grouped_load(arrays, (8, 4), mode)
    assert not rep.races and all(np.array_equal(t, a[:8, :4]) for t, a in zip(tiles, arrays))


def test_update_race_names_the_missing_fence():
    rng = np.random.default_rng()
    x, y = (rng.standard_normal((16, 32)).astype(np.float32) for _ in range(2))
    seen, rep = course.update_race(x, y, (8, 16), release=True, acquire=False)
    assert seen["load1"]["x"] == 2 and any("acquire" in r for r in rep.races)
    seen, rep = course.update_race(x, y, (8, 16), release=True, acquire=True)
    assert seen["load2"]["y"] == 2 and not rep.races


def test_reduce_add():
    rng = np.random.default_rng()
    c, p = np.zeros((32, 48), np.float32), rng.standard_normal((3, 32, 48)).astype(np.float32)
    course.reduce_add(c, p, (16, 16))
    assert np.allclose(c, p.sum(0), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="whole number"):
        course.reduce_add(np.zeros((30, 48), np.float32), np.zeros((3, 30, 48), np.float32), (16, 16))


def test_gpu_agreement_cases_run_on_the_emulator():
    from utils.emu import gpu_agreement as ga
    from utils.tma import model
    out = ga.emulator_outputs(seed=1)
    i = ga.inputs(seed=1)
    assert set(out) == set(ga.CASES)
    assert np.array_equal(out["tma_copy_tile"], i["a"].view(np.uint8).ravel())
    assert np.array_equal(out["tma_store_box"], model.tma_store(i["a"], i["t"], (24, 64))[0].view(np.uint8).ravel())
    assert np.array_equal(out["splitk_reduce_add"].view(np.float32), i["p"].sum(0).ravel())
