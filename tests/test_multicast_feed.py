"""Day 5 · 05, §7: cluster multicast, on any machine (no GPU).

* the L2 feed (utils.tma.feed, kernels ``feed_c1/c2/c4`` of ``tma_kernels.cu``): the argument rules
  ``check_args`` names, the byte counts the rates are built from, the launcher refusing a bad source
  before it touches a GPU, and the sm_90a PTX of the three kernels (cluster sizes, multicast, remote
  mbarrier arrives, bounded waits);
* ``TmaGemm(multicast=...)`` (utils.cute_dsl.gemm): the clusters it accepts without multicast, the
  pipeline's release mode and the CTAs sharing each tile, and the PTX with and without multicast;
* utils.day05.multicast_measure: the GEMM variants, the feed names, the two source sizes.
"""
import pathlib
import types

import numpy as np
import pytest

import utils

utils.setup(quiet=True)
from utils.core import ptx, results as results_mod  # noqa: E402
from utils.cute_dsl.gemm import TILES, TmaGemm, ptx_of  # noqa: E402
from utils.day05 import intake_measure as im, multicast_measure as mm  # noqa: E402
from utils.tma import feed, runtime  # noqa: E402

KiB, MiB = 1024, 1 << 20
L2_BYTES = 50 * MiB                     # H100 / H200 L2
BULK_LOAD = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
MULTICAST = "multicast::cluster"
MAPA = "mapa.shared::cluster"
REMOTE_ARRIVE = "mbarrier.arrive.shared::cluster.b64"            # as CUTLASS pipelines arrive
FENCED_ARRIVE = "mbarrier.arrive.release.cluster.shared::cluster.b64"   # mode 3 only
TIMER = "%globaltimer"

# a launch that passes every rule: (src_nbytes, R, mode, chunk_bytes, stages, per_cta, ctas)
OK = dict(src_nbytes=16 * MiB, R=2, mode="multicast", chunk_bytes=16 * KiB, stages=4, per_cta=32, ctas=1584)


# --- the feed: argument rules ------------------------------------------------------------------------
@pytest.mark.parametrize("change, match", [
    (dict(R=3), "cluster size R must be one of"),
    (dict(R=0), "cluster size R must be one of"),
    (dict(R=8), "cluster size R must be one of"),
    (dict(mode="broadcast"), "mode must be one of"),
    (dict(mode="Multicast"), "mode must be one of"),
    (dict(R=1, mode="multicast"), "needs a cluster of 2 or 4 CTAs"),
    (dict(R=1, mode="cluster release"), "needs a cluster of 2 or 4 CTAs"),
    (dict(R=1, mode="cluster release, fenced arrive"), "needs a cluster of 2 or 4 CTAs"),
    (dict(mode="cluster release, fenced"), "mode must be one of"),
    (dict(chunk_bytes=1000), "chunk_bytes must be a positive multiple of 2048"),
    (dict(chunk_bytes=0), "chunk_bytes must be a positive multiple of 2048"),
    (dict(chunk_bytes=3072), "chunk_bytes must be a positive multiple of 2048"),
    (dict(chunk_bytes=-2048), "chunk_bytes must be a positive multiple of 2048"),
    (dict(stages=0), r"stages must be an int in 1\.\.8"),
    (dict(stages=9), r"stages must be an int in 1\.\.8"),
    (dict(stages=8, chunk_bytes=32 * KiB), "a block may use"),
    (dict(stages=1, chunk_bytes=228 * KiB), "a block may use"),   # one buffer, too big
    (dict(src_nbytes=16 * MiB + 2048), "must be a positive multiple of chunk_bytes"),
    (dict(src_nbytes=8 * KiB), "must be a positive multiple of chunk_bytes"),        # less than one chunk
    (dict(src_nbytes=0), "must be a positive multiple of chunk_bytes"),
    (dict(per_cta=0), "per_cta .* must be a positive int"),
    (dict(per_cta=-1), "per_cta .* must be a positive int"),
    (dict(R=4, ctas=6), "ctas must be a positive multiple of the cluster size 4"),
    (dict(R=2, ctas=3), "ctas must be a positive multiple of the cluster size 2"),
    (dict(ctas=0), "ctas must be a positive multiple"),
    (dict(lines=0), r"lines .* must be an int in 1\.\.8 for 16384 B chunks"),
    (dict(lines=9), r"lines .* must be an int in 1\.\.8 for 16384 B chunks"),
    (dict(lines=2, chunk_bytes=2048, src_nbytes=2048), r"must be an int in 1\.\.1 for 2048 B chunks"),
])
def test_check_args_names_the_rule_broken(change, match):
    with pytest.raises(ValueError, match=match):
        feed.check_args(**{**OK, **change})


