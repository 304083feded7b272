"""Descriptors updated on the device (issue 15): the model of a group's descriptor (same rules as
the host's), the fields to replace, the fence order and their exercise checks, and the CUDA
source read on the CPU: its PTX holds every instruction, its SASS the expected opcodes. Nothing
here runs on a GPU (utils/tma/update_run.py runs the kernels on Hopper; its input checks are in
tests/test_update_run.py)."""
import functools
import re

import pytest

from utils.core.checks import CheckFailed
from utils.tma import update, update_checks
from utils.tma.descriptor import ArrayInfo, make_spec

FP16 = 2


def _info(shape, ptr=0x10000, strides=None):
    strides = strides or (shape[1] * FP16, FP16)
    return ArrayInfo(shape, strides, "float16", ptr)


BASE = make_spec(_info((256, 4096)), (128, 64), swizzle="128B", oob_fill="nan", l2_promotion="256B")


def test_group_spec_is_what_the_host_would_encode_with_the_base_box():
    g = update.group_spec(BASE, 0x9000, (37, 4096), (8192, 2))
    host = make_spec(_info((37, 4096), 0x9000), BASE.array_box_shape, swizzle="128B", oob_fill="nan",
                     l2_promotion="256B")
    assert g == host
    assert (g.box_dims, g.swizzle, g.dtype, g.element_strides, g.oob_fill) == \
           (BASE.box_dims, BASE.swizzle, BASE.dtype, BASE.element_strides, BASE.oob_fill)
    assert g.global_dims == (4096, 37) and g.global_strides_bytes == (8192,) and g.global_address == 0x9000


@pytest.mark.parametrize("ptr, shape, strides", [(0x9000, (37, 4100), (8200, 2)),   # 8200 B rows
                                                 (0x9008, (37, 4096), (8192, 2)),   # misaligned
                                                 (0x9000, (37, 4096), (8192, 4)),   # inner stride
                                                 (0x9000, (2**33, 8), (16, 2))])    # dim too big
def test_a_bad_group_gets_the_same_error_as_make_spec(ptr, shape, strides):
    with pytest.raises(ValueError) as host:
        make_spec(_info(shape, ptr, strides), BASE.array_box_shape, swizzle="128B")
    with pytest.raises(ValueError) as device:
        update.group_spec(BASE, ptr, shape, strides)
    assert str(device.value) == str(host.value)


@pytest.mark.parametrize("args, err, match", [
    ((0x9000, (4, 37, 4096), (8192 * 37, 8192, 2)), ValueError, "rank 3 but the base descriptor has rank 2"),
    ((0x9000, (0, 4096), (8192, 2)), ValueError, "empty dimension.*skip it"),
    ((0x9000, (37.0, 4096), (8192, 2)), TypeError, "must hold ints"),
    ((None, (37, 4096), (8192, 2)), TypeError, "ptr"),
])
def test_group_spec_explains_what_it_refuses(args, err, match):
    with pytest.raises(err, match=match):
        update.group_spec(BASE, *args)
    with pytest.raises(TypeError, match="TensorMapSpec"):
        update.group_spec(_info((8, 8)), 0x9000, (8, 8), (16, 2))


def test_fields_and_replacements():
    g = update.group_spec(BASE, 0x9000, (37, 2048), (4096, 2))
    assert update.fields_to_replace(BASE, g) == {"global_address", "global_dim", "global_stride"}
    ops = update.replace_ops(BASE, g)
    assert ops == [update.Replace("global_address", None, 0x9000), update.Replace("global_dim", 0, 2048),
                   update.Replace("global_dim", 1, 37), update.Replace("global_stride", 0, 4096)]
    assert ops[2].ptx() == "tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [desc], 1, 0x25;"
    assert ops[3].ptx("global", "[%0]") == "tensormap.replace.tile.global_stride.global.b1024.b64 [%0], 0, 0x1000;"
    assert update.fields_to_replace(BASE, BASE) == frozenset() and update.replace_ops(BASE, BASE) == []
    other = make_spec(_info((256, 4096)), (64, 64), swizzle="128B", oob_fill="nan", l2_promotion="256B")
    assert update.fields_to_replace(BASE, other) == {"box_dim"}
    with pytest.raises(ValueError, match="box_dim.*keeps the base's box"):
        update.replace_ops(BASE, other)
    with pytest.raises(ValueError, match="l2_promotion differs.*no field"):
        update.fields_to_replace(BASE, make_spec(_info((256, 4096)), (128, 64), swizzle="128B", oob_fill="nan"))
    with pytest.raises(ValueError, match="space"):
        ops[0].ptx("shared")


