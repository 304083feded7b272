"""Bulk copies (``cp.async.bulk``), TMA tensor copies (``cp.async.bulk.tensor``,
``cp.reduce.async.bulk.tensor``) through the course's NumPy TMA model, and descriptor updates
(``tensormap.replace``, ``tensormap.cp_fenceproxy``, ``fence.proxy.tensormap::generic``).

Rules checked at issue (each names the rule): 16-byte alignment and sizes for bulk copies, a
128-byte aligned shared box (the swizzle repeat for swizzled boxes), the descriptor and
coordinate rules of :mod:`utils.tma.rules` (via :mod:`utils.tma.model`), and the tensormap proxy
order for descriptors changed in global memory during the kernel.
"""
from __future__ import annotations

import numpy as np

from ..tma import model, rules
from ..tma.swizzle import repeat_bytes
from . import races
from .asyncops import AsyncOp, bulk_group
from .errors import MisalignedAddress, TmaRuleError, UnsupportedPTX
from .memory import CLUSTER_SHIFT, check_align
from .operands import address, getter
from .tensormap import decode

LOW = (1 << CLUSTER_SHIFT) - 1


def _lanes(w, m):
    return np.flatnonzero(w.run_mask if m is None else m).tolist()


def _val(g, w, i):
    return int(np.broadcast_to(g(w), (32,))[i])


def _targets(w, dst, mask=None):
    """The CTAs and offset a shared::cluster destination (or multicast ``mask``) names."""
    rank = dst >> CLUSTER_SHIFT
    off = dst & LOW
    if mask is not None:
        return [w.cta.cta_of(r) for r in range(16) if mask >> r & 1], off
    return [w.cta.cta_of(rank - 1) if rank else w.cta], off


def _descriptor(w, addr: int, what: str):
    """Decode the descriptor at generic ``addr``; check the tensormap proxy rules for global ones."""
    launch = w.launch
    win = addr >> 56
    if win == 1:
        raise TmaRuleError(f"{what}: the tensor map is in shared memory; TMA reads descriptors only from "
                           ".param, .const or .global space (copy it out with tensormap.cp_fenceproxy)")
    if win == 2:
        raw = launch.params[addr & ((1 << 56) - 1):][:128]
    else:
        check_align(np.array([addr], np.uint64), 64, what, "a CUtensorMap is 64-byte aligned")
        raw = launch.gmem.view(addr, 128, what)
        launch.tmaps.check_use(w, addr, what)
    return decode(raw, f"tensor map at {addr:#x}")


def _global_view(launch, spec):
    """The global tensor ``spec`` describes, as a NumPy view of the launch's memory."""
    try:
        dt = np.dtype(spec.dtype)
    except TypeError:
        raise UnsupportedPTX(f"TMA on {spec.dtype} tensors is not modelled by the emulator") from None
    extent = spec.elem_size + sum((d - 1) * s for d, s in zip(spec.array_shape, spec.array_strides_bytes))
    launch.gmem.view(spec.global_address, extent, "the tensor a TMA descriptor names")
    buf, off = launch.gmem.find(spec.global_address, extent)
    return np.ndarray(spec.array_shape, dt, buffer=buf, offset=off, strides=spec.array_strides_bytes)


def _rule(fn, what):
    try:
        return fn()
    except (ValueError, TypeError) as e:
        raise TmaRuleError(f"{what} breaks a TMA rule: {e}") from None


def _smem_align(addr, spec, what):
    need = max(128, repeat_bytes(spec.swizzle))
    if addr % need:
        raise MisalignedAddress(f"{what}: the shared-memory box starts at {addr:#x}, not a multiple of {need} B "
                                f"(a TMA box in shared memory must be 128-byte aligned"
                                + (f", and a {spec.swizzle}-swizzled one aligned to its {need}-B repeat"
                                   if need > 128 else "") + ")")


