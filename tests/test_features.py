"""Tiers by feature (issue 39): fake GPUs of every compute capability the course names, with and
without a working driver, their tier, their feature rows (against the sources quoted in
utils/core/features.py) and the reason a skipped cell prints. No GPU needed."""
import pytest

from utils.core import features as F
from utils.core import tier as t
from utils.core.report import feature_lines, print_report

GPUS = {(7, 5): "Tesla T4", (8, 0): "NVIDIA A100-SXM4-80GB", (8, 6): "NVIDIA GeForce RTX 3090",
        (8, 9): "NVIDIA L4", (9, 0): "NVIDIA H100 80GB HBM3", (10, 0): "NVIDIA B200",
        (10, 3): "NVIDIA GB300", (11, 0): "NVIDIA Jetson Thor", (12, 0): "NVIDIA GeForce RTX 5090",
        (12, 1): "NVIDIA GB10 (DGX Spark)"}
TIER = {(7, 5): "cuda", (8, 0): "cuda", (8, 6): "cuda", (8, 9): "cuda", (9, 0): "hopper",
        (10, 0): "tma", (10, 3): "tma", (11, 0): "tma", (12, 0): "tma", (12, 1): "tma"}
Y, N = True, False
# feature: availability per compute capability, in the order of GPUS (the table the report prints)
EXPECTED = {
    "tma":               [N, N, N, N, Y, Y, Y, Y, Y, Y],   # Programming Guide Table 29; PTX: sm_90+
    "expect_tx":         [N, N, N, N, Y, Y, Y, Y, Y, Y],   # mbarrier.expect_tx: sm_90+
    "clusters":          [N, N, N, N, Y, Y, Y, Y, Y, Y],   # Table 29
    "multicast":         [N, N, N, N, Y, Y, Y, Y, N, N],   # advised for sm_90a/100f/103f/110f only
    "wgmma":             [N, N, N, N, Y, N, N, N, N, N],   # sm_90a only
    "setmaxnreg":        [N, N, N, N, Y, Y, Y, Y, Y, Y],   # sm_90a, sm_100f, sm_110f, sm_120f
    "tcgen05":           [N, N, N, N, N, Y, Y, Y, N, N],   # sm_100a/f, sm_110f: not 12.x
    "tensormap_replace": [N, N, N, N, Y, Y, Y, Y, Y, Y],   # sm_90a, sm_100f, sm_110f, sm_120f
    "sm90a":             [N, N, N, N, Y, N, N, N, N, N],   # "a" code runs on its own CC only
    "big_smem":          [N, N, N, N, Y, Y, Y, Y, N, N],   # Table 31: 227 KB vs 99 KB on 12.x
}


def probe(cc):
    return lambda: None if cc is None else (GPUS[cc], cc)


@pytest.mark.parametrize("cc", GPUS, ids=[F.cc_text(c) for c in GPUS])
def test_tier_and_features_of_each_gpu(cc):
    tier = t.detect(None, probe(cc))
    assert tier.name == TIER[cc] and tier.capability == cc and tier.device_name == GPUS[cc]
    assert tier.has_gpu and tier.device == "cuda" and tier.has("gpu")
    i = list(GPUS).index(cc)
    for feature, column in EXPECTED.items():
        assert tier.has(feature) == column[i], (cc, feature, tier.features[feature].why)
    assert tier.has_tma == tier.has("tma")
    # the same GPU with a broken or missing driver: torch sees no device, so the cpu tier
    lost = t.detect(None, probe(None))
    assert lost.name == "cpu" and not lost.has_gpu and not any(lost.has(f) for f in F.FEATURES)


