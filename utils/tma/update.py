"""Descriptors built on the device from a base descriptor: the grouped GEMM's TMA (issue 15).

A grouped (MoE) GEMM runs G GEMMs of different sizes in one kernel. The host encodes ONE base
descriptor; for group g the kernel copies its 128 bytes and replaces only what differs, with
``tensormap.replace``: the global address, dims and strides. Box, swizzle, dtype, element
strides and fill stay: they describe the kernel's tile, the same for every group.

* :func:`group_spec` is that descriptor as a :class:`~.descriptor.TensorMapSpec`, checked by the
  same rules (:mod:`.rules`) as a host-encoded one: a group whose row stride is not a multiple of
  16 B gets the same error ``make_spec`` gives.
* :func:`fields_to_replace` names the ``tensormap.replace`` fields in which two specs differ;
  :func:`replace_ops` lists the instructions, in the order ``update_kernels.cu`` issues them.
* :data:`FENCE_ORDERS` is the order of operations that makes the new descriptor visible to the
  TMA unit (the *tensormap proxy*), for an update in shared memory and one in global memory.
* :func:`ptx` compiles ``update_kernels.cu`` for sm_90a; :data:`SASS_OF` is what ptxas made of
  each instruction (read on a CPU). The kernels are compiled and read on any machine and run on
  a Hopper GPU by :mod:`.update_run` (``grouped_load_updated``, ``update_race``,
  ``splitk_reduce_add``), and without one on the course's CPU emulator (``utils.emu.course``:
  values and named races, never a time). Notebook 06's Exercise 4 has the learner write the
  device-side build itself (``group_tile.cu`` beside this file, checked by ``utils.day05``).

PTX ISA sources (docs.nvidia.com/cuda/parallel-thread-execution): ``tensormap.replace`` (Data
Movement and Conversion Instructions; PTX ISA 8.3, sm_90a; fields ``.global_address .rank``,
``.box_dim .global_dim .global_stride .element_stride``, ``.elemtype .interleave_layout
.swizzle_mode .swizzle_atomicity .fill_mode``; a weak write of the whole 1024-bit object);
``tensormap.cp_fenceproxy`` (Parallel Synchronization and Communication; PTX ISA 8.3, sm_90; its
example is exactly: replace in shared memory, cp_fenceproxy to global, acquire, tensor copy);
``fence.proxy.tensormap::generic.release/.acquire [addr], 128`` (membar/fence; PTX ISA 8.3);
``prefetch.tensormap`` (prefetch). ``global_stride`` ordinal i is ``globalStrides[i]``, the
stride of dim i+1, in bytes (CUTLASS ``cute/arch/copy_sm90_desc.hpp``; Triton's device-side
descriptors emit the same). Page anchors: ``#data-movement-and-conversion-instructions-tensormap-replace``,
``#parallel-synchronization-and-communication-instructions-tensormap-cp-fenceproxy``,
``#parallel-synchronization-and-communication-instructions-membar-fence``,
``#data-movement-and-conversion-instructions-prefetch-prefetchu``; the acquire's reason is in the
Memory Consistency Model: "the tensormap-proxy ... is not acquired from generic-proxy at CUDA
Kernel start and must therefore be acquired explicitly using fence.proxy.tensormap::generic.acquire".
"""
from __future__ import annotations

import dataclasses
import pathlib
from typing import NamedTuple

from ..core.args import ADDRESS_RULE
from . import rules
from .descriptor import TensorMapSpec

# TensorMapSpec attribute -> the tensormap.replace field that changes it (l2_promotion has none)
PTX_FIELD = {"global_address": "global_address", "rank": "rank", "global_dims": "global_dim",
             "global_strides_bytes": "global_stride", "box_dims": "box_dim",
             "element_strides": "element_stride", "dtype": "elemtype", "interleave": "interleave_layout",
             "swizzle": "swizzle_mode", "oob_fill": "fill_mode"}
FIELDS = tuple(PTX_FIELD.values())
PER_GROUP = ("global_address", "global_dim", "global_stride")   # what group_spec may change