def compile_bulk(ins, k, sym):
    """Handlers for the bulk/tensor copies, their groups and the tensormap instructions, else None."""
    p = ins.parts
    if p[0] == "cp" and p[1:3] == ["async", "bulk"] and ("commit_group" in p or "wait_group" in p):
        return bulk_group(ins, k, sym)
    if p[0] == "tensormap" or (p[0] == "fence" and "tensormap::generic" in p):
        from .tmapops import compile_tmap
        return compile_tmap(ins, k, sym)
    reduce = p[0] == "cp" and p[1:4] == ["reduce", "async", "bulk"]
    if not (reduce or (p[0] == "cp" and p[1:3] == ["async", "bulk"])):
        return None
    if "prefetch" in p:
        return lambda w, m: None
    tensor = "tensor" in p
    to_shared = next(x for x in p if x.startswith(("shared", "global"))).startswith("shared")
    if reduce and "add" not in p:
        raise UnsupportedPTX(f"{ins.opcode}: only the .add reduction is modelled", ins.line, ins.text)
    if tensor and "im2col" in p:
        raise UnsupportedPTX(f"{ins.opcode}: only .tile mode is modelled (not im2col)", ins.line, ins.text)
    if tensor:
        return _tensor(ins, k, sym, to_shared, reduce)
    return _bulk(ins, k, sym, to_shared)


def _bulk(ins, k, sym, to_shared):
    p, ops = ins.parts, ins.ops
    dst, src, size = address(ops[0], k, sym), address(ops[1], k, sym), getter(ops[2], np.uint32, k, sym)
    bar = address(ops[3], k, sym) if to_shared else None
    mc = getter(ops[4], np.uint16, k, sym) if "multicast::cluster" in p else None
    what = ins.opcode.split(".mbarrier")[0].split(".bulk_group")[0]

    def h(w, m):
        from .mbarrier import find
        for i in _lanes(w, m):
            d, s, n = _val(dst, w, i), _val(src, w, i), _val(size, w, i)
            if n % 16 or d % 16 or s % 16:
                raise MisalignedAddress(f"{what}: size {n} B, destination {d:#x}, source {s:#x}: bulk copies "
                                        "move whole 16-byte units from and to 16-byte aligned addresses")
            launch, cta = w.launch, w.cta
            if to_shared:
                gsrc = launch.gmem.view(s, n, f"{what} source")
                targets, off = _targets(w, d, _val(mc, w, i) if mc else None)
                b_off = _val(bar, w, i) & LOW
                bars = [find(t, b_off, what, w, [i]) for t in targets]
                for t in targets:
                    t.smem_bytes(off, n, f"{what} destination")
                    races.check_async_write(t, off, n, what, w.where(_one(i)))

                def apply(targets=targets, off=off, n=n, gsrc=gsrc, bars=bars):
                    for t, b in zip(targets, bars):
                        t.smem[off:off + n] = gsrc
                        t.shadow.writer[off:off + n] = -1
                        op.phase_of[t.ctaid] = (b, b.phase)
                    for b in bars:
                        b.tx_add(-n)
                op = AsyncOp(launch, w, ins, "bulk load", apply, [(t, off, off + n, "loading") for t in targets])
                for b in bars:
                    b.landing.append(op)
                op.start()
            else:
                src_bytes = cta.smem_bytes(s, n, f"{what} source")
                gdst = launch.gmem.view(d, n, f"{what} destination")
                races.check_store_source(cta, s, n, int(w.linear[i]), what, w.where(_one(i)))

                def apply(gdst=gdst, src_bytes=src_bytes, d=d, n=n):
                    gdst[:] = src_bytes
                op = AsyncOp(launch, w, ins, "bulk store", apply, [(cta, s, s + n, "reading")])
                w.bulk_open.append(op)
                op.start()
    return h


def _one(i):
    m = np.zeros(32, bool)
    m[i] = True
    return m


