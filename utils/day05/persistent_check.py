"""Exercise 4 of ``day05_tma/03_triton_tma_gemm``: the learner writes the persistent kernel
``persistent_kernel(a_desc, b_desc, c_ptr, M, N, K, BM, BN, BK, GROUP_M, NUM_PROGRAMS)``: a grid of
``NUM_PROGRAMS`` programs, each looping over output tiles ``pid, pid + NUM_PROGRAMS, ...`` (the
grouped order of Exercise 3 through ``tile_coords``), v1's descriptor K loop, and the tile stored
through a device-side descriptor of C (a TMA store). :func:`check_persistent` runs it.

The run: on the GPU, or under the Triton interpreter on the cpu tier, at two shapes that are not
multiples of the blocks, with ``NUM_PROGRAMS`` smaller than the number of tiles and not a divisor
of it (programs take different numbers of tiles), fresh random inputs (the seed is printed) and C
pre-filled with NaN inside a NaN guard (:func:`utils.day05.v1_check._guarded_output`). Every
element is compared with a float64 (CPU) / float32 (GPU) ``A @ B``. A wrong C is matched against
the tile-loop slips of :data:`LOOP_SLIPS`, each emulated in float64 for the tile orders a learner
may pick, then against v1's K-loop slips.

What the values cannot show: under the interpreter every descriptor store is recorded (which
program stored which tile), so a loop that steps by 1 (every tile computed by several programs,
right values) is caught (on a GPU, where nothing is recorded, the AST below catches it); on any
tier the kernel's AST must hold a tile loop that steps by ``NUM_PROGRAMS`` and a descriptor
``.store``; and the kernel compiled for ``sm_90a`` with the
Hopper configuration must issue ``cp.async.bulk.tensor`` from shared to global (the store; a
compile, on any machine: the hardware run of that code happens on Hopper).

On a GPU the kernel runs in a child process (:func:`utils.triton_lang.isolated.launches`): a tile
stored at its indices instead of its offsets is a TMA copy off the 16-byte grid, an illegal
instruction that would otherwise stop this process's GPU for good; the check then fails with the
TMA rule (:func:`utils.day05.v1_check.explain_error`). Stores are recorded only where the kernel
runs in this process under the interpreter (:func:`records_stores`)."""
from __future__ import annotations

import ast
import collections
import contextlib
import inspect
import random
import textwrap

from . import gemm
from ..triton_lang import isolated
from .k_loop_check import K_ERROR_HINTS, K_SLIPS, _cancelling, _kernel_source, k_loop_emulated
from .v1_check import FP16_ACC, V1_SLIPS, _guarded_output, _outside, _same, compile_for_hopper, explain_error, mismatch
from ..core.checks import fail, not_attempted, passed

NAME = "persistent_kernel"
SIGNATURE = ("persistent_kernel(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, "
             "BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr)")
BLOCKS = {False: (32, 32, 32), True: (64, 128, 32)}        # (BM, BN, BK) by tier.has_gpu
GROUP_M = 2
# (M, N, K, NUM_PROGRAMS): no size a multiple of its block, tile rows != tile columns, and the
# programs fewer than the tiles and no divisor of them, with at least 2 tiles left over (so a loop
# that stops one tile early and one right only when NUM_PROGRAMS divides differ).
RUNS = {False: ((100, 72, 80, 5), (56, 136, 72, 4)),       # 4 x 3 = 12 tiles; 2 x 5 = 10 tiles
        True: ((300, 200, 136, 4), (200, 328, 104, 5))}    # 5 x 2 = 10 tiles; 4 x 3 = 12 tiles

STEP_BY_ONE = ("each tile is computed and stored by several programs (values right, work repeated): "
               "the tile loop steps by NUM_PROGRAMS, for tile in range(pid, num_tiles, NUM_PROGRAMS), "
               "so that program p takes tiles p, p + NUM_PROGRAMS, ... and no other")