def test_the_model_names_every_ptx_field():
    assert set(update.FIELDS) == {"global_address", "rank", "global_dim", "global_stride", "box_dim",
                                  "element_stride", "elemtype", "interleave_layout", "swizzle_mode", "fill_mode"}
    for path, steps in update.FENCE_ORDERS.items():
        assert set(steps) <= set(update.FENCE_STEPS) and steps[-1] == "load"
        assert steps.index("acquire") < steps.index("prefetch") < steps.index("load")


# ---- the CUDA source, compiled and assembled on the CPU ----

@functools.lru_cache(maxsize=None)
def _ptx(drop: str = "") -> str:
    from utils.cuda_cpp.nvrtc import nvrtc_ptx
    return nvrtc_ptx(update.SOURCE.replace(drop, "") if drop else update.SOURCE, name="update_kernels.cu")


@functools.lru_cache(maxsize=None)
def _sass(drop: str = "") -> dict:
    from utils.triton_lang import sass
    listing = sass.sass(_ptx(drop))
    return {k: sass.instructions(v) for k, v in sass.functions(listing).items()}


PTX_INSTRUCTIONS = [
    r"tensormap\.replace\.tile\.global_address\.shared::cta\.b1024\.b64",
    r"tensormap\.replace\.tile\.global_dim\.shared::cta\.b1024\.b32 \[%r\d+\], 1,",
    r"tensormap\.replace\.tile\.global_stride\.shared::cta\.b1024\.b64 \[%r\d+\], 0,",
    r"tensormap\.replace\.tile\.global_address\.global\.b1024\.b64",
    r"tensormap\.replace\.tile\.global_dim\.global\.b1024\.b32",
    r"tensormap\.replace\.tile\.global_stride\.global\.b1024\.b64",
    r"fence\.proxy\.tensormap::generic\.release\.gpu;",
    r"tensormap\.cp_fenceproxy\.global\.shared::cta\.tensormap::generic\.release\.gpu\.sync\.aligned \[%rd\d+\], \[%r\d+\], 128;",
    r"fence\.proxy\.tensormap::generic\.acquire\.gpu \[%rd\d+\], 128;",
    r"prefetch\.tensormap \[%rd\d+\];",
    r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global\.tile\.mbarrier::complete_tx::bytes",
    r"cp\.reduce\.async\.bulk\.tensor\.2d\.global\.shared::cta\.add\.tile\.bulk_group",
]


def test_update_model_api_ptx_matches_its_kernel():
    assert update.ptx() == _ptx()


@pytest.mark.parametrize("pattern", PTX_INSTRUCTIONS)
def test_ptx_holds_every_instruction(pattern):
    text = _ptx()
    assert re.search(r"^\.target sm_90a", text, re.M)
    assert re.search(pattern, text), pattern


def test_ptx_replaces_in_the_order_replace_ops_lists():
    g = update.group_spec(BASE, 0x9000, (37, 2048), (4096, 2))
    fields = [(o.field, o.ordinal) for o in update.replace_ops(BASE, g)]
    found = re.findall(r"tensormap\.replace\.tile\.(\w+)\.shared::cta\.b1024\.b\d+ \[%r\d+\],(?: (\d+),)?", _ptx())
    assert [(f, int(o) if o else None) for f, o in found] == fields


def _cmdflush() -> set:
    """{"UTMACMDFLUSH"} where this ptxas emits it after the acquire, set() where it does not
    (versions named in utils.tma.update); between the versions seen, either is accepted."""
    from utils.triton_lang import sass
    version = sass.assembler()[1]
    if version >= update.CMDFLUSH_FROM:
        return {"UTMACMDFLUSH"}
    if version <= update.CMDFLUSH_NOT_IN:
        return set()
    return None


def _utma(ops, want: set) -> bool:
    """The UTMA opcodes in ``ops`` are ``want`` plus the flush this ptxas version emits."""
    got, flush = {o for o in ops if o.startswith("UTMA")}, _cmdflush()
    return got == want | flush if flush is not None else got - {"UTMACMDFLUSH"} == want


def test_sass_opcodes():
    k = _sass()
    assert set(k) == set(update.KERNELS)
    grouped, reduce_ = " | ".join(k["grouped_load_updated"]), " | ".join(k["splitk_reduce_add"])
    race = " | ".join(k["update_race"])
    for op in ("UTMALDG.2D", "UTMACCTL.IV", "STG.E.64"):        # load, acquire, the replace in global memory
        assert op in race, op
    assert "UTMAREDG.2D.ADD" in reduce_ and "UTMALDG" not in reduce_
    for op in ("UTMALDG.2D", "UTMACCTL.IV", "UTMACCTL.PF", "ATOMG.E.EXCH.STRONG.GPU", "MEMBAR.ALL.GPU"):
        assert op in grouped, op
    # tensormap.replace is no TMA instruction: plain stores into the 128-B object
    utma = {i.split()[0] for i in k["grouped_load_updated"] if i.startswith("UTMA")}
    assert _utma(utma, {"UTMALDG.2D", "UTMACCTL.IV", "UTMACCTL.PF"}), utma
    assert any(i.startswith("STS.64") for i in k["grouped_load_updated"])
    assert any(i.startswith("STG.E.64") for i in k["grouped_load_updated"])