@pytest.mark.parametrize("change, match", [     # the wrong kind: a TypeError stating the same rule
    (dict(chunk_bytes=16384.0), r"chunk_bytes must be a positive multiple of 2048 .*got 16384\.0 \(float, "
                                r"not an int\)"),
    (dict(per_cta=2.0), "per_cta .* must be a positive int, got 2.0 \\(float"),
    (dict(per_cta="32"), "per_cta .* must be a positive int, got '32' \\(str"),
    (dict(per_cta=None), "per_cta .* must be a positive int, got None \\(NoneType"),
    (dict(ctas=8.0), "ctas must be a positive multiple"),
    (dict(lines=1.0), "lines .* must be an int"),
    (dict(lines=True), r"lines .* must be an int .*got True \(bool, not an int\)"),
    (dict(R=True), r"cluster size R must be one of \(1, 2, 4\), got True \(bool"),
    (dict(src_nbytes=None), r"the source's size \(src\.nbytes\) must be a positive multiple of chunk_bytes"),
])
def test_check_args_refuses_the_wrong_kind(change, match):
    with pytest.raises(TypeError, match=match):
        feed.check_args(**{**OK, **change})


@pytest.mark.parametrize("change", [
    {},
    dict(R=1, mode="each loads", ctas=1),
    dict(R=2, mode="each loads"),
    dict(R=2, mode="cluster release"),
    dict(R=4, mode="multicast", ctas=4),
    dict(R=4, mode="cluster release", ctas=1056),
    dict(R=2, mode="cluster release, fenced arrive"),
    dict(R=4, mode="cluster release, fenced arrive", ctas=8),
    dict(chunk_bytes=2048, stages=1, src_nbytes=2048, per_cta=1),                # the smallest launch
    dict(chunk_bytes=28 * KiB, stages=8, src_nbytes=64 * 28 * KiB),              # 8 x 28 KiB + slack fits
    dict(chunk_bytes=112 * KiB, stages=2, src_nbytes=224 * KiB),                   # two big buffers
    dict(src_nbytes=1 << 30, per_cta=1000),                                        # per_cta may exceed n_chunks
    dict(lines=1), dict(lines=8), dict(lines=None),                                # read 1..all lines of a chunk
    dict(chunk_bytes=2048, stages=1, src_nbytes=2048, per_cta=1, lines=1),
])
def test_check_args_accepts_good_launches(change):
    feed.check_args(**{**OK, **change})


def test_feed_geometry():
    assert feed.LINE == 16 * feed.CONSUMERS == 2048      # one 16-byte read per consumer thread
    assert feed.THREADS == 32 + 128                       # a producer warp, four consumer warps
    assert feed.MODES == {"each loads": 0, "multicast": 1, "cluster release": 2, "cluster release, fenced arrive": 3,
                          "each loads, out of step": 4}
    assert feed.CLUSTERS == (1, 2, 4)


# --- the feed: byte counts -----------------------------------------------------------------------------
@pytest.mark.parametrize("chunk, per_cta, ctas", [(16384, 32, 1584), (2048, 1, 4), (32768, 7, 12)])
def test_delivered_bytes(chunk, per_cta, ctas):
    assert feed.delivered_bytes(chunk, per_cta, ctas) == chunk * per_cta * ctas