LOOP_STEP = ("no tile loop steps by NUM_PROGRAMS: one that steps by 1 has each tile computed and "
             "stored by several programs (values right, work repeated); write for tile in "
             "range(tl.program_id(0), num_tiles, NUM_PROGRAMS)")
TL_STORE = ("the epilogue is a TMA store, not tl.store: build C's descriptor in the kernel, "
            "c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], "
            "block_shape=[BM, BN]), and store the tile with c_desc.store([off_m, off_n], acc.to(...))"
            " (no mask: the copy engine clips the edge)")
NOT_WRITTEN = ("some tiles of C were never written: num_tiles = cdiv(M, BM) * cdiv(N, BN); each "
               "program loops tile = pid, pid + NUM_PROGRAMS, ... while tile < num_tiles, maps it "
               "with tile_coords to (pid_m, pid_n) and stores the whole tile with its top-left corner at "
               "[pid_m * BM, pid_n * BN]")

ERROR_HINTS = [  # (a piece of the interpreter's message, the hint for it), before the K loop's
    ("16-byte aligned", "a descriptor's offsets are the element coordinates of the tile's top-left "
                        "corner, [pid_m * BM, pid_n * BN], not the tile's indices [pid_m, pid_n]")]


def _orders(npm, npn, g):
    """Tile orders a learner may pick: tile index -> (pid_m, pid_n), all correct."""
    return {"grouped": lambda t: gemm.tile_order_ref(t, npm, npn, g),
            "row-major": lambda t: (t // npn, t % npn),
            "column-major": lambda t: (t % npm, t // npm)}


def _grouped_loose(t, npm, npn, g):
    """The grouped formula evaluated for any sizes (a slip may pass them swapped)."""
    per = g * npn
    first = t // per * g
    rows = min(npm - first, g)
    return (first + t % per % rows, t % per // rows) if rows > 0 else (-1, -1)


def _swapped_orders(npm, npn, g):
    """(pid_m, pid_n) when the tile index is decomposed with num_pid_m and num_pid_n swapped."""
    return {"grouped": lambda t: _grouped_loose(t, npn, npm, g),
            "row-major": lambda t: (t // npm, t % npm),
            "column-major": lambda t: (t % npn, t // npn)}


LOOP_SLIPS = [  # (tiles program p takes of T with P programs, swapped decomposition?, acc reset?, hint)
    (lambda p, T, P: range(p, T - 1, P), False, True,
     "the tile loop stops one tile early: the last tile (num_tiles - 1) is never written; loop "
     "while tile < num_tiles, range(pid, num_tiles, NUM_PROGRAMS)"),
    (lambda p, T, P: range(p, T // P * P, P), False, True,
     "right only when NUM_PROGRAMS divides the number of tiles: here it does not, and the last, "
     "partial round of tiles is never written; loop tile = pid, pid + NUM_PROGRAMS, ... while "
     "tile < num_tiles (programs may take different numbers of tiles)"),
    (lambda p, T, P: range(p, T, P), True, True,
     "the tile index is decomposed with num_pid_m and num_pid_n swapped: tile_coords(tile, "
     "num_pid_m, num_pid_n, GROUP_M) with num_pid_m = cdiv(M, BM), num_pid_n = cdiv(N, BN) (in "
     "row-major order pid_m = tile // num_pid_n, pid_n = tile % num_pid_n)"),
    (lambda p, T, P: range(p, T, P), False, False,
     "acc is not reset per tile: each tile adds onto the previous tiles of its program; "
     "acc = tl.zeros((BM, BN), dtype=tl.float32) goes inside the tile loop, before the K loop"),
]


def _emulate(ref, BM, BN, P, g, tiles, swapped, reset, order):
    """C (float64, NaN where unwritten) when program p computes ``tiles(p, T, P)`` in ``order``
    (decomposed with swapped sizes if ``swapped``), resetting acc per tile if ``reset``."""
    import torch
    (M, N), npm, npn = ref.shape, -(-ref.shape[0] // BM), -(-ref.shape[1] // BN)
    pad = torch.zeros(npm * BM, npn * BN, dtype=torch.float64)
    pad[:M, :N] = ref
    where = (_swapped_orders if swapped else _orders)(npm, npn, g)[order]
    c = torch.full((M, N), float("nan"), dtype=torch.float64)
    for p in range(P):
        acc = torch.zeros(BM, BN, dtype=torch.float64)
        for t in tiles(p, npm * npn, P):
            pm, pn = where(t)
            inside = 0 <= pm < npm and 0 <= pn < npn
            tile = pad[pm * BM:(pm + 1) * BM, pn * BN:(pn + 1) * BN] if inside else 0 * acc
            acc = tile.clone() if reset else acc + tile
            if inside:
                r, col = pm * BM, pn * BN
                c[r:r + BM, col:col + BN] = acc[:min(BM, M - r), :min(BN, N - col)]
    return c


@contextlib.contextmanager
def _recording_stores(kernel):
    """Under the interpreter: yield a list that receives (program, tile origin) for every
    descriptor store the kernel makes. Elsewhere (a compiled kernel): yield None."""
    if type(kernel).__name__ != "InterpretedFunction":
        yield None
        return
    from triton.runtime import interpreter
    builder, stores = interpreter.interpreter_builder, []
    original = builder.create_descriptor_store

    def store(desc, value, indices):
        stores.append((builder.grid_idx[0], tuple(int(i.data.reshape(-1)[0]) for i in indices)))
        return original(desc, value, indices)

    builder.create_descriptor_store = store
    try:
        yield stores
    finally:
        del builder.create_descriptor_store        # the class's method again


def records_stores(kernel, device) -> bool:
    """Whether a run of ``kernel`` on ``device`` records its descriptor stores: only in this
    process, under the interpreter (:func:`_recording_stores`)."""
    return type(kernel).__name__ == "InterpretedFunction" and isolated.in_process(kernel, device)


def _call(a, b, c, blocks, P):
    """(grid, args, kwargs) of one launch on NUM_PROGRAMS = P programs."""
    (M, K), N, (BM, BN, BK) = a.shape, b.shape[1], blocks
    return ((P,), (isolated.Desc(a, (BM, BK)), isolated.Desc(b, (BK, BN)), c, M, N, K),
            dict(BM=BM, BN=BN, BK=BK, GROUP_M=GROUP_M, NUM_PROGRAMS=P))


def _repeated(stores):
    """Tile origins stored more than once (origin -> count)."""
    counts = collections.Counter(origin for _, origin in stores or ())
    return {o: n for o, n in counts.items() if n > 1}


def _verdict(c, a, b, blocks, P, launched, passed_before):
    """Return if C = A @ B; else raise with the hint of the slip C matches (emulated)."""
    import torch
    found = mismatch(NAME, c, a, b, launched)
    if found is None:
        return
    msg, got, ref, tol, a, b = found
    BM, BN, _ = blocks
    for tiles, swapped, reset, hint in LOOP_SLIPS:
        for order in ("grouped", "row-major", "column-major"):
            if _same(got, _emulate(ref, BM, BN, P, GROUP_M, tiles, swapped, reset, order), tol):
                fail(NAME, msg, hint, launched)
    for make, hint in V1_SLIPS[:3]:                    # the K loop's steps (tile by tile)
        if _same(got, make(a, b, ref, *blocks), tol):
            fail(NAME, msg, hint, launched)
    for a_at, b_at, update, hint in K_SLIPS:
        if torch.allclose(got, k_loop_emulated(a, b, *blocks, a_at, b_at, update), **tol):
            fail(NAME, msg, hint, launched)
    mag = a.double().abs() @ b.double().abs()
    if bool(((got - ref).abs() <= tol["atol"] + 2.0 ** -7 * mag).all()):
        fail(NAME, msg + " (off by rounding, not by a wrong tile)", FP16_ACC, launched)
    if passed_before:
        fail(NAME, msg, "right at the first shape, wrong at this one: is a size or a program "
             "count written as a number where M, N, K or NUM_PROGRAMS belongs?", launched)
    if bool(torch.isnan(got).any()):
        fail(NAME, msg, NOT_WRITTEN, launched)
    fail(NAME, msg, "tile (pid_m, pid_n) starts at off_m = pid_m * BM, off_n = pid_n * BN: A's "
         "K slice at [off_m, k], B's at [k, off_n], C's tile stored at [off_m, off_n]", launched)


def _names(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def structure(src: str, programs: str) -> dict:
    """What the kernel's source holds: ``loop`` (a loop whose range steps by ``programs``, or
    whose body advances by it), ``desc_store`` (a ``.store`` on something other than ``tl``),
    ``tl_store`` (a ``tl.store``). All True when no source can be read (nothing to say)."""
    try:
        tree = ast.parse(textwrap.dedent(src))
    except SyntaxError:
        return {"loop": True, "desc_store": True, "tl_store": False}
    loop = False
    for node in ast.walk(tree):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call):
            args = node.iter.args
            loop |= (len(args) >= 3 and programs in _names(args[2])) or any(
                programs in _names(s) for s in node.body)   # tile = pid + i * NUM_PROGRAMS
        elif isinstance(node, ast.While):
            loop |= any(programs in _names(s) for s in node.body)
    calls = [n.func for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr == "store"]
    is_tl = [isinstance(f.value, ast.Name) and f.value.id in ("tl", "triton.language") for f in calls]
    return {"loop": loop, "desc_store": not all(is_tl), "tl_store": any(is_tl)}


STORE_PTX = {"TMA store": r"\bcp\.async\.bulk\.tensor\.\dd\.global\.shared",
             "TMA load": r"\bcp\.async\.bulk\.tensor\.\dd\.shared\S*\.global", "wgmma": r"\bwgmma\.",
             "st.global": r"\bst\.global\b"}


def hopper_ptx(kernel) -> str:
    """The kernel compiled for sm_90a with v3's Hopper configuration and 132 programs."""
    cfg = gemm.GPU_CONFIGS[("v3", "float16")]
    return compile_for_hopper(NAME, kernel, "v3", (cfg["BM"], cfg["BN"], cfg["BK"], cfg["GROUP_M"], 132),
                              "the Hopper blocks", "the interpreter accepted it at small blocks; on Hopper use "
                              "tl.dot on the two tiles and a descriptor store of the whole BM x BN tile")


def check_persistent(kernel, tier=None, seed=None) -> None:
    """Run the learner's persistent ``kernel`` (signature :data:`SIGNATURE`, grid
    ``(NUM_PROGRAMS,)``, host descriptors of A and B with blocks [BM, BK] and [BK, BN]) at two
    shapes, then check its structure (see the module doc). ``seed``: the inputs' seed (default:
    a fresh one, printed on failure)."""
    import torch
    from ..core import ptx
    from ..core.tier import current
    tier = tier or current()
    if not hasattr(kernel, "run") or not hasattr(kernel, "fn"):
        fail(NAME, f"expected a @triton.jit kernel, got {type(kernel).__name__}")
    params = list(inspect.signature(kernel.fn).parameters)
    if len(params) != 11:
        fail(NAME, f"your kernel takes {len(params)} arguments {params}",
             f"keep the signature {SIGNATURE}: the check launches it with these")
    blocks, src = BLOCKS[tier.has_gpu], _kernel_source(kernel)
    seed = random.SystemRandom().randrange(2**31) if seed is None else seed
    gen = torch.Generator().manual_seed(seed)
    from ..triton_lang.compat import set_device_allocator
    set_device_allocator(tier.device)       # C's device-side descriptor needs global scratch
    runs = []
    for run, (M, N, K, P) in enumerate(RUNS[tier.has_gpu]):
        a, b = ((torch.randn(M, K, generator=gen).half(), torch.randn(K, N, generator=gen).half())
                if run == 0 else _cancelling(M, N, K, blocks[2], gen))
        a, b = a.to(tier.device), b.to(tier.device)
        tiles = -(-M // blocks[0]) * -(-N // blocks[1])
        buf, guard, c = _guarded_output(M, N, blocks[0], blocks[1], tier.device)
        launched = (f"{M}x{N}x{K} fp16{' (K steps 1 and 2 nearly cancel)' if run else ''}, seed {seed}, "
                    f"blocks BM={blocks[0]} BN={blocks[1]} BK={blocks[2]}, GROUP_M={GROUP_M}, "
                    f"{tiles} tiles on NUM_PROGRAMS={P} programs, C pre-filled with NaN")
        runs.append((a, b, buf, guard, c, P, tiles, launched))
    outcomes = isolated.launches(kernel, [_call(a, b, c, blocks, P) for a, b, _, _, c, P, _, _ in runs],
                                 device=tier.device, around=lambda: _recording_stores(kernel))
    recorded = False
    for run, ((a, b, buf, guard, c, P, tiles, launched), done) in enumerate(zip(runs, outcomes)):
        if done.error is not None:      # a learner's kernel that does not compile explains itself
            explain_error(NAME, done.error, src, launched, ERROR_HINTS + K_ERROR_HINTS,
                          "read the message: A's tile comes from a_desc.load([off_m, k]), B's from "
                          "b_desc.load([k, off_n]), C's descriptor from tl.make_tensor_descriptor(c_ptr, "
                          "shape=[M, N], strides=[N, 1], block_shape=[BM, BN])")
        stores = done.recorded
        recorded = stores is not None
        if _outside(buf, guard, c.numel()):
            fail(NAME, "your kernel stored outside C (the NaN guard around it changed)",
                 TL_STORE, launched)
        if run == 0 and bool(torch.isnan(c).all()):
            if ".load(" not in src.replace(" ", "") and ".store(" not in src.replace(" ", ""):
                return not_attempted(NAME)
            fail(NAME, "every element of C is still NaN", "store each tile: c_desc.store([off_m, "
                 "off_n], acc.to(c_desc.dtype)); does the tile loop run at all (it starts at "
                 "tl.program_id(0))? is acc ever NaN (a leftover stub line)?", launched)
        _verdict(c.clone(), a, b, blocks, P, launched, passed_before=run > 0)
        twice = _repeated(stores)
        if twice:
            (r, col), n = next(iter(twice.items()))
            fail(NAME, f"C is right, but {len(twice)} of the {tiles} tiles were stored more than "
                 f"once (the tile at [{r}, {col}] {n} times)", STEP_BY_ONE, launched)
        if stores == [] or (stores is None and not structure(src, params[10])["desc_store"]):
            fail(NAME, "C is right, but no tile went through a descriptor store", TL_STORE, launched)
    shape = structure(src, params[10])
    if not shape["loop"]:
        fail(NAME, "C is right, but the tile loop does not step by NUM_PROGRAMS", LOOP_STEP, launched)
    n = ptx.count(hopper_ptx(kernel), STORE_PTX)
    if not n["TMA store"] or not n["TMA load"] or not n["wgmma"]:
        fail(NAME, f"C is right, but compiled for sm_90a your kernel has {n['TMA store']} TMA "
             f"stores, {n['TMA load']} TMA loads and {n['wgmma']} wgmma", TL_STORE if not n["TMA store"]
             else "load A's and B's tiles with their descriptors and multiply them with tl.dot", launched)
    return passed(NAME, f"C = A @ B at {len(RUNS[tier.has_gpu])} shapes on fewer programs than tiles "
                  f"(seed {seed}){', each tile stored once' if recorded else ''}; for "
                  f"sm_90a it compiles to {n['TMA load']} TMA loads, {n['TMA store']} TMA store "
                  f"(cp.async.bulk.tensor, shared to global) and {n['wgmma']} wgmma.")