def test_sass_of_the_release_fence_and_the_acquire():
    fence = 'asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");'
    assert fence in update.SOURCE
    with_, without = _sass()["grouped_load_updated"], _sass(fence)["grouped_load_updated"]
    membars = lambda ins: [i for i in ins if re.match(r"MEMBAR|ERRBAR|CGAERRBAR", i)]
    assert membars(with_) == ["MEMBAR.ALL.CTA", "MEMBAR.ALL.GPU", "ERRBAR", "CGAERRBAR"] and membars(without) == []
    at = {op: next(n for n, i in enumerate(with_) if i.startswith(op)) for op in ("UTMACCTL.IV", "UTMACCTL.PF", "UTMALDG")}
    assert at["UTMACCTL.IV"] < at["UTMACCTL.PF"] < at["UTMALDG"]       # acquire, prefetch, load


def _op(instruction):
    """The opcode of a SASS instruction, its predicate (``@P0``, ``@!UP1``) dropped."""
    parts = instruction.split()
    return parts[1] if parts[0].startswith("@") else parts[0]


def test_sass_of_update_race():
    race = _sass()["update_race"]
    ops = [_op(i) for i in race]
    # two loads through the slot; an acquire at the start and the optional one after the replace
    assert ops.count("UTMALDG.2D") == 2 and ops.count("UTMACCTL.IV") == 2
    assert _utma(ops, {"UTMALDG.2D", "UTMACCTL.IV"}), ops
    # the replace of global_address in GLOBAL memory: one 64-bit store into the slot, no shared copy
    assert ops.count("STG.E.64") == 1 and "STS.64" not in ops and "UTMACCTL.PF" not in ops
    load = [n for n, o in enumerate(ops) if o == "UTMALDG.2D"]
    iv = [n for n, o in enumerate(ops) if o == "UTMACCTL.IV"]
    replace, release = ops.index("STG.E.64"), ops.index("MEMBAR.ALL.GPU")
    assert iv[0] < load[0] < replace < release < iv[1] < load[1]     # acquire, load 1, replace, release, acquire, load 2
    assert [o for o in ops if re.match(r"MEMBAR|ERRBAR|CGAERRBAR", o)] == \
           ["MEMBAR.ALL.CTA", "MEMBAR.ALL.GPU", "ERRBAR", "CGAERRBAR"]


def test_the_source_and_doc_no_longer_claim_it_has_not_run():
    import inspect
    not_run = re.compile(r"not\s+(yet\s+)?(been\s+)?run|run on a GPU yet|has not run|nothing here has run", re.I)
    for what, text in (("update_kernels.cu", update.SOURCE), ("update.__doc__", update.__doc__),
                       ("update.py", inspect.getsource(update))):
        assert not not_run.search(text), f"{what}: {not_run.search(text).group(0)!r}"
    assert "update_run" in update.__doc__ and "utils/tma/update_run.py" in update.SOURCE
    assert update.KERNELS == ("grouped_load_updated", "update_race", "splitk_reduce_add")


# ---- exercise: the fields to replace ----

PLANTED_FIELDS = [
    (lambda b, g: {"global_address", "global_dim", "global_stride"}, "BYTES between rows"),
    (lambda b, g: update.fields_to_replace(b, g) | {"box_dim"}, "box and the swizzle"),
    (lambda b, g: update.fields_to_replace(b, g) | {"swizzle_mode"}, "box and the swizzle"),
    (lambda b, g: update.fields_to_replace(b, g) | {"elemtype"}, "dtype, element strides"),
    (lambda b, g: update.fields_to_replace(b, g) - {"global_address"}, "its own address"),
    (lambda b, g: {"global_address"}, "group's dims"),
    (lambda b, g: update.fields_to_replace(b, g) - {"global_stride"}, "rows are .* B apart"),
    (lambda b, g: update.fields_to_replace(b, g) | {"global_address"}, "IS the base tensor"),
]


