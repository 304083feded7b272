"""Every door agrees (issue 35): one bad input, one rule, one error, whichever helper takes it.

A *door* is a public helper that takes an argument of some kind (a byte address, a cluster size,
an element size, a global shape, a box, a dtype to reduce-add, a size or a count). Each door of a
kind is listed once in ``DOORS[kind]`` as a function of the value. ``BAD`` sends each bad value
through every door of its kind and asserts the same exception type (exactly) and a message that
names the rule (a regex); ``GOOD`` sends the right values through the same doors and asserts
they are accepted. The doors that launch on a GPU are accepted when they get past every rule to
their first GPU step (:class:`ReachedGPU`, raised by stand-ins for ``to_cute``, ``sm_count`` and
CuPy): the rules all run on the CPU first, so a laptop gets the same error as a Hopper machine.

The rules themselves live in ``utils/tma/rules.py`` and ``utils/core/args.py``; the TMA-specific
rows (strides, boxes, coordinates, swizzle...) are in ``tests/test_tma_rules.py``.
"""
import re
import sys
import types

import numpy as np
import pytest

import utils

T = utils.setup(quiet=True)
torch = pytest.importorskip("torch")
from utils.cute_dsl import attention as cute_attention, compat, counters, gemm, gemm_cpasync  # noqa: E402
from utils.cute_dsl import gemm_ws, ladder, tma as cute_tma  # noqa: E402
from utils.day05 import copy_measure, skinny  # noqa: E402
from utils.tma import feed, model, rules, runtime, splitk_model, update, update_run  # noqa: E402
from utils.tma.descriptor import ArrayInfo, TensorMapSpec, make_spec  # noqa: E402

st = pytest.importorskip("utils.day05.skinny_triton")


class ReachedGPU(Exception):
    """The door passed every rule and took its first GPU step."""


def _gpu(*args, **kwargs):
    raise ReachedGPU


class _NoCupy(types.ModuleType):
    """``import cupy`` inside a launcher: any use of it is the first GPU step."""

    def __getattr__(self, name):
        raise ReachedGPU


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    monkeypatch.setattr(compat, "to_cute", _gpu)
    monkeypatch.setattr(gemm_ws, "sm_count", _gpu)
    monkeypatch.setitem(sys.modules, "cupy", _NoCupy("cupy"))


class FakeCupy:
    """What the launchers read of a CuPy array before they touch the GPU."""
    __module__ = "cupy._core.core"          # type(a).__module__: how the launchers recognise CuPy

    def __init__(self, shape, dtype="float32", ptr=0x7F0000000000):
        self.shape, self.ndim, self.dtype = tuple(shape), len(shape), np.dtype(dtype)
        self.strides = tuple(int(np.prod(shape[i + 1:])) * self.dtype.itemsize for i in range(len(shape)))
        self.nbytes = int(np.prod(shape)) * self.dtype.itemsize
        self.data, self.flags = types.SimpleNamespace(ptr=ptr), types.SimpleNamespace(c_contiguous=True)

    def __getattr__(self, name):             # anything else (astype, get, ...) works on the GPU
        raise ReachedGPU


def bulk(ptr=0x10000, nbytes=4096):
    return types.SimpleNamespace(flags=types.SimpleNamespace(c_contiguous=True), data=types.SimpleNamespace(ptr=ptr),
                                 nbytes=nbytes, dtype="float16")


def torch_misaligned(offset_bytes, shape=(64, 64), dtype=torch.float16):
    """A contiguous torch tensor starting ``offset_bytes`` past a 16-B boundary."""
    size = torch.tensor([], dtype=dtype).element_size()
    buf = torch.zeros(int(np.prod(shape)) + 64, dtype=dtype)
    start = ((offset_bytes - buf.data_ptr()) % 16) // size
    return buf[start:start + int(np.prod(shape))].view(shape)


def np_misaligned(offset_bytes, shape=(32, 64), dtype=np.float16):
    buf = np.zeros(int(np.prod(shape)) * np.dtype(dtype).itemsize + 32, np.uint8)
    start = (offset_bytes - buf.ctypes.data) % 16
    return buf[start:start + int(np.prod(shape)) * np.dtype(dtype).itemsize].view(dtype).reshape(shape)


