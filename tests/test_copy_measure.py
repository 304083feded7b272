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
    (fake(ptr=0x10008), fake(), {}, "not a multiple of 16 B"),
    (fake(), fake(ptr=0x10002), {}, "dst starts at address 0x10002"),
    (fake(), fake(nbytes=2048), {}, "same dtype and size"),
    (fake(), fake(dtype="float32"), {}, "same dtype and size"),
    (fake(nbytes=4104), fake(nbytes=4104), {}, "multiple of 16 B"),
    (fake(), fake(), dict(chunk_bytes=1000), "chunk_bytes must be a positive multiple of 16"),
    (fake(), fake(), dict(chunk_bytes=0), "chunk_bytes must be a positive multiple of 16"),
    (fake(), fake(), dict(stages=0), r"stages must be an int in 2\.\.8"),
    (fake(), fake(), dict(stages=1), "one buffer cannot pipeline"),      # would wait forever
    (fake(), fake(), dict(stages=9), r"stages must be an int in 2\.\.8"),
    (fake(), fake(), dict(stages=2.0), "stages must be an int"),
    (fake(), fake(), dict(chunk_bytes=65536, stages=4), "exceeds"),
    (fake(), fake(), dict(span=1), "span must be True or False"),
])
def test_bulk_launcher_names_the_rule_broken(src, dst, kw, match):
    with pytest.raises(ValueError, match=match):
        runtime.bulk_launcher(src, dst, **kw)


@pytest.mark.parametrize("src, dst, kw, match", [
    (fake(contiguous=False), fake(), {}, "src must be contiguous"),
    (fake(), fake(contiguous=False), {}, "dst must be contiguous"),
    (fake(ptr=0x10008), fake(), {}, "src starts at address 0x10008, not a multiple of 16 B"),
    (fake(), fake(nbytes=2048), {}, "same dtype and size"),
    (fake(nbytes=0), fake(nbytes=0), {}, "positive multiple of 16 B"),
    (fake(), fake(), dict(chunk_bytes=8200), "chunk_bytes must be a positive multiple of 16"),
    (fake(), fake(), dict(chunk_bytes=-16), "chunk_bytes must be a positive multiple of 16"),
    (fake(), fake(), dict(chunk_bytes=8192.0), "chunk_bytes must be a positive multiple of 16"),
    (fake(), fake(), dict(chunk_bytes=256 * 1024), "exceeds"),
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
    for bad in (None, 0, 2.0):
        with pytest.raises(ValueError, match="pass the CTAs an SM holds"):
            cm.in_flight_per_sm(cm.COPIES[cm.NO_LOOP_8K], resident=bad)


@pytest.mark.parametrize("kw, match", [
    (dict(ctas_per_sm=0), r"ctas_per_sm must be an int in 1\.\.32"),
    (dict(ctas_per_sm=33), r"ctas_per_sm must be an int in 1\.\.32"),
    (dict(ctas_per_sm=True), r"ctas_per_sm must be an int in 1\.\.32"),
    (dict(dynamic=1), "dynamic must be True or False"),
    (dict(chunk_bytes=100), "chunk_bytes must be a positive multiple of 16"),
    (dict(chunk_bytes=256 * 1024), "exceeds"),
])
def test_serial_launcher_names_the_rule_broken(kw, match):
    with pytest.raises(ValueError, match=match):
        runtime.serial_launcher(fake(), fake(), **kw)


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
    assert gallery.source(cm.STEM) == "day05_tma/05_gemm_ladder"


def _copy_recording(folder, device, date, names):
    import json
    rows = [dict(name=n, metric="GB/s", value=1000.0, ratio=1.0, reference=cm.MEMCPY, reference_value=1000.0,
                 shape=[8192, 8192], dtype="float16", part="copy") for n in names]
    (folder / results.device_slug(device)).mkdir(parents=True, exist_ok=True)
    (folder / results.device_slug(device) / f"{cm.STEM}.json").write_text(json.dumps(dict(device=device, date=date, rows=rows)))
    return rows


def test_copy_rows_fall_back_to_the_latest_recording_with_every_contender(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    full = _copy_recording(tmp_path, "NVIDIA H100 80GB HBM3", "2026-11-25T12:00:00", [cm.MEMCPY, *cm.COPIES])
    old = _copy_recording(tmp_path, "NVIDIA H200", "2026-11-26T12:00:00", [cm.MEMCPY, cm.TMA_2D])   # before no-loop
    assert cm.copy_rows(full, "shown") == (full, "shown")
    got, label = cm.copy_rows(old, "recorded on NVIDIA H200")
    assert [r["name"] for r in got] == [cm.MEMCPY, *cm.COPIES]
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
    rows = [dict(name=cm.MEMCPY, ratio=1.0)] + [dict(name=n, ratio=0.97 + 0.003 * i, ratio_lo=0.96, ratio_hi=1.0)
                                                 for i, n in enumerate(cm.COPIES)]
    fig = cm.plot(rows, "test")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(cm.COPIES)
    greens = sum(1 for c in cm.COPIES.values() if c["kind"] in ("tile", "chunk"))
    assert greens == 3
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
