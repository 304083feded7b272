"""Day 5 · 05, §6: the 1-D bulk copy (``cp.async.bulk``, no tensor map). Its PTX and its input
rules on any machine (the launcher checks its inputs before it touches a GPU); the contenders'
bytes in flight per SM."""
import types

import pytest

import utils

utils.setup(quiet=True)
from utils.core import ptx, results  # noqa: E402
from utils.day05 import copy_measure as cm  # noqa: E402
from utils.tma import runtime  # noqa: E402


def fake(nbytes=4096, ptr=0x10000, contiguous=True, dtype="float16"):
    """Just what bulk_launcher reads of a CuPy array before it launches anything."""
    return types.SimpleNamespace(flags=types.SimpleNamespace(c_contiguous=contiguous),
                                 data=types.SimpleNamespace(ptr=ptr), nbytes=nbytes, dtype=dtype)


@pytest.mark.parametrize("name", ["bulk_copy_pipelined", "bulk_copy_chunk"])
def test_bulk_kernel_uses_bulk_copies_without_a_tensor_map(name):
    src = runtime.kernel_source(name)
    assert "mbar_wait_bounded" in src and "TensorMap" not in src
    body = ptx.entry(runtime.ptx(), name)        # up to the next kernel
    assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" in body
    assert "cp.async.bulk.global.shared::cta.bulk_group" in body
    assert "cp.async.bulk.tensor" not in body


@pytest.mark.parametrize("src, dst, kw, match", [
    (fake(contiguous=False), fake(), {}, "src must be contiguous"),
    (fake(ptr=0x10008), fake(), {}, r"src address 0x10008 is not 16-B aligned \(address % 16 = 8\)"),
    (fake(), fake(ptr=0x10002), {}, r"dst address 0x10002 is not 16-B aligned \(address % 16 = 2\)"),
    (fake(), fake(nbytes=2048), {}, "same dtype and size"),
    (fake(), fake(dtype="float32"), {}, "same dtype and size"),
    (fake(nbytes=4104), fake(nbytes=4104), {}, "multiple of 16 B"),
    (fake(), fake(), dict(chunk_bytes=1000), "chunk_bytes must be a positive multiple of 16"),
    (fake(), fake(), dict(chunk_bytes=0), "chunk_bytes must be a positive multiple of 16"),
    (fake(), fake(), dict(stages=0), r"stages must be an int in 2\.\.8"),
    (fake(), fake(), dict(stages=1), "one buffer cannot pipeline"),      # would wait forever
    (fake(), fake(), dict(stages=9), r"stages must be an int in 2\.\.8"),
    (fake(), fake(), dict(chunk_bytes=65536, stages=4), "exceeds"),
    (fake(), fake(), dict(ctas_per_sm=0), r"ctas_per_sm must be an int in 1\.\.32"),
    (fake(), fake(), dict(ctas_per_sm=33), r"ctas_per_sm must be an int in 1\.\.32"),
])
def test_bulk_launcher_names_the_rule_broken(src, dst, kw, match):
    with pytest.raises(ValueError, match=match):
        runtime.bulk_launcher(src, dst, **kw)


@pytest.mark.parametrize("kw, match", [          # the wrong kind: a TypeError stating the same rule
    (dict(stages=2.0), r"stages must be an int in 2\.\.8 .*got 2\.0 \(float, not an int\)"),
    (dict(span=1), r"span must be True or False, got 1 \(int\)"),
    (dict(ctas_per_sm=2.0), r"ctas_per_sm must be an int in 1\.\.32"),
    (dict(ctas_per_sm=True), r"ctas_per_sm must be an int in 1\.\.32, got True \(bool, not an int\)"),
    (dict(chunk_bytes=None), r"chunk_bytes must be a positive multiple of 16, got None \(NoneType"),
])
def test_bulk_launcher_refuses_the_wrong_kind(kw, match):
    with pytest.raises(TypeError, match=match):
        runtime.bulk_launcher(fake(), fake(), **kw)