T16 = torch.zeros(256, 64, dtype=torch.float16)
STACKED = {R: torch.zeros(128 * R, 64, dtype=torch.float16) for R in (1, 2, 4)}   # run_broadcast's dst
BASE = make_spec(ArrayInfo((64, 64), (128, 2), "float16", 0x7F0000000000), (8, 64))
FEED = dict(src_nbytes=16 << 20, R=2, mode="multicast", chunk_bytes=16384, stages=4, per_cta=32, ctas=1584)
BULK_CFG = dict(kind="tile", box_shape=(32, 256))


def _reduce_arrays(name):
    return np.zeros((8, 16), name)


def _torch_dtype(name):
    return getattr(torch, name)


def _triton_out(name):
    """Operands where the Triton kernels run: the interpreter's CPU, or the GPU on a GPU tier."""
    a, b = (torch.zeros(*s, dtype=torch.float16, device=T.device) for s in ((16, 64), (64, 32)))
    return a, b, torch.zeros(16, 32, dtype=_torch_dtype(name), device=T.device)


DOORS = {
    # a byte address (the tensor map's global address; a bulk copy's source)
    "address": {
        "make_spec(ArrayInfo)": lambda v: make_spec(ArrayInfo((32, 64), (128, 2), "float16", v), (8, 64)),
        "TensorMapSpec": lambda v: TensorMapSpec("float16", 2, v, (64, 32), (128,), (64, 8), (1, 1)),
        "update.group_spec": lambda v: update.group_spec(BASE, v, (32, 64), (128, 2)),
        "runtime.bulk_launcher": lambda v: runtime.bulk_launcher(bulk(ptr=v), bulk()),
        "runtime.chunk_launcher": lambda v: runtime.chunk_launcher(bulk(), bulk(ptr=v)),
    },
    # a real array at a misaligned address (its address is not ours to choose: offset from 16 B)
    "address offset": {
        "make_spec": lambda off: make_spec(np_misaligned(off), (8, 64)),
        "tma_load": lambda off: model.tma_load(np_misaligned(off), (8, 64), (0, 0)),
        "tma_store": lambda off: model.tma_store(np_misaligned(off), np.zeros((8, 64), np.float16), (0, 0)),
        "tma_reduce_add": lambda off: model.tma_reduce_add(np_misaligned(off), np.zeros((8, 64), np.float16), (0, 0)),
        "cute run_tile_copy": lambda off: cute_tma.run_tile_copy(torch_misaligned(off), T16[:64]),
        "cute run_gemm": lambda off: gemm.run_gemm(torch_misaligned(off), T16[:64], T16[:64]),
    },
    # CTAs of a 1-D multicast cluster
    "cluster size R": {
        "cute l2_bytes_read": lambda R: cute_tma.l2_bytes_read((256, 128), 2, R, True),
        "cute run_broadcast": lambda R: cute_tma.run_broadcast(T16[:128], STACKED.get(R, T16), R),
        "feed.check_args": lambda R: feed.check_args(**{**FEED, "R": R}),
        "feed.l2_bytes": lambda R: feed.l2_bytes(R, "multicast", 16384, 32, 1584),
        "feed.feed_reference": lambda R: feed.feed_reference(FakeCupy((8 << 20,), "float16"), R, 16384, 32, 1584),
    },
    # bytes per element of a TMA tile type
    "element size": {
        "tma_traffic": lambda s: model.tma_traffic((40, 64), (8, 16), (0, 0), s),
        "smem_positions": lambda s: model.smem_positions((8, 16), s),
        "cute l2_bytes_read": lambda s: cute_tma.l2_bytes_read((256, 128), s, 2, True),
        "gemm.max_stages": lambda s: gemm.max_stages(itemsize=s),
        "gemm_ws.ws_stages": lambda s: gemm_ws.ws_stages(s),
        "counters.tiled_l2_bytes": lambda s: counters.tiled_l2_bytes(4096, s),
        "copy_measure.buffer_bytes": lambda s: copy_measure.buffer_bytes(BULK_CFG, s),
    },
    # a global (tensor) shape, array order
    "global shape": {
        "make_spec": lambda shape: make_spec(np.zeros(shape, np.float16), (1, 8)),
        "tma_load": lambda shape: model.tma_load(np.zeros(shape, np.float16), (1, 8), (0, 0)),
        "tma_traffic": lambda shape: model.tma_traffic(shape, (1, 8), (0, 0), 2),
        "splitk reduce_partials": lambda shape: splitk_model.reduce_partials(
            np.zeros(shape, np.float32), [np.zeros(shape, np.float32)], (1, 4)),
        "cute l2_bytes_read": lambda shape: cute_tma.l2_bytes_read(shape, 2, 2, True),
        "cute run_tile_copy": lambda shape: cute_tma.run_tile_copy(torch.zeros(shape, dtype=torch.float16),
                                                                   torch.zeros(shape, dtype=torch.float16)),
        "cute run_gemm": lambda shape: gemm.run_gemm(torch.zeros(shape, dtype=torch.float16), T16[:64],
                                                     torch.zeros(shape[0], 64, dtype=torch.float16)),
        "cute run_ws": lambda shape: gemm_ws.run_ws(torch.zeros(shape, dtype=torch.float16), T16[:64],
                                                    torch.zeros(shape[0], 64, dtype=torch.float16)),
    },
    # a box (block) shape, array order
    "box shape": {
        "make_spec": lambda box: make_spec(np.zeros((40, 64), np.float16), box),
        "tma_load": lambda box: model.tma_load(np.zeros((40, 64), np.float16), box, (0, 0)),
        "tma_traffic": lambda box: model.tma_traffic((40, 64), box, (0, 0), 2),
        "smem_positions": lambda box: model.smem_positions(box, 2),
        "smem_image": lambda box: model.smem_image(np.zeros(box, np.float16)),
        "splitk reduce_partials": lambda box: splitk_model.reduce_partials(
            np.zeros((40, 64), np.float16), [np.zeros((40, 64), np.float16)], box),
    },
    # the dtype of a TMA reduce-add's target
    "reduce-add dtype": {
        "tma_reduce_add": lambda d: model.tma_reduce_add(_reduce_arrays(d), _reduce_arrays(d), (0, 0)),
        "splitk reduce_partials": lambda d: splitk_model.reduce_partials(_reduce_arrays(d), [_reduce_arrays(d)],
                                                                         (8, 16)),
        "runtime.store_box": lambda d: runtime.store_box(_reduce_arrays(d), _reduce_arrays(d), (0, 0), reduce=True),
        "update_run.reduce_add": lambda d: update_run.reduce_add(FakeCupy((64, 64), d), FakeCupy((2, 64, 64), d),
                                                                 (64, 64)),
        "cute run_tile_copy": lambda d: cute_tma.run_tile_copy(*[torch.zeros(128, 64, dtype=_torch_dtype(d))] * 2,
                                                               reduce=True),
        "triton skinny": lambda d: st.skinny(*_triton_out(d)[:2], splits=2, out=_triton_out(d)[2], BM=16, BN=32, BK=32),
        "triton streamk": lambda d: st.streamk(*_triton_out(d)[:2], out=_triton_out(d)[2], BM=16, BN=32, BK=32),
    },
    # the dtype of a TMA tensor (torch or NumPy)
    "tensor dtype": {
        "make_spec": lambda d: make_spec(np.zeros((64, 64), d), (8, 64)),
        "tma_load": lambda d: model.tma_load(np.zeros((64, 64), d), (8, 64), (0, 0)),
        "cute run_tile_copy": lambda d: cute_tma.run_tile_copy(*[torch.zeros(128, 64, dtype=_torch_dtype(d))] * 2),
        "cute run_gemm": lambda d: gemm.run_gemm(*[torch.zeros(128, 64, dtype=_torch_dtype(d))] * 2,
                                                 torch.zeros(128, 128, dtype=_torch_dtype(d))),
    },
    # the dtype of a wgmma GEMM's operands
    "wgmma dtype": {
        "cute run_gemm": lambda d: gemm.run_gemm(*[torch.zeros(128, 64, dtype=d)] * 2, torch.zeros(128, 128, dtype=d)),
        "cute run_ws": lambda d: gemm_ws.run_ws(*[torch.zeros(128, 64, dtype=d)] * 2, torch.zeros(128, 128, dtype=d)),
        "cute run_cpasync": lambda d: gemm_cpasync.run_cpasync(torch.zeros(128, 64, dtype=d),
                                                               torch.zeros(256, 64, dtype=d),
                                                               torch.zeros(128, 256, dtype=d)),
        "ladder.run": lambda d: ladder.run(*[torch.zeros(128, 64, dtype=d)] * 2, torch.zeros(128, 128, dtype=d),
                                           list(ladder.STEPS)[-1]),
        "cute attention.operands": lambda d: cute_attention.operands(*[torch.zeros(1, 1, 128, 64, dtype=d)] * 4),
    },
    # a feed chunk (one 16-B read per consumer thread: multiples of 2048 B)
    "feed chunk_bytes": {
        "feed.check_args": lambda v: feed.check_args(**{**FEED, "chunk_bytes": v}),
        "feed.delivered_bytes": lambda v: feed.delivered_bytes(v, 32, 1584),
        "feed.l2_bytes": lambda v: feed.l2_bytes(2, "multicast", v, 32, 1584),
        "feed.feed_reference": lambda v: feed.feed_reference(FakeCupy((8 << 20,), "float16"), 2, v, 32, 1584),
    },
    # chunks each feed CTA receives
    "feed per_cta": {
        "feed.check_args": lambda v: feed.check_args(**{**FEED, "per_cta": v}),
        "feed.delivered_bytes": lambda v: feed.delivered_bytes(16384, v, 1584),
        "feed.l2_bytes": lambda v: feed.l2_bytes(2, "multicast", 16384, v, 1584),
    },
    # a 1-D bulk copy's chunk (cp.async.bulk: multiples of 16 B)
    "bulk chunk_bytes": {
        "runtime.bulk_launcher": lambda v: runtime.bulk_launcher(bulk(), bulk(), chunk_bytes=v),
        "runtime.chunk_launcher": lambda v: runtime.chunk_launcher(bulk(), bulk(), chunk_bytes=v),
        "runtime.serial_launcher": lambda v: runtime.serial_launcher(bulk(), bulk(), chunk_bytes=v),
    },
    # a GEMM's M (rows of A and C)
    "GEMM M": {
        "gemm_ws.check_grid": lambda M: gemm_ws.check_grid(M, 8192, False),
        "skinny.bytes_moved": lambda M: skinny.bytes_moved(M, 8192, 8192, 2),
        "skinny.splitk_extra_bytes": lambda M: skinny.splitk_extra_bytes(M, 8192, 2),
        "skinny.tiles": lambda M: skinny.tiles(M, 8192, 64, 128),
    },
    # yes/no arguments
    "multicast flag": {
        "cute l2_bytes_read": lambda f: cute_tma.l2_bytes_read((256, 128), 2, 2, f),
        "cute run_broadcast": lambda f: cute_tma.run_broadcast(T16[:128], T16, 2, f),
        "TmaGemm": lambda f: gemm.TmaGemm(cluster=(2, 1), multicast=f),
    },
    "reduce flag": {
        "runtime.store_box": lambda f: runtime.store_box(np.zeros((8, 16), np.float32), np.zeros((8, 16), np.float32),
                                                         (0, 0), reduce=f),
        "cute run_tile_copy": lambda f: cute_tma.run_tile_copy(T16[:128], T16[:128], reduce=f),
    },
}

