"""The emulator's mbarrier.init visibility rule (utils/emu/mbarrier.py docstring, PTX ISA memory model):
a use of an mbarrier by a thread not ordered after its init is a race; what the ISA allows is not
flagged (same-thread use with no fence at all, __syncthreads() after init, __syncwarp() inside a
warp, a cluster barrier whose arrive releases the init)."""
import re

import numpy as np
import pytest

from utils.emu import MbarrierError, MbarrierInitRace, RaceError, device_empty, launch, to_device

HELPERS = r"""
__device__ __forceinline__ unsigned sa(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void wait0(unsigned b) {
  unsigned ok = 0;
  while (!ok) asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                           " selp.u32 %0, 1, 0, p;\n}" : "=r"(ok) : "r"(b), "r"(0) : "memory");
}
"""

# One bulk copy of 128 B completing on an mbarrier that thread 0 initialises.
#   mode 0: thread 32 (another warp) issues the copy, nothing in between     -> race
#   mode 1: the same, with __syncthreads() after the init                     -> fine
#   mode 2: thread 0 issues the copy itself, no fence, no barrier             -> fine (program order)
#   mode 3: as mode 0, with fence.proxy.async after the init (orders nothing) -> race
#   mode 4: lane 5 of warp 0 issues it after __syncwarp()                     -> fine
BULK = HELPERS + r"""
extern "C" __global__ void bulk_issuer(const float* src, float* out, int mode) {
  __shared__ __align__(128) float buf[32];
  __shared__ __align__(8) unsigned long long bar;
  const unsigned b = sa(&bar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(b), "r"(1));
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(128) : "memory");
    if (mode == 3) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  if (mode == 1) __syncthreads();
  if (mode == 4) __syncwarp();
  const unsigned issuer = mode == 2 ? 0 : mode == 4 ? 5 : 32;
  if (threadIdx.x == issuer) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(sa(buf)), "l"(src), "r"(128), "r"(b) : "memory");
    wait0(b);
    for (int i = 0; i < 32; ++i) out[i] = buf[i];
  }
}
"""

# A cluster of 2: each CTA's thread 0 inits its barrier (count 2), then arrives on its own and the peer's.
#   mode 0: only __syncthreads() after the init                                     -> race (cross-CTA)
#   mode 1: fence.mbarrier_init.release.cluster + barrier.cluster.arrive.relaxed/wait -> fine
#   mode 2: barrier.cluster.arrive.relaxed/wait without the fence                    -> race (nothing released)
#   mode 3: barrier.cluster.arrive (release by default)/wait, no fence               -> fine
CLUSTER = HELPERS + r"""
extern "C" __global__ void __cluster_dims__(2, 1, 1) remote_arrive(int mode, int* out) {
  __shared__ __align__(8) unsigned long long bar;
  const unsigned b = sa(&bar);
  unsigned rank; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(b), "r"(2));
    if (mode == 1) asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (mode == 0) __syncthreads();
  else if (mode <= 2)
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;" ::: "memory");
  else asm volatile("barrier.cluster.arrive.aligned;\nbarrier.cluster.wait.aligned;" ::: "memory");
  if (threadIdx.x == 0) {
    unsigned remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(b), "r"(rank ^ 1));
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(b) : "memory");
    wait0(b);
    out[rank] = 1;
  }
  asm volatile("barrier.cluster.arrive.aligned;\nbarrier.cluster.wait.aligned;" ::: "memory");
}
"""

SEEDS = range(4)


def run_bulk(mode, seed):
    src = to_device(np.arange(32, dtype=np.float32))
    out = device_empty(32, np.float32, np.nan)
    rep = launch(BULK, "bulk_issuer", 1, 64, [src, out, mode], seed=seed)
    return rep, src, out


def run_cluster(mode, seed):
    out = device_empty(2, np.int32, 0)
    rep = launch(CLUSTER, "remote_arrive", 2, 64, [mode, out], seed=seed)
    return rep, out


def flagged(run, words):
    """Every seed is flagged (the use came before the init, or the init was not visible); the
    visibility rule itself fires on at least one, with ``words`` in its message."""
    seen = []
    for seed in SEEDS:
        with pytest.raises((RaceError, MbarrierError)) as info:
            run(seed)
        msg = str(info.value)
        assert msg.startswith("emulator:") and "at PTX line" in msg, msg
        if issubclass(info.type, RaceError):
            assert info.type is MbarrierInitRace and isinstance(info.value, MbarrierError)
            assert re.search(words, msg), msg
        seen.append(info.type)
    assert MbarrierInitRace in seen, "the init-visibility rule never fired"


@pytest.mark.parametrize("mode, words", [
    (0, r"cp\.async\.bulk.* by thread 32: for that thread no mbarrier was initialised .* nothing orders the "
        r"mbarrier\.init .*__syncthreads"),
    (3, r"by thread 32: for that thread no mbarrier was initialised"),
], ids=["other warp issues the copy, no barrier", "fence.proxy.async is not a barrier"])
def test_copy_signalling_an_unpublished_mbarrier_is_a_race(mode, words):
    flagged(lambda s: run_bulk(mode, s), words)


@pytest.mark.parametrize("mode", [1, 2, 4], ids=["__syncthreads after init", "same thread, no fence",
                                                 "__syncwarp inside the warp"])
def test_what_the_isa_allows_is_not_flagged(mode):
    for seed in SEEDS:
        rep, src, out = run_bulk(mode, seed)
        assert rep.ok, rep
        assert np.array_equal(out, src)


@pytest.mark.parametrize("mode, words", [
    (0, r"belongs to CTA \(\d, 0, 0\), and __syncthreads\(\) does not order other CTAs"),
    (2, r"fence\.mbarrier_init\.release\.cluster"),
], ids=["__syncthreads only", "relaxed cluster arrive without the init fence"])
def test_remote_use_needs_a_cluster_scope_release(mode, words):
    flagged(lambda s: run_cluster(mode, s), words)


@pytest.mark.parametrize("mode", [1, 3], ids=["fence.mbarrier_init + relaxed arrive", "release arrive"])
def test_published_init_is_not_flagged_across_the_cluster(mode):
    for seed in SEEDS:
        rep, out = run_cluster(mode, seed)
        assert rep.ok, rep
        assert list(out) == [1, 1]


def test_non_strict_launch_records_the_race_once_per_thread():
    src, out = to_device(np.arange(32, dtype=np.float32)), device_empty(32, np.float32, np.nan)
    for seed in SEEDS:
        try:
            rep = launch(BULK, "bulk_issuer", 1, 64, [src, out, 0], seed=seed, strict=False)
        except MbarrierError:
            continue                  # this schedule ran the copy before the init itself
        assert len([r for r in rep.races if "nothing orders the mbarrier.init" in r]) == 1, rep
        return
    pytest.fail("no schedule ran the init first")
