"""The check of Exercise 4 (day 5 · 06): the learner's ``load_group_box``, which builds group g's
descriptor on the device and loads a box through it, is RUN inside the course's kernel: on every
tier on the course's emulator (fresh random values, poisoned output, groups of different sizes,
none a multiple of the box, every element compared with NumPy; a missing fence is a named race
there) and, on a GPU with ``tensormap.replace``, on the GPU too, in a subprocess
(:mod:`.group_desc_run`). A failure names the slip: the emulator's finding
(:func:`.group_desc.race_kind`), else the first wrong field of the descriptor the kernel left in
its slot, else what the wrong boxes match."""
from __future__ import annotations

import re

import numpy as np

from ..core.checks import fail, not_attempted, passed
from ..tma.store_check import c_tokens
from . import group_desc as gd

NAME = gd.FUNCTION
_ACQ = "fence.proxy.tensormap::generic.acquire.gpu [slot], 128"
HINTS = {
    "no_acquire": f"the thread that loads never acquired the slot: after the release (and a barrier, if another "
                  f"thread built it) and before the load, that thread runs {_ACQ}; the tensormap proxy is not "
                  "acquired at kernel start, so the TMA unit may use a copy it cached before",
    "acquire_early": f"the acquire came before the descriptor's last change, so it pairs with no release: build, "
                     f"release (then a barrier, if another thread loads), then {_ACQ}, then the load",
    "no_release": "the slot was changed in global memory (ordinary stores or tensormap.replace .global) and never "
                  "released to the tensormap proxy: after the replaces, the thread that made them runs "
                  "fence.proxy.tensormap::generic.release.gpu (or build in shared memory and publish with "
                  "tensormap.cp_fenceproxy ... .release, which copies and releases)",
    "in_flight": "the slot changed while a load through it was in flight: a descriptor may change only when no "
                 "copy that uses it is still running; build, publish, acquire, then load",
    "shared_desc": "TMA reads a descriptor only from .param, .const or .global memory: publish your shared-memory "
                   "copy to *slot (tensormap.cp_fenceproxy) and load through slot",
    "not_copied": "copy all 128 bytes of base into the slot first (e.g. 16 lanes x 8 bytes of base.opaque), then "
                  "replace fields: the box, dtype, swizzle and the rest come from the base",
    "unpublished": "nothing reached this CTA's slot: build the descriptor in *slot (or publish your shared copy there "
                   "with tensormap.cp_fenceproxy) and load through that same slot",
    "address_misaligned": "a TMA global address must be 16-byte aligned, and group g starts row0 * ld ELEMENTS "
                          "into A: a + row0 * ld on the const float* pointer (which scales by 4 bytes), not on an "
                          "integer address",
    "address_base": "global_address is still the base's (A's row 0): replace it with the group's first row, "
                    "a + row0 * ld",
    "address_wrong": "group g starts at row offsets[g] of A, rows ld elements apart: a + row0 * ld",
    "dims_swapped": "the row count went into global_dim ordinal 0, but ordinals are innermost first: ordinal 0 is "
                    "the K columns (the same for every group), ordinal 1 the rows",
    "extent_kept": "the row count (global_dim ordinal 1) is still the base's, all of A: the group's last box would "
                   "load the next group's rows instead of TMA's zero fill; replace it with the group's rows",
    "cols_changed": "every group has the same K columns: global_dim ordinal 0 stays the base's",
    "rows_wrong": "group g has offsets[g + 1] - offsets[g] rows: that is global_dim ordinal 1",
    "stride": "global_stride ordinal 0 is the stride of dim 1 (between rows) in BYTES: ld * 4 for every group (the "
              "row pitch, not K); groups of one stacked A need not replace it at all",
    "box_changed": "the box is the kernel's tile, the same for every group: keep the base's box_dim",
    "through_base": "every box came from A's first rows: the load went through base, not through the slot you built",
    "coords_swapped": "TMA coordinates are innermost first: {x (column), y (row)}",
    "timeout": "the box never arrived (the bounded wait fired): one thread runs mbarrier.arrive.expect_tx with the "
               "box's bytes, BOX_ROWS * BOX_COLS * 4 (out-of-bounds fill included), then the load on the same bar",
    "bar_init": "signal the bar the kernel passes you (already initialised); do not make or init another",
    "early_read": "the box is read only after wait_box has seen its phase complete: keep wait_box before save_box",
    "rule": "the descriptor in the slot breaks a TMA rule: compare each replaced value with the group's",
    "fault": "the TMA read memory outside A: check the group's address and row count",
}