ADDRESS = r"(address|ptr) must be a byte address \(an int in 0\.\.2\*\*64-1\), got "
ELEM = r"(elem_size|itemsize) must be one of \(1, 2, 4, 8\) \(bytes per element of a TMA tile type\), got "
R_RULE = r"cluster size R must be one of \(1, 2, 4\), got "
REDUCE = (r"dtype {} cannot be reduce-added by TMA: cp\.reduce\.async\.bulk\.tensor \.add takes uint32, int32, "
          r"uint64, float32, float16, bfloat16")
WRONG_KIND = r" \({}, not an int\)"

BAD = [  # (kind, value, exception, regex the message must match)
    ("address", -16, ValueError, r"address -0x10 is negative: it must be a byte address"),
    ("address", 2**64, ValueError, r"address 0x10000000000000000 does not fit in 64 bits"),
    ("address", 2**64 + 16, ValueError, r"does not fit in 64 bits"),
    ("address", None, TypeError, ADDRESS + r"None" + WRONG_KIND.format("NoneType")),
    ("address", True, TypeError, ADDRESS + r"True" + WRONG_KIND.format("bool")),
    ("address", 65536.0, TypeError, ADDRESS + r"65536\.0" + WRONG_KIND.format("float")),
    ("address", 0x10008, ValueError, r"address 0x10008 is not 16-B aligned \(address % 16 = 8\)"),
    ("address offset", 8, ValueError, r"address 0x[0-9a-f]+ is not 16-B aligned \(address % 16 = 8\)"),
    ("address offset", 4, ValueError, r"address 0x[0-9a-f]+ is not 16-B aligned \(address % 16 = 4\)"),
    ("cluster size R", 0, ValueError, R_RULE + "0$"),
    ("cluster size R", 3, ValueError, R_RULE + "3$"),
    ("cluster size R", -2, ValueError, R_RULE + "-2$"),
    ("cluster size R", None, TypeError, R_RULE + "None" + WRONG_KIND.format("NoneType")),
    ("cluster size R", True, TypeError, R_RULE + "True" + WRONG_KIND.format("bool")),
    ("cluster size R", 2.0, TypeError, R_RULE + r"2\.0" + WRONG_KIND.format("float")),
    ("element size", 0, ValueError, ELEM + "0$"),
    ("element size", 3, ValueError, ELEM + "3$"),
    ("element size", 16, ValueError, ELEM + "16$"),
    ("element size", None, TypeError, ELEM + "None" + WRONG_KIND.format("NoneType")),
    ("element size", True, TypeError, ELEM + "True" + WRONG_KIND.format("bool")),      # True == 1 once passed
    ("element size", 2.0, TypeError, ELEM + r"2\.0" + WRONG_KIND.format("float")),
    ("global shape", (0, 64), ValueError, r"global dimension 0 \(dim 1 = array axis 0\) must be in 1\.\.2\*\*32"),
    ("global shape", (64, 0), ValueError, r"global dimension 0 \(dim 0 = array axis 1\) must be in 1\.\.2\*\*32"),
    ("box shape", (0, 16), ValueError, r"box dimension 0 \(dim 1 = array axis 0\) must be at least 1"),
    ("box shape", (8, 0), ValueError, r"box dimension 0 \(dim 0 = array axis 1\) must be at least 1"),
    ("box shape", (300, 16), ValueError, r"box dimension 300 \(dim 1 = array axis 0\) exceeds 256 elements"),
    ("box shape", (8, 4), ValueError, r"inner box is 8 B \(4 x 2 B\), not a multiple of 16 B"),
    ("reduce-add dtype", "float64", ValueError, REDUCE.format("float64")),
    ("reduce-add dtype", "int64", ValueError, REDUCE.format("int64")),
    ("reduce-add dtype", "uint8", ValueError, REDUCE.format("uint8")),
    ("tensor dtype", "int8", ValueError, r"dtype 'int8' is not a TMA tile type.*view the data as uint8"),
    ("tensor dtype", "complex64", ValueError, r"dtype 'complex64' is not a TMA tile type"),
    ("tensor dtype", "bool", ValueError, r"dtype 'bool' is not a TMA tile type"),
    ("wgmma dtype", torch.float32, ValueError,
     r"dtype must be float16 or bfloat16 \(wgmma operands\), got torch\.float32"),
    ("feed chunk_bytes", 0, ValueError, r"chunk_bytes must be a positive multiple of 2048 B \(one 16-byte read per "
     r"consumer thread\), got 0$"),
    ("feed chunk_bytes", 3072, ValueError, r"chunk_bytes must be a positive multiple of 2048 B .*got 3072$"),
    ("feed chunk_bytes", None, TypeError, r"chunk_bytes must be a positive multiple of 2048 B .*got None"
     + WRONG_KIND.format("NoneType")),
    ("feed per_cta", 0, ValueError, r"per_cta \(chunks each CTA receives\) must be a positive int, got 0$"),
    ("feed per_cta", None, TypeError, r"per_cta \(chunks each CTA receives\) must be a positive int, got None"),
    ("feed per_cta", True, TypeError, r"per_cta .* must be a positive int, got True" + WRONG_KIND.format("bool")),
    ("bulk chunk_bytes", 0, ValueError, r"chunk_bytes must be a positive multiple of 16, got 0$"),
    ("bulk chunk_bytes", 1000, ValueError, r"chunk_bytes must be a positive multiple of 16, got 1000$"),
    ("bulk chunk_bytes", None, TypeError, r"chunk_bytes must be a positive multiple of 16, got None"
     + WRONG_KIND.format("NoneType")),
    ("GEMM M", 0, ValueError, r"M must be a positive int, got 0$"),
    ("GEMM M", -128, ValueError, r"M must be a positive int, got -128$"),
    ("GEMM M", None, TypeError, r"M must be a positive int, got None" + WRONG_KIND.format("NoneType")),
    ("GEMM M", 128.0, TypeError, r"M must be a positive int, got 128\.0" + WRONG_KIND.format("float")),
    ("multicast flag", 1, TypeError, r"multicast must be True or False, got 1 \(int\)"),
    ("multicast flag", None, TypeError, r"multicast must be True or False, got None \(NoneType\)"),
    ("reduce flag", 1, TypeError, r"reduce must be True or False, got 1 \(int\)"),
]

