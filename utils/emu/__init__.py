"""A CPU emulator for the PTX of the course's CUDA kernels, asynchronous proxy included.

It runs what NVRTC emits for ``sm_90a`` from the course's kernels (and a learner's kernel in the same
style): warps in lockstep with NumPy across the 32 lanes, divergence by min-PC reconvergence, warps
interleaved in a seeded order; mbarrier phases and transaction counts; ``cp.async`` groups; bulk
and TMA tensor copies through the course's NumPy TMA model (:mod:`utils.tma.model`: box, strides,
element strides, out-of-bounds fill, swizzle), completed at adversarial points; descriptor updates
(``tensormap.replace``) with the tensormap proxy fences. It is an EMULATOR: it never reports a time
(``%globaltimer`` and ``%clock64`` are a virtual clock), and everything it prints starts with
"emulator:".

Use::

    from utils.emu import device_empty, launch, tensor_map, to_device
    x = to_device(np.random.rand(40, 100).astype(np.float32))
    y, status = device_empty(x.shape, np.float32, np.nan), device_empty(1, np.int32, 0)
    rep = launch(lab.SOURCE, "lab_fixed", grid=3, block=128,
                 args=[tensor_map(x, (16, 32)), tensor_map(y, (16, 32)), 40, 100, status, 10**9],
                 shared_bytes=16 * 32 * 4 + 128 + 1024, seed=0)
    # y now holds what a GPU would leave; rep is the Report (rep.deadlocks, rep.races, rep.instructions)

Arguments (:func:`launch`): NumPy arrays (best made by :func:`device_empty` / :func:`to_device`:
256-byte aligned like cudaMalloc memory) are device pointers (their real host addresses; the kernel
reads and writes them in place); :class:`TensorMap` (from :func:`tensor_map`, i.e. ``make_spec`` +
the array) for ``__grid_constant__`` CUtensorMap parameters, passed as the emulator's own 128-byte
encoding (:mod:`.tensormap`; :func:`encode` gives the bytes for descriptors placed in global memory,
``arrays=`` registers arrays only reachable through such descriptors); numbers typed by the
``.param`` declaration; raw bytes (``np.void`` / ``V`` arrays) for structs passed by value.

What it reports (exceptions, all subclasses of :class:`EmulatorError`, each naming the PTX line and,
for CUDA C++ source (compiled with ``-lineinfo``), the CUDA line it came from, and the threads):
:class:`UnsupportedPTX` (an instruction it does not model: it stops, never guesses),
:class:`Deadlock` (every warp waits; which mbarrier, phase, arrivals and bytes pending),
:class:`RaceError` (missing ``fence.proxy.async``, buffer reused before ``wait_group.read``, shared
memory read before its mbarrier phase completed or by a thread that never saw that phase complete,
a descriptor used without the tensormap acquire, an mbarrier used by a thread (or a copy it issued)
not ordered after its ``mbarrier.init``: :class:`MbarrierInitRace`, also an MbarrierError),
:class:`MemoryFault` / :class:`MisalignedAddress` (address and rule), :class:`TmaRuleError` (the
model's descriptor and coordinate rules), :class:`MbarrierError`. A kernel whose waits are BOUNDED
by ``%globaltimer`` gets its virtual clock advanced when everything is blocked, so its own timeout
path runs as on a GPU; the hang is then recorded in ``Report.deadlocks`` instead of raised.
When copies land is chosen per copy by ``seed`` (at once, at a random later point, or as late as
possible); ``launch(..., completion="eager" | "lazy" | "never")`` lands all at once / as late as possible / never.

Instructions modelled (anything else stops the run with :class:`UnsupportedPTX`):
  * integer/float: add sub mul(.lo/.hi/.wide) mad fma div rem min max neg abs not and or xor shl shr
    popc clz brev rcp sqrt rsqrt ex2 lg2 sin cos copysign; setp (all comparisons, .and/.or/.xor,
    two destinations), selp, mov (incl. vector pack/unpack), cvt (int/float/f16/bf16, rounding
    to integer, .sat), cvta(.to), mapa; special registers %tid %ntid %ctaid %nctaid %laneid %warpid
    %nwarpid %clusterid %nclusterid %cluster_ctaid %cluster_nctaid %cluster_ctarank
    %cluster_nctarank %lanemask_* %dynamic_smem_size, %globaltimer / %clock / %clock64 (virtual);
  * control: bra (divergent), ret, exit, bar.sync / barrier.sync (ids, counts), bar.warp.sync,
    barrier.cluster.arrive/wait, shfl.sync (up/down/bfly/idx), vote.sync (all/any/uni/ballot),
    activemask; predicated execution of everything;
  * memory: ld/st (global, shared, shared::cta/cluster, param, local, generic; .v2/.v4; cache
    qualifiers ignored), atom/red (add exch cas min max and or xor inc dec);
  * asynchronous proxy: mbarrier.init/inval/arrive(.expect_tx, remote shared::cluster)/arrive_drop/
    expect_tx/complete_tx/test_wait/try_wait(.parity); cp.async.ca/cg (+ zero fill),
    commit_group, wait_group, wait_all, cp.async.mbarrier.arrive(.noinc); cp.async.bulk
    global<->shared (+ .multicast::cluster), cp.async.bulk.tensor 1d-5d .tile loads (+ multicast)
    and stores, cp.reduce.async.bulk.tensor .add, cp.async.bulk.commit_group / wait_group(.read);
    fence.proxy.async, fence.mbarrier_init and other fences/membar (ordering only);
    tensormap.replace (global_address, global_dim, global_stride, box_dim, element_stride),
    tensormap.cp_fenceproxy, fence.proxy.tensormap::generic.release/acquire; prefetch(.tensormap),
    createpolicy and cache hints as no-ops on values.

Ready-made cpu-tier versions of the course's launchers are in :mod:`.course`; :mod:`.fidelity` sets the
emulator's lab findings beside the GPU recordings; :mod:`.gpu_agreement` runs the same launches on a
GPU and on the emulator and compares the outputs byte for byte (the GPU half needs Hopper).

Limits: float rounding modifiers other than round-to-nearest are ignored; ``cp.async`` and bulk groups
are tracked per warp, not per thread; cluster barriers do not pass on what a thread saw of an mbarrier
(``bar.sync`` and ``__syncwarp`` do); no device-function calls (``call``); TMA is ``.tile`` mode only
(no im2col), on element types NumPy has (no bfloat16 tensors); ``tensormap.replace`` models
global_address, global_dim, global_stride, box_dim and element_stride.
"""
from .api import TensorMap, device_empty, launch, tensor_map, to_device
from .errors import (Deadlock, EmulatorError, InstructionLimit, MbarrierError, MbarrierInitRace, MemoryFault,
                     MisalignedAddress, RaceError, Report, TmaRuleError, UnsupportedPTX)
from .tensormap import decode, encode

__all__ = ["launch", "tensor_map", "device_empty", "to_device", "TensorMap", "encode", "decode", "Report",
           "EmulatorError", "UnsupportedPTX",
           "Deadlock", "RaceError", "MemoryFault", "MisalignedAddress", "TmaRuleError", "MbarrierError",
           "MbarrierInitRace",
           "InstructionLimit"]