def _spec(s, name):
    if not isinstance(s, TensorMapSpec):
        raise TypeError(f"{name} must be a TensorMapSpec (utils.tma.descriptor.make_spec), got {type(s).__name__}")
    return s


def group_spec(base_spec, ptr, shape, strides) -> TensorMapSpec:
    """The descriptor of one group: ``base_spec`` with the global address ``ptr``, the global
    ``shape`` and the byte ``strides`` (both array order, like ``arr.shape``/``arr.strides``)
    replaced, everything else kept. Every rule of :mod:`.rules` is checked again."""
    base = _spec(base_spec, "base_spec")
    shape, strides = rules.ints("shape", shape), rules.ints("strides", strides)
    rules.require(len(shape) == base.rank, f"group shape {shape} has rank {len(shape)} but the base "
                  f"descriptor has rank {base.rank}: its box has one entry per dimension, so a group of "
                  "another rank needs its own descriptor")
    rules.require(min(shape) >= 1, f"group shape {shape} has an empty dimension: a descriptor needs "
                  "every dimension >= 1; a group with no rows has no tiles, skip it")
    rules.integer("ptr", ptr, ADDRESS_RULE)          # named here; its range and alignment as make_spec says
    dims, gstrides = rules.tensor(shape, strides, base.dtype, ptr)
    return dataclasses.replace(base, global_address=int(ptr), global_dims=dims, global_strides_bytes=gstrides)


def fields_to_replace(base_spec, group_spec_) -> frozenset:
    """The ``tensormap.replace`` fields (PTX names, :data:`FIELDS`) in which the two specs differ.
    ``l2_promotion`` has no such field: a change there needs a descriptor encoded on the host."""
    base, group = _spec(base_spec, "base_spec"), _spec(group_spec_, "group_spec")
    rules.require(base.l2_promotion == group.l2_promotion, f"l2_promotion differs ({base.l2_promotion!r} vs "
                  f"{group.l2_promotion!r}): tensormap.replace has no field for it; encode on the host")
    return frozenset(PTX_FIELD[a] for a in PTX_FIELD if getattr(base, a) != getattr(group, a))


class Replace(NamedTuple):
    """One ``tensormap.replace.tile`` instruction: field, ordinal (None for address/rank), value."""
    field: str
    ordinal: int | None
    value: int

    def ptx(self, space: str = "shared::cta", addr: str = "[desc]") -> str:
        """The instruction's PTX text (``space``: "shared::cta" or "global")."""
        rules.one_of("space", space, ("shared::cta", "global"))
        width = 64 if self.field in ("global_address", "global_stride") else 32
        ord_ = "" if self.ordinal is None else f"{self.ordinal}, "
        return f"tensormap.replace.tile.{self.field}.{space}.b1024.b{width} {addr}, {ord_}{self.value:#x};"


def replace_ops(base_spec, group_spec_) -> list:
    """The replacements that turn ``base_spec`` into ``group_spec_`` (only :data:`PER_GROUP`
    fields may differ), one :class:`Replace` per changed value: address, then dims (driver order,
    ordinal = dim), then strides (ordinal i = stride of dim i+1, bytes)."""
    base, group = _spec(base_spec, "base_spec"), _spec(group_spec_, "group_spec")
    other = sorted(fields_to_replace(base, group) - set(PER_GROUP))
    rules.require(not other, f"the specs also differ in {other}: a group keeps the base's box, swizzle, dtype, "
                  "element strides and fill (they describe the kernel's tile); build it with group_spec")
    ops = [Replace("global_address", None, group.global_address)] if base.global_address != group.global_address else []
    ops += [Replace("global_dim", d, n) for d, (n, m) in enumerate(zip(group.global_dims, base.global_dims)) if n != m]
    ops += [Replace("global_stride", i, s)
            for i, (s, t) in enumerate(zip(group.global_strides_bytes, base.global_strides_bytes)) if s != t]
    return ops