def _fail_kind(kind, msg, case, where="emulator"):
    fail(NAME, msg, HINTS[kind], launched=f"{case.describe()} on the {where}")


def _cta_of(err):
    """(t, g) of the CTA an emulator error names, or None."""
    m = re.search(r"CTA \((\d+), (\d+), \d+\)", f"{err.where} {err}")
    return (int(m.group(1)), int(m.group(2))) if m else None


def slot_problem(case, bufs, only=None) -> tuple | None:
    """(kind, what) for the first CTA whose slot differs from its group's descriptor, else None.
    ``only`` = (t, g): look at that CTA alone (after an error, the others may be half-built)."""
    T, G = case.grid
    a_ptr, pitch = bufs["a"].ctypes.data, bufs["a"].strides[0]
    for g in range(G):
        rows = case.sizes[g]
        for t in range(T):
            if gd.tile_xy(case, g, t) is None or (only is not None and (t, g) != only):
                continue
            raw, at = bufs["slots"][g * T + t], f"slot of CTA ({t}, {g}) (group {g}, {rows} rows)"
            if not raw.any():
                return "unpublished", f"the {at} is still all zeros after the launch"
            f = gd.slot_fields(raw)
            if f is None:
                return "not_copied", (f"the {at} does not hold a descriptor (its first 8 bytes are "
                                      f"{bytes(raw[:8]).hex()})")
            want = a_ptr + int(case.offsets[g]) * pitch
            if f["address"] != want:
                kind = ("address_misaligned" if f["address"] % 16 else
                        "address_base" if f["address"] == a_ptr else "address_wrong")
                return kind, (f"the {at} has global_address A + {f['address'] - a_ptr} B; group {g} starts at row "
                              f"{case.offsets[g]}, A + {want - a_ptr} B")
            dims, total = tuple(f["dims"]), int(case.offsets[-1])
            if dims != (case.K, rows):
                kind = ("dims_swapped" if dims[0] == rows != case.K else "extent_kept" if dims == (case.K, total)
                        else "cols_changed" if dims[0] != case.K else "rows_wrong")
                return kind, f"the {at} has global_dim {list(dims)} (innermost first); expected [{case.K}, {rows}]"
            if tuple(f["strides"]) != (pitch,):
                return "stride", (f"the {at} has global_stride {list(f['strides'])} B; expected [{pitch}] "
                                  f"(ld = {pitch // 4})")
            if tuple(f["box"]) != gd.BOX[::-1]:
                return "box_changed", f"the {at} has box_dim {list(f['box'])}; the base's is {list(gd.BOX[::-1])}"
    return None


def _explain_values(case, got, want) -> tuple:
    """(kind or None, message) for wrong boxes whose slots were right: what they match."""
    from ..tma import model
    has = ~np.isnan(want[..., 0, 0])
    if np.isnan(got[has]).all(axis=(1, 2)).any():
        g, t = (int(v) for v in np.argwhere(has & np.isnan(got).all(axis=(2, 3)))[0])
        return None, f"CTA ({t}, {g}) saved no box (out is still NaN there): keep wait_box, then save_box(out, tile)"
    T, G = case.grid
    alt = {"through_base": np.full_like(want, np.nan), "coords_swapped": np.full_like(want, np.nan)}
    whole = case.a[:, :case.K]
    for g in range(G):
        for t in range(T):
            xy = gd.tile_xy(case, g, t)
            if xy:
                alt["through_base"][g, t] = model.tma_load(whole, gd.BOX, (xy[1], xy[0]))
                alt["coords_swapped"][g, t] = model.tma_load(gd.group_view(case, g), gd.BOX, (xy[0], xy[1]))
    said = {"through_base": "every box equals the box at the same (x, y) of A's first rows: what base describes",
            "coords_swapped": "every box equals the group's box at column y, row x"}
    for kind, other in alt.items():
        if np.array_equal(got[has], other[has], equal_nan=True):
            return kind, said[kind]
    bad = np.argwhere(~((got == want) | (np.isnan(got) & np.isnan(want))))
    g, t, i, j = (int(v) for v in bad[0])
    return None, (f"{len(bad)} of {int(has.sum()) * want[0, 0].size} elements differ; first in CTA ({t}, {g})'s box at "
                  f"[{i}, {j}]: yours {got[g, t, i, j]}, expected {want[g, t, i, j]}")


