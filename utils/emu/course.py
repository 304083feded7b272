"""The course's CUDA launchers on the emulator, for the cpu tier.

Same arguments and the same input checks (:mod:`utils.tma.rules`, ``make_spec``) as the GPU
launchers of :mod:`utils.cuda_cpp.day02`, :mod:`utils.tma.runtime` and :mod:`utils.tma.lab_run`,
with NumPy arrays instead of CuPy ones and small sizes. Each returns what the GPU launcher returns
plus the emulator's :class:`~.errors.Report` (whose repr starts with "emulator:"). Inputs are
copied to 256-byte aligned buffers (like cudaMalloc) and outputs copied back. A timed-out bounded
wait raises RuntimeError like the GPU launchers, saying the clock was the emulator's virtual one;
races, faults and rule violations raise the emulator's errors.
"""
from __future__ import annotations

import numpy as np

from ..cuda_cpp import day02
from ..tma import lab, runtime
from .api import device_empty, launch, tensor_map, to_device
from .errors import EmulatorError

TIMEOUT_NS = 10**9
VIRTUAL = "(the emulator's virtual clock: its bounded wait fired because nothing could ever complete it)"


def _timeout(status, what):
    if int(status[0]):
        raise RuntimeError(f"emulator: an mbarrier wait timed out {VIRTUAL}: {what}")


def mbar_phases(rounds: int = 3, threads: int = 64, seed: int = 0):
    """day02.mbar_phases on the emulator: (rows of (parity-0 done?, parity-1 done?), report)."""
    if not 1 <= rounds <= 16 or threads % 64 or not 64 <= threads <= 1024:
        raise ValueError(f"need 1 <= rounds <= 16 and threads a multiple of 64, got {rounds}, {threads}")
    probe = device_empty(2 + 4 * rounds, np.int32, -1)
    rep = launch(day02.SOURCE, "mbar_phases", 1, threads, [rounds, probe], seed=seed)
    return probe.reshape(-1, 2).copy(), rep


def _vec(x, y):
    if x.dtype != np.float32 or x.size % 4 or y.shape != x.shape or y.dtype != x.dtype:
        raise ValueError(f"x and y must be float32 of one shape with a size divisible by 4, got {x.dtype} "
                         f"{x.shape} and {y.dtype} {y.shape}")
    return to_device(x), to_device(y)


