"""Exercise 4 of day 5 · 06 (issue 38): the learner's ``load_group_box`` builds group g's descriptor
on the device and loads through it; ``check_group_box`` runs it on the emulator. A table of kernels
a learner would write: each wrong one rejected with the hint for its slip, each right one (written
differently) accepted. Every check is two emulated launches (about a second)."""
import json
import pathlib

import numpy as np
import pytest

from utils.core.checks import CheckFailed
from utils.day05 import group_desc as gd, group_desc_check as gc
from utils.tma.store_check import c_tokens

ROOT = pathlib.Path(__file__).resolve().parents[1]
NB = "day05_tma/06_skinny_grouped.ipynb"


def _cell_source(path):
    """``load_group_box_src`` as the notebook's cell defines it."""
    cell = next("".join(c["source"]) for c in json.loads((ROOT / path).read_text())["cells"]
                if "".join(c["source"]).startswith("load_group_box_src = r"))
    ns = {}
    exec(cell, ns)
    return ns["load_group_box_src"]


SOL = _cell_source("solutions/" + NB)
ACQ = '  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(slot) : "memory");  // reader\n'
REL = '  asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");                     // writer\n'
DIM = ('  asm volatile("tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 1, %1;" :: "l"(slot), "r"(rows) '
       ': "memory");\n')
COPY = "  for (int i = 0; i < 16; ++i) slot->opaque[i] = base.opaque[i];   // the base's 128 bytes (generic proxy)\n"


def edit(*pairs):
    src = SOL
    for old, new in pairs:
        assert old in src, old
        src = src.replace(old, new)
    return src


SHARED_PATH = gd.SIGNATURE + r""" {
  __shared__ __align__(128) TensorMap sdesc;                 // build in shared memory, publish to the slot
  const unsigned s = smem_u32(&sdesc), lane = threadIdx.x;
  if (lane >= 32) return;                                    // warp 0
  if (lane < 16) sdesc.opaque[lane] = base.opaque[lane];
  __syncwarp();
  if (lane == 0) {
    asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;"
                 :: "r"(s), "l"(a + (long long)row0 * ld) : "memory");
    asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 1, %1;" :: "r"(s), "r"(rows) : "memory");
  }
  __syncwarp();
  asm volatile("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned"
               " [%0], [%1], 128;" :: "l"(slot), "r"(s) : "memory");
  if (lane == 0) {
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(slot) : "memory");
    asm volatile("prefetch.tensormap [%0];" :: "l"(slot) : "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(BOX_ROWS * BOX_COLS * 4) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" :: "r"(smem_u32(tile)), "l"(slot), "r"(x), "r"(y), "r"(bar) : "memory");
  }
}"""

GLOBAL_16_LANES = gd.SIGNATURE + r""" {
  // 16 lanes copy; every field a group could change is replaced, the address by integer arithmetic
  if (threadIdx.x < 16) slot->opaque[threadIdx.x] = base.opaque[threadIdx.x];
  __syncwarp();
  if (threadIdx.x == 0) {
    const unsigned long long addr = (unsigned long long)a + (unsigned long long)row0 * ld * sizeof(float);
    const unsigned long long pitch = (unsigned long long)ld * sizeof(float);
    const unsigned cols = 0;   // unused: K stays the base's
    asm volatile("tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;" :: "l"(slot), "l"(addr) : "memory");
    asm volatile("tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 1, %1;" :: "l"(slot), "r"(rows) : "memory");
    asm volatile("tensormap.replace.tile.global_stride.global.b1024.b64 [%0], 0, %1;" :: "l"(slot), "l"(pitch) : "memory");
    asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(slot) : "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(512) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" :: "r"(smem_u32(tile)), "l"(slot), "r"(x), "r"(y), "r"(bar) : "memory");
    (void)cols;
  }
}"""

RIGHT = {"ours: one thread, in place in global memory, release": SOL,
         "warp 0 in shared memory, cp_fenceproxy, prefetch": SHARED_PATH,
         "16 lanes copy, integer address, stride replaced too": GLOBAL_16_LANES}

WRONG = {  # what a learner writes -> (the source, words of the hint it must get)
    "no acquire before the load": (edit((ACQ, "")), "never acquired the slot"),
    "no release after the replaces": (edit((REL, "")), "never released"),
    "the acquire before the change": (edit((ACQ, ""), (COPY, ACQ + COPY)), "came before the descriptor's last change"),
    "address in bytes from an integer, not scaled by 4": (edit(('"l"(a + (long long)row0 * ld)',
                                                               '"l"((unsigned long long)a + row0 * ld)')), "16-byte aligned"),
    "the row count in ordinal 0 (dims are innermost first)": (edit(("b32 [%0], 1, %1", "b32 [%0], 0, %1")),
                                                              "ordinals are innermost first"),
    "the base's extent kept (no global_dim)": (edit((DIM, "")), "still the base's"),
    "the stride in elements": (edit((DIM, DIM + '  asm volatile("tensormap.replace.tile.global_stride.global.b1024.b64 '
                                            '[%0], 0, %1;" :: "l"(slot), "l"((long long)ld) : "memory");\n')), "in BYTES"),
    "loaded through the base descriptor": (edit(('"l"(slot), "r"(x)', '"l"(&base), "r"(x)')), "the load went through base"),
    "coordinates {y, x}": (edit(('"r"(x), "r"(y)', '"r"(y), "r"(x)')), "innermost first: {x (column), y (row)}"),
    "expect_tx in elements, not bytes": (edit(('"r"(BOX_ROWS * BOX_COLS * 4)', '"r"(BOX_ROWS * BOX_COLS)')),
                                         "box's bytes"),
    "right only at the shown shape (ld = 40)": (edit(("(long long)row0 * ld", "(long long)row0 * 40")),
                                                "a + row0 * ld"),
    "fields replaced in a slot never filled from base": (edit((COPY, "")), "copy all 128 bytes of base"),
    "built in shared memory and loaded through it": (
        SHARED_PATH.replace('"l"(slot), "r"(x)', '"l"(&sdesc), "r"(x)'), "only from .param, .const or .global"),
}