@pytest.mark.parametrize("R, mode, divisor", [
    (1, "each loads", 1),
    (2, "each loads", 1),
    (4, "each loads", 1),
    (2, "multicast", 2),                     # L2 serves each chunk once per cluster
    (4, "multicast", 4),
    (2, "cluster release", 1),               # the coupling alone: every CTA still loads
    (4, "cluster release", 1),
    (2, "cluster release, fenced arrive", 1),
    (4, "cluster release, fenced arrive", 1),
])
def test_l2_bytes(R, mode, divisor):
    delivered = feed.delivered_bytes(16384, 32, 1584)
    assert feed.l2_bytes(R, mode, 16384, 32, 1584) == delivered // divisor
    assert feed.l2_bytes(R, mode, 16384, 32, 1584) * divisor == delivered      # an exact division


@pytest.mark.parametrize("mode", ["Multicast", "", "multicast "])
def test_l2_bytes_refuses_an_unknown_mode(mode):
    with pytest.raises(ValueError, match="mode must be one of"):
        feed.l2_bytes(2, mode, 16384, 32, 1584)


# --- the feed: the launcher checks its source before it touches a GPU ---------------------------------
def fake(nbytes=16 * MiB, ptr=0x10000, contiguous=True, dtype="float16"):
    """Just what feed_launcher reads of a CuPy array before it launches anything."""
    return types.SimpleNamespace(flags=types.SimpleNamespace(c_contiguous=contiguous),
                                 data=types.SimpleNamespace(ptr=ptr), nbytes=nbytes, dtype=np.dtype(dtype))


@pytest.mark.parametrize("src, kw, match", [
    (fake(dtype="float32"), {}, "contiguous float16 array, got float32"),
    (fake(dtype="uint8"), {}, "contiguous float16 array, got uint8"),
    (fake(contiguous=False), {}, "got float16, not contiguous"),
    (fake(ptr=0x10008), {}, r"src address 0x10008 is not 16-B aligned \(address % 16 = 8\)"),
    # with ctas given, the rules of check_args come next, still without a GPU
    (fake(), dict(R=3, ctas=12), "cluster size R must be one of"),
    (fake(), dict(R=1, ctas=12), "needs a cluster of 2 or 4 CTAs"),
    (fake(), dict(chunk_bytes=1000, ctas=12), "chunk_bytes must be a positive multiple of 2048"),
    (fake(), dict(stages=9, ctas=12), r"stages must be an int in 1\.\.8"),
    (fake(nbytes=16 * MiB + 16), dict(ctas=12), "must be a positive multiple of chunk_bytes"),
    (fake(), dict(per_cta=0, ctas=12), "per_cta"),
    (fake(), dict(R=4, ctas=6), "ctas must be a positive multiple of the cluster size 4"),
    (fake(), dict(lines=9, ctas=12), r"lines .* must be an int in 1\.\.8"),
])
def test_feed_launcher_refuses_before_touching_a_gpu(src, kw, match):
    pytest.importorskip("cupy")                     # feed_launcher compares dtypes with cupy.float16
    with pytest.raises(ValueError, match=match):
        feed.feed_launcher(src, **kw)


# --- the feed: its PTX -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def feed_bodies():
    """``{kernel: PTX}`` of feed_c1/c2/c4, each from its ``.entry`` to the next (NVRTC, ~3 s)."""
    p = runtime.ptx()
    return {name: ptx.entry(p, name) for name in ("feed_c1", "feed_c2", "feed_c4")}


@pytest.mark.parametrize("name, R", [("feed_c1", 1), ("feed_c2", 2), ("feed_c4", 4)])
def test_feed_kernels_declare_their_cluster(feed_bodies, name, R):
    body = feed_bodies[name]
    assert f".reqnctapercluster {R}, 1, 1" in body
    assert BULK_LOAD in body                            # every mode loads with 1-D bulk copies
    assert TIMER in body                                # every wait is bounded