GOOD = [  # (kind, value): accepted by every door of the kind (or reaching its first GPU step)
    ("address", 0x10000), ("address", 0), ("address", 2**64 - 16), ("address", np.uint64(2**64 - 16)),
    ("address offset", 0),
    ("cluster size R", 2), ("cluster size R", 4), ("cluster size R", np.int64(4)),
    ("element size", 2), ("element size", np.int32(2)),
    ("global shape", (16, 64)),
    ("box shape", (8, 16)), ("box shape", (1, 8)),
    ("reduce-add dtype", "float32"), ("reduce-add dtype", "float16"), ("reduce-add dtype", "int32"),
    ("tensor dtype", "float16"),
    ("wgmma dtype", torch.float16), ("wgmma dtype", torch.bfloat16),
    ("feed chunk_bytes", 16384), ("feed chunk_bytes", 2048),
    ("feed per_cta", 1), ("feed per_cta", np.int64(32)),
    ("bulk chunk_bytes", 16), ("bulk chunk_bytes", 4096),
    ("GEMM M", 128), ("GEMM M", np.int64(1)),
    ("multicast flag", True), ("multicast flag", False), ("multicast flag", np.bool_(True)),
    ("reduce flag", True), ("reduce flag", False),
]
NOT_GOOD_FOR = {  # (kind, door) -> right values the door refuses for a narrower rule of its own kernel
    ("reduce-add dtype", "update_run.reduce_add"): ("float16", "int32"),   # it adds fp32 tiles only
    ("reduce-add dtype", "triton skinny"): ("int32",),                     # fp32, fp16 and bf16 C only
    ("reduce-add dtype", "triton streamk"): ("int32",),
}


