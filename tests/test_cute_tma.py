"""CuteDSL TMA kernels (day 5 · 04): compile-only checks on any machine, exercise checks."""
import pytest

import utils

utils.setup(quiet=True)
from utils.cute_dsl import exercises as ex  # noqa: E402
from utils.cute_dsl import gemm as cute_gemm, tma as cute_tma  # noqa: E402
from utils.core import ptx  # noqa: E402
from utils.core.checks import CheckFailed  # noqa: E402
from utils.cute_dsl.compat import cute, fake_tensor  # noqa: E402


def lines(p, word):
    return [l for l in p.splitlines() if word in l]


def test_tile_copy_ptx_has_tma_load_store_and_mbarrier():
    p = cute_tma.ptx_of("tile_copy")
    assert ptx.target(p) == "sm_90a"
    assert len(lines(p, "cp.async.bulk.tensor.2d.shared::cta.global")) == 1
    assert len(lines(p, "cp.async.bulk.tensor.2d.global.shared::cta")) == 1
    assert ptx.count(p)["mbarrier"] >= 3


def test_reduce_ptx_has_reduce_add():
    p = cute_tma.ptx_of("tile_copy", reduce=True)
    assert any(".add." in l for l in lines(p, "cp.reduce.async.bulk.tensor"))


@pytest.mark.parametrize("R", [2, 4])
def test_broadcast_multicast_ptx(R):
    assert len(lines(cute_tma.ptx_of("broadcast", R=R, multicast=True), "multicast::cluster")) == 1
    assert not lines(cute_tma.ptx_of("broadcast", R=R, multicast=False), "multicast::cluster")


@pytest.mark.parametrize("stages,cluster", [(1, (1, 1)), (4, (1, 1)), (4, (2, 1))])
def test_gemm_ptx(stages, cluster):
    p = cute_gemm.ptx_of(stages, cluster)
    assert lines(p, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16")
    assert lines(p, "cp.async.bulk.tensor.2d.shared::")
    assert bool(lines(p, "multicast::cluster")) == (cluster != (1, 1))


def test_bad_inputs_give_clear_errors():
    with pytest.raises(ValueError, match="stages"):
        cute_gemm.TmaGemm(stages=9)
    with pytest.raises(ValueError, match="cluster"):
        cute_gemm.TmaGemm(cluster=(3, 1))
    with pytest.raises(ValueError, match="name"):
        cute_tma.ptx_of("nope")
    with pytest.raises(ValueError, match="dtype"):
        fake_tensor((8, 8), "int7")
    with pytest.raises(ValueError, match="shape"):
        fake_tensor((8, -1))
    assert cute_gemm.max_stages() == 4
    assert cute_tma.l2_bytes_read((256, 128), 2, 4, False) == 4 * cute_tma.l2_bytes_read((256, 128), 2, 4, True)


def _raise(*a):
    raise NotImplementedError


def test_stage_tx_check(capsys):
    ex.check_stage_tx(ex.stage_tx_ref)
    assert "correct" in capsys.readouterr().out
    ex.check_stage_tx(_raise)
    assert "not attempted" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="divide by the cluster"):
        ex.check_stage_tx(lambda t, s, c: ex.stage_tx_ref(t, s) // (c[0] * c[1]))
    with pytest.raises(CheckFailed, match="M x K"):
        ex.check_stage_tx(lambda t, s, c: t[0] * t[1] * s)


def test_mcast_mask_check(capsys):
    ex.check_mcast_mask(ex.mcast_mask_ref)
    assert "correct" in capsys.readouterr().out
    ex.check_mcast_mask(_raise)
    assert "not attempted" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="column-major"):
        ex.check_mcast_mask(lambda cl, crd, mode: ex.mcast_mask_ref(cl[::-1], crd[::-1], mode))
    with pytest.raises(CheckFailed):
        ex.check_mcast_mask(lambda cl, crd, mode: ex.mcast_mask_ref(cl, crd, 1 - mode))


@cute.jit
def _stub(self, pipe, state, atom_a, tAg, tAs, mask_a, atom_b, tBg, tBs, mask_b):
    pipe.producer_commit(state)


@cute.jit
def _no_acquire(self, pipe, state, atom_a, tAg, tAs, mask_a, atom_b, tBg, tBs, mask_b):
    bar = pipe.producer_get_barrier(state)
    cute.copy(atom_a, tAg[(None, state.count)], tAs[(None, state.index)], tma_bar_ptr=bar, mcast_mask=mask_a)
    cute.copy(atom_b, tBg[(None, state.count)], tBs[(None, state.index)], tma_bar_ptr=bar, mcast_mask=mask_b)


@cute.jit
def _only_a(self, pipe, state, atom_a, tAg, tAs, mask_a, atom_b, tBg, tBs, mask_b):
    pipe.producer_acquire(state)
    bar = pipe.producer_get_barrier(state)
    cute.copy(atom_a, tAg[(None, state.count)], tAs[(None, state.index)], tma_bar_ptr=bar, mcast_mask=mask_a)


def test_producer_check(capsys):
    ex.check_producer(cute_gemm.TmaGemm.load)
    assert "correct" in capsys.readouterr().out
    ex.check_producer(_stub)
    assert "not attempted" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="expect_tx"):
        ex.check_producer(_no_acquire)
    with pytest.raises(CheckFailed, match="tma load"):
        ex.check_producer(_only_a)


def test_row_order_tile_copy_changes_only_which_ctaid_indexes_which_axis():
    """day05/04's ablation changes one thing: the grid order of the tiles, not the copy."""
    col, row = (cute_tma.ptx_of("tile_copy", reduce=False, row_order=o) for o in (False, True))
    assert col != row
    strip = lambda p: [l for l in p.splitlines() if "shl.b32" not in l]
    assert strip(col) == strip(row)