def _emulate(source, case, seed):
    """Run one case on the emulator; fail with the slip's hint, or return its boxes."""
    from ..emu import EmulatorError, MemoryFault, TmaRuleError, UnsupportedPTX
    bufs = gd.buffers(case)
    try:
        gd._run_emulator(source, case, bufs, seed)
    except RuntimeError as e:                        # NVRTC's log
        fail(NAME, f"it does not compile:\n{e}", f"keep the function's name and signature, {gd.SIGNATURE}; "
             "helpers you may call: smem_u32, and BOX_ROWS, BOX_COLS")
    except (TypeError, ValueError) as e:
        fail(NAME, str(e), f"keep the function's name and signature: {gd.SIGNATURE}")
    except UnsupportedPTX as e:
        fail(NAME, str(e), "write the PTX in asm volatile(...) as the course does; mark device functions "
             "__forceinline__ (the emulator runs no calls)")
    except EmulatorError as e:
        kind = gd.race_kind(str(e))
        if kind in (None, "not_copied") and isinstance(e, (TmaRuleError, MemoryFault)):
            found = slot_problem(case, bufs, _cta_of(e))
            if found:
                _fail_kind(found[0], f"{found[1]}\n  (the emulator stopped: {e})", case)
            kind = kind or ("rule" if isinstance(e, TmaRuleError) else "fault")
        if kind is None:
            fail(NAME, str(e), "", launched=f"{case.describe()} on the emulator")
        _fail_kind(kind, str(e), case)
    if bufs["status"][0]:
        _fail_kind("timeout", "a bounded wait timed out on the emulator's virtual clock", case)
    want = gd.expected(case)
    got = bufs["out"]
    if not np.array_equal(got, want, equal_nan=True):
        found = slot_problem(case, bufs)
        if found:
            _fail_kind(found[0], found[1], case)
        kind, msg = _explain_values(case, got, want)
        fail(NAME, msg, HINTS[kind] if kind else "compare each replaced field with the group's: address, "
             "global_dim (innermost first), global_stride (bytes)", launched=f"{case.describe()} on the emulator")
    return got


def check_group_box(source: str, tier=None) -> None:
    """Run the learner's ``load_group_box`` (CUDA C++ text, :data:`.group_desc.SIGNATURE`) in the
    course's kernel on the emulator, and on the GPU too where ``tier`` has TMA and
    ``tensormap.replace``; see the module doc."""
    if not isinstance(source, str) or gd.FUNCTION not in source:
        fail(NAME, f"expected the CUDA C++ source of {gd.FUNCTION} as a string, got "
             f"{type(source).__name__ if not isinstance(source, str) else 'a string without ' + gd.FUNCTION}",
             f"keep the function's name and signature: {gd.SIGNATURE}")
    if c_tokens(source) == c_tokens(gd.STUB):
        return not_attempted(NAME)
    rng = np.random.default_rng()
    cases = gd.cases(rng)
    for case in cases:
        _emulate(source, case, int(rng.integers(1 << 16)))
    gpu = tier is not None and tier.has("tma") and tier.has("tensormap_replace")
    if gpu:
        from .group_desc_run import gpu_outputs
        res = gpu_outputs(source, cases)
        if res["error"]:
            fail(NAME, f"on the GPU: {res['error']}", "the emulator passed it: read the error; a descriptor "
                 "that breaks a rule stops the kernel with an illegal instruction", launched=cases[0].describe())
        for case, got, st in zip(cases, res["outs"], res["status"]):
            if st:
                _fail_kind("timeout", "a bounded wait timed out on the GPU", case, "GPU")
            want = gd.expected(case)
            if not np.array_equal(got, want, equal_nan=True):
                _, msg = _explain_values(case, got, want)
                fail(NAME, f"on the GPU: {msg}", "the emulator passed it, the GPU did not: a race the emulator "
                     "did not model? Compare with the fence order of Exercise 3",
                     launched=f"{case.describe()} on the GPU")
    sizes = " and ".join(str(c.sizes) for c in cases)
    passed(NAME, f"groups of {sizes} rows: every box equals NumPy's, no race named ({gd.EMULATOR_LINE})"
           + ("; and on this GPU every element matched too." if gpu else
              "; on a GPU with tensormap.replace the check also runs it there."))