def test_rows_name_their_target_and_unknown_counts_as_absent():
    assert F.arch_target((10, 3)) == "sm_103a" and F.arch_target((8, 9)) is None
    assert F.targets((10, 3)) == {"sm_103a", "sm_100f", "sm_103f"}
    assert F.targets((12, 1)) == {"sm_121a", "sm_120f", "sm_121f"}
    assert "sm_100f" in F.row("setmaxnreg", (10, 3)).why        # B300: the family target serves
    assert "sm_90a only" in F.row("wgmma", (12, 0)).why
    assert "reduced performance" in F.row("multicast", (12, 0)).why
    future = F.row("tcgen05", (13, 0))
    assert future.available is None and not future.ok                # not in the sources: absent
    assert F.row("tma", (13, 0)).ok                                  # baseline: sm_90 and later
    assert F.max_cluster((9, 0)) == 8 and F.max_cluster((9, 0), portable=False) == 16
    assert F.max_cluster((12, 0), portable=False) is None and F.max_cluster((8, 0)) is None
    assert F.max_cluster((10, 0), portable=False) is None      # not found in a primary source
    assert F.smem_per_block((12, 1)) == 99 * 1024 and F.smem_per_block((10, 0)) == 227 * 1024
    with pytest.raises(ValueError, match="unknown feature"):
        F.row("fp8", (9, 0))


def test_an_unknown_future_gpu_with_tma_is_the_tma_tier():
    tier = t.detect(None, lambda: ("a GPU from 2028", (13, 0)))
    assert tier.name == "tma" and tier.has("tma") and not tier.has("wgmma") and not tier.has("tcgen05")


def test_forcing_orders_the_tiers():
    assert t.TIERS == ("cpu", "cuda", "tma", "hopper")
    h100 = probe((9, 0))
    tma = t.detect("tma", h100)                 # what a Blackwell GPU sees, on an H100
    assert tma.name == "tma" and "forced" in tma.reason and tma.has("tma") and tma.has("multicast")
    assert not tma.has("wgmma") and not tma.has("sm90a") and "leaves it out" in tma.features["wgmma"].why
    cuda = t.detect("cuda", h100)
    assert cuda.has_gpu and not cuda.has("tma") and not cuda.has("clusters") and cuda.has("big_smem")
    assert t.detect("cpu", probe((12, 0))).name == "cpu"
    for cc, too_high in (((12, 0), "hopper"), ((8, 6), "tma"), ((8, 6), "hopper")):
        with pytest.raises(ValueError, match="asks for more than this machine has"):
            t.detect(too_high, probe(cc))


@pytest.mark.parametrize("cc,feature,words", [
    ((12, 0), "wgmma", ["wgmma", "12.0", "sm_90a only"]),
    ((10, 0), "sm90a", ["sm90a", "10.0", "runs only on compute capability 9.0"]),
    ((12, 1), "tcgen05", ["tcgen05", "12.1", "sm_100a/sm_100f/sm_110f"]),
    ((8, 9), "tma", ["tma", "8.9", "9.0 or higher"]),
    (None, "gpu", ["gpu", "no GPU", "no CUDA device visible"]),
])
def test_a_skipped_cell_prints_one_reason_naming_feature_capability_and_why(capsys, cc, feature, words):
    tier = t.detect(None, probe(cc))
    assert t.explain_skip(tier, feature, "running the thing") is False
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1 and "skipped: running the thing" in out
    for w in words:
        assert w in out, (w, out)


def test_explain_skip_takes_several_features_and_names_the_first_missing(capsys):
    b200 = t.detect(None, probe((10, 0)))
    assert t.explain_skip(b200, ("tma", "cutedsl", "multicast"), "the broadcast") is True
    assert capsys.readouterr().out == ""
    assert t.explain_skip(b200, ("tma", "wgmma", "setmaxnreg"), "the WS GEMM") is False
    assert "needs wgmma" in capsys.readouterr().out
    with pytest.raises(ValueError, match="needs must be"):
        t.explain_skip(b200, ("tma", "fp8"), "x")
    with pytest.raises(ValueError, match="needs must be"):
        t.explain_skip(b200, (), "x")


@pytest.mark.parametrize("cc", [None, (8, 0), (9, 0), (10, 0), (12, 0)])
def test_report_lists_the_features_in_two_short_lines(capsys, cc):
    tier = t.detect(None, probe(cc))
    lines = feature_lines(tier)
    assert 1 <= len(lines) <= 2 and all(len(line) < 200 for line in lines)
    print_report(tier)
    out = capsys.readouterr().out
    assert f"Course tier: {tier.name.upper()}" in out and lines[0] in out
    if cc == (12, 0):
        assert "Not here: multicast, wgmma, tcgen05, sm90a, big_smem" in out
    if cc == (9, 0):
        assert "clusters (<= 8, 16 opt-in)" in out and "Not here: tcgen05" in out