@pytest.mark.parametrize("name", ["feed_c2", "feed_c4"])
def test_feed_kernels_multicast_and_free_buffers_cluster_wide(feed_bodies, name):
    body = feed_bodies[name]
    assert BULK_LOAD + "." + MULTICAST in body          # one slice for the whole cluster
    assert MAPA in body                                 # a peer's empty barrier ...
    assert REMOTE_ARRIVE in body                        # ... arrived on remotely (modes 1 and 2)
    assert FENCED_ARRIVE in body                        # ... or with a cluster-scope release (mode 3)
    assert "%cluster_ctarank" in body and "%clusterid.x" in body


def test_feed_c1_has_no_remote_arrive(feed_bodies):
    body = feed_bodies["feed_c1"]
    assert MULTICAST not in body and REMOTE_ARRIVE not in body and FENCED_ARRIVE not in body


def test_the_plain_arrive_is_the_one_cutedsl_gemm_uses():
    """The course's CuteDSL GEMM (CUTLASS's pipeline) frees a multicast stage with the plain remote
    arrive; the feed's modes 1 and 2 use the same instruction (about 1 s: one CuteDSL compile)."""
    body = ptx_of(stages=4, cluster=(2, 1))
    assert REMOTE_ARRIVE in body and FENCED_ARRIVE not in body


def test_feed_source_is_one_template_for_three_cluster_sizes():
    src = runtime.kernel_source("feed_body")
    assert "template <int R>" in src and "bulk_load_multicast" in src and "mbar_wait_bounded" in src
    for R in (1, 2, 4):
        assert f"__cluster_dims__({R}, 1, 1) feed_c{R}(" in runtime.SOURCE
        assert f"feed_body<{R}>(" in runtime.SOURCE


# --- TmaGemm(multicast=...) -----------------------------------------------------------------------------
def test_gemm_without_multicast_refuses_a_2x2_cluster():
    with pytest.raises(ValueError, match="multicast=False"):
        TmaGemm(None, (2, 2), multicast=False)
    TmaGemm(None, (2, 2), multicast=True)               # with multicast a 2 x 2 cluster is fine


@pytest.mark.parametrize("cluster, multicast, release, share", [
    ((1, 1), True, (1, 1), (1, 1)),
    ((1, 1), False, (1, 1), (1, 1)),
    ((2, 1), True, (1, 1), (2, 1)),
    ((1, 2), True, (1, 1), (1, 2)),
    ((2, 2), True, (1, 1), (2, 2)),
    ((2, 1), False, (1, 0), (1, 1)),                    # free the stage in this CTA only
    ((1, 2), False, (0, 1), (1, 1)),
])
def test_gemm_release_mode_and_share(cluster, multicast, release, share):
    g = TmaGemm(None, cluster, multicast=multicast)
    assert g.cluster == cluster
    assert g.release_mode() == release
    assert g.share == share


def test_gemm_multicast_defaults_on():
    assert TmaGemm(None, (2, 1)).share == (2, 1)


@pytest.fixture(scope="module")
def gemm_ptx():
    """``{multicast: PTX}`` of the 128 x 128 GEMM in a (2, 1) cluster (~1-3 s each)."""
    return {mc: ptx_of(gemm=TmaGemm(None, (2, 1), tile=(128, 128, 64), multicast=mc)) for mc in (True, False)}


@pytest.mark.parametrize("mc", [True, False])
def test_gemm_ptx_multicasts_only_when_asked(gemm_ptx, mc):
    p = gemm_ptx[mc]
    assert (MULTICAST in p) == mc
    assert "wgmma" in p


# --- utils.day05.multicast_measure ----------------------------------------------------------------------
def test_gemm_variants():
    v = mm.gemm_variants()
    assert len(v) == 10
    want = {(t, (1, 1), False) for t in mm.GEMM_TILES} | \
        {(t, c, m) for t in mm.GEMM_TILES for c in ((2, 1), (1, 2)) for m in (False, True)}
    assert set(v.values()) == want and len(want) == 10
    assert all(name == mm.gemm_name(*entry) for name, entry in v.items())
    assert len(set(v)) == len(v)
    assert all(not mc for _, c, mc in v.values() if c == (1, 1))
    # per tile: the (1, 1) kernel first, then each cluster without and with multicast
    assert [e[1:] for e in v.values()][:5] == [((1, 1), False), ((2, 1), False), ((2, 1), True),
                                               ((1, 2), False), ((1, 2), True)]