def _ids(rows):
    return [f"{r[0]}={r[1]!r}" for r in rows]


@pytest.mark.parametrize("kind, value, exc, match", BAD, ids=_ids(BAD))
def test_every_door_gives_the_same_error(kind, value, exc, match):
    texts = {}
    for door, call in DOORS[kind].items():
        try:
            call(value)
        except ReachedGPU:
            raise AssertionError(f"{door} accepted {kind} {value!r}: it reached the GPU") from None
        except Exception as err:                          # noqa: BLE001  (checked just below)
            assert type(err) is exc, f"{door} raised {type(err).__name__}: {err}"
            texts[door] = str(err)
        else:
            raise AssertionError(f"{door} accepted {kind} {value!r}")
    wrong = {d: t for d, t in texts.items() if not re.search(match, t)}
    assert not wrong, f"{kind} {value!r}: these doors do not name the rule {match!r}:\n" + "\n".join(
        f"  {d}: {t}" for d, t in wrong.items())


@pytest.mark.parametrize("kind, value", GOOD, ids=_ids(GOOD))
def test_right_input_passes_every_door(kind, value):
    for door, call in DOORS[kind].items():
        if value in NOT_GOOD_FOR.get((kind, door), ()):
            continue
        try:
            call(value)
        except ReachedGPU:
            pass