@pytest.mark.parametrize("src, dst, kw, match", [
    (fake(contiguous=False), fake(), {}, "src must be contiguous"),
    (fake(), fake(contiguous=False), {}, "dst must be contiguous"),
    (fake(ptr=0x10008), fake(), {}, r"src address 0x10008 is not 16-B aligned \(address % 16 = 8\)"),
    (fake(), fake(nbytes=2048), {}, "same dtype and size"),
    (fake(nbytes=0), fake(nbytes=0), {}, "positive multiple of 16 B"),
    (fake(), fake(), dict(chunk_bytes=8200), "chunk_bytes must be a positive multiple of 16"),
    (fake(), fake(), dict(chunk_bytes=-16), "chunk_bytes must be a positive multiple of 16"),
    (fake(), fake(), dict(chunk_bytes=256 * 1024), "exceeds"),
    (fake(), fake(), dict(evict_first="loads"), "evict_first must be a tuple of distinct names"),
    (fake(), fake(), dict(evict_first=["loads"]), "evict_first must be a tuple"),
    (fake(), fake(), dict(evict_first=("reads",)), r"from \('loads', 'stores'\)"),
    (fake(), fake(), dict(evict_first=("loads", "loads")), "distinct names"),
])
def test_chunk_launcher_names_the_rule_broken(src, dst, kw, match):
    with pytest.raises(ValueError, match=match):
        runtime.chunk_launcher(src, dst, **kw)


