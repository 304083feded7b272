"""Planted bugs the PTX emulator (utils.emu) must flag: every kernel of the debugging lab
(utils/tma/lab.py EDITS), and races a GPU rarely shows. Each row: what was broken, and the report
it must give (an exception class and the words a learner reads, or a recorded deadlock whose
bounded wait then fired, status = 1, as on a GPU)."""
import re

import numpy as np
import pytest

from utils.core import results
from utils.cuda_cpp import day02
from utils.emu import (Deadlock, EmulatorError, MbarrierError, MbarrierInitRace, MisalignedAddress, RaceError,
                       TmaRuleError, device_empty, encode, launch, tensor_map, to_device)
from utils.tma import lab, runtime, update, update_run
from utils.tma.descriptor import make_spec

T = 10**9
DEADLOCK = "deadlock"                # the hang was caught: Report.deadlocks, and the kernel's status = 1
LAB = {
    "lab_hang": (DEADLOCK, r"127 of 128 arrivals pending"),
    "lab_expect_tx": (DEADLOCK, r"tx-count -\d+ B \(NEGATIVE"),
    "lab_phase": (RaceError, r"reads shared byte .* before the asynchronous copy that fills it"),
    "lab_fence": (RaceError, r"no fence\.proxy\.async after that write"),
    "lab_negative": (TmaRuleError, r"store coordinates .* start below 0"),
    "lab_misaligned": (MisalignedAddress, r"box starts at 0x10, not a multiple of 128 B"),
    "lab_mystery_1": (RaceError, r"before the asynchronous copy that fills it"),
    "lab_mystery_2": (TmaRuleError, r"start below 0"),
    "lab_mystery_3": (DEADLOCK, r"tx-count 2048 B still expected"),
    "lab_mystery_4": (RaceError, r"no fence\.proxy\.async after that write"),
    "lab_mystery_5": (MisalignedAddress, r"box starts at 0x40"),
    "lab_mystery_6": (DEADLOCK, r"3 of 4 arrivals pending"),
    "lab_mystery_7": (DEADLOCK, r"tx-count 128 B still expected"),     # its hang hides its missing fence
}


def run_lab(name, source=lab.SOURCE, seed=0, completion="adversarial"):
    rows, cols = 40, 100
    x = to_device(np.random.default_rng().standard_normal((rows, cols)).astype(np.float32))
    y, st = device_empty(x.shape, np.float32, np.nan), device_empty(1, np.int32, 0)
    rep = launch(source, name, 3, 128, [tensor_map(x, (16, 32)), tensor_map(y, (16, 32)), rows, cols, st, T],
                 shared_bytes=16 * 32 * 4 + 128 + 1024, seed=seed, completion=completion)
    return rep, st[0], x, y


def check(expect, run):
    kind, words = expect
    if kind == DEADLOCK:
        rep, status = run()[:2]
        assert status == 1 and rep.deadlocks, f"no deadlock recorded: {rep}"
        assert any(re.search(words, d) for d in rep.deadlocks), rep.deadlocks
        assert repr(rep).startswith("emulator:") and "DEADLOCK" in repr(rep)
    else:
        with pytest.raises(kind, match=words) as info:
            run()
        assert str(info.value).startswith("emulator:") and "at PTX line" in str(info.value)


def test_the_table_covers_every_lab_kernel():
    assert set(LAB) == set(lab.EDITS)


@pytest.mark.parametrize("name", sorted(LAB))
def test_lab_bug_is_flagged(name):
    check(LAB[name], lambda: run_lab(name))


def test_each_expected_report_is_the_recorded_gpu_symptom_or_stricter():
    from utils.emu import fidelity
    docs = results.documents("08_below_ptx")
    assert docs, "no recording of the lab on a GPU"
    for doc in docs:
        for row in doc["rows"]:
            if row["name"] in LAB:
                kind = LAB[row["name"]][0]
                name = "deadlock" if kind == DEADLOCK else kind.__name__
                assert name in fidelity.AGREES[fidelity.gpu_kind(row)], (doc["device"], row["name"])


def _edit(source, old, new, count=1):
    assert source.count(old) >= count, f"planted edit not found: {old!r}"
    return source.replace(old, new, count)


def _edit_in(source, kernel, old, new):
    """``_edit`` inside kernel ``kernel``'s definition only."""
    i = source.index(f" {kernel}(")
    return source[:i] + _edit(source[i:], old, new)


