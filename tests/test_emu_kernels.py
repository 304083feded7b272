"""The course's CUDA kernels on the PTX emulator (utils.emu), against NumPy references, on fresh
random data at shapes that are not multiples of the tile, several scheduler seeds."""
import numpy as np
import pytest

from utils.cuda_cpp import day02
from utils.emu import device_empty, encode, launch, tensor_map, to_device
from utils.tma import lab, model, runtime, update, update_run
from utils.tma.descriptor import make_spec

TMA = runtime.SOURCE
T = 10**9                                  # the kernels' bounded-wait timeout (virtual ns)


def rand(*shape, dtype=np.float32):
    return to_device(np.random.default_rng().standard_normal(shape).astype(dtype))


def fma_ref(x, work):
    """What day 2's consumers compute: ``work`` fused multiply-adds v <- 0.999 v + 0.001 in fp32."""
    v = x.astype(np.float32)
    for _ in range(work):
        v = (v.astype(np.float64) * np.float64(np.float32(0.999)) + np.float64(np.float32(0.001))).astype(np.float32)
    return v


def test_mbar_phases_shows_the_parity_rule():
    probe = device_empty(2 + 4 * 3, np.int32, -1)
    launch(day02.SOURCE, "mbar_phases", 1, 64, [3, probe])
    assert probe.reshape(-1, 2).tolist() == [[0, 1], [0, 1], [1, 0], [1, 0], [0, 1], [0, 1], [1, 0]]