def test_bytes_in_flight_per_sm():
    loops = {n: cm.in_flight_per_sm(c) // 1024 for n, c in cm.COPIES.items() if c["kind"] in ("2d", "bulk")}
    assert list(loops.values()) == [128, 128, 128, 192, 192, 128]
    assert next(iter(cm.COPIES)) == cm.TMA_2D                 # the ladder starts from notebook 02's copy
    assert cm.in_flight_per_sm(cm.COPIES[cm.NO_LOOP_32K], resident=6) == 6 * 32768   # = the 6-stage loop's
    assert cm.in_flight_per_sm(cm.COPIES[cm.TILE_2D], resident=13) == 13 * 32 * 256 * 2
    for bad, exc in ((None, TypeError), (0, ValueError), (2.0, TypeError)):   # wrong kind: TypeError
        with pytest.raises(exc, match="resident must be a positive int .*pass the CTAs an SM holds"):
            cm.in_flight_per_sm(cm.COPIES[cm.NO_LOOP_8K], resident=bad)


@pytest.mark.parametrize("kw, match", [
    (dict(ctas_per_sm=0), r"ctas_per_sm must be an int in 1\.\.32"),
    (dict(ctas_per_sm=33), r"ctas_per_sm must be an int in 1\.\.32"),
    (dict(chunk_bytes=100), "chunk_bytes must be a positive multiple of 16"),
    (dict(chunk_bytes=256 * 1024), "exceeds"),
])
def test_serial_launcher_names_the_rule_broken(kw, match):
    with pytest.raises(ValueError, match=match):
        runtime.serial_launcher(fake(), fake(), **kw)


@pytest.mark.parametrize("launcher, kw, match", [   # the wrong kind: a TypeError stating the same rule
    (runtime.chunk_launcher, dict(chunk_bytes=8192.0), "chunk_bytes must be a positive multiple of 16"),
    (runtime.serial_launcher, dict(ctas_per_sm=True), r"ctas_per_sm must be an int in 1\.\.32"),
    (runtime.serial_launcher, dict(dynamic=1), "dynamic must be True or False"),
])
def test_chunk_and_serial_launchers_refuse_the_wrong_kind(launcher, kw, match):
    with pytest.raises(TypeError, match=match):
        launcher(fake(), fake(), **kw)


def test_the_serial_contenders_change_one_thing():
    loop, serial, counter = (cm.COPIES[n] for n in (cm.LOOP_32K, cm.SERIAL, cm.COUNTER))
    assert cm.in_flight_per_sm(serial) == cm.in_flight_per_sm(loop) == 6 * 32768   # stages -> CTAs, same bytes
    assert serial["chunk_bytes"] == loop["chunk_bytes"]
    assert counter == {**serial, "dynamic": True}
    src = runtime.kernel_source("bulk_copy_serial")
    assert "atomicAdd(next, 1ULL)" in src and "i += gridDim.x" in src
    assert "atom.global.add.u64" in ptx.entry(runtime.ptx(), "bulk_copy_serial")


def test_the_no_loop_contenders_change_one_thing():
    assert cm.COPIES[cm.NO_LOOP_32K]["chunk_bytes"] == cm.COPIES[cm.LOOP_32K]["chunk_bytes"]
    assert cm.COPIES[cm.TILE_2D]["box_shape"] == cm.COPIES[cm.TMA_2D]["box_shape"]
    assert {c["kind"] for c in cm.COPIES.values()} == set(cm.KERNELS)
    for kind, name in cm.KERNELS.items():
        assert runtime.kernel_source(name)          # each kind names a kernel that exists


def test_clock_rows_are_a_recordable_metric():
    row = dict(name="k", metric="MHz", value=1300.0, reference="cuBLAS", reference_value=1290.0, ratio=1.0078,
               shape=[8192, 8192, 8192], dtype="float16")
    results.validate_rows([row])
    with pytest.raises(ValueError, match="metric"):
        results.validate_rows([dict(row, metric="GHz")])


def test_kernel_never_lowers_the_shared_memory_limit(monkeypatch):
    """The limit belongs to the CUDA function, which every launcher made from it shares: a
    second launcher with smaller buffers must not break the first (CUDA_ERROR_INVALID_VALUE)."""
    fn = types.SimpleNamespace(max_dynamic_shared_size_bytes=48 * 1024)
    monkeypatch.setattr(runtime, "_module", lambda: types.SimpleNamespace(get_function=lambda name: fn))
    runtime.kernel("bulk_copy_pipelined", 4 * 32768 + runtime.ALIGN_SLACK)
    runtime.kernel("bulk_copy_pipelined", 4 * 16384 + runtime.ALIGN_SLACK)
    assert fn.max_dynamic_shared_size_bytes == 4 * 32768 + runtime.ALIGN_SLACK
    runtime.kernel("bulk_copy_pipelined", 6 * 32768 + runtime.ALIGN_SLACK)
    assert fn.max_dynamic_shared_size_bytes == 6 * 32768 + runtime.ALIGN_SLACK


def test_the_span_contender_changes_one_thing():
    base = cm.COPIES["1-D bulk, 32 KiB chunks, 4 stages, 1 CTA/SM"]
    assert cm.COPIES[cm.SPAN] == {**base, "span": True}
    assert "span" in runtime.kernel_source("bulk_copy_pipelined")


def test_the_copy_results_file_belongs_to_notebook_05():
    from utils.core import gallery
    assert gallery.source(cm.STEM) == "day05_tma/05b_ladder_lab_report"


def _copy_recording(folder, device, date, names):
    import json
    rows = [dict(name=n, metric="GB/s", value=1000.0, ratio=1.0, reference=cm.MEMCPY, reference_value=1000.0,
                 shape=[8192, 8192], dtype="float16", part="copy") for n in names]
    (folder / results.device_slug(device)).mkdir(parents=True, exist_ok=True)
    (folder / results.device_slug(device) / f"{cm.STEM}.json").write_text(json.dumps(dict(device=device, date=date, rows=rows)))
    return rows


def test_copy_rows_fall_back_to_the_latest_recording_with_every_contender(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    full = _copy_recording(tmp_path, "NVIDIA H100 80GB HBM3", "2026-11-25T12:00:00", [cm.MEMCPY, cm.MEMCPY_AGAIN, *cm.COPIES])
    old = _copy_recording(tmp_path, "NVIDIA H200", "2026-11-26T12:00:00", [cm.MEMCPY, cm.TMA_2D])   # before no-loop
    assert cm.copy_rows(full, "shown") == (full, "shown")
    got, label = cm.copy_rows(old, "recorded on NVIDIA H200")
    assert [r["name"] for r in got] == [cm.MEMCPY, cm.MEMCPY_AGAIN, *cm.COPIES]
    assert label.startswith("copy contenders: recorded on NVIDIA H100 80GB HBM3, 2026-11-25")
    (tmp_path / "nvidia-h100-80gb-hbm3" / f"{cm.STEM}.json").unlink()
    with pytest.raises(LookupError, match="holds every copy contender"):
        cm.copy_rows(old, "x")


def test_every_one_change_pair_names_two_contenders():
    for a, b in cm.ONE_CHANGE:
        assert a in cm.COPIES and b in cm.COPIES and a != b


def test_the_copy_plot_draws_every_contender_and_refuses_none():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [dict(name=cm.MEMCPY, ratio=1.0)] + [dict(name=n, ratio=0.97 + 0.003 * i, ratio_lo=0.96, ratio_hi=1.1)
                                                 for i, n in enumerate(cm.COPIES)]
    fig = cm.plot(rows + [dict(name=cm.MEMCPY_AGAIN, ratio=0.999, ratio_lo=0.998, ratio_hi=1.001)], "test")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [*cm.COPIES, cm.MEMCPY_AGAIN]
    greens = sum(1 for c in cm.COPIES.values() if c["kind"] in ("tile", "chunk"))
    assert greens == 6   # no loop: 2-D tile, 32, 8 and 2 KiB chunks, and the 2 KiB copy with each hint
    plt.close(fig)
    with pytest.raises(ValueError, match="no copy contender"):
        cm.plot([dict(name=cm.MEMCPY, ratio=1.0)])


def test_ctas_per_sm_counts_what_fits_and_refuses_a_serial_copy_that_does_not(monkeypatch):
    monkeypatch.setattr(cm, "resident", lambda cfg: 5)
    assert cm.ctas_per_sm(cm.NO_LOOP_32K, cm.COPIES[cm.NO_LOOP_32K]) == 5            # as many as fit
    assert cm.ctas_per_sm(cm.LOOP_32K, cm.COPIES[cm.LOOP_32K]) == 1                  # as configured
    with pytest.raises(RuntimeError, match="only 5 of its 6 CTAs fit on an SM at once"):
        cm.ctas_per_sm(cm.SERIAL, cm.COPIES[cm.SERIAL])
    monkeypatch.setattr(cm, "resident", lambda cfg: 6)
    assert cm.ctas_per_sm(cm.SERIAL, cm.COPIES[cm.SERIAL]) == 6


def _kernel(name, us, dram_pct=80.0):
    return {"kernel": name, "gpu__time_duration.sum": us * 1e3, cm.DRAM_PCT: dram_pct,
            "dram__bytes_read.sum": 1.3e8, "dram__bytes_write.sum": 1.1e8}


def _counted(copy_us=88.0):
    return [_kernel("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>", 50.0, 91.0),
            _kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>>", 52.0)] + \
           [_kernel(cm.KERNELS[cm.COPIES[n]["kind"]], copy_us) for n in cm.COUNTED]


def test_counter_rows_name_each_kernel_and_count_the_bytes_its_job_moves():
    rows = cm.counter_rows(_counted())
    results.validate_rows(rows)
    assert [r["name"] for r in rows] == [cm.READ_ONLY, cm.WRITE_ONLY, *cm.COUNTED]
    nbytes = 8192 * 8192 * 2
    assert rows[0]["value"] == pytest.approx(0.050) and rows[0]["metric"] == "ms"
    assert rows[0]["gb_per_s"] == pytest.approx(nbytes / 50e-6 / 1e9)
    assert rows[2]["gb_per_s"] == pytest.approx(2 * nbytes / 88e-6 / 1e9)      # a copy reads and writes
    assert all(r["ratio"] is None for r in rows)              # different bytes: no ratio between them
    assert {r["part"] for r in rows} == {"copy counters"} and rows[0]["dram_busy_pct"] == 91.0


@pytest.mark.parametrize("change, match", [
    (lambda ks: ks[:-1], "expected one reduce kernel, one fill and 5 copies"),
    (lambda ks: ks[1:], "expected one reduce kernel"),
    (lambda ks: ks + [ks[0]], "expected one reduce kernel"),
    (lambda ks: ks[:2] + ks[2:][::-1], "not COUNTED's kernels in order"),
])
def test_counter_rows_refuse_launches_that_are_not_the_ones_counted(change, match):
    with pytest.raises(RuntimeError, match=match):
        cm.counter_rows(change(_counted()))


def test_counted_copies_are_contenders_and_the_null_row_is_not_a_tma_copy():
    assert set(cm.COUNTED) <= set(cm.COPIES)
    assert cm.MEMCPY_AGAIN not in cm.COPIES and cm.MEMCPY_AGAIN != cm.MEMCPY
    assert cm.COPIES[cm.NO_LOOP_2K] == dict(kind="chunk", chunk_bytes=2048)


def test_copy_counters_fall_back_to_the_latest_recording_with_them(tmp_path, monkeypatch):
    import json
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    timed = _copy_recording(tmp_path, "NVIDIA H200", "2026-11-26T12:00:00", [cm.MEMCPY, cm.TMA_2D])
    with pytest.raises(LookupError, match="holds the 'copy counters' rows"):
        cm.part_or_latest(timed, "x", cm.COUNTERS)
    counted = cm.counter_rows(_counted())
    path = tmp_path / "nvidia-h100-80gb-hbm3" / f"{cm.STEM}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(dict(device="NVIDIA H100 80GB HBM3", date="2026-11-25T12:00:00", rows=counted)))
    got, label = cm.part_or_latest(timed, "recorded on NVIDIA H200", cm.COUNTERS)
    assert [r["name"] for r in got] == [r["name"] for r in counted]
    assert label.startswith("copy counters: recorded on NVIDIA H100 80GB HBM3, 2026-11-25")
    assert cm.part_or_latest(timed + counted, "here", cm.COUNTERS) == (counted, "here")
    with pytest.raises(LookupError, match="holds the 'copy, L2 not flushed' rows"):
        cm.part_or_latest(timed + counted, "here", cm.UNFLUSHED)



@pytest.mark.parametrize("part", ["copy counters", "L2 not flushed", "", None])
def test_measure_copies_refuses_a_part_that_is_not_a_setting(part):
    with pytest.raises(ValueError, match="part must be one of"):
        cm.measure_copies(part=part)


def test_each_setting_changes_one_thing_of_the_harness_flush():
    base = cm.SETTINGS["copy"][1]
    assert cm.SETTINGS["copy"][0] == ""                                   # the main rows keep their names
    assert cm.SETTINGS[cm.UNFLUSHED][1] == {"flush_l2": False}
    assert cm.SETTINGS[cm.READ_FLUSHED][1] == {**base, "flush_by": "read"}
    assert cm.SETTINGS[cm.ALTERNATE][1] == {**base, "order": "alternate"}
    suffixes = [sfx for sfx, _ in cm.SETTINGS.values()]
    assert len(set(suffixes)) == len(suffixes)                            # no two parts share row names


def _after_flush(rounds=cm.AFTER_FLUSH_ROUNDS):
    """ncu's copies of one run_after_flush: after a write flush each writes 25 MB more to DRAM."""
    ks = []
    for i in range(rounds):
        for n in cm.AFTER_FLUSH_COPIES:
            for f in ("write", "read"):
                k = _kernel(cm.KERNELS[cm.COPIES[n]["kind"]], 92.0 + i if f == "write" else 88.0, 83.0)
                k["dram__bytes_write.sum"] = 134.2e6 if f == "write" else 109.6e6
                ks.append(k)
    return ks


def test_after_flush_rows_pair_each_copy_with_each_flush():
    rows = cm.after_flush_rows(_after_flush())
    results.validate_rows(rows)
    assert [(r["contender"], r["flush_by"]) for r in rows] == \
        [(n, f) for n in cm.AFTER_FLUSH_COPIES for f in ("write", "read")]
    w = rows[0]
    assert w["ms_rounds"] == pytest.approx([0.092, 0.093, 0.094]) and w["value"] == pytest.approx(0.093)
    assert w["dram_write_bytes"] == pytest.approx(134.2e6) and rows[1]["dram_write_bytes"] == pytest.approx(109.6e6)
    assert {r["part"] for r in rows} == {cm.AFTER_FLUSH} and all(r["ratio"] is None for r in rows)
    assert cm.AFTER_FLUSH_COPIES == (cm.LOOP_32K, cm.NO_LOOP_32K)   # a one-change pair (the loop)
    assert (cm.NO_LOOP_32K, cm.LOOP_32K) in cm.ONE_CHANGE


@pytest.mark.parametrize("change", [
    lambda ks: ks[:-1],                          # a launch missing
    lambda ks: ks + ks[:1],                      # one too many
    lambda ks: ks[1:] + ks[:1],                  # out of turn
])
def test_after_flush_rows_refuse_launches_that_are_not_the_ones_counted(change):
    with pytest.raises(RuntimeError, match="each after a write and a read flush"):
        cm.after_flush_rows(change(_after_flush()))


def test_the_chunk_kernel_hints_l2_only_where_asked():
    body = ptx.entry(runtime.ptx(), "bulk_copy_chunk")
    assert "createpolicy.fractional.L2::evict_first" in body
    assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint" in body
    assert "cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint" in body
    assert runtime.EVICT_FIRST == {"loads": 1, "stores": 2}     # the kernel's bits: 1 the loads, 2 the stores
    src = runtime.kernel_source("bulk_copy_chunk")
    assert "if (evict_first & 1) bulk_load_hinted" in src and "if (evict_first & 2) bulk_store_hinted" in src


@pytest.mark.parametrize("hinted, where", [("EF_LOADS", ("loads",)), ("EF_STORES", ("stores",))])
def test_each_hinted_copy_changes_one_thing_of_the_best(hinted, where):
    name = getattr(cm, hinted)
    cfg = dict(cm.COPIES[name])
    assert cfg.pop("evict_first") == where and cfg == cm.COPIES[cm.NO_LOOP_2K]
    assert (name, cm.NO_LOOP_2K) in cm.ONE_CHANGE


@pytest.mark.parametrize("bad", [0, -2, 33, 1.5, True, "2"])
def test_pipelined_launcher_refuses_a_grid_it_cannot_launch(bad):
    arr = types.SimpleNamespace(shape=(64, 256), dtype="float16", ndim=2)
    wrong_kind = isinstance(bad, (bool, float, str))      # a TypeError stating the same rule
    with pytest.raises(TypeError if wrong_kind else ValueError, match=r"ctas_per_sm must be an int in 1\.\.32"):
        runtime.pipelined_launcher(arr, arr, ctas_per_sm=bad)


def test_the_1_gib_parts_change_only_the_size():
    base = cm.SETTINGS["copy"][1]
    assert cm.SETTINGS[cm.BIG][1] == base and cm.SETTINGS[cm.BIG_ALTERNATE][1] == cm.SETTINGS[cm.ALTERNATE][1]
    M, N = cm.BIG_SHAPE
    assert M * N * 2 == 2**30 and M * N == 8 * 8192 * 8192       # 8x the 128 MiB copy, fp16
    assert all(2**30 % c.get("chunk_bytes", 16384) == 0 for c in cm.COPIES.values())   # whole chunks


def test_the_1_gib_results_file_belongs_to_notebook_05():
    from utils.core import gallery
    assert gallery.source(cm.BIG_STEM) == "day05_tma/05b_ladder_lab_report"