def test_the_reduce_add_dtypes_are_the_ptx_isas():
    """PTX ISA 9.0, 9.7.9.25.5.3: .add takes .u32 .s32 .u64 .f32 .f16 .bf16; the model adds them."""
    assert rules.REDUCE_ADD_DTYPES == ("uint32", "int32", "uint64", "float32", "float16", "bfloat16")
    assert splitk_model.REDUCE_ADD_DTYPES is rules.REDUCE_ADD_DTYPES          # one rule, re-exported
    assert splitk_model.reduce_add_dtype is rules.reduce_add_dtype
    for name in ("uint32", "int32", "uint64", "float32", "float16"):
        g = np.arange(8 * 16).reshape(8, 16).astype(name)
        out, n = model.tma_reduce_add(g, np.ones((8, 8), name), (0, 8))
        assert n == 64 and (out[:, 8:] == g[:, 8:] + 1).all() and (out[:, :8] == g[:, :8]).all()
    for name in ("float64", "int64", "uint16", "uint8"):                     # TMA copies these, .add does not
        make_spec(np.zeros((8, 16), name), (8, 16))
        with pytest.raises(ValueError, match=f"dtype {name} cannot be reduce-added"):
            model.tma_reduce_add(np.zeros((8, 16), name), np.zeros((8, 16), name), (0, 0))