def test_check_fields_to_replace_accepts_and_reports_stubs(capsys):
    update_checks.check_fields_to_replace(update.fields_to_replace)
    assert "correct" in capsys.readouterr().out
    update_checks.check_fields_to_replace(lambda b, g: sorted(update.fields_to_replace(b, g)))   # a list is fine
    assert "correct" in capsys.readouterr().out
    def stub(b, g):
        raise NotImplementedError
    update_checks.check_fields_to_replace(stub)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("i", range(len(PLANTED_FIELDS)))
def test_check_fields_to_replace_rejects_planted_mistakes(i):
    fn, hint = PLANTED_FIELDS[i]
    with pytest.raises(CheckFailed, match=hint):
        update_checks.check_fields_to_replace(fn)


@pytest.mark.parametrize("fn, match", [
    (lambda b, g: "global_address", "expected a set of field names"),
    (lambda b, g: None, "expected a set"),
    (lambda b, g: {"global_address", 3}, "not a field name"),
    (lambda b, g: {"global_address", "global_dims"}, "use the PTX field name 'global_dim'"),
    (lambda b, g: {"l2_promotion"}, "not a tensormap.replace field"),
    (lambda b, g: b.nope, "raised AttributeError"),
    ("global_dim", "expected a function"),
])
def test_check_fields_to_replace_explains_malformed_answers(fn, match):
    with pytest.raises(CheckFailed, match=match):
        update_checks.check_fields_to_replace(fn)


# ---- exercise: the fence order ----

SMEM = list(update.FENCE_ORDERS["smem"])
PLANTED_ORDERS = [
    (["copy", "replace", "acquire", "cp_fenceproxy", "prefetch", "load"], "acquire before release"),
    (["copy", "replace", "acquire", "prefetch", "load"], "missing fence: without the release"),
    (["copy", "replace", "cp_fenceproxy", "prefetch", "load"], "missing fence: the tensormap proxy is not acquired"),
    (["replace", "copy", "cp_fenceproxy", "acquire", "load"], "overwrite the replaced fields"),
    (["copy", "cp_fenceproxy", "replace", "acquire", "load"], "writes made BEFORE it"),
    (["copy", "replace", "cp_fenceproxy", "load", "acquire"], "cached before the update"),
    (["copy", "replace", "cp_fenceproxy", "prefetch", "acquire", "load"], "UTMACCTL.IV"),
    (["copy", "replace", "cp_fenceproxy", "acquire", "load", "prefetch"], "too late"),
    (["replace", "cp_fenceproxy", "acquire", "load"], "COPY of the base"),
    (["copy", "cp_fenceproxy", "acquire", "load"], "nothing is replaced"),
    (["copy", "replace", "cp_fenceproxy", "acquire"], "never used"),
    (["copy", "replace", "release", "acquire", "load"], "belongs to the 'global' path"),
    (["copy", "replace", "replace", "cp_fenceproxy", "acquire", "load"], "twice"),
]


def test_check_fence_order_accepts_both_paths(capsys):
    update_checks.check_fence_order(SMEM)
    assert "correct" in capsys.readouterr().out
    update_checks.check_fence_order(tuple(s for s in SMEM if s != "prefetch"))
    assert "optional" in capsys.readouterr().out
    update_checks.check_fence_order(list(update.FENCE_ORDERS["global"]), path="global")
    assert "correct" in capsys.readouterr().out
    update_checks.check_fence_order(lambda: SMEM)
    assert "correct" in capsys.readouterr().out
    for unfinished in (None, [], ()):
        update_checks.check_fence_order(unfinished)
        assert "not attempted" in capsys.readouterr().out
    def stub():
        raise NotImplementedError
    update_checks.check_fence_order(stub)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("i", range(len(PLANTED_ORDERS)))
def test_check_fence_order_rejects_planted_mistakes(i):
    seq, hint = PLANTED_ORDERS[i]
    with pytest.raises(CheckFailed, match=hint):
        update_checks.check_fence_order(seq)


def test_check_fence_order_global_path_and_malformed():
    with pytest.raises(CheckFailed, match="acquire before release"):
        update_checks.check_fence_order(["copy_global", "replace_global", "acquire", "release", "load"], "global")
    with pytest.raises(CheckFailed, match="belongs to the 'smem' path"):
        update_checks.check_fence_order(["copy", "replace_global", "release", "acquire", "load"], "global")
    for bad in ("copy replace", [1, 2], {"copy": 1}):
        with pytest.raises(CheckFailed, match="expected a list of step names"):
            update_checks.check_fence_order(bad)
    with pytest.raises(CheckFailed, match="not a step"):
        update_checks.check_fence_order(["copy", "replace", "fence", "acquire", "load"])
    with pytest.raises(ValueError, match="path must be"):
        update_checks.check_fence_order(SMEM, path="param")