@pytest.mark.parametrize("tile, cluster, mc, name", [
    ((128, 128, 64), (1, 1), False, "128x128 tile, cluster 1x1"),
    ((128, 256, 64), (2, 1), True, "128x256 tile, cluster 2x1, multicast"),
    ((128, 256, 64), (1, 2), False, "128x256 tile, cluster 1x2, each CTA loads"),
])
def test_gemm_name(tile, cluster, mc, name):
    assert mm.gemm_name(tile, cluster, mc) == name


@pytest.mark.parametrize("name, entry", list(mm.gemm_variants().items()))
def test_every_gemm_variant_builds(name, entry):
    tile, cluster, mc = entry
    assert tile in TILES
    g = TmaGemm(None, cluster, tile=tile, multicast=mc)
    assert g.tile == tile and g.cluster == cluster and g.share == (cluster if mc else (1, 1))


def test_feed_names():
    names = [mm.feed_name(R, m) for R in (1, 2, 4) for m in mm.FEED_MODES]
    assert len(set(names)) == len(names)
    assert mm.feed_name(2, "multicast") == "cluster of 2, multicast"
    assert set(mm.FEED_MODES) | {im.OOS} == set(feed.MODES)


def test_regimes_one_in_l2_one_far_beyond():
    sizes = sorted(mm.REGIMES.values())
    assert len(sizes) == 2
    assert sizes[0] <= L2_BYTES // 2                    # fits in L2 with room to spare
    assert sizes[1] >= 10 * L2_BYTES                    # comes from DRAM


@pytest.mark.parametrize("nbytes", list(mm.REGIMES.values()))
@pytest.mark.parametrize("R", [2, 4])
@pytest.mark.parametrize("mode", mm.FEED_MODES)
def test_the_measured_feed_launches_pass_the_rules(nbytes, R, mode):
    # fp16 sources of nbytes // 2 elements; ctas = 12 per SM on a 132-SM H100 / H200
    feed.check_args(nbytes, R, mode, ctas=feed.CTAS_PER_SM * 132, **mm.FEED)


@pytest.mark.parametrize("part", ["intake", "out of step"])
def test_the_light_feed_launches_pass_the_rules(part):
    for _, nbytes, R, modes in im.cases(part):
        for mode in modes:
            feed.check_args(nbytes, R, mode, ctas=feed.CTAS_PER_SM * 132, **im.LIGHT)


def test_the_light_feed_reads_one_line_of_each_chunk():
    assert im.LIGHT["lines"] == 1 < im.LIGHT["chunk_bytes"] // feed.LINE       # the consumers barely work
    hot, l2 = sorted(im.INTAKE_SOURCES.values())
    assert hot // im.LIGHT["chunk_bytes"] <= im.LIGHT["per_cta"]              # every cluster reads all of it
    assert im.INTAKE_SOURCES["L2-resident source (16 MiB)"] == mm.REGIMES["L2-resident source (16 MiB)"]
    assert im.OOS_SOURCES == mm.REGIMES                                        # from L2 and from DRAM


def test_cases_and_profiled_launches():
    assert [c[:3] for c in im.cases("intake")] == [("hot source (64 KiB)", 64 << 10, 2), ("L2-resident source (16 MiB)", 16 << 20, 2)]
    oos = im.cases("out of step")
    assert {(s, R) for s, _, R, _ in oos} == {(s, R) for s in im.OOS_SOURCES for R in (2, 4)}
    assert all(modes[0] == im.OOS and "multicast" in modes and "each loads" in modes for *_, modes in oos)
    assert len(im.profiled("intake")) == 6
    assert [(R, m) for _, _, R, m in im.profiled("out of step")] == [(2, m) for m in im.OOS_MODES] * 2
    with pytest.raises(ValueError, match="part must be 'intake' or 'out of step'"):
        im.cases("feed")