def test_unbounded_lab_hang_raises_deadlock():
    src = "#define COURSE_UNBOUNDED_WAIT\n" + lab.SOURCE
    with pytest.raises(Deadlock, match=r"127 of 128 arrivals pending"):
        run_lab("lab_hang", src)


def test_mbarrier_used_before_its_init_is_named():
    src = _edit_in(lab.SOURCE, "lab_fixed", "  if (threadIdx.x == 0) mbar_init(bar, 1);\n  __syncthreads();\n",
                "  if (threadIdx.x == 0) mbar_init(bar, 1);\n")
    kinds = set()
    for seed in range(6):             # another warp uses the barrier before its init, or before it is visible
        with pytest.raises((MbarrierError, RaceError)) as info:
            run_lab("lab_fixed", src, seed=seed)
        assert "no mbarrier was initialised" in str(info.value)       # the words the hint tables look for
        kinds.add(info.type)
        assert info.type is MbarrierError or isinstance(info.value, MbarrierError)   # MbarrierInitRace is both
    assert MbarrierInitRace in kinds, "the init-visibility rule never fired"


def _store_box(source=runtime.SOURCE, fence=1, kernel="tma_store_box"):
    g, tile = to_device(np.zeros((16, 32), np.float32)), to_device(np.ones((16, 32), np.float32))
    k = runtime.coords_arg((0, 0))
    launch(source, kernel, 1, 128, [tensor_map(g, (16, 32)), 2, k, tile.view(np.uint8).ravel(), tile.nbytes, 0,
                                    fence], shared_bytes=tile.nbytes + 1024)


def _pipelined(source):
    src = to_device(np.random.default_rng().standard_normal((70, 200)).astype(np.float32))
    dst, st = device_empty(src.shape, np.float32, 0), device_empty(1, np.int32, 0)
    a, b = tensor_map(src, (16, 64)), tensor_map(dst, (16, 64))
    launch(source, "tma_copy_pipelined", 2, 32, [a, b, 4, 20, 64, 16, 3, a.spec.box_bytes, st, T],
           shared_bytes=3 * a.spec.box_bytes + 1024)


def _chunk(source):
    src = to_device(np.arange(16 * 300, dtype=np.uint8))
    dst, st = device_empty(src.shape, np.uint8, 0), device_empty(1, np.int32, 0)
    launch(source, "bulk_copy_chunk", 2, 32, [src, dst, src.size, 4096, 0, st, T], shared_bytes=4096 + 1024)


def _update_race(flags):
    rng = np.random.default_rng()
    x, y = (to_device(rng.standard_normal((32, 64)).astype(np.float32)) for _ in range(2))
    spec = make_spec(x, (8, 16))
    slots = to_device(np.tile(encode(spec).view(np.uint8), (2, 1)))
    out, st = device_empty(2 * 2 * spec.box_bytes, np.uint8, 0), device_empty(1, np.int32, 0)
    launch(update.SOURCE, "update_race", 2, 128, [slots, y.ctypes.data, flags, spec.box_bytes, out, st, T],
           arrays=[x, y])


def _ring(parity):
    x = to_device(np.random.default_rng().standard_normal(4 * 500).astype(np.float32))
    y, st = device_empty(x.shape, np.float32, 0), device_empty(1, np.int32, 0)
    rep = launch(day02.with_producer_parity(parity), "pc_ring", 1, 64, [x, y, 500, 2, 0, 1, st, T],
                 shared_bytes=2 * 128 * 16)
    return rep, st[0]


