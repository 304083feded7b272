"""utils.tma.counters and utils.cute_dsl.counters: the model's wavefront predictions, the tiling
arithmetic, the L2-request-coalescer bookkeeping and clear errors on bad input (cpu tier; the
counters themselves are measured on Hopper by day05_tma/08_below_ptx)."""
import pytest

from utils.tma import counters as tc

MiB = 2**20


@pytest.mark.parametrize("mode,row_bytes,want", [("none", 32, 8), ("none", 64, 16), ("none", 128, 32),
                                                 ("32B", 32, 4), ("64B", 64, 4), ("128B", 128, 4)])
def test_predicted_wavefronts(mode, row_bytes, want):
    for chunk in range(row_bytes // 16):          # every column of the box, not only chunk 0
        assert tc.predicted_wavefronts(mode, chunk, row_bytes) == want


def test_layouts_and_labels():
    assert [tc.box_shape(m, rb) for m, rb in tc.LAYOUTS] == [(32, 16), (32, 32), (32, 64), (32, 16), (32, 32), (32, 64)]
    assert tc.box_shape("128B") == (32, 64) and tc.box_shape("none") == (32, 64)
    assert tc.label("64B", 64) == "column read, swizzle 64B, 64-B rows"


def test_column_offsets_follow_the_swizzle():
    assert list(tc.column_offsets("none", 1, 128)[:3]) == [16, 144, 272]
    assert list(tc.column_offsets("128B", 0)[:8]) == [r * 128 + 16 * (0 ^ r) for r in range(8)]


@pytest.mark.parametrize("args,match", [(("256B",), "swizzle mode must be one of"),
                                        (("64B", 128), "at most the 64-B span"),
                                        (("none", 48), "expected 16, 32, 64 or 128")])
def test_box_shape_refuses_bad_layouts(args, match):
    with pytest.raises(ValueError, match=match):
        tc.box_shape(*args)


def test_column_offsets_refuses_chunk_outside_the_row():
    with pytest.raises(ValueError, match=r"chunk must be in \[0, 2\)"):
        tc.column_offsets("32B", 2, 32)


gc = pytest.importorskip("utils.cute_dsl.counters", reason="needs nvidia-cutlass-dsl")


def test_tiled_l2_bytes():
    assert gc.tiled_l2_bytes(4096) == 1536 * MiB            # 16 x 32 tiles x 4096 x 384 x 2 B
    assert gc.tiled_l2_bytes(256, tile=(128, 128, 64)) == 2 * 2 * 256 * 256 * 2
    with pytest.raises(ValueError, match="multiple of the tile"):
        gc.tiled_l2_bytes(1000)


def _row(delivered, read, merged, mcast):
    return {"name": "k", "delivered_bytes": delivered, "read_from_l2_bytes": read,
            "merged_by_hardware_bytes": merged, "served_by_multicast_bytes": mcast}


def test_lrc_split_accepts_a_consistent_row_and_rejects_others():
    assert gc.lrc_split(_row(1536, 1127.5, 408.7, 0)) < 0.001
    assert gc.lrc_split(_row(64, 32, 0, 32)) == 0
    with pytest.raises(AssertionError, match="apart"):
        gc.lrc_split(_row(1536, 1127.5, 0, 0))
    with pytest.raises(ValueError, match="LRC byte counts"):
        gc.lrc_split({"name": "k", "delivered_bytes": 1})


def test_stalls_helpers():
    row = {"stalls": {"barrier": 4.9, "gmma": 1.5, "lg_throttle": 0.0}, "instructions": 1e6}
    assert gc.top_stalls(row, 2) == [("barrier", 4.9), ("gmma", 1.5)]
    assert gc.stall_cycles(row, "gmma") == 1.5e6
    with pytest.raises(ValueError, match="reason must be one of"):
        gc.stall_cycles(row, "sleepy")
    with pytest.raises(ValueError, match="stalls"):
        gc.top_stalls({"name": "x"})


def test_metric_names_are_ncu_names():
    assert len(set(gc.METRICS)) == len(gc.METRICS)
    assert {m.split("__")[0] for m in gc.METRICS} == {"gpu", "sm", "smsp", "launch", "dram", "lrc"}
    assert set(gc.BROADCAST.values()) == {(2, False), (2, True), (4, False), (4, True)}


def _fake_profile(calls):
    """ncu.profile stand-in: one launch per TRAFFIC entry, each metric 1 sector / byte."""
    def profile(argv, regex, metrics=(), cwd=None, **kw):
        calls.append((regex, tuple(metrics), argv[-1]))
        return [{"kernel": "broadcast_kernel", **{m: 2.0**20 for m in metrics}} for _ in gc.TRAFFIC]
    return profile


def test_both_broadcast_measurements_profile_through_one_helper(monkeypatch):
    from utils.core import ncu
    from utils.cute_dsl import measure
    calls = []
    monkeypatch.setattr(ncu, "profile", _fake_profile(calls))
    traffic = measure.measure_multicast_traffic(256, 256)
    lrc = gc.measure_broadcast_lrc(256, 256)
    assert [c[0] for c in calls] == ["broadcast_kernel"] * 2 and "broadcast_once(256, 256)" in calls[0][2]
    assert calls[0][1] == ncu.L2_DRAM and set(gc.LRC.values()) <= set(calls[1][1])
    assert len(traffic) == len(lrc) == len(gc.TRAFFIC)
    assert [r["name"] for r in lrc] == list(gc.BROADCAST) and all(r["metric"] == "bytes" for r in lrc)


def test_a_missing_broadcast_launch_is_an_error(monkeypatch):
    from utils.core import ncu
    monkeypatch.setattr(ncu, "profile", lambda *a, **k: [{"kernel": "broadcast_kernel"}])
    with pytest.raises(RuntimeError, match="broadcast launches, ncu saw 1"):
        gc.measure_broadcast_lrc()