def _tensor(ins, k, sym, to_shared, reduce):
    p, ops = ins.parts, ins.ops
    tmap_op = ops[1] if to_shared else ops[0]
    inner = tmap_op.strip()[1:-1]
    base, coords = inner.split(",", 1)
    tmap = getter(base.strip(), np.uint64, k, sym)
    cg = [getter(c.strip(), np.int32, k, sym) for c in coords.strip()[1:-1].split(",")]
    smem = address(ops[0] if to_shared else ops[1], k, sym)
    bar = address(ops[2], k, sym) if to_shared else None
    mc = getter(ops[3], np.uint16, k, sym) if "multicast::cluster" in p else None
    what = ins.opcode.split(".mbarrier")[0].split(".bulk_group")[0]

    def h(w, m):
        from .mbarrier import find
        for i in _lanes(w, m):
            launch, cta = w.launch, w.cta
            spec = _descriptor(w, _val(tmap, w, i), what)
            if len(cg) != spec.rank:
                raise TmaRuleError(f"{what} gives {len(cg)} coordinates but the descriptor has rank {spec.rank}")
            c = tuple(int(np.broadcast_to(g(w), (32,))[i]) for g in cg)[::-1]     # array order
            view = _global_view(launch, spec)
            _rule(lambda: model.tma_traffic(spec.array_shape, spec.array_box_shape, c, spec.elem_size,
                                            element_strides=spec.array_element_strides), what)
            tile_shape = spec.smem_box_dims[::-1]
            pos = model.smem_positions(tile_shape, spec.elem_size, spec.swizzle)
            span = int(pos.max()) + 1
            s_addr = _val(smem, w, i)
            if to_shared:
                targets, off = _targets(w, s_addr, _val(mc, w, i) if mc else None)
                _smem_align(off, spec, what)
                b_off = _val(bar, w, i) & LOW
                bars = [find(t, b_off, what, w, [i]) for t in targets]
                for t in targets:
                    t.smem_bytes(off, span, f"{what} destination")
                    races.check_async_write(t, off, span, what, w.where(_one(i)))

                def apply(targets=targets, off=off, bars=bars, spec=spec, c=c, view=view, pos=pos):
                    tile = model.tma_load(view, spec, c)
                    raw = np.ascontiguousarray(tile).reshape(-1).view(np.uint8)
                    for t, b in zip(targets, bars):
                        t.smem[off + pos] = raw
                        t.shadow.writer[off + pos] = -1
                        op.phase_of[t.ctaid] = (b, b.phase)
                    for b in bars:
                        b.tx_add(-spec.box_bytes)
                op = AsyncOp(launch, w, ins, "TMA load", apply, [(t, off, off + span, "loading") for t in targets])
                op.tmap = _val(tmap, w, i)
                for b in bars:
                    b.landing.append(op)
                op.start()
            else:
                _rule(lambda: model.tma_traffic(spec.array_shape, spec.array_box_shape, c, spec.elem_size), what)
                _rule(lambda: rules.coords(c, spec.rank, spec.elem_size, store=True), what)
                _rule(lambda: rules.distinct_elements(spec.global_dims, spec.global_strides_bytes,
                                                      spec.elem_size), what)
                if reduce:
                    _rule(lambda: rules.reduce_add_dtype(spec.dtype), what)
                _smem_align(s_addr, spec, what)
                cta.smem_bytes(s_addr, span, f"{what} source")
                races.check_store_source(cta, s_addr, span, int(w.linear[i]), what, w.where(_one(i)))

                def apply(s_addr=s_addr, spec=spec, c=c, view=view, pos=pos, tile_shape=tile_shape):
                    raw = cta.smem[s_addr + pos]
                    tile = raw.view(view.dtype).reshape(tile_shape)
                    fn = model.tma_reduce_add if reduce else model.tma_store
                    new, _ = fn(view, tile, c)
                    view[...] = new
                op = AsyncOp(launch, w, ins, "TMA reduce-add" if reduce else "TMA store", apply,
                             [(cta, s_addr, s_addr + span, "reading")])
                op.tmap = _val(tmap, w, i)
                w.bulk_open.append(op)
                op.start()
    return h