def test_a_negative_address_is_not_called_misaligned():
    with pytest.raises(ValueError) as info:
        make_spec(ArrayInfo((32, 64), (128, 2), "float16", -16), (8, 64))
    assert "negative" in str(info.value) and "aligned" not in str(info.value)


def test_right_values_come_back_as_python_ints():
    assert cute_tma.l2_bytes_read((np.int64(256), 128), np.int64(2), np.int64(4), np.bool_(True)) == \
        cute_tma.l2_bytes_read((256, 128), 2, 4, True) == 2 * 2 * 128 * 64 * 2
    assert feed.l2_bytes(np.int64(2), "multicast", 16384, 32, 1584) == feed.delivered_bytes(16384, 32, 1584) // 2
    spec = make_spec(ArrayInfo((32, 64), (128, 2), "float16", np.uint64(2**64 - 16)), (8, 64))
    assert spec.global_address == 2**64 - 16 and type(spec.global_address) is int


def test_a_tensor_that_passed_is_remembered_by_all_the_rules_read():
    """Launchers are timed: a tensor seen before costs a lookup, and any change the rules read
    (here only the address, off by 2 bytes) is checked again."""
    from utils.cute_dsl import inputs
    flat = torch.zeros(128 * 64 + 8, dtype=torch.float16)
    good, shifted = flat[:128 * 64].view(128, 64), flat[1:1 + 128 * 64].view(128, 64)
    assert inputs.tma_tensor("src", good, rank=2) is inputs.tma_tensor("src", good, rank=2)
    with pytest.raises(ValueError, match="16-B aligned"):
        inputs.tma_tensor("src", shifted, rank=2)