def test_row_names():
    assert im.row_name("intake", "hot source (64 KiB)", 2, "multicast") == "intake, hot source (64 KiB), multicast"
    assert im.row_name("out of step", "DRAM source (1 GiB)", 4, im.OOS) == \
        "out of step, DRAM source (1 GiB), R = 4, each loads, out of step"


def test_the_out_of_step_mode_is_each_loads_with_the_chunk_order_rotated(feed_bodies):
    body = feed_bodies["feed_c2"]
    assert "multicast::cluster" in body                       # the same kernel; mode 4 is a branch in it
    src = (pathlib.Path(utils.__file__).parent / "tma" / "tma_kernels.cu").read_text()
    assert "mode == 4 ? (i + (long long)rank * (per_cta / R)) % per_cta : i" in src
    assert "cluster_free = mode >= 1 && mode <= 3" in src     # out of step frees its own buffers, as mode 0


def test_the_barriers_count_against_shared_memory():
    """1 stage of MAX_SMEM - ALIGN_SLACK bytes would leave no room for the kernel's own mbarriers."""
    chunk = (runtime.MAX_SMEM - runtime.ALIGN_SLACK) // feed.LINE * feed.LINE
    with pytest.raises(ValueError, match="a block may use"):
        feed.check_args(chunk * 4, 2, "multicast", chunk, 1, 8, 2)


@pytest.mark.parametrize("bad", [2.5, True])
def test_stages_must_be_an_int(bad):
    with pytest.raises(TypeError, match="stages must be an int"):
        feed.check_args(16384 * 4, 2, "multicast", 16384, bad, 8, 2)


def test_the_multicast_results_file_belongs_to_notebook_05():
    from utils.core import gallery
    assert mm.STEM.startswith("05_gemm_ladder_")
    assert gallery.source(mm.STEM) == gallery.source("05_gemm_ladder") == "day05_tma/05_gemm_ladder"
    assert gallery.source("05_gemm") == "?" and gallery.source("05_gemm_ladderx") == "?"


@pytest.mark.parametrize("dynamic", [runtime.MAX_SMEM, runtime.MAX_SMEM - runtime.STATIC_SMEM + 16])
def test_every_launcher_counts_the_kernels_own_barriers(dynamic):
    """runtime.kernel refuses dynamic shared memory that leaves no room for the static mbarriers
    (before it touches CuPy or a GPU)."""
    with pytest.raises(ValueError, match="plus up to 128 B of the kernel's own mbarriers"):
        runtime.kernel("bulk_copy_pipelined", dynamic)


def test_ptx_entry_names_a_missing_kernel():
    from utils.core import ptx as ptx_mod
    assert ptx_mod.entry(".entry a(\n x\n.entry b(\n y", "a") == ".entry a(\n x\n"
    with pytest.raises(ValueError, match="no kernel 'c'"):
        ptx_mod.entry(".entry a(\n", "c")


def test_problem_launches_the_kernels_through_run():
    """ladder_measure.problem builds cuBLAS plus one call per name through ``run`` (the GEMM of §7
    passes multicast_measure.run_gemm); checked on the CPU with a stand-in run."""
    import torch
    from utils.day05 import ladder_measure as lm
    seen = []

    def run(a, b, c, name):
        seen.append(name)
        c.copy_(a @ b.T)
        return c
    c, want, fns = lm.problem(8, torch.float32, ["x", "y"], device="cpu", run=run)
    assert list(fns) == [lm.CUBLAS, "x", "y"]
    assert torch.allclose(fns["y"](), want) and seen == ["y"]
    assert fns["x"]() is c and seen == ["y", "x"]


# --- the consumers' release in SASS ---------------------------------------------------------------------
ARRIVE = "SYNCS.ARRIVE.TRANS64.RED.A1T0 RZ, [R5+URZ], RZ"