@pytest.mark.parametrize("bulk,stages,seed", [(0, 1, 0), (0, 3, 1), (1, 2, 2), (1, 3, 3)])
def test_pc_ring(bulk, stages, seed):
    x = rand(4 * 700)                      # 700 float4: 5.5 tiles of 128
    y = device_empty(x.shape, np.float32, np.nan)
    st = device_empty(1, np.int32, 0)
    rep = launch(day02.SOURCE, "pc_ring", 2, 64, [x, y, x.size // 4, stages, 2, bulk, st, T],
                 shared_bytes=stages * 128 * 16, seed=seed)
    assert st[0] == 0 and not rep.deadlocks and np.array_equal(y, fma_ref(x, 2))


@pytest.mark.parametrize("stages", day02.STAGES)
def test_cp_async_pipeline(stages):
    x = rand(4 * 900)
    y = device_empty(x.shape, np.float32, np.nan)
    launch(day02.SOURCE, f"cp_async_pipeline_s{stages}", 3, 64, [x, y, x.size // 4, 3],
           shared_bytes=stages * 64 * 16, seed=stages)
    assert np.array_equal(y, fma_ref(x, 3))


@pytest.mark.parametrize("u", day02.LOADS)
def test_read_inflight_reads_every_vector_once(u):
    x = rand(4 * 1003)
    out = device_empty(3 * 64, np.uint32, 0)
    launch(day02.SOURCE, f"read_inflight_u{u}", 3, 64, [x, out, x.size // 4])
    assert np.bitwise_xor.reduce(out) == np.bitwise_xor.reduce(x.view(np.uint32))


@pytest.mark.parametrize("swizzle,box", [("none", (8, 16)), ("64B", (5, 16)), ("128B", (8, 32))])
def test_tma_load_dump_matches_the_model_byte_for_byte(swizzle, box):
    x = rand(50, 72)
    tm = tensor_map(x, box, swizzle=swizzle)
    n = runtime.smem_image_bytes(tm.spec)
    out, st = device_empty(n, np.uint8, 0), device_empty(1, np.int32, 0)
    coords = (46, 64)                                          # runs past both ends: OOB fill
    k = runtime.coords_arg(runtime.check_coords(tm.spec, coords))
    launch(TMA, "tma_load_dump", 1, 128, [tm, 2, k, tm.spec.box_bytes, n, out, st, T], shared_bytes=n + 1024)
    want = np.full(n, 0xAB, np.uint8)
    pos = model.smem_positions(tm.spec.smem_box_dims[::-1], 4, swizzle)
    want[pos] = model.smem_bytes(x, tm.spec, coords)[pos]
    assert st[0] == 0 and np.array_equal(out, want)


@pytest.mark.parametrize("reduce", [0, 1])
def test_tma_store_box_and_reduce_add_clip_at_the_edge(reduce):
    g = rand(30, 40)
    g0 = g.copy()
    tile = rand(8, 16)
    tm = tensor_map(g, (8, 16))
    k = runtime.coords_arg(runtime.check_coords(tm.spec, (24, 32), store=True))
    launch(TMA, "tma_store_box", 1, 128, [tm, 2, k, tile.view(np.uint8).ravel(), tile.nbytes, reduce, 1],
           shared_bytes=tile.nbytes + 1024)
    ref = (model.tma_reduce_add if reduce else model.tma_store)(g0, tile, (24, 32))[0]
    assert np.array_equal(g, ref)


@pytest.mark.parametrize("kernel", ["tma_copy_tile", "tma_copy_pipelined"])
def test_tma_copies(kernel):
    src = rand(70, 200)
    dst = device_empty(src.shape, np.float32, np.nan)
    st = device_empty(1, np.int32, 0)
    by, bx = 16, 64
    a, b = tensor_map(src, (by, bx)), tensor_map(dst, (by, bx))
    tx, ty = -(-200 // bx), -(-70 // by)
    if kernel == "tma_copy_tile":
        launch(TMA, kernel, tx * ty, 32, [a, b, tx, bx, by, a.spec.box_bytes, st, T],
               shared_bytes=a.spec.box_bytes + 1024)
    else:
        launch(TMA, kernel, 3, 32, [a, b, tx, tx * ty, bx, by, 3, a.spec.box_bytes, st, T],
               shared_bytes=3 * a.spec.box_bytes + 1024, seed=5)
    assert st[0] == 0 and np.array_equal(src, dst)


@pytest.mark.parametrize("kernel", ["bulk_copy_pipelined", "bulk_copy_serial", "bulk_copy_chunk", "plain_copy"])
def test_bulk_and_plain_copies(kernel):
    src = to_device(np.random.default_rng().integers(0, 256, 16 * 1234, dtype=np.uint8))
    dst = device_empty(src.shape, np.uint8, 0)
    st, chunk = device_empty(1, np.int32, 0), 4096
    if kernel == "bulk_copy_pipelined":
        launch(TMA, kernel, 2, 32, [src, dst, src.size, chunk, 3, 1, st, T], shared_bytes=3 * chunk + 1024)
    elif kernel == "bulk_copy_serial":
        counters = device_empty(2, np.uint64, 0)
        launch(TMA, kernel, 3, 32, [src, dst, src.size, chunk, 1, counters, st, T], shared_bytes=chunk + 1024)
        assert (counters == 0).all()                           # the last CTA reset them
    elif kernel == "bulk_copy_chunk":
        launch(TMA, kernel, -(-src.size // chunk), 32, [src, dst, src.size, chunk, 3, st, T],
               shared_bytes=chunk + 1024)
    else:
        launch(TMA, kernel, 3, 64, [src, dst, src.size // 16])
    assert st[0] == 0 and np.array_equal(src, dst)


def _feed_ref(src, R, ctas, mode, chunk, per_cta, lines, n_chunks):
    h = src.view(np.uint16).reshape(n_chunks, chunk // 16, 8)
    out = np.zeros((ctas, 128), np.float32)
    for b in range(ctas):
        first, rank = (b // R) * per_cta, b % R
        acc = np.zeros(128, np.float32)
        for i in range(per_cta):
            j = (i + rank * (per_cta // R)) % per_cta if mode == 4 else i
            f = h[(first + j) % n_chunks].view(np.float16).astype(np.float32)
            for k0 in range(0, lines * 128, 128):
                for w in range(4):
                    acc = acc + (f[k0:k0 + 128, 2 * w] + f[k0:k0 + 128, 2 * w + 1])
        out[b] = acc
    return out


@pytest.mark.parametrize("name,R,mode", [("feed_c1", 1, 0), ("feed_c2", 2, 1), ("feed_c2", 2, 3), ("feed_c4", 4, 1),
                                         ("feed_c4", 4, 4)])
def test_feed_clusters_and_multicast(name, R, mode):
    chunk, stages, per_cta, lines, n_chunks = 4096, 2, 3, 2, 5
    src = rand(n_chunks * chunk // 2, dtype=np.float16)
    ctas = 2 * R
    out, st = device_empty(ctas * 128, np.float32, np.nan), device_empty(1, np.int32, 0)
    launch(TMA, name, ctas, 160, [src, n_chunks, chunk, stages, per_cta, lines, mode, out, st, T],
           shared_bytes=stages * chunk + 1024, seed=mode)
    assert st[0] == 0
    assert np.array_equal(out.reshape(ctas, 128), _feed_ref(src, R, ctas, mode, chunk, per_cta, lines, n_chunks))


@pytest.mark.parametrize("mode", sorted(update_run.MODES))
def test_grouped_load_updated_every_descriptor_source(mode):
    rng = np.random.default_rng()
    arrays = [rand(int(r), int(c)) for r, c in zip(rng.integers(9, 50, 3), rng.integers(4, 20, 3) * 4)]
    box = (8, 4)
    base = make_spec(arrays[0], box)
    specs = [update.group_spec(base, a.ctypes.data, a.shape, a.strides) for a in arrays]
    G = len(arrays)
    groups = to_device(np.array([(a.ctypes.data, a.shape[0], a.shape[1], a.strides[0]) for a in arrays],
                                update_run.GROUP))
    slots = device_empty((G, 128), np.uint8, 0)
    byval = np.zeros(8 * 128, np.uint8)
    if mode == 2:
        slots[:] = np.stack([encode(s).view(np.uint8) for s in specs])
    if mode == 3:
        for g, s in enumerate(specs):
            byval[g * 128:(g + 1) * 128] = encode(s).view(np.uint8)
    out, cyc = device_empty(G * base.box_bytes, np.uint8, 0), device_empty(G, np.int64, 0)
    st = device_empty(1, np.int32, 0)
    rep = launch(update.SOURCE, "grouped_load_updated", G, 128,
                 [tensor_map(arrays[0], box), byval.view(f"V{byval.size}"), groups.view(np.uint8), slots, mode,
                  base.box_bytes, out, cyc, st, T], arrays=arrays, seed=mode)
    tiles = out.view(np.float32).reshape(G, *box)
    assert st[0] == 0 and not rep.races
    for g, a in enumerate(arrays):
        assert np.array_equal(tiles[g], model.tma_load(a, box, (0, 0)))


def test_splitk_reduce_add():
    M, N, S, by, bx = 32, 48, 3, 16, 16
    c, partials = device_empty((M, N), np.float32, 0), rand(S, M, N)
    tiles_x = N // bx
    boxes = to_device(partials.reshape(S, M // by, by, tiles_x, bx).transpose(0, 1, 3, 2, 4))
    launch(update.SOURCE, "splitk_reduce_add", ((M // by) * tiles_x, S), 128,
           [tensor_map(c, (by, bx)), boxes, tiles_x, bx, by, M * N], seed=3)
    assert np.allclose(c, partials.sum(0), rtol=1e-6, atol=1e-6)    # the splits' order is not defined


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lab_fixed_doubles_every_element(seed):
    rows, cols = 40, 100                                          # 16 x 32 boxes: partial in both axes
    x = rand(rows, cols)
    y, st = device_empty(x.shape, np.float32, np.nan), device_empty(1, np.int32, 0)
    rep = launch(lab.SOURCE, "lab_fixed", 3, 128, [tensor_map(x, (16, 32)), tensor_map(y, (16, 32)), rows, cols,
                                                   st, T], shared_bytes=16 * 32 * 4 + 128 + 1024, seed=seed)
    assert st[0] == 0 and rep.ok and np.array_equal(y, 2 * x)


def test_shared_read_at_reads_the_swizzled_image():
    x = rand(64, 64, dtype=np.float16)
    tm = tensor_map(x, (64, 64), swizzle="128B")
    image = model.smem_bytes(x, tm.spec, (0, 0))
    offsets = to_device((np.random.default_rng().integers(0, image.size // 16, 32) * 16).astype(np.int32))
    out, st = device_empty((32, 4), np.uint32, 0), device_empty(1, np.int32, 0)
    k = runtime.coords_arg((0, 0))
    launch(TMA, "shared_read_at", 1, 32, [tm, 2, k, tm.spec.box_bytes, offsets, 3, out, st, T],
           shared_bytes=image.size + 1024)
    want = np.stack([image[o:o + 16].view(np.uint32) for o in offsets])
    assert st[0] == 0 and np.array_equal(out, want)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_chase_follows_the_cycle(mode):
    n, steps = 97, 60
    nxt = to_device(np.random.default_rng().permutation(n).astype(np.int32))
    out, cycles = device_empty(1, np.int32, -1), device_empty(1, np.int64, 0)
    launch(day02.SOURCE, "chase", 1, 32 if mode < 2 else 128, [nxt, n, steps, mode, out, cycles],
           shared_bytes=4 * n if mode == 2 else 0)
    i = 0
    for _ in range(steps):
        i = nxt[i]
    assert out[0] == i                       # cycles[0] is the VIRTUAL clock: never a time


def test_every_instruction_of_the_course_kernels_is_modelled():
    from utils.emu.parse import parse_cached
    from utils.emu.program import program, ptx_of
    refused = set()
    for src in (day02.SOURCE, TMA, lab.SOURCE, update.SOURCE):
        ptx = ptx_of(src)
        for name in parse_cached(ptx).kernels:
            p = program(ptx, name)
            refused |= {i.opcode for i, h in zip(p.kernel.code, p.handlers)
                        if h is not None and h.__qualname__.startswith("_refuse")}
    assert not refused


@pytest.mark.parametrize("completion", ["eager", "lazy"])
def test_correct_kernels_pass_when_every_copy_lands_at_once_or_as_late_as_possible(completion):
    x = rand(40, 100)
    y, st = device_empty(x.shape, np.float32, np.nan), device_empty(1, np.int32, 0)
    rep = launch(lab.SOURCE, "lab_fixed", 3, 128, [tensor_map(x, (16, 32)), tensor_map(y, (16, 32)), 40, 100, st, T],
                 shared_bytes=16 * 32 * 4 + 128 + 1024, completion=completion)
    assert rep.ok and np.array_equal(y, 2 * x)
    v = rand(4 * 600)
    for bulk in (0, 1):
        w = device_empty(v.shape, np.float32, np.nan)
        rep = launch(day02.SOURCE, "pc_ring", 2, 64, [v, w, 600, 3, 1, bulk, st, T], shared_bytes=3 * 128 * 16,
                     completion=completion)
        assert rep.ok and st[0] == 0 and np.array_equal(w, fma_ref(v, 1))
    src = rand(70, 200)
    dst = device_empty(src.shape, np.float32, np.nan)
    a, b = tensor_map(src, (16, 64)), tensor_map(dst, (16, 64))
    rep = launch(TMA, "tma_copy_pipelined", 2, 32, [a, b, 4, 20, 64, 16, 3, a.spec.box_bytes, st, T],
                 shared_bytes=3 * a.spec.box_bytes + 1024, completion=completion)
    assert rep.ok and np.array_equal(src, dst)