def _pipeline_short_wait(seed):
    src = _edit_in(day02.SOURCE, "pipeline", '"n"(S - 1)', '"n"(S)')
    x = to_device(np.random.default_rng().standard_normal(4 * 2000).astype(np.float32))
    y = device_empty(x.shape, np.float32, 0)
    launch(src, "cp_async_pipeline_s2", 2, 64, [x, y, x.size // 4, 0], shared_bytes=2 * 64 * 16, seed=seed)


def _grouped_no_acquire():
    x = to_device(np.random.default_rng().standard_normal((24, 32)).astype(np.float32))
    spec = make_spec(x, (8, 16))
    src = _edit_in(update.SOURCE, "grouped_load_updated",
                   'asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(gdesc) : "memory");',
                   "")
    groups = to_device(np.array([(x.ctypes.data, 24, 32, x.strides[0])], update_run.GROUP))
    slots = to_device(encode(spec).view(np.uint8).reshape(1, 128))
    out, cyc, st = device_empty(spec.box_bytes, np.uint8, 0), device_empty(1, np.int64, 0), device_empty(1, np.int32, 0)
    launch(src, "grouped_load_updated", 1, 128, [tensor_map(x, (8, 16)), np.zeros(1024, np.uint8).view("V1024"),
                                                 groups.view(np.uint8), slots, 2, spec.box_bytes, out, cyc, st, T],
           arrays=[x])


def _lab_one_waiter(completion):
    src = _edit_in(lab.SOURCE, "lab_fixed", "    if (!mbar_wait_bounded(bar, it & 1, timeout_ns))",
                   "    if (threadIdx.x == 0 && !mbar_wait_bounded(bar, it & 1, timeout_ns))")
    run_lab("lab_fixed", src, completion=completion)


PLANTED = {
    "only thread 0 waits for the TMA load, every thread reads the tile": (
        (RaceError, r"before the asynchronous copy that fills it"), lambda: _lab_one_waiter("lazy")),
    "... even when every copy happens to land at once": (
        (RaceError, r"never saw phase 0 of the mbarrier"), lambda: _lab_one_waiter("eager")),
    "host-encoded descriptor in global memory used without the acquire": (
        (RaceError, r"never acquired: the tensormap proxy is not acquired"), _grouped_no_acquire),
    "TMA store of thread-written smem, no proxy fence": (
        (RaceError, r"no fence\.proxy\.async"), lambda: _store_box(fence=0)),
    "smem refilled by TMA before the store's wait_group.read": (
        (RaceError, r"while a bulk/TMA store still reads them"),
        lambda: _pipelined(_edit_in(runtime.SOURCE, "tma_copy_pipelined",
                                    'asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");\n'
                                    '      k.c[0]', "k.c[0]"))),
    "CTA exits before its bulk store read shared memory": (
        (RaceError, r"exited while the bulk store"),
        lambda: _chunk(_edit_in(runtime.SOURCE, "bulk_copy_chunk",
                                'asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");   '
                                '// smem must outlive the read\n', ""))),
    "descriptor replaced, released, not acquired": ((RaceError, r"without fence\.proxy\.tensormap::generic\.acquire"),
                                                    lambda: _update_race(1)),
    "descriptor replaced, acquired, never released": ((RaceError, r"no release to the tensormap proxy"),
                                                      lambda: _update_race(2)),
    "descriptor replaced while a load through it is in flight": ((RaceError, r"while the TMA load .* still in flight"),
                                                                 lambda: _update_race(7)),
    "producer waits on the wrong parity of the empty barrier": (
        (DEADLOCK, r"poll for the phase of parity 0"), lambda: _ring("(k / stages) & 1")),
    "cp.async pipeline waits for one group too few": (
        (RaceError, r"before the asynchronous copy that fills it \(the cp\.async"), lambda: _pipeline_short_wait(0)),
}


@pytest.mark.parametrize("what", sorted(PLANTED))
def test_planted_race_is_flagged(what):
    expect, run = PLANTED[what]
    check(expect, run)


def test_the_fixed_versions_of_the_planted_kernels_pass():
    _store_box(fence=1)
    _pipelined(runtime.SOURCE)
    _chunk(runtime.SOURCE)
    _update_race(3)
    rep, status = _ring("(((k) / (stages)) & 1) ^ 1")
    assert status == 0 and rep.ok


def test_every_error_is_an_emulator_error():
    for cls in (Deadlock, MbarrierError, MisalignedAddress, RaceError, TmaRuleError):
        assert issubclass(cls, EmulatorError)


def test_store_tile_exercise_stub_races_and_the_fenced_kernel_stores_the_box():
    """The day 5 · 02 exercise: the handed-out kernel (no proxy fence) must fail on a laptop too."""
    from utils.tma.store_check import STORE_KERNEL, STORE_STUB
    rng = np.random.default_rng()
    g = to_device(np.full((40, 100), np.nan, np.float32))
    inp = to_device(rng.standard_normal(16 * 32).astype(np.float32))
    args = [tensor_map(g, (16, 32)), inp, 64, 16]                    # box at column 64, row 16
    with pytest.raises(RaceError, match=r"no fence\.proxy\.async"):
        launch(STORE_STUB, STORE_KERNEL, 1, 128, args)
    fixed = _edit(STORE_STUB, "  __syncthreads();", '  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");\n'
                  "  __syncthreads();")
    rep = launch(fixed, STORE_KERNEL, 1, 128, args, seed=4)
    want = np.full((40, 100), np.nan, np.float32)
    want[16:32, 64:96] = 2 * inp.reshape(16, 32)
    assert rep.ok and np.array_equal(g, want, equal_nan=True)