@pytest.mark.parametrize("ins, want", [
    (["IADD3 R1", "@P0 " + ARRIVE, "@!P0 MEMBAR.ALL.CTA", "@!P0 MEMBAR.ALL.GPU", "@!P0 ERRBAR", "@!P0 CGAERRBAR",
      "@!P0 " + ARRIVE, "BRA 0x100"], slice(1, 7)),                          # starts at the first arrive
    (["LDS R2", "MEMBAR.ALL.GPU", "ERRBAR", ARRIVE, "EXIT"], slice(1, 4)),  # the fences just before it come along
    ([ARRIVE], slice(0, 1)),
])
def test_release_sass_cuts_from_the_first_arrive_to_the_last(ins, want):
    assert feed.release_sass(ins) == ins[want]


@pytest.mark.parametrize("ins", [[], ["SYNCS.ARRIVE.TRANS64 RZ, [UR5], R8", "MEMBAR.ALL.GPU"]])  # a local arrive only
def test_release_sass_needs_a_remote_arrive(ins):
    with pytest.raises(ValueError, match="no SYNCS.ARRIVE.TRANS64.RED"):
        feed.release_sass(ins)


@pytest.fixture(scope="module")
def feed_sass():
    from utils.triton_lang import sass
    listing = sass.functions(sass.sass(sass.cubin(runtime.ptx())))
    return {name: sass.instructions(listing[name]) for name in ("feed_c1", "feed_c2", "feed_c4")}


@pytest.mark.parametrize("name, R", [("feed_c2", 2), ("feed_c4", 4)])
def test_the_fenced_arrive_is_a_gpu_wide_barrier_in_sass(feed_sass, name, R):
    release = feed.release_sass(feed_sass[name])
    assert sum(feed.REMOTE_ARRIVE_SASS in i for i in release) == 2 * R        # plain and fenced, per peer
    assert sum("MEMBAR.ALL.GPU" in i for i in release) == R                   # only on the fenced side
    assert not any(feed.REMOTE_ARRIVE_SASS in i for i in feed_sass["feed_c1"])


def _row(name, part):
    return dict(name=name, metric="ms", value=1.0, reference=name, reference_value=1.0, ratio=1.0,
                shape=[1], dtype="float16", part=part)


def _recording(folder, device, date, parts):
    import json
    (folder / results_mod.device_slug(device)).mkdir(parents=True)
    rows = [_row(f"{p} row", p) for p in parts]
    (folder / results_mod.device_slug(device) / f"{mm.STEM}.json").write_text(
        json.dumps(dict(device=device, date=date, rows=rows)))