# ---- the order of operations (PTX ISA: tensormap.cp_fenceproxy's example; membar/fence) ----
FENCE_STEPS = {
    "copy": "copy the 128-byte base descriptor into shared memory (ordinary loads/stores: generic "
            "proxy), then __syncwarp",
    "replace": "tensormap.replace.tile.{global_address, global_dim, global_stride} on that copy",
    "cp_fenceproxy": "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu."
                     "sync.aligned [gdesc], [sdesc], 128: copy it to global memory and release it "
                     "to the tensormap proxy (whole warp)",
    "copy_global": "copy the 128-byte base descriptor into its slot in global memory (generic proxy)",
    "replace_global": "tensormap.replace.tile.{...}.global on the slot, in place",
    "release": "fence.proxy.tensormap::generic.release.gpu: order those generic-proxy writes "
               "before later tensormap-proxy reads",
    "acquire": "fence.proxy.tensormap::generic.acquire.gpu [gdesc], 128: the consumer's side; the "
               "tensormap proxy is not acquired from the generic proxy at kernel start (PTX ISA, Memory "
               "Consistency Model)",
    "prefetch": "prefetch.tensormap [gdesc] (optional): bring the descriptor into the TMA unit's cache",
    "load": "cp.async.bulk.tensor ... [gdesc, {x, y}]: use the new descriptor",
}
FENCE_ORDERS = {
    "smem": ("copy", "replace", "cp_fenceproxy", "acquire", "prefetch", "load"),
    "global": ("copy_global", "replace_global", "release", "acquire", "prefetch", "load"),
}
FENCE_ORDER = FENCE_ORDERS["smem"]   # what CUTLASS and Triton's device-side descriptors do
OPTIONAL = ("prefetch",)

# ---- the CUDA source, read on a CPU ----
SOURCE = pathlib.Path(__file__).with_name("update_kernels.cu").read_text()
KERNELS = ("grouped_load_updated", "update_race", "splitk_reduce_add")
# What ptxas (13.4, from Triton's wheel, -arch=sm_90a) made of each instruction: read from the
# SASS on a CPU by tests/test_tma_update.py (any machine); the kernels run on Hopper through
# utils/tma/update_run.py. The acquire's trailing UTMACMDFLUSH depends on the ptxas version:
# 13.4 (Triton 3.9's ptxas-blackwell) emits it, 12.9 (Triton 3.9's ptxas) and 13.0 (Triton 3.6's
# ptxas-blackwell, read on the GPU machine) do not; CMDFLUSH_FROM is the first version seen to.
CMDFLUSH_FROM, CMDFLUSH_NOT_IN = (13, 4), (13, 0)
SASS_OF = {
    "tensormap.replace (shared::cta)": "STS / STS.64 into the 128-B copy: the fields sit at fixed offsets "
                                       "(dims stored minus 1, the stride stored >> 4), no TMA instruction",
    "tensormap.replace (global)": "STG / STG.64 into the slot, the same offsets",
    "tensormap.cp_fenceproxy": "LDS + ATOMG.E.EXCH.STRONG.GPU: each lane moves 4 of the 128 bytes "
                               "with a strong exchange",
    "fence.proxy.tensormap::generic.release": "MEMBAR.ALL.CTA, MEMBAR.ALL.GPU, ERRBAR, CGAERRBAR",
    "fence.proxy.tensormap::generic.acquire": "DEPBAR, UTMACCTL.IV [desc] (invalidate the TMA unit's "
                                              "cached copy), and with ptxas 13.4 UTMACMDFLUSH",
    "prefetch.tensormap": "UTMACCTL.PF [desc]",
    "cp.async.bulk.tensor (load)": "UTMALDG.2D",
    "cp.reduce.async.bulk.tensor ... .add": "UTMAREDG.2D.ADD",
}


def ptx() -> str:
    """sm_90a PTX of ``update_kernels.cu`` (NVRTC; works on any machine, no GPU needed)."""
    from ..cuda_cpp.nvrtc import nvrtc_ptx
    return nvrtc_ptx(SOURCE, name="update_kernels.cu")