@pytest.mark.parametrize("name", RIGHT)
def test_right_kernels_written_differently_pass(name, capsys):
    gc.check_group_box(RIGHT[name])
    out = capsys.readouterr().out
    assert "correct" in out and gd.EMULATOR_LINE in out and "GPU" in out


@pytest.mark.parametrize("name", WRONG)
def test_wrong_kernel_is_rejected_with_its_hint(name):
    source, words = WRONG[name]
    with pytest.raises(CheckFailed) as e:
        gc.check_group_box(source)
    hint = str(e.value).split("hint:")[-1]
    assert words in hint, str(e.value)
    assert "emulator" in str(e.value)             # says where it ran


def test_the_stub_is_not_attempted_and_equals_the_generated_cell(capsys):
    assert c_tokens(_cell_source(NB)) == c_tokens(gd.STUB)
    gc.check_group_box(_cell_source(NB))
    assert "not attempted" in capsys.readouterr().out
    assert gd.SIGNATURE in SOL.replace("\n                                              ", " ")


@pytest.mark.parametrize("answer, words", [(None, "as a string"), ("int main() {}", "keep the function's name"),
                                           (gd.SIGNATURE + " { oops; }", "does not compile")])
def test_malformed_answers_are_explained(answer, words):
    with pytest.raises(CheckFailed, match=words):
        gc.check_group_box(answer)


def test_the_gpu_half_runs_only_where_the_tier_says_and_its_verdict_counts(monkeypatch):
    from utils.day05 import group_desc_run

    class Tier:
        def has(self, f):
            return f in ("tma", "tensormap_replace")
    calls = []

    def fake(source, cases):
        calls.append(len(cases))
        outs = [gd.expected(c) for c in cases]
        outs[1][..., 0, 0] = np.where(np.isnan(outs[1][..., 0, 0]), np.nan, 7.0)
        return {"outs": outs, "status": [0, 0], "error": None}
    monkeypatch.setattr(group_desc_run, "gpu_outputs", fake)
    with pytest.raises(CheckFailed, match="on the GPU"):
        gc.check_group_box(SOL, Tier())
    assert calls == [2]


def test_cases_are_not_multiples_of_the_box_and_hold_an_empty_group():
    for _ in range(5):
        shown, rnd = gd.cases()
        assert shown.sizes == [13, 0, 21, 6] and shown.K % gd.BOX[1] and rnd.K % gd.BOX[1]
        assert 0 in rnd.sizes or 3 in rnd.sizes
        assert rnd.a.shape[1] != 40 and (rnd.a.shape[1] * 4) % 16 == 0
        want = gd.expected(rnd)
        assert np.isnan(want).any() and (want == 0).any()       # CTAs without a box; TMA's zero fill


def test_race_names_follow_the_emulator_on_update_race():
    from utils.emu import course
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((16, 32)).astype(np.float32) for _ in range(2))
    names = {}
    for rel, acq, fly in [(False, True, False), (True, False, False), (True, True, True), (True, True, False)]:
        _, rep = course.update_race(x, y, (8, 16), release=rel, acquire=acq, in_flight=fly)
        names[(rel, acq, fly)] = gd.race_names(rep)
    assert names == {(False, True, False): [gd.RACE_WORDS["no_release"]],
                     (True, False, False): [gd.RACE_WORDS["acquire_early"]],
                     (True, True, True): [gd.RACE_WORDS["in_flight"]], (True, True, False): []}


def test_slot_fields_read_the_emulator_layout():
    from utils.emu import encode
    from utils.tma.descriptor import make_spec
    a = np.zeros((40, 40), np.float32)
    f = gd.slot_fields(encode(make_spec(a[:, :36], gd.BOX)).view(np.uint8))
    assert f["dims"] == (36, 40) and f["strides"] == (160,) and f["box"] == (16, 8) and f["address"] == a.ctypes.data
    assert gd.slot_fields(np.zeros(128, np.uint8)) is None


def _tma_gpu() -> bool:
    try:
        import torch
        return torch.cuda.is_available() and torch.cuda.get_device_capability(0)[0] >= 9
    except ImportError:
        return False


@pytest.mark.skipif(not _tma_gpu(), reason="needs a GPU with TMA and tensormap.replace (compute capability >= 9.0)")
def test_on_a_tma_gpu_the_kernel_runs_and_every_element_matches():
    from utils.day05.group_desc_run import gpu_outputs
    cases = gd.cases()
    res = gpu_outputs(SOL, cases)
    assert res["error"] is None and res["status"] == [0, 0], res["error"]
    for case, got in zip(cases, res["outs"]):
        assert np.array_equal(got, gd.expected(case), equal_nan=True), case.describe()
    bad = gpu_outputs(WRONG["coordinates {y, x}"][0], cases)    # the GPU half judges values on its own
    assert bad["error"] is None and not np.array_equal(bad["outs"][0], gd.expected(cases[0]), equal_nan=True)


@pytest.mark.skipif(_tma_gpu(), reason="a GPU is present: the test above runs the child for real")
def test_gpu_outputs_reports_a_child_that_cannot_run():
    from utils.day05.group_desc_run import gpu_outputs
    res = gpu_outputs(SOL, gd.cases()[:1], timeout_s=120)
    assert res["error"] and res["outs"] == []
    with pytest.raises(ValueError):
        gpu_outputs(SOL, [])
