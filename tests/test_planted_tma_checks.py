"""Issue 35, "no check accepts a wrong answer; none rejects a right one", for the TMA exercises
(day05_tma 02, 06, 08): for each check, a table of wrong answers a learner would really write,
each with the hint it must get, and right answers written differently, which must pass. The
checks try ranks 1-5, element sizes 1-8 and boxes that do not divide the tensor, so an answer
right only for the notebook's shapes fails; CUDA sources are compiled by NVRTC and judged on
their sm_90a PTX (no GPU needed)."""
import contextlib
import io
import math
import re

import numpy as np
import pytest

from utils.core.checks import CheckFailed
from utils.tma import exercises as ex
from utils.tma import lab_checks, sass_map, update, update_checks
from tma_refs import encode_args, expect_tx, stub, swz  # noqa: E402  (tests/tma_refs.py)



def verdict(check, *args):
    """(passed, text): what the check printed, or the failure it raised (any other exception, a
    traceback, fails the test)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            check(*args)
        except CheckFailed as e:
            return False, str(e)
    return True, out.getvalue()


def assert_right(check, *args):
    ok, text = verdict(check, *args)
    assert ok and "correct" in text, text


def assert_wrong(check, hint, *args):
    ok, text = verdict(check, *args)
    assert not ok, f"accepted a wrong answer: {text}"
    assert "wrong" in text and re.search(hint, text, re.S), text


# ---- 1. encode_args (02, exercise 1) ----

def _encode_loop(shape, itemsize, box):            # a loop from the inside out, lists
    dims, strides, step = [], [], itemsize
    for n in reversed(shape):
        dims.append(n)
        strides.append(step)
        step *= n
    return dims, strides[1:], list(reversed(box))


ENCODE_RIGHT = [
    encode_args,
    _encode_loop,
    lambda s, i, b: tuple(tuple(np.int64(v) for v in p) for p in encode_args(s, i, b)),     # NumPy ints
    lambda s, i, b: (np.array(s[::-1]), (np.cumprod(s[::-1]) * i)[:-1], np.array(b[::-1])),  # arrays
]


def _array_strides(s, i):
    return tuple(int(np.prod(s[k + 1:])) * i for k in range(len(s) - 1))


def _two_dims_at_least(s, i, b):                    # right, but unpacks rows and cols: rank 1 breaks
    rows, cols = s[-2], s[-1]  # noqa: F841
    return encode_args(s, i, b)


def _rank2_only(s, i, b):                           # a (rows, cols) answer, as the notebook's example
    return (s[-1], s[0]), (s[-1] * i,), (b[-1], b[0])


ENCODE_WRONG = [
    (lambda s, i, b: (tuple(s), encode_args(s, i, b)[1], tuple(b[::-1])), "dimensions in array order"),
    (lambda s, i, b: (tuple(s[::-1]), tuple(v // i for v in encode_args(s, i, b)[1]), tuple(b[::-1])),
     "strides in elements: the driver wants BYTES"),
    (lambda s, i, b: (tuple(s[::-1]), _array_strides(s, i), tuple(b[::-1])), "strides in array order"),
    (lambda s, i, b: (tuple(s[::-1]), (i,) + encode_args(s, i, b)[1], tuple(b[::-1])), "includes the innermost"),
    (lambda s, i, b: (tuple(s[::-1]), ((i,) + encode_args(s, i, b)[1])[:-1], tuple(b[::-1])),
     "drops the OUTERMOST stride"),
    (lambda s, i, b: (tuple(s[::-1]), encode_args(b, i, b)[1], tuple(b[::-1])), "strides of the BOX"),
    (lambda s, i, b: (tuple(s[::-1]), encode_args(s, i, b)[1], tuple(b)), "box dims are innermost first"),
    (_rank2_only, r"shape \(3, 5, 8\).*all innermost first"),
    (lambda s, i, b: tuple(tuple(float(v) for v in p) for p in encode_args(s, i, b)), "three tuples of ints.*floats"),
    (lambda s, i, b: (s[::-1], None if len(s) == 1 else encode_args(s, i, b)[1], b[::-1]),
     r"shape \(37,\).*empty tuple"),
    (_two_dims_at_least, r"fn\(\(37,\), 8, \(16,\)\) raised IndexError"),
]


@pytest.mark.parametrize("fn", ENCODE_RIGHT, ids=["solution", "loop-lists", "np-int64", "np-arrays"])
def test_encode_args_right(fn):
    assert_right(ex.check_encode_args, fn)


@pytest.mark.parametrize("fn, hint", ENCODE_WRONG)
def test_encode_args_wrong(fn, hint):
    assert_wrong(ex.check_encode_args, hint, fn)


# ---- 2. expect_tx (02, exercise 2) ----

def _tx_loop(box, itemsize, es):
    n = box[-1] * itemsize
    for b, s in zip(box[:-1], es[:-1]):
        n *= math.ceil(b / s)
    return n


TX_RIGHT = [expect_tx, _tx_loop, lambda b, i, e: np.int64(expect_tx(b, i, e)),
            lambda b, i, e: int(np.prod(np.ceil(np.array(b[:-1]) / np.array(e[:-1])))) * b[-1] * i]
TX_WRONG = [
    (lambda b, i, e: int(np.prod(b)), "elements, not bytes"),
    (lambda b, i, e: int(np.prod(b)) * i, "each OUTER dimension"),
    (lambda b, i, e: int(np.prod([-(-x // s) for x, s in zip(b, e)])) * i, "innermost element stride is ignored"),
    (lambda b, i, e: int(np.prod([x // s for x, s in zip(b[:-1], e[:-1])])) * b[-1] * i, "round up"),
    (lambda b, i, e: int(np.prod([-(-x // s) for x, s in zip(b[1:], e[1:])])) * b[0] * i, "ARRAY order"),
    (lambda b, i, e: math.ceil(b[0] / e[0]) * b[-1] * i, r"box \(7, 5, 48\).*product over OUTER dims"),  # 2-D only
    (lambda b, i, e: expect_tx(b, i, e) + 16, "product over OUTER dims"),
    (lambda b, i, e: float(expect_tx(b, i, e)), "expected an int"),
    (lambda b, i, e: str(expect_tx(b, i, e)), "expected an int"),
]


@pytest.mark.parametrize("fn", TX_RIGHT, ids=["solution", "loop-math-ceil", "np-int64", "np-ceil"])
def test_expect_tx_right(fn):
    assert_right(ex.check_expect_tx, fn)


@pytest.mark.parametrize("fn, hint", TX_WRONG)
def test_expect_tx_wrong(fn, hint):
    assert_wrong(ex.check_expect_tx, hint, fn)


# ---- 3. swizzle offset (02, exercise 4) ----

def swz_mode(mode):
    from utils.tma.swizzle import element_offset
    return lambda r, c, s: int(element_offset(r, c, s, 128, mode))


def fp16_only(r, c, s):
    assert s == 2, "fp16 only"
    return swz(r, c, s)


SWZ_RIGHT = [swz,
             lambda r, c, s: (r * 128 + c * s) ^ ((r % 8) << 4),                                 # one XOR
             lambda r, c, s: (r << 7) | ((((c * s) >> 4) ^ (r & 7)) << 4) | ((c * s) & 15),      # bit ops
             lambda r, c, s: np.int64(swz(r, c, s))]
SWZ_WRONG = [
    (lambda r, c, s: r * 128 + c * s, "unswizzled offset"),
    (swz_mode("64B"), "SWIZZLE_64B"),
    (swz_mode("32B"), "SWIZZLE_32B"),
    (lambda r, c, s: r * 128 + (((c * s // 16) ^ r) * 16) + c * s % 16, "not the row"),
    (lambda r, c, s: r * 128 + (((c * s // 16) ^ (r % 8)) * 16), r"byte % 16\): the swizzle moves"),
    (lambda r, c, s: r * 128 + (((c * s // 16) ^ (r % 8)) * 16) + c % (16 // s), "in BYTES"),
    (lambda r, c, s: r * 128 + ((c ^ (r % 8)) * s), "not the column"),
    (lambda r, c, s: r * 128 + (((c // 8) ^ (r % 8)) * 16) + (c % 8) * s, "8 only for 2-byte elements"),
    (lambda r, c, s: r * 128 + c * s // 16 ^ (r % 8) * 16 + c * s % 16, "binds more loosely"),
    (lambda r, c, s: swz(r, c, s) // s, "BYTE offset"),
    (lambda r, c, s: float(swz(r, c, s)), "expected an int"),
    (fp16_only, r"fn\(0, 0, 4\) raised AssertionError: fp16 only"),
]


@pytest.mark.parametrize("fn", SWZ_RIGHT, ids=["solution", "one-xor", "bit-ops", "np-int64"])
def test_swizzle_right(fn):
    assert_right(ex.check_swizzle_offset, fn)


@pytest.mark.parametrize("fn, hint", SWZ_WRONG)
def test_swizzle_wrong(fn, hint):
    assert_wrong(ex.check_swizzle_offset, hint, fn)


# ---- 4. the store kernel's fence (02, exercise 3), judged on NVRTC's sm_90a PTX ----

S = ex.STORE_STUB
FENCE = 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");'
WRITES = "for (int i = threadIdx.x; i < 16 * 32; i += blockDim.x) tile[i] = 2.0f * in[i];"
SYNC = "__syncthreads();"
IF0 = "if (threadIdx.x == 0) {"
TMA = "unsigned src = (unsigned)__cvta_generic_to_shared(tile);"
WAIT = 'asm volatile("cp.async.bulk.commit_group;\\n cp.async.bulk.wait_group.read 0;" ::: "memory");'
SOL = S.replace(SYNC, FENCE + "\n  " + SYNC)
ELECT = ('unsigned leader; asm volatile("{ .reg .pred P; elect.sync _|P, 0xffffffff; selp.u32 %0, 1, 0, P; }" '
         ': "=r"(leader)); if (threadIdx.x < 32 && leader) {')

STORE_RIGHT = {
    "solution": SOL,
    "cuda-ptx-helper": "#include <cuda/ptx>\n" + S.replace(SYNC, "cuda::ptx::fence_proxy_async(cuda::ptx::space_shared); " + SYNC),
    "cuda-device-helper": "#include <cuda/barrier>\n" + S.replace(
        SYNC, "cuda::device::experimental::fence_proxy_async_shared_cta(); " + SYNC),
    "last-thread-stores": SOL.replace(IF0, "if (threadIdx.x == blockDim.x - 1) {"),
    "elect-sync": SOL.replace(IF0, ELECT),
    "wait-without-read": SOL.replace("wait_group.read 0", "wait_group 0"),
    "fence-and-bar-in-asm": S.replace(SYNC, 'asm volatile("fence.proxy.async.shared::cta;\\n bar.sync 0;" ::: "memory");'),
    "syncthreads-or": S.replace(SYNC, FENCE + " __syncthreads_or(1);"),
    "fence-between-two-barriers": S.replace(SYNC, SYNC + " " + FENCE + " " + SYNC),
    "fence-after-each-write": S.replace("tile[i] = 2.0f * in[i];", "{ tile[i] = 2.0f * in[i]; " + FENCE + " }"),
    "commit-wait-in-every-thread": SOL.replace(WAIT, "").replace("\n}", "\n  " + WAIT + "\n}"),
}
STORE_WRONG = {   # name: (source, the hint it must get)
    "fence-only-in-thread-0-after-barrier": (S.replace(TMA, FENCE + " " + TMA),
                                             "after __syncthreads.*must come before the barrier, in every thread that wrote"),
    "fence-in-every-thread-after-barrier": (S.replace(SYNC, SYNC + " " + FENCE),
                                            "after __syncthreads.*must come before the barrier"),
    "fence-only-in-thread-0-before-barrier": (S.replace(SYNC, "if (threadIdx.x == 0) " + FENCE + " " + SYNC),
                                              "skips your fence.*inside an if.*only thread 0"),
    "fence-in-warp-0": (S.replace(SYNC, "if (threadIdx.x < 32) " + FENCE + " " + SYNC), "inside an if"),
    "thread-0-fences-then-its-own-barrier": (S.replace(TMA, FENCE + " __syncthreads(); " + TMA),
                                             "after __syncthreads"),
    "fence-before-the-writes": (S.replace(WRITES, FENCE + " " + WRITES), "comes before the writes"),
    "fence-before-each-write": (S.replace("tile[i] = 2.0f * in[i];", "{ " + FENCE + " tile[i] = 2.0f * in[i]; }"),
                                "a write comes after it"),
    "fence-after-the-store": (S.replace(WAIT, FENCE + " " + WAIT), "after the TMA store"),
    "barrier-replaced-by-fence": (S.replace(SYNC, FENCE), r"no __syncthreads\(\) \(bar.sync\) between your fence"),
    "syncwarp-instead-of-barrier": (S.replace(SYNC, FENCE + " __syncwarp();"), "no __syncthreads"),
    "threadfence-block": (S.replace(SYNC, "__threadfence_block(); " + SYNC), "membar.cta is not the fence needed"),
    "acq-rel-fence": (S.replace(SYNC, 'asm volatile("fence.acq_rel.cta;" ::: "memory"); ' + SYNC), "not the fence needed"),
    "global-proxy-fence": (S.replace(SYNC, 'asm volatile("fence.proxy.async.global;" ::: "memory"); ' + SYNC),
                           "not the fence needed"),
    "no-wait": (SOL.replace(WAIT, 'asm volatile("cp.async.bulk.commit_group;" ::: "memory");'),
                "before the copy engine has read"),
    "wait-before-commit": (SOL.replace(WAIT, 'asm volatile("cp.async.bulk.wait_group.read 0;\\n '
                                             'cp.async.bulk.commit_group;" ::: "memory");'), "before the copy engine"),
    "non-bulk-wait-all": (SOL.replace(WAIT, 'asm volatile("cp.async.bulk.commit_group;\\n cp.async.wait_all;" ::: "memory");'),
                          "cp.async.wait_all is for the per-thread cp.async copies"),
    "non-bulk-commit": (SOL.replace(WAIT, 'asm volatile("cp.async.commit_group;\\n cp.async.bulk.wait_group.read 0;" '
                                          '::: "memory");'), "never committed.*cp.async.commit_group is for"),
    "unknown-header": ("#include <cooperative_groups.h>\n" + SOL, "does not compile.*no others"),
}


@pytest.mark.parametrize("source", STORE_RIGHT.values(), ids=STORE_RIGHT.keys())
def test_store_kernel_right(source):
    assert_right(ex.check_store_kernel, source)


@pytest.mark.parametrize("source, hint", STORE_WRONG.values(), ids=STORE_WRONG.keys())
def test_store_kernel_wrong(source, hint):
    assert_wrong(ex.check_store_kernel, hint, source)


# ---- 5. fields to replace (06, exercise 2) ----

def notebook_fields(base_spec, group_spec):        # the solution notebook's answer
    names = {"global_address": "global_address", "global_dims": "global_dim", "global_strides_bytes": "global_stride",
             "box_dims": "box_dim", "element_strides": "element_stride", "dtype": "elemtype", "swizzle": "swizzle_mode",
             "oob_fill": "fill_mode", "interleave": "interleave_layout", "rank": "rank"}
    return {p for a, p in names.items() if getattr(base_spec, a) != getattr(group_spec, a)}


def per_dim_list(b, g):                              # one entry per changed dimension: duplicates
    out = ["global_address"] if b.global_address != g.global_address else []
    out += ["global_dim" for x, y in zip(b.global_dims, g.global_dims) if x != y]
    return out + ["global_stride" for x, y in zip(b.global_strides_bytes, g.global_strides_bytes) if x != y]


FIELDS_RIGHT = [notebook_fields, update.fields_to_replace, per_dim_list,
                lambda b, g: tuple(sorted(update.fields_to_replace(b, g))),
                lambda b, g: dict.fromkeys(update.fields_to_replace(b, g)).keys()]
FIELDS_WRONG = [
    (lambda b, g: {"global_address", "global_dim", "global_stride"}, "BYTES between rows"),
    (lambda b, g: update.fields_to_replace(b, g) | {"box_dim"}, "box and the swizzle"),
    (lambda b, g: {f for f in ("global_dim", "global_stride") if f in update.fields_to_replace(b, g)}, "its own address"),
    (lambda b, g: update.fields_to_replace(b, g) | {"global_address"}, "IS the base tensor"),
    (lambda b, g: update.fields_to_replace(b, g) - {"global_stride"}, "rows are 4096 B apart, the base's 8192 B"),
    (lambda b, g: {"global_address"} | ({"global_dim"} if b.global_dims[0] != g.global_dims[0] else set())
     | ({"global_stride"} if b.global_strides_bytes != g.global_strides_bytes else set()),
     r"group's dims \(driver order\) are \(4096, 37\)"),
    (lambda b, g: {"global_address"} | (update.fields_to_replace(b, g) - {"global_address"}) if g != b
     else set(), "starts at the base's own address"),
    (lambda b, g: {"global_dims", "global_address"}, "use the PTX field name 'global_dim'"),
    (lambda b, g: {f: 1 for f in update.fields_to_replace(b, g)}, "names only"),
    (lambda b, g: "global_address", "expected a set of field names"),
]


@pytest.mark.parametrize("fn", FIELDS_RIGHT, ids=["notebook", "model", "per-dim-list", "tuple", "dict-keys"])
def test_fields_to_replace_right(fn):
    assert_right(update_checks.check_fields_to_replace, fn)


@pytest.mark.parametrize("fn, hint", FIELDS_WRONG)
def test_fields_to_replace_wrong(fn, hint):
    assert_wrong(update_checks.check_fields_to_replace, hint, fn)


# ---- 6. fence order (06, exercise 3) ----

SMEM, GLOBAL = list(update.FENCE_ORDERS["smem"]), list(update.FENCE_ORDERS["global"])
ORDER_RIGHT = [(SMEM, "smem"), (tuple(s for s in SMEM if s != "prefetch"), "smem"), (GLOBAL, "global"),
               ([s for s in GLOBAL if s != "prefetch"], "global"), (lambda: SMEM, "smem"),
               ([" Copy", "REPLACE", "cp_fenceproxy ", "acquire", "load"], "smem"), (np.array(GLOBAL), "global")]
ORDER_WRONG = [
    (["copy", "replace", "acquire", "cp_fenceproxy", "load"], "smem", "acquire before release"),
    (["copy", "replace", "acquire", "prefetch", "load"], "smem", "missing fence: without the release"),
    (["copy", "replace", "cp_fenceproxy", "prefetch", "load"], "smem", "not acquired"),
    (["copy", "replace", "cp_fenceproxy", "prefetch", "acquire", "load"], "smem", "UTMACCTL.IV"),
    (["copy", "replace", "cp_fenceproxy", "load", "acquire"], "smem", "cached before the update"),
    (["replace", "copy", "cp_fenceproxy", "acquire", "load"], "smem", "overwrite the replaced fields"),
    (["copy_global", "replace_global", "acquire", "release", "load"], "global", "acquire before release"),
    (["copy_global", "release", "replace_global", "acquire", "load"], "global", "writes made BEFORE it"),
    (["copy_global", "replace_global", "cp_fenceproxy", "acquire", "load"], "global", "belongs to the 'smem' path"),
    (["copy", "replace", "release", "acquire", "load"], "smem", "belongs to the 'global' path"),
    (["copy", "replace", "fence", "acquire", "load"], "smem", "not a step"),
    ({"copy", "replace", "cp_fenceproxy", "acquire", "load"}, "smem", "expected a list of step names"),
]


@pytest.mark.parametrize("seq, path", ORDER_RIGHT)
def test_fence_order_right(seq, path):
    assert_right(update_checks.check_fence_order, seq, path)


@pytest.mark.parametrize("seq, path, hint", ORDER_WRONG)
def test_fence_order_wrong(seq, path, hint):
    assert_wrong(update_checks.check_fence_order, hint, seq, path)


# ---- 7. find the bug (08, exercises 1-6) ----

BUG_RIGHT = [
    ("lab_mystery_1", {"line": np.int64(14), "diagnosis": "Phase"}),
    ("lab_mystery_2", {"diagnosis": "negative-store", "line": 9, "why": "cols - ... < 0"}),
    ("lab_mystery_3", {"line": 11, "diagnosis": "expect tx"}),
    ("lab_mystery_4", {"line": 15, "diagnosis": "Proxy_Fence"}),
    ("lab_mystery_5", {"line": np.int32(4), "diagnosis": "SMEM ALIGNMENT"}),
    ("lab_mystery_6", {"line": 6, "diagnosis": " arrival  count "}),
]
BUG_WRONG = [
    ("lab_mystery_1", {"line": 14, "diagnosis": "expect_tx"}, "'expect_tx' is not this kernel's bug.*2048 bytes"),
    ("lab_mystery_1", {"line": 11, "diagnosis": "phase"}, "line 11 .* is not where it lives.*parity"),
    ("lab_mystery_2", {"line": 9, "diagnosis": "smem alignment"}, "multiple of 128 bytes"),
    ("lab_mystery_3", {"line": 11, "diagnosis": "descriptor"}, "not a bug any kernel here can have"),
    ("lab_mystery_4", {"line": 16, "diagnosis": "proxy fence"}, "line 16 is right as it stands"),
    ("lab_mystery_4", {"line": 20, "diagnosis": "wait_group"}, "keeps cp.async.bulk.wait_group.read 0"),
    ("lab_mystery_5", {"line": 19, "diagnosis": "smem alignment"}, "not a multiple of 128 bytes"),
    ("lab_mystery_6", {"line": 7, "diagnosis": "arrival count"}, "not where it lives.*mbarrier.init's count"),
    ("lab_mystery_6", {"line": "6", "diagnosis": "arrival count"}, "line must be an int"),
    ("lab_mystery_6", {"line": 40, "diagnosis": "arrival count"}, "from 1 to 24"),
    ("lab_mystery_1", {"line": 14, "diagnosis": "parity"}, "is not one of"),
    ("lab_mystery_1", [14, "phase"], "expected a dict"),
]


@pytest.mark.parametrize("name, answer", BUG_RIGHT)
def test_check_bug_right(name, answer):
    assert_right(lab_checks.check_bug, name, answer)


@pytest.mark.parametrize("name, answer, hint", BUG_WRONG)
def test_check_bug_wrong(name, answer, hint):
    assert_wrong(lab_checks.check_bug, hint, name, answer)


# ---- 8. the SASS map (02, exercise 5), graded against Triton's ptxas ----

LOAD, STORE = "cp.async.bulk.tensor (load: global -> shared)", "cp.async.bulk.tensor (store: shared -> global)"
INIT, ARRIVE, WAIT_ = "mbarrier.init", "mbarrier.arrive.expect_tx", "mbarrier.try_wait.parity"
SASS = {INIT: "SYNCS.EXCH.64", ARRIVE: "SYNCS.ARRIVE.TRANS64", LOAD: "UTMALDG.2D",
        WAIT_: "SYNCS.PHASECHK.TRANS64.TRYWAIT", STORE: "UTMASTG.2D"}
SASS_RIGHT = [{}, {LOAD: "utmaldg", STORE: "UTMASTG", INIT: "syncs.exch", ARRIVE: "SYNCS.ARRIVE", WAIT_: "SYNCS.PHASECHK"},
              {LOAD: "/*0190*/  UTMALDG.2D [UR8], [UR4] ;", WAIT_: "@!P0 SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x10], R3 ;"}]
SASS_WRONG = [
    ({LOAD: "UTMASTG.2D"}, r"is what cp.async.bulk.tensor \(store"),
    ({STORE: "UTMALDG.2D"}, r"is what cp.async.bulk.tensor \(load"),
    ({LOAD: "LDG.E.128"}, "thread loads and stores"),
    ({STORE: "STS.128"}, "thread loads and stores"),
    ({ARRIVE: "SYNCS"}, "name the operation too"),
    ({WAIT_: "SYNCS.ARRIVE.TRANS64"}, "is what mbarrier.arrive.expect_tx becomes"),
    ({INIT: "BAR.SYNC"}, "BAR is the CTA barrier"),
    ({LOAD: "ELECT"}, "ELECT picks one thread"),
    ({WAIT_: "SYNCS.PHASECHK.TRANS64.WAIT"}, "read the SASS listing"),
    ({STORE: "?"}, "no answer yet for"),
    ({LOAD: 0x1}, "as a string"),
]


@pytest.mark.parametrize("change", SASS_RIGHT, ids=["as-listed", "trimmed-lowercase", "copied-lines"])
def test_sass_map_right(change):
    assert_right(sass_map.check_sass_map, {**SASS, **change})


@pytest.mark.parametrize("change, hint", SASS_WRONG)
def test_sass_map_wrong(change, hint):
    assert_wrong(sass_map.check_sass_map, hint, {**SASS, **change})


# ---- stubs are "not attempted" and never raise ----

@pytest.mark.parametrize("check, args", [
    (ex.check_encode_args, (stub,)), (ex.check_expect_tx, (stub,)), (ex.check_swizzle_offset, (stub,)),
    (ex.check_store_kernel, (S,)), (ex.check_store_kernel, (S, None)),
    (update_checks.check_fields_to_replace, (stub,)), (update_checks.check_fence_order, ([], "smem")),
    (update_checks.check_fence_order, ([], "global")), (update_checks.check_fence_order, (stub,)),
    (lab_checks.check_bug, ("lab_mystery_4", {"line": None, "diagnosis": "?"})),
    (sass_map.check_sass_map, ({k: "?" for k in SASS},)),
])
def test_stubs_are_not_attempted(check, args):
    ok, text = verdict(check, *args)
    assert ok and "not attempted" in text, text


def test_a_stub_for_some_cases_only_is_explained():
    def half(shape, itemsize, box):
        if len(shape) == 1:
            raise NotImplementedError
        return encode_args(shape, itemsize, box)
    assert_wrong(ex.check_encode_args, r"raised NotImplementedError, but", half)