def test_part_rows_come_from_the_shown_recording_when_it_has_them(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    rows = [_row("f", "feed"), _row("i", "intake"), _row("c", "intake counters")]
    assert im.part_rows(rows, "intake", "shown") == (rows[1:], "shown")


def test_part_rows_fall_back_to_the_latest_recording_that_has_them(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    _recording(tmp_path, "NVIDIA H100 80GB HBM3", "2026-11-25T12:00:00", ("feed", "intake", "intake counters"))
    _recording(tmp_path, "NVIDIA H200", "2026-11-26T12:00:00", ("feed",))            # newer, made before the intake
    got, label = im.part_rows([_row("f", "feed")], "intake", "recorded on NVIDIA H200")
    assert [r["part"] for r in got] == ["intake", "intake counters"]
    assert label.startswith("intake: recorded on NVIDIA H100 80GB HBM3, 2026-11-25")


def test_part_rows_refuse_when_no_recording_has_them(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    _recording(tmp_path, "NVIDIA H200", "2026-11-26T12:00:00", ("feed",))
    with pytest.raises(LookupError, match="holds the 'intake' rows"):
        im.part_rows([_row("f", "feed")], "intake", "x")


def test_out_of_step_plot_draws_every_case_and_launch():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    oos = [dict(source=s, R=R, mode=m, value=1000.0 * (i + 1)) for s, _, R, ms in im.cases("out of step")
           for i, m in enumerate(ms)]
    ctr = [dict(part="out of step counters", source=s, R=R, mode=m, read_from_l2_bytes=4e8, merged_by_hardware_bytes=4e8,
                served_by_multicast_bytes=0.0, dram_read_bytes=4e8) for s, _, R, m in im.profiled("out of step")]
    fig = im.plot(oos, ctr, "test")
    left, right = fig.axes
    assert len(left.patches) == len(oos) and len(right.patches) == 3 * len(ctr)
    assert [t.get_text() for t in right.get_yticklabels()][0] == "L2-resident source, each loads, out of step"
    plt.close(fig)


class _Status:
    def __init__(self, fired=0):
        self.fired = fired

    def get(self):
        return [self.fired]


def _fake_feed(monkeypatch, fired=()):
    """compare_modes on the CPU: the feed launcher, reference, check and bench.compare stood in for,
    so the glue (names, reference, modes, checks before timing, NaN reset, L2 bytes) is what runs."""
    cp = pytest.importorskip("cupy")
    calls = []
    monkeypatch.setattr(cp.cuda.runtime, "deviceSynchronize", lambda: None)
    monkeypatch.setattr(feed, "feed_launcher", lambda src, R, mode, **cfg: (
        lambda: calls.append(("launch", mode)), np.full((12, feed.CONSUMERS), np.nan), _Status(mode in fired)))
    monkeypatch.setattr(feed, "feed_reference", lambda *a: calls.append(("reference", a[-1])) or 0.0)
    monkeypatch.setattr(feed, "check_out", lambda out, want, what: calls.append(("check", what)))

    def compare(make_inputs, contenders, *, reference, check, reset, amount, **kw):
        rows = []
        for n, fn in contenders.items():
            reset()
            check(n, fn(), None)
            rows.append(dict(name=n, value=1.0, reference=reference, amount=amount, shape=kw["shape"]))
        return rows
    monkeypatch.setattr(im.bench, "compare", compare)
    return calls


def test_compare_modes_names_checks_and_counts_l2_bytes(monkeypatch):
    calls = _fake_feed(monkeypatch)
    src = np.zeros(8 * 16384 // 2, dtype=np.float16)
    rows = im.compare_modes(src, 2, mm.FEED_MODES, mm.FEED, lambda m: mm.feed_name(2, m), reps=5)
    assert [r["name"] for r in rows] == [mm.feed_name(2, m) for m in mm.FEED_MODES]
    assert all(r["reference"] == "cluster of 2, each loads" and r["R"] == 2 and r["shape"] == [src.nbytes] for r in rows)
    assert [r["mode"] for r in rows] == list(mm.FEED_MODES)
    assert {r["mode"]: r["l2_bytes"] for r in rows}["multicast"] * 2 == rows[0]["l2_bytes"] == 12 * 32 * 16384
    assert calls.count(("reference", None)) == 1                       # one reference for every mode
    assert [c for c in calls if c[0] == "check"] == [("check", mm.feed_name(2, m)) for m in mm.FEED_MODES]


def test_compare_modes_reads_lines_and_reports_a_fired_wait(monkeypatch):
    calls = _fake_feed(monkeypatch, fired={"multicast"})
    src = np.zeros(8 * 16384 // 2, dtype=np.float16)
    with pytest.raises(RuntimeError, match="intake, x, multicast: a bounded mbarrier wait fired"):
        im.compare_modes(src, 2, im.INTAKE_MODES, im.LIGHT, lambda m: f"intake, x, {m}")
    assert ("reference", im.LIGHT["lines"]) in calls


def test_persistent_part_splits_rung_6_into_one_change_each():
    """Rung 5 -> the same kernel in a 2 x 1 cluster, each CTA loading -> rung 6 (multicast)."""
    from utils.cute_dsl import ladder
    from utils.day05 import multicast_measure as mm
    names = mm.persistent_names()
    assert names == [list(ladder.STEPS)[4], ladder.CLUSTER_ONLY, ladder.ORDER_BASE]
    k5, kc, k6 = (ladder.make(n) for n in names)
    assert all(k.persistent and k.realloc and k.order == "grouped" for k in (k5, kc, k6))
    assert (k5.cluster, k5.share) == ((1, 1), (1, 1))          # no cluster
    assert (kc.cluster, kc.share) == ((2, 1), (1, 1))          # + the cluster, nothing shared
    assert (k6.cluster, k6.share) == ((2, 1), (2, 1))          # + B through multicast