def ring(x, y, stages: int, work: int = 0, *, bulk: bool = False, producer_parity: str | None = None,
         blocks: int = 2, seed: int = 0, check: bool = True):
    """day02.ring on the emulator (producer warp + consumer warp around ``stages`` buffers)."""
    if not (isinstance(stages, int) and 1 <= stages <= 8):
        raise ValueError(f"stages must be an int in 1..8 (8 barrier pairs), got {stages!r}")
    xd, yd = _vec(x, y)
    st = device_empty(1, np.int32, 0)
    src = day02.SOURCE if producer_parity is None else day02.with_producer_parity(producer_parity)
    rep = launch(src, "pc_ring", blocks, 64, [xd, yd, x.size // 4, stages, work, int(bool(bulk)), st, TIMEOUT_NS],
                 shared_bytes=stages * day02.TILE_VEC * 16, seed=seed)
    y[...] = yd
    if check:
        _timeout(st, "a phase that never completes (producer and consumer wait for each other)")
    return y, rep


def pipeline(x, y, stages: int, work: int = 0, threads: int = 64, blocks: int = 2, seed: int = 0):
    """day02.pipeline (cp.async ring of ``stages`` tiles) on the emulator."""
    if stages not in day02.STAGES:
        raise ValueError(f"stages must be one of {day02.STAGES} (compiled variants), got {stages!r}")
    xd, yd = _vec(x, y)
    rep = launch(day02.SOURCE, f"cp_async_pipeline_s{stages}", blocks, threads, [xd, yd, x.size // 4, work],
                 shared_bytes=stages * threads * 16, seed=seed)
    y[...] = yd
    return y, rep


def load_dump(array, box_shape, coords, *, expect_bytes=None, seed: int = 0, **spec_kwargs):
    """runtime.load_dump on the emulator: (raw shared-memory bytes, report)."""
    a = to_device(array)
    tm = tensor_map(a, box_shape, **spec_kwargs)
    expect = tm.spec.box_bytes if expect_bytes is None else expect_bytes
    k = runtime.coords_arg(runtime.check_coords(tm.spec, coords))
    n = runtime.smem_image_bytes(tm.spec)
    out, st = device_empty(n, np.uint8, 0), device_empty(1, np.int32, 0)
    rep = launch(runtime.SOURCE, "tma_load_dump", 1, 128, [tm, tm.spec.rank, k, np.uint32(expect), n, out, st,
                                                           TIMEOUT_NS], shared_bytes=n + runtime.ALIGN_SLACK, seed=seed)
    _timeout(st, f"expect_tx declared {expect} B but the box delivers {tm.spec.box_bytes} B")
    return out.copy(), rep


def store_box(array, tile, coords, *, reduce: bool = False, proxy_fence: bool = True, seed: int = 0, **spec_kwargs):
    """runtime.store_box on the emulator: writes (or adds) ``tile`` into ``array`` in place."""
    a = to_device(array)
    tile = to_device(np.ascontiguousarray(tile, dtype=a.dtype))
    tm = tensor_map(a, tile.shape, **spec_kwargs)
    k = runtime.coords_arg(runtime.check_coords(tm.spec, coords, store=True))
    rep = launch(runtime.SOURCE, "tma_store_box", 1, 128, [tm, tm.spec.rank, k, tile.view(np.uint8).ravel(),
                                                           tile.nbytes, int(bool(reduce)), int(bool(proxy_fence))],
                 shared_bytes=tile.nbytes + runtime.ALIGN_SLACK, seed=seed)
    array[...] = a
    return rep


def copy_tiles(src, dst, box_shape=(16, 64), *, pipelined: bool = False, stages: int = 3, ctas: int = 2,
               seed: int = 0, **spec_kwargs):
    """runtime.copy_tiles (one tile per CTA) or, with ``pipelined``, copy_pipelined on the emulator."""
    if src.shape != dst.shape or src.dtype != dst.dtype or src.ndim != 2:
        raise ValueError(f"src and dst must be 2-D with equal shape and dtype, got {src.shape}/{src.dtype} "
                         f"and {dst.shape}/{dst.dtype}")
    s, d = to_device(src), to_device(dst)
    a, b = tensor_map(s, box_shape, **spec_kwargs), tensor_map(d, box_shape, **spec_kwargs)
    by, bx = box_shape
    tx, ty = -(-src.shape[1] // bx), -(-src.shape[0] // by)
    st = device_empty(1, np.int32, 0)
    if pipelined:
        rep = launch(runtime.SOURCE, "tma_copy_pipelined", ctas, 32, [a, b, tx, tx * ty, bx, by, stages,
                                                                      a.spec.box_bytes, st, TIMEOUT_NS],
                     shared_bytes=stages * a.spec.box_bytes + runtime.ALIGN_SLACK, seed=seed)
    else:
        rep = launch(runtime.SOURCE, "tma_copy_tile", tx * ty, 32, [a, b, tx, bx, by, a.spec.box_bytes, st,
                                                                    TIMEOUT_NS],
                     shared_bytes=a.spec.box_bytes + runtime.ALIGN_SLACK, seed=seed)
    dst[...] = d
    _timeout(st, "a tile never arrived")
    return dst, rep


def grouped_load(arrays, box_shape, mode: int, seed: int = 0):
    """update_run.grouped_load on the emulator: (tiles[g] = box (0, 0) of group g, report); the
    descriptor comes from ``mode`` (update_run.MODES). No cycles: the emulator has no time."""
    from ..tma import update, update_run
    from .tensormap import encode
    rules_ok = [np.asarray(a) for a in arrays]
    if not rules_ok or any(a.ndim != 2 or a.dtype != rules_ok[0].dtype for a in rules_ok):
        raise TypeError("arrays must be a non-empty list of 2-D NumPy arrays of one dtype, one per group")
    if mode not in update_run.MODES:
        raise ValueError(f"mode must be one of {sorted(update_run.MODES)} ({update_run.MODES}), got {mode!r}")
    dev = [to_device(a) for a in rules_ok]
    G = len(dev)
    if mode == 3 and G > update_run.BYVALUE_MAX:
        raise ValueError(f"mode 3 passes descriptors by value in a {update_run.BYVALUE_MAX}-slot parameter struct")
    base = tensor_map(dev[0], box_shape).spec
    specs = [update.group_spec(base, a.ctypes.data, a.shape, a.strides) for a in dev]
    groups = to_device(np.array([(a.ctypes.data, a.shape[0], a.shape[1], a.strides[0]) for a in dev],
                                update_run.GROUP))
    slots, byval = device_empty((G, 128), np.uint8, 0), np.zeros(update_run.BYVALUE_MAX * 128, np.uint8)
    for g, s in enumerate(specs):
        if mode == 2:
            slots[g] = encode(s).view(np.uint8)
        if mode == 3:
            byval[g * 128:(g + 1) * 128] = encode(s).view(np.uint8)
    out, cyc = device_empty(G * base.box_bytes, np.uint8, 0), device_empty(G, np.int64, 0)
    st = device_empty(1, np.int32, 0)
    rep = launch(update.SOURCE, "grouped_load_updated", G, 128,
                 [tensor_map(dev[0], box_shape), byval.view(f"V{byval.size}"), groups.view(np.uint8), slots, mode,
                  base.box_bytes, out, cyc, st, TIMEOUT_NS], arrays=dev, seed=seed)
    _timeout(st, f"mode {mode}: a group's box never arrived")
    return out.view(dev[0].dtype).reshape((G, *box_shape)).copy(), rep


def update_race(x, y, box_shape, *, release: bool, acquire: bool, in_flight: bool = False, ctas: int = 2,
                seed: int = 0):
    """update_run.update_race on the emulator, races collected rather than raised: (which data each
    load saw, as update_run returns it, and the report whose ``races`` name the missing fences)."""
    from ..tma import update, update_run
    from .tensormap import encode
    xd, yd = to_device(x), to_device(y)
    if xd.shape != yd.shape or xd.dtype != yd.dtype:
        raise ValueError("x and y must have the same shape and dtype: only the address is replaced")
    spec = tensor_map(xd, box_shape).spec
    slots = to_device(np.tile(encode(spec).view(np.uint8), (ctas, 1)))
    flags = (update_run.RACE_FLAGS["release"] * bool(release) | update_run.RACE_FLAGS["acquire"] * bool(acquire)
             | update_run.RACE_FLAGS["in_flight"] * bool(in_flight))
    out, st = device_empty(ctas * 2 * spec.box_bytes, np.uint8, 0), device_empty(1, np.int32, 0)
    rep = launch(update.SOURCE, "update_race", ctas, 128, [slots, yd.ctypes.data, flags, spec.box_bytes, out, st,
                                                          TIMEOUT_NS], arrays=[xd, yd], seed=seed, strict=False)
    _timeout(st, "a load through the updated descriptor never arrived")
    box = tuple(slice(0, n) for n in box_shape)
    bx, by = (np.ascontiguousarray(a[box]).view(np.uint8).ravel() for a in (xd, yd))
    seen = out.reshape(ctas, 2, spec.box_bytes)
    result = {}
    for i, name in enumerate(("load1", "load2")):
        is_x, is_y = (seen[:, i] == bx).all(1), (seen[:, i] == by).all(1)
        result[name] = {"x": int(is_x.sum()), "y": int(is_y.sum()), "other": int((~is_x & ~is_y).sum())}
    return result, rep


def reduce_add(c, partials, box_shape, seed: int = 0):
    """update_run.reduce_add on the emulator: adds the (S, M, N) float32 ``partials`` into ``c``
    (M, N) float32 in place with one TMA reduce-add per (box, split). Returns (c, report)."""
    from ..tma import rules, update
    c_dev, p = to_device(c), np.asarray(partials)
    rules.require(c_dev.dtype == np.float32 and p.dtype == np.float32 and p.ndim == 3 and p.shape[1:] == c.shape,
                  f"c must be (M, N) float32 and partials (S, M, N) float32, got {c.shape} {c.dtype} and "
                  f"{p.shape} {p.dtype}")
    by, bx = rules.ints("box_shape", box_shape)
    rules.require(1 <= bx <= 64 and 1 <= by <= 64, f"box {box_shape} exceeds the kernel's 64 x 64 fp32 tile")
    M, N = c.shape
    rules.require(M % by == 0 and N % bx == 0, f"C {c.shape} is not a whole number of {box_shape} boxes")
    S, tiles_x = p.shape[0], N // bx
    boxes = to_device(p.reshape(S, M // by, by, tiles_x, bx).transpose(0, 1, 3, 2, 4))
    rep = launch(update.SOURCE, "splitk_reduce_add", ((M // by) * tiles_x, S), 128,
                 [tensor_map(c_dev, (by, bx)), boxes, tiles_x, bx, by, M * N], seed=seed)
    c[...] = c_dev
    return c, rep


LAB_SHAPE, LAB_GRID = (40, 100), 3


def lab_report(name: str, *, shape=LAB_SHAPE, seed: int = 0, source: str | None = None) -> dict:
    """Run lab kernel ``name`` once on the emulator; what happened, in lab_run's terms plus the
    emulator's finding: ``error`` (exception class or None), ``message``, ``deadlocks`` (hangs its
    bounded wait escaped), ``wait_timed_out``, and wrong / undoubled / unwritten / elements."""
    lab.known(name)
    rng = np.random.default_rng()
    x = to_device(rng.standard_normal(shape).astype(np.float32))
    y, st = device_empty(shape, np.float32, np.nan), device_empty(1, np.int32, 0)
    rep = {"kernel": name, "emulator": True, "error": None, "message": None, "deadlocks": [],
           "wait_timed_out": False, "elements": int(x.size)}
    try:
        r = launch(source or lab.SOURCE, name, LAB_GRID, 128,
                   [tensor_map(x, lab_run_box()), tensor_map(y, lab_run_box()), shape[0], shape[1], st, TIMEOUT_NS],
                   shared_bytes=16 * 32 * 4 + 128 + runtime.ALIGN_SLACK, seed=seed)
        rep["deadlocks"], rep["report"] = list(r.deadlocks), r
    except EmulatorError as e:
        rep["error"], rep["message"] = type(e).__name__, str(e)
    rep["wait_timed_out"] = bool(st[0])
    rep["wrong"] = int((y != 2 * x).sum())
    rep["undoubled"] = int((y == x).sum())
    rep["unwritten"] = int(np.isnan(y).sum())
    return rep


def lab_run_box():
    """The lab's box (rows, cols), as utils.tma.lab_run launches it."""
    from ..tma.lab_run import BOX
    return BOX
